#include "wavepool/kube/http_transport.h"

#include <openssl/ssl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cpprest/http_client.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/client.h"

namespace wavepool::kube {
namespace {

namespace http = web::http;
namespace http_client = web::http::client;

// A stream waits this long for its first byte or between two bytes when the request names no
// timeout: a watch with nothing to report stays silent (kube-apiserver ends watches after 30 to
// 60 minutes by default).
constexpr std::chrono::milliseconds kStreamIdleTimeout{3'600'000};

// A stream's timeout rounded up to a power of two seconds: each distinct timeout keeps a client of
// its own, and callers that jitter their watch timeouts (as client-go does) must not make a new
// one for every watch.
std::chrono::milliseconds StreamTimeout(std::chrono::milliseconds requested) {
  std::chrono::milliseconds rounded{1000};
  while (rounded < requested && rounded.count() < (INT64_MAX / 2)) rounded *= 2;
  return rounded;
}

// The token from bearer_token_file, read again when the file changes (stat before each request).
// Safe for concurrent use.
class TokenFile {
 public:
  explicit TokenFile(std::string path) : path_(std::move(path)) {}

  absl::StatusOr<std::string> Token() {
    struct stat info {};
    absl::MutexLock lock(&mu_);
    if (::stat(path_.c_str(), &info) != 0) return Fallback("cannot stat it");
    const Version version{info.st_mtim.tv_sec, info.st_mtim.tv_nsec,
                          static_cast<std::int64_t>(info.st_size),
                          static_cast<std::int64_t>(info.st_ino)};
    if (token_ && version == version_) return *token_;
    std::ifstream file(path_, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    if (!file) return Fallback("cannot read it");
    token_ = std::string(absl::StripAsciiWhitespace(text.str()));
    version_ = version;
    return *token_;
  }

 private:
  struct Version {
    std::int64_t seconds = 0, nanoseconds = 0, size = 0, inode = 0;
    bool operator==(const Version& other) const {
      return seconds == other.seconds && nanoseconds == other.nanoseconds && size == other.size &&
             inode == other.inode;
    }
  };

  // A rotation in progress may leave the file briefly missing: keep the last token.
  absl::StatusOr<std::string> Fallback(const char* problem) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (token_) return *token_;
    return absl::UnauthenticatedError(absl::StrCat("bearer token file ", path_, ": ", problem));
  }

  const std::string path_;
  absl::Mutex mu_;
  std::optional<std::string> token_ ABSL_GUARDED_BY(mu_);
  Version version_ ABSL_GUARDED_BY(mu_);
};

struct TlsMaterial {
  std::string ca_pem, certificate_pem, key_pem;
};

// Throws boost::system::system_error when a PEM block does not load.
void ConfigureTls(const TlsMaterial& tls, boost::asio::ssl::context& context) {
  if (!tls.ca_pem.empty()) {
    // Trust only the cluster's CA, as client-go does, not the system's store as well.
    SSL_CTX_set_cert_store(context.native_handle(), X509_STORE_new());
    context.add_certificate_authority(boost::asio::buffer(tls.ca_pem));
  }
  if (!tls.certificate_pem.empty()) {
    context.use_certificate_chain(boost::asio::buffer(tls.certificate_pem));
  }
  if (!tls.key_pem.empty()) {
    context.use_private_key(boost::asio::buffer(tls.key_pem), boost::asio::ssl::context::pem);
  }
}

// Loads each PEM field into a scratch context, so that a bad one fails here and not at the first
// request.
absl::Status CheckTls(const TlsMaterial& tls) {
  const std::pair<const char*, TlsMaterial> fields[] = {
      {"certificate_authority_pem", {tls.ca_pem, "", ""}},
      {"client_certificate_pem", {"", tls.certificate_pem, ""}},
      {"client_key_pem", {"", "", tls.key_pem}},
  };
  for (const auto& [field, material] : fields) {
    try {
      boost::asio::ssl::context context(boost::asio::ssl::context::sslv23_client);
      ConfigureTls(material, context);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": not a PEM block OpenSSL can load: ", e.what()));
    }
  }
  if (tls.certificate_pem.empty() != tls.key_pem.empty()) {
    return absl::InvalidArgumentError(
        "client_certificate_pem and client_key_pem: give both or neither");
  }
  return absl::OkStatus();
}

// A failed exchange, as the Transport contract names it.
absl::Status FromException(const std::exception& e, bool cancelled) {
  if (cancelled) return absl::CancelledError("stream cancelled");
  if (const auto* failure = dynamic_cast<const http::http_exception*>(&e)) {
    const std::error_code code = failure->error_code();
    if (code == std::errc::timed_out) {
      return absl::DeadlineExceededError(absl::StrCat("timed out: ", e.what()));
    }
    if (code == std::errc::operation_canceled) return absl::CancelledError(e.what());
  }
  if (absl::StrContains(absl::AsciiStrToLower(e.what()), "timed out")) {
    return absl::DeadlineExceededError(e.what());
  }
  return absl::UnavailableError(e.what());
}

// cpprest's message when the connection broke before the whole request was sent.
bool FailedWhileWriting(const absl::Status& status) {
  return absl::IsUnavailable(status) &&
         absl::StrContains(status.message(), "Failed to write request");
}

std::string ContentTypeOf(const http::http_response& response) {
  const auto it = response.headers().find(http::header_names::content_type);
  return it == response.headers().end() ? "" : it->second;
}

// The body of a streamed answer, a line at a time. Read in blocks of what has arrived, not byte
// by byte: cpprestsdk's read_line runs one task continuation per byte, which made reading watch
// events the informers' main cost.
class HttpLineReader : public LineReader {
 public:
  HttpLineReader(http::http_response response, pplx::cancellation_token_source cancel)
      : response_(std::move(response)),
        body_(response_.body().streambuf()),
        cancel_(std::move(cancel)) {}

  ~HttpLineReader() override { Cancel(); }

  absl::StatusOr<std::optional<std::string>> NextLine() override {
    for (;;) {
      if (cancelled_.load()) return absl::CancelledError("stream cancelled");
      if (std::optional<std::string> line = TakeLine()) return line;
      if (eof_) {
        if (start_ == pending_.size()) return std::optional<std::string>();
        std::string rest = pending_.substr(start_);
        start_ = pending_.size();
        return std::optional<std::string>(Trimmed(std::move(rest)));
      }
      try {
        ReadArrived();
      } catch (const std::exception& e) {
        return FromException(e, cancelled_.load());
      }
    }
  }

  // Cancelling the request's token closes its connection, which ends a blocked read.
  void Cancel() override {
    if (!cancelled_.exchange(true)) cancel_.cancel();
  }

 private:
  static constexpr std::size_t kBlockBytes = 64 * 1024;

  static std::string Trimmed(std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  }

  // The first complete line in pending_ from start_, without its end of line. Lines are taken
  // by moving start_, not by erasing them from pending_'s front: a block of many small events
  // would otherwise be shifted once per event.
  std::optional<std::string> TakeLine() {
    const std::size_t end = pending_.find('\n', std::max(start_, scanned_));
    if (end == std::string::npos) {
      scanned_ = pending_.size();
      return std::nullopt;
    }
    std::string line = pending_.substr(start_, end - start_);
    start_ = end + 1;
    return Trimmed(std::move(line));
  }

  // Waits for one byte, then takes whatever else has arrived with it. What was taken already is
  // dropped first, once per block.
  void ReadArrived() {
    pending_.erase(0, start_);
    scanned_ -= std::min(scanned_, start_);
    start_ = 0;
    std::uint8_t block[kBlockBytes];
    std::size_t got = body_.getn(block, 1).get();
    if (got == 0) {
      eof_ = true;
      return;
    }
    const std::size_t more = std::min<std::size_t>(body_.in_avail(), kBlockBytes - 1);
    if (more > 0) got += body_.getn(block + 1, more).get();
    pending_.append(reinterpret_cast<const char*>(block), got);
  }

  http::http_response response_;
  concurrency::streams::streambuf<std::uint8_t> body_;
  pplx::cancellation_token_source cancel_;
  std::atomic<bool> cancelled_{false};
  // Read but not yet returned; only NextLine's caller touches these.
  std::string pending_;
  std::size_t start_ = 0;    // pending_[0, start_) was returned already.
  std::size_t scanned_ = 0;  // pending_[start_, scanned_) holds no newline.
  bool eof_ = false;
};

class HttpTransport : public Transport {
 public:
  HttpTransport(const ClientConfig& config, TlsMaterial tls)
      : config_(config), tls_(std::move(tls)) {
    if (!config.bearer_token_file.empty()) {
      token_file_ = std::make_unique<TokenFile>(config.bearer_token_file);
    }
  }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    absl::StatusOr<HttpResponse> response = SendOnce(request);
    // A kept-alive connection the server has closed (it restarted, or its idle timeout struck)
    // fails while the request is written. The server cannot have acted on a request it did not
    // receive whole, so one more try on a fresh connection is safe for every method (Go's
    // net/http retries the same case).
    if (FailedWhileWriting(response.status())) response = SendOnce(request, /*fresh=*/true);
    return response;
  }

  absl::StatusOr<std::unique_ptr<LineReader>> Stream(const HttpRequest& request) override {
    absl::StatusOr<std::unique_ptr<LineReader>> reader = StreamOnce(request);
    if (FailedWhileWriting(reader.status())) reader = StreamOnce(request, /*fresh=*/true);
    return reader;
  }

 private:
  // `fresh`: on a new client, whose pool holds no connection from before.
  absl::StatusOr<HttpResponse> SendOnce(const HttpRequest& request, bool fresh = false) {
    WAVEPOOL_ASSIGN_OR_RETURN(http::http_request message, Message(request));
    const std::chrono::milliseconds timeout =
        request.timeout.count() > 0 ? request.timeout : config_.timeout;
    try {
      http::http_response response = ClientFor(timeout, fresh)->request(message).get();
      const std::vector<unsigned char> body = response.extract_vector().get();
      return HttpResponse{response.status_code(), ContentTypeOf(response),
                          std::string(body.begin(), body.end())};
    } catch (const std::exception& e) {
      return FromException(e, /*cancelled=*/false);
    }
  }

  absl::StatusOr<std::unique_ptr<LineReader>> StreamOnce(const HttpRequest& request,
                                                         bool fresh = false) {
    WAVEPOOL_ASSIGN_OR_RETURN(http::http_request message, Message(request));
    const std::chrono::milliseconds timeout =
        request.timeout.count() > 0 ? StreamTimeout(request.timeout) : kStreamIdleTimeout;
    pplx::cancellation_token_source cancel;
    try {
      http::http_response response =
          ClientFor(timeout, fresh)->request(message, cancel.get_token()).get();
      const int status = response.status_code();
      if (status < 200 || status >= 300) {
        const std::vector<unsigned char> body = response.extract_vector().get();
        return ApiErrorFromResponse(status, std::string(body.begin(), body.end()),
                                    absl::StrCat(request.method, " ", request.target));
      }
      return std::unique_ptr<LineReader>(
          std::make_unique<HttpLineReader>(std::move(response), std::move(cancel)));
    } catch (const std::exception& e) {
      return FromException(e, /*cancelled=*/false);
    }
  }

  absl::StatusOr<http::http_request> Message(const HttpRequest& request) {
    http::http_request message(request.method);
    try {
      message.set_request_uri(web::uri(request.target));
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("request target \"", request.target, "\": ", e.what()));
    }
    http::http_headers& headers = message.headers();
    headers.add(http::header_names::accept, request.accept);
    headers.add(http::header_names::user_agent, config_.user_agent);
    std::string token = config_.bearer_token;
    if (token_file_) {
      WAVEPOOL_ASSIGN_OR_RETURN(std::string from_file, token_file_->Token());
      token = std::move(from_file);
    }
    if (!token.empty()) headers.add(http::header_names::authorization, "Bearer " + token);
    WarnOfExposedCredentials(!token.empty());
    if (!request.body.empty() || !request.content_type.empty()) {
      message.set_body(request.body, request.content_type);
    }
    return message;
  }

  // Says once per transport (a client has one) what an eavesdropper on the way to the API server
  // could do, before the first request that lets it: a token in clear text over http, or any
  // credentials to a server whose certificate is not checked.
  void WarnOfExposedCredentials(bool sends_token) {
    const std::string where =
        absl::StrCat("kubernetes client for ", config_.server,
                     config_.source.empty() ? "" : " (from " + config_.source + ")");
    if (sends_token && !https_ && !warned_plain_http_.exchange(true)) {
      Warn(absl::StrCat("WARNING: ", where,
                        ": sends its bearer token over plain http; anyone on the network path can "
                        "read it and act with its rights. Use an https:// server."));
    }
    if (https_ && config_.insecure_skip_tls_verify && !warned_insecure_tls_.exchange(true)) {
      Warn(absl::StrCat("WARNING: ", where,
                        ": insecure-skip-tls-verify is set, so the server's certificate is not "
                        "checked; anyone on the network path can pose as the API server and "
                        "collect this client's credentials. Give its CA instead."));
    }
  }

  void Warn(const std::string& line) const {
    if (config_.log) {
      config_.log(line);
    } else {
      std::cerr << line << "\n";
    }
  }

  // One client per timeout, each kept for the transport's lifetime so that its connections are
  // reused.
  std::shared_ptr<http_client::http_client> ClientFor(std::chrono::milliseconds timeout,
                                                      bool fresh) {
    absl::MutexLock lock(&mu_);
    std::shared_ptr<http_client::http_client>& client = clients_[timeout.count()];
    // Replacing a client leaves its requests in flight running: cpprest's requests hold its
    // pipeline, and its pooled connections close when the last of them ends.
    if (!client || fresh) {
      http_client::http_client_config client_config;
      client_config.set_timeout(timeout);
      client_config.set_validate_certificates(!config_.insecure_skip_tls_verify);
      const TlsMaterial tls = tls_;
      client_config.set_ssl_context_callback(
          [tls](boost::asio::ssl::context& context) { ConfigureTls(tls, context); });
      client = std::make_shared<http_client::http_client>(web::uri(config_.server), client_config);
    }
    return client;
  }

  const ClientConfig config_;
  const TlsMaterial tls_;
  const bool https_ = absl::StartsWith(config_.server, "https://");
  std::atomic<bool> warned_plain_http_{false};
  std::atomic<bool> warned_insecure_tls_{false};
  std::unique_ptr<TokenFile> token_file_;
  absl::Mutex mu_;
  std::map<std::int64_t, std::shared_ptr<http_client::http_client>> clients_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> NewHttpTransport(const ClientConfig& config) {
  const bool https = absl::StartsWith(config.server, "https://");
  if (!https && !absl::StartsWith(config.server, "http://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("server: must be an http:// or https:// URL, got \"", config.server, "\"",
                     config.source.empty() ? "" : " (from " + config.source + ")"));
  }
  try {
    const web::uri uri(config.server);
    if (uri.host().empty()) throw std::invalid_argument("no host");
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("server: \"", config.server, "\" is not a URL: ", e.what()));
  }
  TlsMaterial tls{config.certificate_authority_pem, config.client_certificate_pem,
                  config.client_key_pem};
  WAVEPOOL_RETURN_IF_ERROR(CheckTls(tls));
  return std::unique_ptr<Transport>(std::make_unique<HttpTransport>(config, std::move(tls)));
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientConfig& config) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport, NewHttpTransport(config));
  return std::make_unique<Client>(config, std::move(transport));
}

}  // namespace wavepool::kube
