#include "mcp/server.hpp"

#include "mcp/line_reader.hpp"
#include "mcp/tools.hpp"

#include <rawtool/render/json.hpp>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <exception>
#include <mutex>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <unistd.h>

namespace rawtool::mcp::detail {

namespace {

using nlohmann::json;

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

// One log line on stderr: a JSON object with rawtool's own words only.
void log_event(std::string_view event, std::string_view detail = {}) {
  json record{{"event", event}, {"component", "mcp"}};
  if (!detail.empty()) record["detail"] = detail;
  std::string line = render::dump(record);
  line.push_back('\n');
  write_all(STDERR_FILENO, line);
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

class Server {
public:
  Server(Backend& backend, const ServerDescription& description, int out_fd, const ServerLimits& limits)
      : backend_(backend), description_(description), out_fd_(out_fd), limits_(limits) {
    const std::size_t workers = std::max<std::size_t>(limits_.max_concurrent_calls, 1);
    workers_.reserve(workers);
    for (std::size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { work(); });
  }

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  ~Server() { finish(); }

  void serve(int in_fd) {
    LineReader reader(in_fd, limits_.max_line_bytes);
    Session session;
    std::string line;
    for (;;) {
      const auto status = reader.next(line);
      if (status == LineReader::Status::end) break;
      if (status == LineReader::Status::oversized) {
        send(oversized_line_error(limits_.max_line_bytes));
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      dispatch(handle_line(line, session, description_, limits_.line));
      if (output_broken()) break;
    }
    finish();
  }

private:
  struct Pending {
    json id;
    std::string key;
    ToolCall call;
    std::unique_ptr<CallControl> control;
    bool cancelled = false;  // guarded by Server::mutex_
    bool running = false;    // guarded by Server::mutex_
  };

  void dispatch(Action action) {
    std::visit(
        [this](auto&& step) {
          using Step = std::decay_t<decltype(step)>;
          if constexpr (std::is_same_v<Step, Send>) {
            send(step.message);
          } else if constexpr (std::is_same_v<Step, StartCall>) {
            submit(std::move(step));
          } else if constexpr (std::is_same_v<Step, CancelCall>) {
            cancel(step.request_id);
          } else if (!step.note.empty()) {
            log_event("ignored", step.note);
          }
        },
        std::move(action));
  }

  void submit(StartCall start) {
    auto pending = std::make_shared<Pending>();
    pending->key = id_key(start.id);
    pending->id = std::move(start.id);
    pending->call = std::move(start.call);
    pending->control = backend_.make_control();
    {
      std::lock_guard lock(mutex_);
      if (active_.count(pending->key) != 0) {
        send(error_response(pending->id, ErrorCode::invalid_request, "a request with this id is still in progress"));
        return;
      }
      if (queue_.size() >= limits_.max_queued_calls) {
        send(error_response(pending->id, ErrorCode::server_busy, "too many tool calls waiting; try again later"));
        return;
      }
      active_.emplace(pending->key, pending);
      queue_.push_back(pending);
    }
    work_ready_.notify_one();
  }

  void cancel(const json& request_id) {
    std::shared_ptr<Pending> pending;
    {
      std::lock_guard lock(mutex_);
      const auto found = active_.find(id_key(request_id));
      if (found == active_.end()) return;  // unknown or already answered: nothing to stop
      pending = found->second;
      pending->cancelled = true;
      if (!pending->running) {
        // Never started: take it out now so it neither runs nor holds its id.
        queue_.erase(std::remove(queue_.begin(), queue_.end(), pending), queue_.end());
        active_.erase(found);
        idle_.notify_all();
        return;
      }
    }
    pending->control->cancel();  // may talk to the server (PostgreSQL cancel request): outside the lock
  }

  void work() {
    for (;;) {
      std::shared_ptr<Pending> pending;
      {
        std::unique_lock lock(mutex_);
        work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        pending = std::move(queue_.front());
        queue_.pop_front();
        pending->running = true;
      }
      std::string line = answer(*pending);
      bool cancelled = false;
      {
        std::lock_guard lock(mutex_);
        cancelled = pending->cancelled;
        active_.erase(pending->key);
        idle_.notify_all();
      }
      if (!cancelled) send_line(std::move(line));
    }
  }

  // The response line for one call: its reply, the stand-in when that is over
  // the transport's limit, or an internal error when the backend broke.
  std::string answer(Pending& pending) {
    try {
      CallReply reply = backend_.run(pending.call, *pending.control);
      std::string line =
          render::dump(result_response(pending.id, call_result(std::move(reply.text), std::move(reply.structured),
                                                               reply.is_error)));
      if (line.size() > limits_.max_reply_bytes) {
        CallReply stand_in = backend_.too_large(pending.call, line.size());
        line = render::dump(result_response(
            pending.id, call_result(std::move(stand_in.text), std::move(stand_in.structured), true)));
      }
      return line;
    } catch (const std::exception&) {
      // The exception's text may carry database words; it is not shown or logged.
      log_event("internal_error", "a tool call threw; answered with an internal error");
    }
    return render::dump(error_response(pending.id, ErrorCode::internal_error, "internal error"));
  }

  void send(const json& message) { send_line(render::dump(message)); }

  void send_line(std::string line) {
    line.push_back('\n');
    std::lock_guard lock(write_mutex_);
    if (broken_) return;
    if (!write_all(out_fd_, line)) {
      broken_ = true;
      log_event("output_closed", "the client's input closed; responses are dropped");
    }
  }

  bool output_broken() {
    std::lock_guard lock(write_mutex_);
    return broken_;
  }

  // End of input: accepted calls get a grace period to finish and be
  // answered, then whatever is left is cancelled and dropped.
  void finish() {
    if (finished_) return;
    finished_ = true;
    std::unique_lock lock(mutex_);
    idle_.wait_for(lock, limits_.end_of_input_grace, [this] { return active_.empty(); });
    std::vector<std::shared_ptr<Pending>> running;
    for (auto& [key, pending] : active_) {
      pending->cancelled = true;
      if (pending->running) running.push_back(pending);
    }
    queue_.clear();
    stopping_ = true;
    lock.unlock();
    work_ready_.notify_all();
    for (const auto& pending : running) pending->control->cancel();
    for (auto& worker : workers_) {
      if (worker.joinable()) worker.join();
    }
  }

  Backend& backend_;
  const ServerDescription& description_;
  int out_fd_;
  ServerLimits limits_;

  std::mutex write_mutex_;
  bool broken_ = false;  // guarded by write_mutex_

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable idle_;
  std::deque<std::shared_ptr<Pending>> queue_;                       // guarded by mutex_
  std::unordered_map<std::string, std::shared_ptr<Pending>> active_;  // queued or running, guarded by mutex_
  bool stopping_ = false;                                            // guarded by mutex_
  bool finished_ = false;                                            // reader thread only
  std::vector<std::thread> workers_;
};

}  // namespace

int run_server(Backend& backend, const ServerDescription& description, int in_fd, int out_fd,
               const ServerLimits& limits) {
  ignore_sigpipe();
  log_event("serving", "MCP over stdio; protocol messages on the output, logs here");
  Server server(backend, description, out_fd, limits);
  server.serve(in_fd);
  log_event("stopped", "end of input");
  return 0;
}

}  // namespace rawtool::mcp::detail
