// The Kubernetes REST API for any resource, objects as JSON: get, list, create, update (and its
// status subresource), patch, delete with preconditions, and watch. Typed access for the kinds
// wavepool uses is layered on top (typed_client.h).
//
// Every failure is a status that keeps the API server's answer (api_error.h: IsNotFound(s),
// IsConflict(s), ...). Client is safe for concurrent use.
#ifndef WAVEPOOL_KUBE_CLIENT_H_
#define WAVEPOOL_KUBE_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/kube/config.h"
#include "wavepool/kube/resource.h"
#include "wavepool/kube/transport.h"
#include "wavepool/kube/watch.h"

namespace wavepool::kube {

struct ListOptions {
  std::string label_selector;  // "app=x,tier!=db"
  std::string field_selector;  // "metadata.name=x"
  // List: "" for the most recent state, "0" for any. Watch: events after this version.
  std::string resource_version;
  std::int64_t limit = 0;  // page size; 0: everything in one answer
  std::string continue_token;
  // Watch: the server ends the stream after this long (timeoutSeconds); nullopt: its default.
  std::optional<std::chrono::seconds> timeout;
  bool allow_watch_bookmarks = true;
};

struct ObjectList {
  std::string resource_version;  // of the list: watch from here
  std::string continue_token;    // non-empty when more pages follow
  std::vector<nlohmann::json> items;
};

enum class PatchType {
  kMerge,           // application/merge-patch+json (RFC 7386)
  kStrategicMerge,  // application/strategic-merge-patch+json (built-in kinds only)
  kJson,            // application/json-patch+json (RFC 6902)
};

struct DeleteOptions {
  std::string precondition_uid;               // delete only this incarnation
  std::string precondition_resource_version;  // delete only if unchanged
  std::optional<std::int64_t> grace_period_seconds;
  std::string propagation_policy;  // "", "Background", "Foreground", "Orphan"
};

class Client {
 public:
  // `transport` carries the requests; `config` names the server and the default namespace.
  Client(ClientConfig config, std::unique_ptr<Transport> transport);

  // A client over HTTP(S) to config.server (NewHttpTransport).
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientConfig& config);

  const ClientConfig& config() const { return config_; }

  absl::StatusOr<nlohmann::json> Get(const ResourceType& type, std::string_view ns,
                                     std::string_view name);

  // One page (or everything, when options.limit is 0).
  absl::StatusOr<ObjectList> List(const ResourceType& type, std::string_view ns,
                                  const ListOptions& options = {});

  // Every page, following continue tokens; the list's resourceVersion is the first page's.
  absl::StatusOr<ObjectList> ListAll(const ResourceType& type, std::string_view ns,
                                     ListOptions options = {});

  // The namespace is the object's metadata.namespace (required for namespaced types).
  absl::StatusOr<nlohmann::json> Create(const ResourceType& type, const nlohmann::json& object);

  // PUT; metadata.resourceVersion makes it conditional (IsConflict when the object changed).
  absl::StatusOr<nlohmann::json> Update(const ResourceType& type, const nlohmann::json& object);
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceType& type,
                                              const nlohmann::json& object);

  // `subresource` is "" or "status".
  absl::StatusOr<nlohmann::json> Patch(const ResourceType& type, std::string_view ns,
                                       std::string_view name, PatchType patch_type,
                                       const nlohmann::json& patch,
                                       std::string_view subresource = "");

  absl::Status Delete(const ResourceType& type, std::string_view ns, std::string_view name,
                      const DeleteOptions& options = {});

  absl::StatusOr<std::unique_ptr<WatchStream>> Watch(const ResourceType& type, std::string_view ns,
                                                     const ListOptions& options);

 private:
  ClientConfig config_;
  std::unique_ptr<Transport> transport_;
};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_CLIENT_H_
