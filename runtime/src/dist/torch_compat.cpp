#include "torch_compat.h"

#include <exception>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "file_store_file.h"

namespace wavepool::runtime::compat {

std::string ErrorText(const std::exception& error) {
  // c10::Error::what() appends a backtrace after the message; what_without_backtrace() exists in
  // both 1.13 and 2.x.
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) {
    std::string_view text = c10_error->what_without_backtrace();
    const std::size_t end = text.find('\n');
    return std::string(end == std::string_view::npos ? text : text.substr(0, end));
  }
  std::string_view text = error.what();
  const std::size_t end = text.find('\n');
  return std::string(end == std::string_view::npos ? text : text.substr(0, end));
}

absl::StatusOr<StorePtr> ConnectTcpStore(const std::string& host, std::uint16_t port,
                                         bool is_server, int world_size,
                                         std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = port;
  options.isServer = is_server;
  options.numWorkers = static_cast<std::size_t>(world_size);
  // Waiting for the workers is the rendezvous' job (rendezvous.h), which names the ranks that
  // did not arrive; c10d would only time out.
  options.waitWorkers = false;
  options.timeout = timeout;
  try {
    return StorePtr(c10::make_intrusive<c10d::TCPStore>(host, options));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("store tcp://", host, ":", port,
                                               is_server ? " (serving)" : "", ": ", ErrorText(e)));
  }
}

absl::StatusOr<StorePtr> OpenFileStore(const std::string& path, int world_size,
                                       std::chrono::milliseconds timeout) {
  // Its messages name the file already.
  if (absl::Status s = CheckFileStoreFile(path, timeout); !s.ok()) return s;
  try {
    auto store = c10::make_intrusive<c10d::FileStore>(path, world_size);
    store->setTimeout(timeout);
    return StorePtr(store);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("store file://", path, ": ", ErrorText(e)));
  }
}

StorePtr WithPrefix(const std::string& prefix, StorePtr store) {
  return c10::make_intrusive<c10d::PrefixStore>(prefix, std::move(store));
}

absl::StatusOr<GlooGroupPtr> MakeGlooGroup(StorePtr store, int rank, int size,
                                           std::chrono::milliseconds timeout) {
  try {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("joining a Gloo group of ", size, " as member ", rank, ": ", ErrorText(e)));
  }
}

absl::Status Wait(const WorkPtr& work, std::chrono::milliseconds timeout, const std::string& what) {
  try {
    if (!work->wait(timeout)) {
      return absl::DeadlineExceededError(
          absl::StrCat(what, ": not done within ", timeout.count(), " ms"));
    }
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(what, ": ", ErrorText(e)));
  }
}

}  // namespace wavepool::runtime::compat
