// How the ranks of a gang find each other: a c10d store that every rank reaches (a TCPStore
// served by rank 0 — on Kubernetes behind the gang's headless Service —, or a file for processes
// on one machine), and a rendezvous that waits until every rank has announced itself.
#ifndef WAVEPOOL_RUNTIME_RENDEZVOUS_H_
#define WAVEPOOL_RUNTIME_RENDEZVOUS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "absl/status/statusor.h"
#include "wavepool/base/clock.h"

namespace wavepool::runtime {

// Where the store is: "tcp://HOST:PORT" (HOST a name, an IPv4 address or a bracketed IPv6
// address) or "file://PATH" (an absolute path). Plain value.
struct StoreAddress {
  enum class Kind { kTcp, kFile };
  Kind kind = Kind::kTcp;
  std::string host;        // kTcp
  std::uint16_t port = 0;  // kTcp, >= 1
  std::string path;        // kFile

  std::string ToString() const;
};

// InvalidArgument naming what is wrong: "--store: 'tcp://h' has no port (tcp://HOST:PORT or
// file://PATH)".
absl::StatusOr<StoreAddress> ParseStoreAddress(std::string_view text);

using StorePtr = c10::intrusive_ptr<c10d::Store>;

// A store in this process's memory, for a world of one.
StorePtr LocalStore();

// Connects rank `rank` of `world_size` to the store (rank 0 serves a TCP store), announces it and
// waits until every rank has. Keys live under "wavepool/" so a store may be shared with nothing
// else of ours. DeadlineExceeded after `timeout`, naming the ranks that never arrived:
//   "rendezvous at tcp://job-g0-0.job-g0.ns.svc:29500: ranks 2, 3 of 4 did not arrive within
//    300 s"
// (a rank that cannot reach rank 0's store at all names rank 0). InvalidArgument for a rank out of
// [0, world_size).
// `stopped`, when set, is asked while waiting: true ends the wait with Cancelled (a SIGTERM).
// The other ranks are other processes, seen only through the store, so the wait reads the store
// every 20 ms; `clock` paces those reads and times `timeout` (a simulated one in tests).
absl::StatusOr<StorePtr> Rendezvous(const StoreAddress& address, int rank, int world_size,
                                    std::chrono::milliseconds timeout,
                                    const std::function<bool()>& stopped = {},
                                    Clock& clock = RealClock());

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_RENDEZVOUS_H_
