#include "mcp/server.hpp"

#include "mcp/dispatcher.hpp"
#include "mcp/line_reader.hpp"
#include "mcp/worker_pool.hpp"

#include <rawtool/log.hpp>

#include <rawtool/render/json.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <unistd.h>

namespace rawtool::mcp::detail {

namespace {

using nlohmann::json;
using rawtool::OperatorLog;

// Writes all of `bytes`; false when the descriptor can no longer be written.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return true;
}

// A write to a closed pipe must be an error value, not a signal that ends the
// process: the server owns its standard streams.
void ignore_sigpipe() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, nullptr);
  }
}

// The output: one message per line, each written whole under one lock, so
// the reader's answers, progress and the workers' responses never interleave.
// Every message of the session goes through this one channel.
class LineOutput final : public ReplyChannel {
public:
  LineOutput(int fd, const OperatorLog& log) : fd_(fd), log_(log) {}

  void send(std::string message) override {
    message.push_back('\n');
    std::lock_guard lock(mutex_);
    if (broken_) return;
    if (!write_all(fd_, message)) {
      broken_ = true;
      log_event(log_, LogLevel::warn, "output_closed", "the client's input closed; responses are dropped");
    }
  }

  bool broken() {
    std::lock_guard lock(mutex_);
    return broken_;
  }

private:
  int fd_;
  const OperatorLog& log_;
  std::mutex mutex_;
  bool broken_ = false;  // guarded by mutex_
};

void serve_lines(Backend& backend, const ServerDescription& description, int in_fd, int out_fd,
                 const ServerLimits& limits, const OperatorLog& log) {
  const auto output = std::make_shared<LineOutput>(out_fd, log);
  WorkerPool pool(limits.max_concurrent_calls, limits.max_queued_calls);  // outlives the session
  Dispatcher session(backend, pool, description, limits.max_reply_bytes, log);
  LineReader reader(in_fd, limits.max_line_bytes);
  std::string line;
  for (;;) {
    const auto status = reader.next(line);
    if (status == LineReader::Status::end || output->broken()) break;
    if (status == LineReader::Status::oversized) {
      output->send(render::dump(oversized_line_error(limits.max_line_bytes)));
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    auto message = read_message(line, limits.line);
    if (auto* error = std::get_if<Send>(&message)) {
      output->send(render::dump(error->message));
      continue;
    }
    session.handle(std::get<json>(message), output);
  }
  if (const std::size_t in_flight = session.calls_in_flight(); in_flight != 0) {
    // Why the process does not exit at once: the operator sees what it waits for.
    log_event(log, LogLevel::info, "draining",
              fmt::format("end of input; waiting up to {} ms for {} tool call{} in flight, then cancelling what still runs",
                          limits.end_of_input_grace.count(), in_flight, in_flight == 1 ? "" : "s"));
  }
  session.close(limits.end_of_input_grace);
}

}  // namespace

int run_server(Backend& backend, const ServerDescription& description, int in_fd, int out_fd,
               const ServerLimits& limits, const OperatorLog& log) {
  ignore_sigpipe();
  log_event(log, LogLevel::info, "serving", "MCP over stdio; protocol messages on the output, logs in the operator log");
  serve_lines(backend, description, in_fd, out_fd, limits, log);
  log_event(log, LogLevel::info, "stopped", "end of input");
  return 0;
}

}  // namespace rawtool::mcp::detail
