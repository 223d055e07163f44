#include "mcp/server.hpp"

#include "mcp/line_reader.hpp"
#include "mcp/tools.hpp"

#include "lib/detail/log.hpp"

#include <rawtool/render/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdint>
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

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace rawtool::mcp::detail {

namespace {

using nlohmann::json;
using rawtool::detail::OperatorLog;

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

// One line in the operator log, component "mcp": rawtool's own words only.
void log_event(const OperatorLog& log, LogLevel level, std::string_view event, std::string_view detail) {
  if (!log.enabled(level)) return;
  log.write(level, "mcp", event, json{{"detail", detail}});
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
// runs the call itself, so a call starts on the thread that read it, without
// waiting for another thread to wake; the response is written by that thread.
// Reading must go on meanwhile, so that ping and cancellation are served
// during a long call, and how it passes on depends on what else is going on:
//
// - Another call in flight, or another request already waiting: the leader
//   wakes an idle thread to take over reading before it starts the call.
// - Nothing else: the leader parks the reading instead, and a call that ends
//   within reader_handoff_after takes it back, no other thread having woken.
//   A call still running then has its reading given to an idle thread by the
//   watch thread. Measured through the binary (tests/bench/mcp), this takes
//   about 10 us off the p50 of a SELECT 1 round trip and halves the server's
//   context switches; on PostgreSQL the woken reader competed with the
//   database's own process for a CPU.
//
// The watch thread sleeps on a timer that is armed only when none is pending
// (arming one is a system call that costs microseconds, more in a virtual
// machine), so a stream of short calls arms it at most once per period; when
// it fires before a parked call has run its full period, it is armed again for
// the rest.
//
// A call beyond the limit waits in a queue that finishing threads drain first.
class Server {
public:
  Server(Backend& backend, const ServerDescription& description, int in_fd, int out_fd, const ServerLimits& limits,
         const OperatorLog& log)
      : log_(log),
        backend_(backend),
        description_(description),
        out_fd_(out_fd),
        limits_(limits),
        max_running_(std::max<std::size_t>(limits.max_concurrent_calls, 1)),
        in_fd_(in_fd),
        reader_(in_fd, limits.max_line_bytes) {
    if (limits.reader_handoff_after.count() > 0) {
      // Without the timer every call hands the reading over at once: slower, as correct.
      timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
      stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      if (timer_fd_ < 0 || stop_fd_ < 0) close_timer();
    }
  }

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  ~Server() {
    finish();
    close_timer();
  }

  /// Serves until end of input, then finishes the calls in progress (see finish()).
  void serve() {
    const std::size_t threads = max_running_ + 1;  // every running call plus one reader
    threads_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run_thread(); });
    if (timer_fd_ >= 0) watch_thread_ = std::thread([this] { watch(); });
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return input_done_; });
    }
    finish();
  }

private:
  void close_timer() {
    if (timer_fd_ >= 0) ::close(timer_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
    timer_fd_ = -1;
    stop_fd_ = -1;
  }

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
        auto [work, parked] = accept(std::move(*start));
        if (!work) continue;
        if (!parked) return work;  // another thread reads already
        if (!execute(std::move(work), /*holds_reading=*/true)) return nullptr;
        continue;
      }
      dispatch(std::move(action));
    }
  }

  // True when another request is already waiting to be read: in the reader's
  // buffer, or in the input descriptor. REQUIRES: the caller leads.
  bool input_waiting() {
    if (reader_.buffered()) return true;
    pollfd input{in_fd_, POLLIN, 0};
    return ::poll(&input, 1, 0) != 0;  // an error counts as waiting: read() will report it
  }

  // Gives the parked reading to an idle thread when the call that holds it
  // has run for reader_handoff_after. Runs on its own thread until finish()
  // signals stop_fd_.
  void watch() {
    const auto period = limits_.reader_handoff_after;
    for (;;) {
      std::array<pollfd, 2> fds{pollfd{timer_fd_, POLLIN, 0}, pollfd{stop_fd_, POLLIN, 0}};
      const int ready = ::poll(fds.data(), fds.size(), -1);
      if (ready < 0 && errno == EINTR) continue;
      bool broken = ready < 0;
      if (!broken && fds[1].revents != 0) return;
      if (!broken && fds[0].revents != 0) {
        std::uint64_t expirations = 0;
        const ssize_t got = ::read(timer_fd_, &expirations, sizeof expirations);
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;  // not fired after all
        broken = got < 0;
      }
      std::lock_guard lock(mutex_);
      timer_armed_ = false;
      if (reading_parked_ && !broken) {
        // The timer may have been armed for an earlier call: this one gets
        // the rest of its own period. An eighth of it is close enough.
        const auto ran = std::chrono::steady_clock::now() - parked_since_;
        if (ran < period - period / 8 && arm_handoff_timer(std::chrono::duration_cast<std::chrono::microseconds>(period - ran))) {
          timer_armed_ = true;
          continue;
        }
      }
      if (reading_parked_) {
        reading_parked_ = false;
        leader_taken_ = false;
        idle_.notify_one();
      }
      if (broken) {
        handoff_broken_ = true;  // no reading is parked from now on
        return;
      }
    }
  }

  // Arms the timer that ends a parked reading. False when it cannot be armed.
  // REQUIRES: mutex_ is held (timer_armed_ follows it).
  bool arm_handoff_timer(std::chrono::microseconds after) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(after);
    itimerspec when{};
    when.it_value.tv_sec = static_cast<time_t>(seconds.count());
    when.it_value.tv_nsec = static_cast<long>(std::chrono::nanoseconds(after - seconds).count());
    return ::timerfd_settime(timer_fd_, 0, &when, nullptr) == 0;
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
            if (!step.note.empty()) log_event(log_, LogLevel::warn, "ignored", step.note);
          }
        },
        std::move(action));
  }

  struct Accepted {
    std::shared_ptr<Pending> work;  ///< the call this thread runs now; null when refused or queued
    bool parked = false;            ///< the reading is parked, not handed over (see the class comment)
  };

  // Registers a call. REQUIRES: the caller leads.
  Accepted accept(StartCall start) {
    auto pending = std::make_shared<Pending>();
    pending->key = id_key(start.id);
    pending->id = std::move(start.id);
    pending->call = std::move(start.call);
    pending->progress_token = std::move(start.progress_token);
    pending->control = backend_.make_control();
    // Read before the lock: only the leader reads the input.
    const bool quiet = timer_fd_ >= 0 && !input_waiting();
    std::optional<json> refusal;
    {
      std::lock_guard lock(mutex_);
      if (active_.count(pending->key) != 0) {
        refusal = error_response(pending->id, ErrorCode::invalid_request, "a request with this id is still in progress");
      } else if (running_ >= max_running_ && queue_.size() >= limits_.max_queued_calls) {
        refusal = error_response(pending->id, ErrorCode::server_busy, "too many tool calls waiting; try again later");
      } else {
        active_.emplace(pending->key, pending);
        if (running_ >= max_running_) {
          queue_.push_back(pending);
          return {};
        }
        const bool alone = running_ == 0 && queue_.empty();
        ++running_;
        pending->running = true;
        if (quiet && alone && !handoff_broken_ && (timer_armed_ || arm_handoff_timer(limits_.reader_handoff_after))) {
          timer_armed_ = true;
          reading_parked_ = true;
          parked_since_ = std::chrono::steady_clock::now();
          return {pending, true};
        }
        leader_taken_ = false;  // one idle thread takes over reading
        idle_.notify_one();
        return {pending, false};
      }
    }
    send(*refusal);
    return {};
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

  // Runs a call and answers it. `holds_reading`: the call was accepted with the
  // reading parked; returns whether this thread still leads afterwards (the
  // timer did not give the reading away meanwhile).
  bool execute(std::shared_ptr<Pending> pending, bool holds_reading = false) {
    // Progress, when asked for: one notification when the call starts to run
    // (it may have waited for a slot); the response itself is the end. Sent by
    // this thread, so it always comes before the response.
    if (!pending->progress_token.is_null()) {
      send(progress_notification(pending->progress_token, 0, 1, "running"));
    }
    std::string line = answer(*pending);
    bool cancelled = false;
    bool leads = false;
    {
      std::lock_guard lock(mutex_);
      cancelled = pending->cancelled;
      active_.erase(pending->key);
      --running_;
      if (holds_reading && reading_parked_) {
        reading_parked_ = false;  // taken back: this thread goes on reading
        leads = true;
      }
      if (!queue_.empty()) idle_.notify_one();  // a slot is free for the next queued call
      if (input_done_) changed_.notify_all();   // finish() may be waiting for the last call
    }
    if (!cancelled) send_line(std::move(line));
    return leads;
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
      log_event(log_, LogLevel::error, "internal_error", "a tool call threw; answered with an internal error");
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
      log_event(log_, LogLevel::warn, "output_closed", "the client's input closed; responses are dropped");
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
    if (watch_thread_.joinable()) {
      const std::uint64_t one = 1;
      while (::write(stop_fd_, &one, sizeof one) < 0 && errno == EINTR) {
      }
      watch_thread_.join();
    }
    for (auto& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

  const OperatorLog& log_;
  Backend& backend_;
  const ServerDescription& description_;
  int out_fd_;
  ServerLimits limits_;
  std::size_t max_running_;
  int in_fd_;
  int timer_fd_ = -1;  // the reader hand-off timer; -1: every call hands the reading over at once
  int stop_fd_ = -1;   // an eventfd that ends the watch thread

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
  // Parking (see the class comment), all guarded by mutex_.
  bool reading_parked_ = false;  // a running call's thread holds the reading until it ends or is relieved
  std::chrono::steady_clock::time_point parked_since_;
  bool timer_armed_ = false;     // the timer will fire; the watch thread clears this when it does
  bool handoff_broken_ = false;  // the timer failed: no more parking
  bool input_done_ = false;                                          // guarded by mutex_
  bool stopping_ = false;                                            // guarded by mutex_
  bool finished_ = false;                                            // serve()'s thread only
  std::vector<std::thread> threads_;
  std::thread watch_thread_;
};

}  // namespace

int run_server(Backend& backend, const ServerDescription& description, int in_fd, int out_fd,
               const ServerLimits& limits, const OperatorLog& log) {
  ignore_sigpipe();
  log_event(log, LogLevel::info, "serving", "MCP over stdio; protocol messages on the output, logs in the operator log");
  Server server(backend, description, in_fd, out_fd, limits, log);
  server.serve();
  log_event(log, LogLevel::info, "stopped", "end of input");
  return 0;
}

}  // namespace rawtool::mcp::detail
