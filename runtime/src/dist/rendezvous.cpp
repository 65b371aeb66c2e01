// The rendezvous: every rank announces itself under wavepool/rank/<r>; each waits until all have,
// and on timeout names those that did not (c10d's own wait would only say "timeout").
#include "wavepool/runtime/rendezvous.h"

#include <string>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "torch_compat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

constexpr std::chrono::milliseconds kPollInterval{20};

constexpr std::chrono::seconds kGrace{3};  // how long rank 0 waits for the others to hear it
constexpr std::string_view kFailedKey = "rendezvous-failed";
constexpr std::string_view kAcknowledgedKey = "rendezvous-failed-read";

std::string Seconds(std::chrono::milliseconds duration) {
  return absl::StrFormat("%g s", static_cast<double>(duration.count()) / 1000.0);
}

std::string RankKey(int rank) { return absl::StrCat("rank/", rank); }

// The failure rank 0 announced, or NotFound.
absl::StatusOr<std::string> Failure(c10d::Store& store) {
  try {
    if (!store.check({std::string(kFailedKey)})) return absl::NotFoundError("no failure");
    const std::vector<std::uint8_t> text = store.get(std::string(kFailedKey));
    return std::string(text.begin(), text.end());
  } catch (const std::exception&) {
    return absl::NotFoundError("no failure");
  }
}

void Acknowledge(c10d::Store& store) {
  try {
    store.add(std::string(kAcknowledgedKey), 1);
  } catch (const std::exception&) {  // rank 0 is gone already: nothing to tell it
  }
}

// Rank 0 publishes the failure and waits (at most kGrace) until the `arrived` other ranks read it.
void Announce(c10d::Store& store, const std::string& message, int arrived, Clock& clock) {
  try {
    store.set(std::string(kFailedKey), std::vector<std::uint8_t>(message.begin(), message.end()));
    const MonotonicTime until = clock.Now() + kGrace;
    while (store.add(std::string(kAcknowledgedKey), 0) < arrived && clock.Now() < until) {
      clock.SleepFor(kPollInterval);
    }
  } catch (const std::exception&) {
  }
}

absl::StatusOr<StorePtr> Connect(const StoreAddress& address, int rank, int world_size,
                                 std::chrono::milliseconds timeout) {
  absl::StatusOr<StorePtr> store =
      address.kind == StoreAddress::Kind::kTcp
          ? compat::ConnectTcpStore(address.host, address.port, rank == 0, world_size, timeout)
          : compat::OpenFileStore(address.path, world_size, timeout);
  if (!store.ok() && rank != 0 && address.kind == StoreAddress::Kind::kTcp) {
    return absl::DeadlineExceededError(absl::StrCat(
        "rendezvous at ", address.ToString(), ": rank 0 of ", world_size, " did not arrive within ",
        Seconds(timeout), " (", store.status().message(), ")"));
  }
  return store;
}

// The ranks whose key is not in the store yet.
absl::StatusOr<std::vector<int>> Missing(c10d::Store& store, int world_size) {
  std::vector<int> missing;
  try {
    for (int r = 0; r < world_size; ++r) {
      if (!store.check({RankKey(r)})) missing.push_back(r);
    }
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("reading the store: ", compat::ErrorText(e)));
  }
  return missing;
}

}  // namespace

StorePtr LocalStore() { return c10::make_intrusive<c10d::HashStore>(); }

absl::StatusOr<StorePtr> Rendezvous(const StoreAddress& address, int rank, int world_size,
                                    std::chrono::milliseconds timeout,
                                    const std::function<bool()>& stopped, Clock& clock) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in [0, world size ", world_size, ")"));
  }
  const auto stop_requested = [&] { return stopped && stopped(); };
  const auto stopped_error = [&] {
    return absl::CancelledError(
        absl::StrCat("stopped while waiting at ", address.ToString(), " for ranks to arrive"));
  };
  const MonotonicTime deadline = clock.Now() + timeout;
  absl::StatusOr<StorePtr> connected = Connect(address, rank, world_size, timeout);
  // A stop request interrupts the connection's system calls: that is the stop, not a fault.
  if (!connected.ok() && stop_requested()) return stopped_error();
  WAVEPOOL_RETURN_IF_ERROR(connected.status());
  StorePtr store = compat::WithPrefix("wavepool", *connected);
  try {
    const std::string value = std::to_string(rank);
    store->set(RankKey(rank), std::vector<uint8_t>(value.begin(), value.end()));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("rendezvous at ", address.ToString(),
                                               ": announcing rank ", rank, ": ",
                                               compat::ErrorText(e)));
  }
  // The first read that waits for the store's answer is bounded: c10d's TCP client reads without
  // a time limit until an operation with a timeout sets one (on the socket, for every later read
  // too), so a server that accepts the connection and never answers (a wrong address reaching
  // another service) would hold this rank forever with `check` alone. Waiting for this rank's own
  // key, just set, answers at once from a real store; the whole timeout, so that a slow one is
  // never taken for a silent one.
  try {
    store->wait({RankKey(rank)}, timeout);
  } catch (const std::exception& e) {
    if (stop_requested()) return stopped_error();
    return absl::DeadlineExceededError(absl::StrCat(
        "rendezvous at ", address.ToString(), ": the store did not answer within ",
        Seconds(timeout), " (is it a wavepool rank 0's store?): ", compat::ErrorText(e)));
  }
  // Rank 0 serves the store, so it decides when the rendezvous failed and tells the others
  // (under "failed"), staying until they have read it: a rank whose server vanished could only
  // say that the store broke, not which ranks were missing.
  const MonotonicTime give_up = rank == 0 ? deadline : deadline + kGrace;
  while (true) {
    absl::StatusOr<std::vector<int>> missing = Missing(*store, world_size);
    if (!missing.ok()) {
      // A gang told to stop loses rank 0's store as rank 0 stops: that is the stop, not a fault.
      if (stop_requested()) return stopped_error();
      return absl::UnavailableError(absl::StrCat("rendezvous at ", address.ToString(),
                                                 ": rank 0's store went away (",
                                                 missing.status().message(), ")"));
    }
    if (missing->empty()) return store;
    if (stop_requested()) return stopped_error();
    if (absl::StatusOr<std::string> failed = Failure(*store); failed.ok()) {
      Acknowledge(*store);
      return absl::DeadlineExceededError(*failed);
    }
    if (clock.Now() >= give_up) {
      const std::string message =
          absl::StrCat("rendezvous at ", address.ToString(), ": rank",
                       missing->size() > 1 ? "s " : " ", absl::StrJoin(*missing, ", "), " of ",
                       world_size, " did not arrive within ", Seconds(timeout));
      if (rank == 0) {
        Announce(*store, message, world_size - static_cast<int>(missing->size()) - 1, clock);
      }
      return absl::DeadlineExceededError(message);
    }
    clock.SleepFor(kPollInterval);
  }
}

}  // namespace wavepool::runtime
