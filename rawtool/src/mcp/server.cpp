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
#include <optional>
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

// Leader/follower: of max_concurrent_calls + 1 threads, one at a time (the
// leader) reads requests. When the leader reads a tool call it may run, it
// hands the reading to an idle thread and runs the call itself, so a call
// starts on the thread that read it, without waiting for another thread to
// wake; the response is written by that thread. Reading goes on meanwhile, so
// ping and cancellation are served during a long call. A call beyond the limit
// waits in a queue that finishing threads drain first.
class Server {
public:
  Server(Backend& backend, const ServerDescription& description, int in_fd, int out_fd, const ServerLimits& limits)
      : backend_(backend),
        description_(description),
        out_fd_(out_fd),
        limits_(limits),
        max_running_(std::max<std::size_t>(limits.max_concurrent_calls, 1)),
        reader_(in_fd, limits.max_line_bytes) {}

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  ~Server() { finish(); }

  /// Serves until end of input, then finishes the calls in progress (see finish()).
  void serve() {
    const std::size_t threads = max_running_ + 1;  // every running call plus one reader
    threads_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run_thread(); });
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return input_done_; });
    }
    finish();
  }

private:
  struct Pending {
    json id;
    std::string key;
    ToolCall call;
    json progress_token;  // null: the caller did not ask for progress
    std::unique_ptr<CallControl> control;
    bool cancelled = false;  // guarded by Server::mutex_
    bool running = false;    // guarded by Server::mutex_
  };

  void run_thread() {
    for (;;) {
      std::shared_ptr<Pending> work;
      {
        std::unique_lock lock(mutex_);
        idle_.wait(lock, [this] {
          return stopping_ || (!queue_.empty() && running_ < max_running_) || (!leader_taken_ && !input_done_);
        });
        if (!queue_.empty() && running_ < max_running_) {
          work = take_queued();
        } else if (stopping_ || input_done_) {
          return;
        } else {
          leader_taken_ = true;
        }
      }
      if (!work) work = lead();
      if (work) execute(std::move(work));
    }
  }

  // Reads and dispatches lines until one is a call this thread should run, or
  // the input ends. Returns the call (already counted as running), or null.
  std::shared_ptr<Pending> lead() {
    std::string line;
    for (;;) {
      const auto status = reader_.next(line);
      if (status == LineReader::Status::end || output_broken()) {
        std::lock_guard lock(mutex_);
        input_done_ = true;
        leader_taken_ = false;
        idle_.notify_all();
        changed_.notify_all();
        return nullptr;
      }
      if (status == LineReader::Status::oversized) {
        send(oversized_line_error(limits_.max_line_bytes));
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      Action action = handle_line(line, session_, description_, limits_.line);
      if (auto* start = std::get_if<StartCall>(&action)) {
        if (auto work = accept(std::move(*start))) return work;
        continue;
      }
      dispatch(std::move(action));
    }
  }

  void dispatch(Action action) {
    std::visit(
        [this](auto&& step) {
          using Step = std::decay_t<decltype(step)>;
          if constexpr (std::is_same_v<Step, Send>) {
            send(step.message);
          } else if constexpr (std::is_same_v<Step, CancelCall>) {
            cancel(step.request_id);
          } else if constexpr (std::is_same_v<Step, Ignore>) {
            if (!step.note.empty()) log_event("ignored", step.note);
          }
        },
        std::move(action));
  }

  // Registers a call. Returns it when this thread should run it now (reading
  // passes to another thread); null when it was refused or queued.
  std::shared_ptr<Pending> accept(StartCall start) {
    auto pending = std::make_shared<Pending>();
    pending->key = id_key(start.id);
    pending->id = std::move(start.id);
    pending->call = std::move(start.call);
    pending->progress_token = std::move(start.progress_token);
    pending->control = backend_.make_control();
    std::optional<json> refusal;
    {
      std::lock_guard lock(mutex_);
      if (active_.count(pending->key) != 0) {
        refusal = error_response(pending->id, ErrorCode::invalid_request, "a request with this id is still in progress");
      } else if (running_ >= max_running_ && queue_.size() >= limits_.max_queued_calls) {
        refusal = error_response(pending->id, ErrorCode::server_busy, "too many tool calls waiting; try again later");
      } else {
        active_.emplace(pending->key, pending);
        if (running_ < max_running_) {
          ++running_;
          pending->running = true;
          leader_taken_ = false;  // one idle thread takes over reading
          idle_.notify_one();
          return pending;
        }
        queue_.push_back(pending);
      }
    }
    if (refusal) send(*refusal);
    return nullptr;
  }

  // REQUIRES: mutex_ is held, the queue is not empty and a slot is free.
  std::shared_ptr<Pending> take_queued() {
    auto pending = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    pending->running = true;
    return pending;
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
        if (input_done_) changed_.notify_all();  // finish() may be waiting for the last call
        return;
      }
    }
    pending->control->cancel();  // may talk to the server (PostgreSQL cancel request): outside the lock
  }

  void execute(std::shared_ptr<Pending> pending) {
    // Progress, when asked for: one notification when the call starts to run
    // (it may have waited for a slot); the response itself is the end. Sent by
    // this thread, so it always comes before the response.
    if (!pending->progress_token.is_null()) {
      send(progress_notification(pending->progress_token, 0, 1, "running"));
    }
    std::string line = answer(*pending);
    bool cancelled = false;
    {
      std::lock_guard lock(mutex_);
      cancelled = pending->cancelled;
      active_.erase(pending->key);
      --running_;
      if (!queue_.empty()) idle_.notify_one();  // a slot is free for the next queued call
      if (input_done_) changed_.notify_all();   // finish() may be waiting for the last call
    }
    if (!cancelled) send_line(std::move(line));
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
    changed_.wait_for(lock, limits_.end_of_input_grace, [this] { return active_.empty(); });
    std::vector<std::shared_ptr<Pending>> running;
    for (auto& [key, pending] : active_) {
      pending->cancelled = true;
      if (pending->running) running.push_back(pending);
    }
    queue_.clear();
    stopping_ = true;
    input_done_ = true;
    lock.unlock();
    idle_.notify_all();
    for (const auto& pending : running) pending->control->cancel();
    for (auto& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

  Backend& backend_;
  const ServerDescription& description_;
  int out_fd_;
  ServerLimits limits_;
  std::size_t max_running_;

  // The leader's: only the thread holding leadership (leader_taken_) touches these.
  LineReader reader_;
  Session session_;

  std::mutex write_mutex_;
  bool broken_ = false;  // guarded by write_mutex_

  std::mutex mutex_;
  std::condition_variable idle_;     // pool threads waiting for leadership or a queued call
  std::condition_variable changed_;  // serve() and finish() waiting for the input's end or the last call
  std::deque<std::shared_ptr<Pending>> queue_;                       // guarded by mutex_
  std::unordered_map<std::string, std::shared_ptr<Pending>> active_;  // queued or running, guarded by mutex_
  std::size_t running_ = 0;                                          // guarded by mutex_
  bool leader_taken_ = false;                                        // guarded by mutex_
  bool input_done_ = false;                                          // guarded by mutex_
  bool stopping_ = false;                                            // guarded by mutex_
  bool finished_ = false;                                            // serve()'s thread only
  std::vector<std::thread> threads_;
};

}  // namespace

int run_server(Backend& backend, const ServerDescription& description, int in_fd, int out_fd,
               const ServerLimits& limits) {
  ignore_sigpipe();
  log_event("serving", "MCP over stdio; protocol messages on the output, logs here");
  Server server(backend, description, in_fd, out_fd, limits);
  server.serve();
  log_event("stopped", "end of input");
  return 0;
}

}  // namespace rawtool::mcp::detail
