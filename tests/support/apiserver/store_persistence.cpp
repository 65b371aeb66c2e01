// Durable state: one JSON file per object under <data_dir>/objects/<group resource>/<namespace or
// _cluster>/<name>.json, and the counter in <data_dir>/resource_version. Each file is written to a
// temporary name and renamed over the old one, so that a crash leaves either version, never half
// of one. (No fsync: durable across a process crash, which is what a restarted test server needs,
// not across a power cut.)
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/store_core.h"

namespace wavepool::testing::apiserver::store_internal {
namespace {

namespace fs = std::filesystem;

constexpr char kClusterScope[] = "_cluster";  // namespaces are DNS labels: no '_' in them

fs::path ObjectPath(const StoreCore& core, const std::string& resource, const std::string& key) {
  const std::size_t slash = key.find('/');
  const std::string ns = slash == std::string::npos ? kClusterScope : key.substr(0, slash);
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  return fs::path(core.options.data_dir) / "objects" / resource / ns / (name + ".json");
}

absl::Status WriteAtomically(const fs::path& path, const std::string& content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", path.parent_path().string(), ": ", ec.message()));
  }
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", temporary.string()));
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot rename ", temporary.string(), " to ",
                                            path.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::DataLossError(absl::StrCat("cannot read ", path.string()));
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

absl::Status LoadObject(StoreCore& core, const fs::path& file, const std::string& resource,
                        const std::string& scope) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
  absl::StatusOr<std::string> text = ReadFile(file);
  if (!text.ok()) return text.status();
  nlohmann::json object = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  const std::string name = file.stem().string();
  if (object.is_discarded() || !object.is_object() || MetaString(object, "name") != name) {
    return absl::DataLossError(absl::StrCat("corrupt object file ", file.string(),
                                            ": expected a JSON object whose metadata.name is \"",
                                            name, "\""));
  }
  std::int64_t rv = 0;
  if (!absl::SimpleAtoi(MetaString(object, "resourceVersion"), &rv)) {
    return absl::DataLossError(absl::StrCat("corrupt object file ", file.string(),
                                            ": metadata.resourceVersion is not a number"));
  }
  core.resource_version = std::max(core.resource_version, rv);
  const std::string key = scope == kClusterScope ? name : absl::StrCat(scope, "/", name);
  core.by_uid[MetaString(object, "uid")] = {resource, key};
  core.objects[resource][key] = std::move(object);
  return absl::OkStatus();
}

absl::Status LoadPersistedUnchecked(StoreCore& core) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);

}  // namespace

absl::Status PersistObject(const StoreCore& core, const std::string& resource,
                           const std::string& key, const nlohmann::json& object) {
  if (core.options.data_dir.empty()) return absl::OkStatus();
  return WriteAtomically(ObjectPath(core, resource, key), object.dump());
}

absl::Status PersistRemoval(const StoreCore& core, const std::string& resource,
                            const std::string& key) {
  if (core.options.data_dir.empty()) return absl::OkStatus();
  std::error_code ec;
  fs::remove(ObjectPath(core, resource, key), ec);
  if (ec) {
    return absl::InternalError(absl::StrCat(
        "cannot remove ", ObjectPath(core, resource, key).string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status PersistResourceVersion(const StoreCore& core, std::int64_t resource_version) {
  if (core.options.data_dir.empty()) return absl::OkStatus();
  return WriteAtomically(fs::path(core.options.data_dir) / "resource_version",
                         std::to_string(resource_version));
}

namespace {

absl::Status LoadPersistedUnchecked(StoreCore& core) {
  const fs::path root(core.options.data_dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot create ", root.string(), ": ", ec.message()));
  const fs::path counter = root / "resource_version";
  if (fs::exists(counter)) {
    absl::StatusOr<std::string> text = ReadFile(counter);
    if (!text.ok()) return text.status();
    std::int64_t rv = 0;
    if (!absl::SimpleAtoi(*text, &rv) || rv < 1) {
      return absl::DataLossError(absl::StrCat("corrupt counter file ", counter.string(),
                                              ": expected a positive integer, got \"", *text,
                                              "\""));
    }
    core.resource_version = rv;
  }
  const fs::path objects = root / "objects";
  if (!fs::exists(objects)) return absl::OkStatus();
  for (const fs::directory_entry& resource : fs::directory_iterator(objects)) {
    if (!resource.is_directory()) continue;
    for (const fs::directory_entry& scope : fs::directory_iterator(resource.path())) {
      if (!scope.is_directory()) continue;
      for (const fs::directory_entry& file : fs::directory_iterator(scope.path())) {
        if (file.path().extension() != ".json") continue;  // *.tmp: a write cut short
        absl::Status s = LoadObject(core, file.path(), resource.path().filename().string(),
                                    scope.path().filename().string());
        if (!s.ok()) return s;
      }
    }
  }
  core.history_floor = core.resource_version;
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadPersisted(StoreCore& core) {
  if (core.options.data_dir.empty()) return absl::OkStatus();
  try {  // directory iteration throws on I/O errors
    return LoadPersistedUnchecked(core);
  } catch (const fs::filesystem_error& e) {
    return absl::InternalError(absl::StrCat("cannot read ", core.options.data_dir, ": ", e.what()));
  }
}

}  // namespace wavepool::testing::apiserver::store_internal
