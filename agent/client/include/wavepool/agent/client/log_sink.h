// Where the socket server and the worker's connection write their log lines (protocol errors,
// disconnects, reconnects). One line per call, without a trailing newline; the component and, on
// the agent's side, the peer's pid lead the line: "agent socket: pid 4242 session 7: ...".
// Tests pass a sink that collects the lines; binaries keep the default, LogToStderr.
#ifndef WAVEPOOL_AGENT_CLIENT_LOG_SINK_H_
#define WAVEPOOL_AGENT_CLIENT_LOG_SINK_H_

#include <functional>
#include <string_view>

namespace wavepool::agent {

// Must be safe to call from any thread; called without any of the caller's locks held.
using LogSink = std::function<void(std::string_view line)>;

// Writes `line` and a newline to stderr in one write(2), so that lines from several threads or
// processes do not interleave.
void LogToStderr(std::string_view line);

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLIENT_LOG_SINK_H_
