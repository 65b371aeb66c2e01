#include "wavepool/kube/kubeconfig.h"

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/yaml.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::kube {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A named cluster, user or context, with the directory its relative paths are resolved against.
struct Entry {
  json value;
  std::string base_dir;
};

// Several kubeconfig files seen as one (kubectl's merge: the first definition wins).
struct Kubeconfig {
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context;
  std::string source;  // "kubeconfig a.yaml:b.yaml", for messages
};

// A kubeconfig, certificate, key or token is far smaller; a path to /dev/zero or a huge file must
// give an error, not exhaust memory.
constexpr std::size_t kMaxFileBytes = 16 << 20;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::string text;
  std::vector<char> chunk(64 << 10);
  while (file.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || file.gcount() > 0) {
    text.append(chunk.data(), static_cast<std::size_t>(file.gcount()));
    if (text.size() > kMaxFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than ", kMaxFileBytes,
                       " bytes; not a kubeconfig, certificate, key or token"));
    }
  }
  if (file.bad()) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return text;
}

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(base_dir) / path).lexically_normal().string();
}

// The string at `key` of `object`: "" when absent or null, InvalidArgument when not a string.
absl::StatusOr<std::string> StringField(const json& object, const char* key,
                                        const std::string& path) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".", key, ": must be a string, got ", it->type_name()));
  }
  return it->get<std::string>();
}

// clusters/users/contexts: a list of {name, <field>: {...}}, added unless already defined.
absl::Status MergeNamed(const json& document, const char* list, const char* field,
                        const std::string& base_dir, const std::string& source,
                        std::map<std::string, Entry>& into) {
  const auto it = document.find(list);
  if (it == document.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", list, ": must be a list"));
  }
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& item = (*it)[i];
    const std::string path = absl::StrCat(source, ": ", list, "[", i, "]");
    if (!item.is_object()) return absl::InvalidArgumentError(path + ": must be a mapping");
    WAVEPOOL_ASSIGN_OR_RETURN(std::string name, StringField(item, "name", path));
    if (name.empty()) return absl::InvalidArgumentError(path + ".name: required");
    json value = item.value(field, json::object());
    if (value.is_null()) value = json::object();
    if (!value.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".", field, ": must be a mapping"));
    }
    into.emplace(name, Entry{std::move(value), base_dir});
  }
  return absl::OkStatus();
}

absl::Status MergeText(std::string_view text, const std::string& source,
                       const std::string& base_dir, Kubeconfig& config) {
  absl::StatusOr<json> document = api::YamlToJson(text);
  if (!document.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not YAML: ", document.status().message()));
  }
  if (document->is_null()) return absl::OkStatus();  // an empty file adds nothing
  if (!document->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": must be a mapping (a Config)"));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::string kind_field, StringField(*document, "kind", source + ": "));
  const std::string kind = kind_field.empty() ? "Config" : kind_field;
  if (kind != "Config") {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": kind: must be Config, got \"", kind, "\""));
  }
  for (const auto& [list, field, into] :
       {std::make_tuple("clusters", "cluster", &config.clusters),
        std::make_tuple("users", "user", &config.users),
        std::make_tuple("contexts", "context", &config.contexts)}) {
    WAVEPOOL_RETURN_IF_ERROR(MergeNamed(*document, list, field, base_dir, source, *into));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::string current,
                            StringField(*document, "current-context", source + ": "));
  if (config.current_context.empty()) config.current_context = current;
  return absl::OkStatus();
}

// `<field>-data` (base64) or `<field>` (a file path): the bytes, or "" when neither is set.
absl::StatusOr<std::string> DataOrFile(const Entry& entry, const std::string& field,
                                       const std::string& path) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::string data,
                            StringField(entry.value, (field + "-data").c_str(), path));
  if (!data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".", field, "-data: not base64"));
    }
    return decoded;
  }
  absl::StatusOr<std::string> file = StringField(entry.value, field.c_str(), path);
  if (!file.ok() || file->empty()) return file;
  absl::StatusOr<std::string> bytes = ReadFile(Resolve(entry.base_dir, *file));
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".", field, ": ", bytes.status().message()));
  }
  return bytes;
}

absl::Status ApplyCluster(const Entry& cluster, const std::string& path, ClientConfig& config) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::string server, StringField(cluster.value, "server", path));
  if (server.empty()) return absl::InvalidArgumentError(path + ".server: required");
  config.server = server;
  // kubectl accepts a trailing slash; the client adds paths that start with one.
  while (config.server.size() > 1 && config.server.back() == '/') config.server.pop_back();
  WAVEPOOL_ASSIGN_OR_RETURN(std::string ca, DataOrFile(cluster, "certificate-authority", path));
  config.certificate_authority_pem = ca;
  const auto insecure = cluster.value.find("insecure-skip-tls-verify");
  if (insecure != cluster.value.end() && !insecure->is_null()) {
    if (!insecure->is_boolean()) {
      return absl::InvalidArgumentError(path + ".insecure-skip-tls-verify: must be true or false");
    }
    config.insecure_skip_tls_verify = insecure->get<bool>();
  }
  return absl::OkStatus();
}

absl::Status ApplyUser(const Entry& user, const std::string& path, ClientConfig& config) {
  for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
    if (user.value.contains(unsupported)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".", unsupported,
                       ": not supported; use a token, a token file or a client certificate"));
    }
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::string token, StringField(user.value, "token", path));
  config.bearer_token = token;
  WAVEPOOL_ASSIGN_OR_RETURN(std::string token_file, StringField(user.value, "tokenFile", path));
  config.bearer_token_file = Resolve(user.base_dir, token_file);
  WAVEPOOL_ASSIGN_OR_RETURN(std::string certificate, DataOrFile(user, "client-certificate", path));
  config.client_certificate_pem = certificate;
  WAVEPOOL_ASSIGN_OR_RETURN(std::string key, DataOrFile(user, "client-key", path));
  config.client_key_pem = key;
  if (config.client_certificate_pem.empty() != config.client_key_pem.empty()) {
    return absl::InvalidArgumentError(path +
                                      ": client-certificate and client-key: give both or neither");
  }
  return absl::OkStatus();
}

std::string Names(const std::map<std::string, Entry>& entries) {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries) names.push_back(name);
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

absl::StatusOr<ClientConfig> Build(const Kubeconfig& kubeconfig, std::string_view wanted) {
  const std::string context_name =
      wanted.empty() ? kubeconfig.current_context : std::string(wanted);
  if (context_name.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        kubeconfig.source,
        ": no current-context and no context given (contexts: ", Names(kubeconfig.contexts), ")"));
  }
  const auto context = kubeconfig.contexts.find(context_name);
  if (context == kubeconfig.contexts.end()) {
    return absl::NotFoundError(absl::StrCat(kubeconfig.source, ": context \"", context_name,
                                            "\" not found (contexts: ", Names(kubeconfig.contexts),
                                            ")"));
  }
  const std::string context_path =
      absl::StrCat(kubeconfig.source, ": contexts[", context_name, "].context");
  ClientConfig config;
  config.source = absl::StrCat(kubeconfig.source, " context ", context_name);
  WAVEPOOL_ASSIGN_OR_RETURN(std::string cluster_name,
                            StringField(context->second.value, "cluster", context_path));
  const auto cluster = kubeconfig.clusters.find(cluster_name);
  if (cluster == kubeconfig.clusters.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(context_path, ".cluster: cluster \"", cluster_name,
                     "\" not defined (clusters: ", Names(kubeconfig.clusters), ")"));
  }
  WAVEPOOL_RETURN_IF_ERROR(ApplyCluster(
      cluster->second, absl::StrCat(kubeconfig.source, ": clusters[", cluster_name, "].cluster"),
      config));
  WAVEPOOL_ASSIGN_OR_RETURN(std::string user_name,
                            StringField(context->second.value, "user", context_path));
  if (!user_name.empty()) {
    const auto user = kubeconfig.users.find(user_name);
    if (user == kubeconfig.users.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(context_path, ".user: user \"", user_name,
                       "\" not defined (users: ", Names(kubeconfig.users), ")"));
    }
    WAVEPOOL_RETURN_IF_ERROR(ApplyUser(
        user->second, absl::StrCat(kubeconfig.source, ": users[", user_name, "].user"), config));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::string ns,
                            StringField(context->second.value, "namespace", context_path));
  if (!ns.empty()) config.default_namespace = ns;
  return config;
}

std::string DirectoryOf(const std::string& path) {
  const fs::path parent = fs::absolute(fs::path(path)).parent_path();
  return parent.string();
}

}  // namespace

absl::StatusOr<ClientConfig> ParseKubeconfig(std::string_view text, std::string_view source,
                                             const std::string& base_dir,
                                             std::string_view context) {
  Kubeconfig kubeconfig;
  kubeconfig.source = std::string(source);
  WAVEPOOL_RETURN_IF_ERROR(MergeText(text, kubeconfig.source, base_dir, kubeconfig));
  return Build(kubeconfig, context);
}

absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("kubeconfig ", text.status().message()));
  return ParseKubeconfig(*text, absl::StrCat("kubeconfig ", path), DirectoryOf(path), context);
}

absl::StatusOr<ClientConfig> LoadDefaultConfig(const DefaultConfigOptions& options) {
  if (!options.explicit_path.empty()) return LoadKubeconfig(options.explicit_path, options.context);
  std::vector<std::string> looked_at;
  const char* env = std::getenv("KUBECONFIG");
  const std::string kubeconfig_env = options.kubeconfig_env.value_or(env ? env : "");
  if (!kubeconfig_env.empty()) {
    Kubeconfig merged;
    std::vector<std::string> found;
    for (const std::string& path :
         std::vector<std::string>(absl::StrSplit(kubeconfig_env, ':', absl::SkipEmpty()))) {
      absl::StatusOr<std::string> text = ReadFile(path);
      if (!text.ok()) continue;  // kubectl skips missing files in $KUBECONFIG
      WAVEPOOL_RETURN_IF_ERROR(
          MergeText(*text, absl::StrCat("kubeconfig ", path), DirectoryOf(path), merged));
      found.push_back(path);
    }
    if (!found.empty()) {
      merged.source = absl::StrCat("kubeconfig ", absl::StrJoin(found, ":"));
      return Build(merged, options.context);
    }
    looked_at.push_back("$KUBECONFIG (" + kubeconfig_env + ")");
  } else {
    const char* home_env = std::getenv("HOME");
    const std::string home = options.home.value_or(home_env ? home_env : "");
    if (!home.empty()) {
      const std::string path = (fs::path(home) / ".kube" / "config").string();
      if (fs::exists(path)) return LoadKubeconfig(path, options.context);
      looked_at.push_back(path);
    }
  }
  absl::StatusOr<ClientConfig> in_cluster = InClusterConfig(options.in_cluster);
  if (in_cluster.ok()) return in_cluster;
  looked_at.push_back(absl::StrCat("in-cluster (", in_cluster.status().message(), ")"));
  return absl::NotFoundError(absl::StrCat("no Kubernetes configuration found; looked at ",
                                          absl::StrJoin(looked_at, ", "), "; pass --kubeconfig"));
}

}  // namespace wavepool::kube
