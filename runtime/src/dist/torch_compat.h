// The one place where LibTorch 1.13 (Debian, CPU) and LibTorch 2.x (CUDA) differ for the runtime:
// c10d stores, process groups held by their concrete types, work handles, and errors. Everything
// else in the runtime uses the API both versions share.
//
// Thread safety: the functions are free of state; what they return follows c10d's rules (a store
// and a process group are safe for concurrent use; a Work is waited on by one thread).
#ifndef WAVEPOOL_RUNTIME_SRC_DIST_TORCH_COMPAT_H_
#define WAVEPOOL_RUNTIME_SRC_DIST_TORCH_COMPAT_H_

#include <chrono>
#include <cstdint>
#include <string>

// ProcessGroupGloo.hpp declares the class only under USE_C10D_GLOO. LibTorch builds with Gloo on
// Linux (1.13 and 2.x); Debian's CMake config passes the definition on, others may not.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace wavepool::runtime::compat {

using StorePtr = c10::intrusive_ptr<c10d::Store>;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;
// Held by its concrete type: in LibTorch 2.x ProcessGroupGloo is a Backend, no longer a
// ProcessGroup, and the collectives are called on it directly.
using GlooGroupPtr = c10::intrusive_ptr<c10d::ProcessGroupGloo>;

// A TCPStore: the server (rank 0) listens on `port` on every interface; every rank, the server
// too, connects to host:port. Unavailable when the server cannot be reached within `timeout`.
absl::StatusOr<StorePtr> ConnectTcpStore(const std::string& host, std::uint16_t port,
                                         bool is_server, int world_size,
                                         std::chrono::milliseconds timeout);
// A FileStore on `path` (a local or shared file system) for `world_size` processes.
absl::StatusOr<StorePtr> OpenFileStore(const std::string& path, int world_size,
                                       std::chrono::milliseconds timeout);
// Keys of `store` under "<prefix>/".
StorePtr WithPrefix(const std::string& prefix, StorePtr store);

// A Gloo process group of `size` processes meeting in `store`, over TCP on the address this host
// resolves to (loopback when nothing else). Blocks until every member has joined.
absl::StatusOr<GlooGroupPtr> MakeGlooGroup(StorePtr store, int rank, int size,
                                           std::chrono::milliseconds timeout);

// Waits for `work`; a failed or timed-out collective becomes Unavailable naming `what` and
// c10d's reason (a peer that died closes its connections, which Gloo reports here).
absl::Status Wait(const WorkPtr& work, std::chrono::milliseconds timeout, const std::string& what);

// LibTorch's own exception text without its C++ backtrace (the first line that matters).
std::string ErrorText(const std::exception& error);

}  // namespace wavepool::runtime::compat

#endif  // WAVEPOOL_RUNTIME_SRC_DIST_TORCH_COMPAT_H_
