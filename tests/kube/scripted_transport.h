// A Transport that answers from a script and records every request: the boundary of the client
// library, faked for unit tests.
//
//   auto transport = std::make_unique<ScriptedTransport>();
//   ScriptedTransport* script = transport.get();
//   script->Answer(200, R"({"kind":"Pod", ...})");
//   Client client(ClientConfig{}, std::move(transport));
//
// Safe for concurrent use; answers are handed out in the order they were scripted.
#ifndef WAVEPOOL_TESTS_KUBE_SCRIPTED_TRANSPORT_H_
#define WAVEPOOL_TESTS_KUBE_SCRIPTED_TRANSPORT_H_

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/transport.h"

namespace wavepool::kube::testing {

// Lines handed out one by one, then the end of the stream (or `end`, when it is an error).
class ScriptedLineReader : public LineReader {
 public:
  ScriptedLineReader(std::vector<std::string> lines, absl::Status end)
      : lines_(lines.begin(), lines.end()), end_(std::move(end)) {}

  absl::StatusOr<std::optional<std::string>> NextLine() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return absl::CancelledError("stream cancelled");
    if (lines_.empty()) {
      if (!end_.ok()) return end_;
      return std::optional<std::string>();
    }
    std::string line = std::move(lines_.front());
    lines_.pop_front();
    return std::optional<std::string>(std::move(line));
  }

  void Cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }

 private:
  std::mutex mu_;
  std::deque<std::string> lines_;
  absl::Status end_;
  bool cancelled_ = false;
};

class ScriptedTransport : public Transport {
 public:
  // The next Send answers with this status and body.
  void Answer(int status, std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    answers_.push_back(HttpResponse{status, "application/json", std::move(body)});
  }
  // The next Send fails without an answer.
  void Fail(absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    answers_.push_back(std::move(status));
  }
  // The next Stream answers 200 with these lines, then ends with `end` (OK: a clean end).
  void StreamLines(std::vector<std::string> lines, absl::Status end = absl::OkStatus()) {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.push_back(std::make_pair(std::move(lines), std::move(end)));
  }

  std::vector<HttpRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  HttpRequest last_request() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.empty() ? HttpRequest{} : requests_.back();
  }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (answers_.empty()) {
      return absl::InternalError("scripted transport: no answer left for " + request.target);
    }
    absl::StatusOr<HttpResponse> answer = std::move(answers_.front());
    answers_.pop_front();
    return answer;
  }

  // A scripted error answer (Answer with a non-2xx status) is returned as the API error.
  absl::StatusOr<std::unique_ptr<LineReader>> Stream(const HttpRequest& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (!answers_.empty()) {
      absl::StatusOr<HttpResponse> answer = std::move(answers_.front());
      answers_.pop_front();
      if (!answer.ok()) return answer.status();
      return ApiErrorFromResponse(answer->status, answer->body,
                                  request.method + " " + request.target);
    }
    if (streams_.empty()) {
      return absl::InternalError("scripted transport: no stream left for " + request.target);
    }
    auto [lines, end] = std::move(streams_.front());
    streams_.pop_front();
    return std::unique_ptr<LineReader>(
        std::make_unique<ScriptedLineReader>(std::move(lines), std::move(end)));
  }

 private:
  mutable std::mutex mu_;
  std::deque<absl::StatusOr<HttpResponse>> answers_;
  std::deque<std::pair<std::vector<std::string>, absl::Status>> streams_;
  std::vector<HttpRequest> requests_;
};

}  // namespace wavepool::kube::testing

#endif  // WAVEPOOL_TESTS_KUBE_SCRIPTED_TRANSPORT_H_
