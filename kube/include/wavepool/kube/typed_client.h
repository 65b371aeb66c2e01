// Typed access to the kinds wavepool uses: TypedClient<T> is the JSON Client (client.h) with
// objects decoded into T and encoded from it.
//
//   TypedClient<Pod> pods(&client);
//   absl::StatusOr<Pod> pod = pods.Get("team-a", "vgg-worker-0");
//   pod->metadata.labels["wavepool.dev/wave"] = "2";
//   absl::StatusOr<Pod> updated = pods.Update(*pod);   // kube::IsConflict: read again, retry
//
// T is one of Pod, Node, Namespace, ConfigMap, Event, Lease (core_types.h), or a type whose
// ResourceTraits<T> another library specialises (wavepool/api/kube_resources.h does for
// api::TrainingJob and api::GpuNode); ResourceTraits<T> names its ResourceType. Errors are the
// Client's; an answer that does not decode as T keeps the decoder's status (naming the object
// and field).
//
// A TypedClient borrows its Client, which must outlive it; it is as thread-safe as the Client.
#ifndef WAVEPOOL_KUBE_TYPED_CLIENT_H_
#define WAVEPOOL_KUBE_TYPED_CLIENT_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/core_types.h"
#include "wavepool/kube/resource.h"

namespace wavepool::kube {

template <typename T>
struct ResourceTraits;  // static const ResourceType& Type(); specialised per T

template <>
struct ResourceTraits<Pod> {
  static const ResourceType& Type() { return kPods; }
};
template <>
struct ResourceTraits<Node> {
  static const ResourceType& Type() { return kNodes; }
};
template <>
struct ResourceTraits<Namespace> {
  static const ResourceType& Type() { return kNamespaces; }
};
template <>
struct ResourceTraits<ConfigMap> {
  static const ResourceType& Type() { return kConfigMaps; }
};
template <>
struct ResourceTraits<Event> {
  static const ResourceType& Type() { return kEvents; }
};
template <>
struct ResourceTraits<Lease> {
  static const ResourceType& Type() { return kLeases; }
};

// One page of a typed list.
template <typename T>
struct TypedList {
  std::string resource_version;  // watch from here
  std::string continue_token;    // non-empty when more pages follow
  std::vector<T> items;
};

template <typename T>
class TypedClient {
 public:
  // REQUIRES: `client` outlives this TypedClient.
  explicit TypedClient(Client* client) : client_(client) {}

  absl::StatusOr<T> Get(std::string_view ns, std::string_view name) {
    return Decode(client_->Get(Type(), ns, name));
  }

  // One page (or everything when options.limit is 0).
  absl::StatusOr<TypedList<T>> List(std::string_view ns, const ListOptions& options = {}) {
    return DecodeList(client_->List(Type(), ns, options));
  }

  // Every page (Client::ListAll).
  absl::StatusOr<TypedList<T>> ListAll(std::string_view ns, const ListOptions& options = {}) {
    return DecodeList(client_->ListAll(Type(), ns, options));
  }

  absl::StatusOr<T> Create(const T& object) {
    return Decode(client_->Create(Type(), ToJson(object)));
  }

  // Conditional on metadata.resourceVersion when it is set (IsConflict when the object changed).
  absl::StatusOr<T> Update(const T& object) {
    return Decode(client_->Update(Type(), ToJson(object)));
  }

  absl::StatusOr<T> UpdateStatus(const T& object) {
    return Decode(client_->UpdateStatus(Type(), ToJson(object)));
  }

  absl::StatusOr<T> Patch(std::string_view ns, std::string_view name, PatchType patch_type,
                          const nlohmann::json& patch, std::string_view subresource = "") {
    return Decode(client_->Patch(Type(), ns, name, patch_type, patch, subresource));
  }

  absl::Status Delete(std::string_view ns, std::string_view name,
                      const DeleteOptions& options = {}) {
    return client_->Delete(Type(), ns, name, options);
  }

 private:
  static const ResourceType& Type() { return ResourceTraits<T>::Type(); }

  static absl::StatusOr<T> Decode(absl::StatusOr<nlohmann::json> json) {
    if (!json.ok()) return json.status();
    return T::FromJson(*json);
  }

  static absl::StatusOr<TypedList<T>> DecodeList(absl::StatusOr<ObjectList> list) {
    if (!list.ok()) return list.status();
    TypedList<T> typed{std::move(list->resource_version), std::move(list->continue_token), {}};
    typed.items.reserve(list->items.size());
    for (const nlohmann::json& item : list->items) {
      WAVEPOOL_ASSIGN_OR_RETURN(T object, T::FromJson(item));
      typed.items.push_back(std::move(object));
    }
    return typed;
  }

  Client* client_;
};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_TYPED_CLIENT_H_
