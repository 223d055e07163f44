#pragma once

// The server loop: a fixed pool of threads that take turns reading requests
// and run tool calls on the thread that read them, one lock around every
// write. It carries out the actions of protocol.hpp and knows the tool only
// through Backend, so it can run over a scripted backend as well as over
// rawtool::Tool.

#include "mcp/protocol.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace rawtool::detail {
class OperatorLog;
}

namespace rawtool::mcp::detail {

/// Stops one tool call from another thread. Thread-safe.
class CallControl {
public:
  virtual ~CallControl() = default;
  CallControl() = default;
  CallControl(const CallControl&) = delete;
  CallControl& operator=(const CallControl&) = delete;
  virtual void cancel() noexcept = 0;
};

/// Both halves of one tool reply.
struct CallReply {
  std::string text;
  nlohmann::json structured;
  bool is_error = false;
};

/// The tool behind the server. run() is called from worker threads, up to
/// max_concurrent_calls at once.
class Backend {
public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual std::unique_ptr<CallControl> make_control() = 0;
  /// Runs the call; returns its reply. Cancelled through `control`, it returns
  /// promptly (its reply is then dropped).
  virtual CallReply run(const ToolCall& call, CallControl& control) = 0;
  /// The reply that stands in for one whose serialised message would be
  /// `bytes` long, over the transport's limit: a refusal written by rawtool.
  virtual CallReply too_large(const ToolCall& call, std::size_t bytes) = 0;
};

struct ServerLimits {
  std::size_t max_line_bytes = 4 * 1024 * 1024;
  LineLimits line;
  /// Worker threads: tool calls served at once.
  std::size_t max_concurrent_calls = 4;
  /// Calls accepted but waiting for a worker; one more is answered with a
  /// server_busy error.
  std::size_t max_queued_calls = 256;
  /// Longest response line written; a tool reply over it becomes Backend::too_large.
  /// The official clients cap one message at 10 MiB.
  std::size_t max_reply_bytes = 8 * 1024 * 1024;
  /// After end of input, how long accepted calls may still finish and be
  /// answered before the rest are cancelled.
  std::chrono::milliseconds end_of_input_grace{1500};
  /// A call that arrives when nothing else is in flight and no other request
  /// is waiting runs on the thread that read it, which keeps reading to
  /// itself for this long: a short call is then answered without waking any
  /// other thread. A call still running after it gives reading to another
  /// thread, so a request that arrives during a long call waits at most this
  /// long to be read. Zero hands reading over before every call starts.
  std::chrono::microseconds reader_handoff_after{5000};
};

/// Serves until end of input on `in_fd`; returns the process exit status.
/// The server's own events (serving, stopped, ignored, output_closed,
/// internal_error) go to `log` with component "mcp".
int run_server(Backend& backend, const ServerDescription& description, int in_fd, int out_fd,
               const ServerLimits& limits, const rawtool::detail::OperatorLog& log);

}  // namespace rawtool::mcp::detail
