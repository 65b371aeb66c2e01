// The chart's RBAC equals docs/controller.md's "Security model" table, parsed from the markdown,
// so the documentation and the chart cannot drift apart: every row granted, nothing more, a
// ClusterRole per component and a Role in the release namespace for the controller's Lease.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/helm/helm_fixture.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::helm {
namespace {

using nlohmann::json;

// (component, "ClusterRole"|"Role", apiGroup, resource) -> verbs.
using Grants =
    std::map<std::tuple<std::string, std::string, std::string, std::string>, std::set<std::string>>;

std::string Unquote(absl::string_view cell) {
  std::string s(absl::StripAsciiWhitespace(cell));
  s.erase(std::remove(s.begin(), s.end(), '`'), s.end());
  return s;
}

// "trainingjobs.wavepool.dev/status" -> (wavepool.dev, trainingjobs/status); "events" (core) ->
// ("", events); "leases.coordination.k8s.io" -> (coordination.k8s.io, leases).
std::pair<std::string, std::string> GroupAndResource(const std::string& cell) {
  std::string text(absl::StripAsciiWhitespace(cell.substr(0, cell.find('('))));
  std::string sub;
  if (const size_t slash = text.find('/'); slash != std::string::npos) {
    sub = text.substr(slash);
    text = text.substr(0, slash);
  }
  const size_t dot = text.find('.');
  if (dot == std::string::npos) return {"", text + sub};
  return {text.substr(dot + 1), text.substr(0, dot) + sub};
}

// The table under "## Security model" in docs/controller.md.
Grants GrantsFromDocs(std::string* error) {
  const std::string doc = ReadFileOrEmpty(SourcePath("docs/controller.md"));
  const size_t section = doc.find("## Security model");
  if (section == std::string::npos) {
    *error = "docs/controller.md has no \"## Security model\" section";
    return {};
  }
  Grants grants;
  bool in_table = false;
  for (absl::string_view line : absl::StrSplit(doc.substr(section), '\n')) {
    if (!absl::StartsWith(line, "|")) {
      if (in_table) break;  // the table ended
      continue;
    }
    in_table = true;
    std::vector<std::string> cells;
    for (absl::string_view cell : absl::StrSplit(line.substr(1), '|'))
      cells.push_back(Unquote(cell));
    if (cells.size() < 4 || cells[0] == "Who" || absl::StartsWith(cells[0], "---")) continue;
    const std::string who = cells[0];
    const auto [group, resource] = GroupAndResource(cells[1]);
    // "get, create, update (its namespace only, a Role)": verbs before the parenthesis.
    std::string verbs_cell = cells[2];
    std::string kind = "ClusterRole";
    if (const size_t paren = verbs_cell.find('('); paren != std::string::npos) {
      if (absl::StrContains(verbs_cell.substr(paren), "a Role")) kind = "Role";
      verbs_cell = verbs_cell.substr(0, paren);
    }
    for (absl::string_view verb : absl::StrSplit(verbs_cell, ',', absl::SkipWhitespace())) {
      grants[{who, kind, group, resource}].insert(std::string(absl::StripAsciiWhitespace(verb)));
    }
  }
  if (grants.empty()) *error = "no rows in docs/controller.md's Security model table";
  return grants;
}

std::string ComponentOf(const json& object) {
  return object["metadata"]["labels"].value("app.kubernetes.io/component", "");
}

Grants GrantsFromChart(const Rendered& r) {
  Grants grants;
  for (const std::string kind : {"ClusterRole", "Role"}) {
    for (const json& role : r.OfKind(kind)) {
      for (const json& rule : role["rules"]) {
        EXPECT_FALSE(rule.contains("resourceNames") || rule.contains("nonResourceURLs")) << rule;
        for (const json& group : rule["apiGroups"]) {
          for (const json& resource : rule["resources"]) {
            for (const json& verb : rule["verbs"]) {
              grants[{ComponentOf(role), kind, group, resource}].insert(verb.get<std::string>());
            }
          }
        }
      }
    }
  }
  return grants;
}

std::string Describe(const Grants& grants) {
  std::string out;
  for (const auto& [key, verbs] : grants) {
    const auto& [who, kind, group, resource] = key;
    out += who + " " + kind + " " + (group.empty() ? "core" : group) + "/" + resource + ":";
    for (const std::string& v : verbs) out += " " + v;
    out += "\n";
  }
  return out;
}

class HelmRbacTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(HelmBinary().c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no helm at " << HelmBinary() << " (scripts/install-kube-tools)";
    }
  }
  Scratch scratch_;
};

TEST_F(HelmRbacTest, DocsTableParsesToTheKnownRows) {
  std::string error;
  const Grants docs = GrantsFromDocs(&error);
  ASSERT_EQ(error, "");
  // A parse that lost rows or columns would make the equality below vacuous.
  EXPECT_EQ(docs.size(), 17u) << Describe(docs);
  EXPECT_EQ(docs.at({"controller", "Role", "coordination.k8s.io", "leases"}),
            (std::set<std::string>{"get", "create", "update"}));
  EXPECT_EQ(docs.at({"controller", "ClusterRole", "", "events"}),
            (std::set<std::string>{"create", "patch"}));
  EXPECT_EQ(docs.at({"agent", "ClusterRole", "", "pods"}), (std::set<std::string>{"list"}));
  EXPECT_EQ(docs.at({"agent", "ClusterRole", "wavepool.dev", "trainingjobs"}),
            (std::set<std::string>{"get"}));
  EXPECT_EQ(docs.at({"agent", "ClusterRole", "", "events"}),
            (std::set<std::string>{"create", "patch"}));
  EXPECT_EQ(docs.at({"controller", "ClusterRole", "", "namespaces"}),
            (std::set<std::string>{"get"}));
  EXPECT_EQ(docs.at({"controller", "ClusterRole", "wavepool.dev", "trainingjobs/status"}),
            (std::set<std::string>{"update", "patch"}));
}

TEST_F(HelmRbacTest, RolesGrantExactlyTheDocumentedVerbs) {
  std::string error;
  const Grants docs = GrantsFromDocs(&error);
  ASSERT_EQ(error, "");
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{},
        std::vector<std::string>{"-f", SourcePath("tests/helm/testdata/nondefault-values.yaml")}}) {
    ASSERT_OK_AND_ASSIGN(Rendered r, Render(scratch_, ChartDir(), extra));
    const Grants chart = GrantsFromChart(r);
    EXPECT_EQ(Describe(chart), Describe(docs));
    // Roles live in the release namespace; each binding names its component's service account.
    for (const json& role : r.OfKind("Role")) EXPECT_EQ(role["metadata"]["namespace"], kNamespace);
    for (const std::string kind : {"ClusterRoleBinding", "RoleBinding"}) {
      for (const json& binding : r.OfKind(kind)) {
        const std::string component = ComponentOf(binding);
        const json role = r.Find(binding["roleRef"]["kind"], binding["roleRef"]["name"]);
        ASSERT_TRUE(role.is_object()) << binding;
        EXPECT_EQ(ComponentOf(role), component);
        ASSERT_EQ(binding["subjects"].size(), 1u);
        const json subject = binding["subjects"][0];
        EXPECT_EQ(subject["kind"], "ServiceAccount");
        EXPECT_EQ(subject["namespace"], kNamespace);
        const json workload =
            r.Find(component == "agent" ? "DaemonSet" : "Deployment",
                   role["metadata"]["name"].get<std::string>().substr(
                       0, role["metadata"]["name"].get<std::string>().find("-" + component) +
                              component.size() + 1));
        ASSERT_TRUE(workload.is_object()) << binding;
        EXPECT_EQ(workload["spec"]["template"]["spec"]["serviceAccountName"], subject["name"]);
      }
    }
  }
}

}  // namespace
}  // namespace wavepool::testing::helm
