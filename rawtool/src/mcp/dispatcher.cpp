#include "mcp/dispatcher.hpp"

#include "mcp/tools.hpp"

#include <rawtool/log.hpp>

#include <rawtool/render/json.hpp>

#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace rawtool::mcp::detail {

using nlohmann::json;

void log_event(const rawtool::OperatorLog& log, LogLevel level, std::string_view event,
               std::string_view detail) {
  if (!log.enabled(level)) return;
  log.write(level, "mcp", event, json{{"detail", detail}});
}

void log_internal_error(const rawtool::OperatorLog& log, std::string_view detail) noexcept {
  try {
    log_event(log, LogLevel::error, "internal_error", detail);
  } catch (...) {  // NOLINT(bugprone-empty-catch): nowhere left to say it
  }
}

/// One tool call, from the request that asked for it until it is answered or
/// dropped. Held by the session's table and, while it waits or runs, by the
/// pool.
struct Dispatcher::Call final : Task {
  explicit Call(Dispatcher& session) : owner(session) {}
  void run() noexcept override { owner.run(*this); }

  Dispatcher& owner;
  json id;
  std::string key;
  ToolCall call;
  json progress_token;  // null: the caller did not ask for progress
  std::unique_ptr<CallControl> control;
  std::shared_ptr<ReplyChannel> reply_to;
  bool cancelled = false;  // guarded by owner.calls_mutex_: no response is sent
  bool running = false;    // guarded by owner.calls_mutex_: a worker runs it
};

Dispatcher::Dispatcher(Backend& backend, WorkerPool& pool, ServerDescription description, std::size_t max_reply_bytes,
                       const rawtool::OperatorLog& log)
    : backend_(backend),
      pool_(pool),
      description_(std::move(description)),
      max_reply_bytes_(max_reply_bytes),
      log_(log) {}

Dispatcher::~Dispatcher() { close(std::chrono::milliseconds(0)); }

void Dispatcher::assume_initialized(std::string protocol_version) {
  std::lock_guard lock(session_mutex_);
  session_.initialized = true;
  session_.client_ready = true;
  session_.protocol_version = std::move(protocol_version);
}

Dispatcher::Handled Dispatcher::handle(const json& message, const std::shared_ptr<ReplyChannel>& reply_to) {
  Action action = [&] {
    std::lock_guard lock(session_mutex_);
    return handle_message(message, session_, description_, reply_to->caller_claims());
  }();
  return std::visit(
      [&](auto&& step) -> Handled {
        using Step = std::decay_t<decltype(step)>;
        if constexpr (std::is_same_v<Step, Send>) {
          reply_to->send(render::dump(step.message));
          return Handled::answered;
        } else if constexpr (std::is_same_v<Step, StartCall>) {
          return start(std::move(step), reply_to);
        } else if constexpr (std::is_same_v<Step, CancelCall>) {
          cancel(step.request_id);
          return Handled::no_reply;
        } else {
          if (!step.note.empty()) log_event(log_, LogLevel::warn, "ignored", step.note);
          return Handled::no_reply;
        }
      },
      std::move(action));
}

Dispatcher::Handled Dispatcher::start(StartCall start, const std::shared_ptr<ReplyChannel>& reply_to) {
  auto call = std::make_shared<Call>(*this);
  call->key = id_key(start.id);
  call->id = std::move(start.id);
  call->call = std::move(start.call);
  call->progress_token = std::move(start.progress_token);
  call->control = backend_.make_control();
  call->reply_to = reply_to;
  std::optional<json> refusal;
  {
    std::lock_guard lock(calls_mutex_);
    if (closed_) {
      refusal = error_response(call->id, ErrorCode::invalid_request, "the session has ended");
    } else if (calls_.count(call->key) != 0) {
      refusal = error_response(call->id, ErrorCode::invalid_request, "a request with this id is still in progress");
    } else {
      calls_.emplace(call->key, call);
    }
  }
  // Submitted outside the lock: the worker it wakes takes the lock first
  // thing, and would only wake to wait for it. Meanwhile the call is in the
  // table, not running, so a cancel or close() in between marks it cancelled
  // and the worker drops it.
  if (!refusal) {
    if (pool_.submit(call)) return Handled::started;
    std::lock_guard lock(calls_mutex_);
    calls_.erase(call->key);
    call_ended_.notify_all();
    refusal = error_response(call->id, ErrorCode::server_busy,
                             fmt::format("{} tool calls wait already, the most rawtool queues behind the "
                                         "max_concurrent_calls={} (max_concurrent_calls) running; try again later",
                                         pool_.max_waiting(), pool_.workers()));
  }
  reply_to->send(render::dump(*refusal));
  return Handled::answered;
}

void Dispatcher::cancel(const json& request_id) {
  std::shared_ptr<Call> call;  // released after the lock
  {
    std::lock_guard lock(calls_mutex_);
    const auto found = calls_.find(id_key(request_id));
    if (found == calls_.end()) return;  // unknown or already answered: nothing to stop
    call = found->second;
    call->cancelled = true;
    if (!call->running) {
      // Still waiting: taken out, it neither runs nor holds its id. One a
      // worker has taken, or that is still being submitted, sees `cancelled`
      // before it runs anything.
      if (pool_.withdraw(*call)) {
        calls_.erase(found);
        call_ended_.notify_all();
      }
      return;
    }
  }
  call->control->cancel();  // may talk to the database (PostgreSQL cancel request): outside the lock
}

void Dispatcher::run(Call& call) noexcept {
  {
    std::lock_guard lock(calls_mutex_);
    if (call.cancelled) {
      calls_.erase(call.key);
      call_ended_.notify_all();
      return;
    }
    call.running = true;
  }
  // A worker's top: whatever throws below (a channel that cannot be written,
  // a message the encoder refuses) is logged, and the call answered with an
  // internal error. Its text may carry outside words: it is not shown.
  std::string response;  // empty: answered with an internal error
  try {
    if (call.reply_to->reserve()) {
      response = answer_with_progress(call);
    } else {
      response = render::dump(error_response(call.id, ErrorCode::server_busy, call.reply_to->no_room()));
    }
  } catch (...) {
    log_internal_error(log_, "a tool call's messages could not be sent; answered with an internal error");
    response.clear();
  }
  const rawtool::OperatorLog& log = log_;  // outlives every session
  const bool cancelled = end(call);
  // From here on, `this` may be gone (close() returned): only `call`, which
  // the pool holds, and the log are used.
  if (cancelled) return;
  try {
    if (response.empty()) response = render::dump(error_response(call.id, ErrorCode::internal_error, "internal error"));
    call.reply_to->send(std::move(response));
  } catch (...) {
    log_internal_error(log, "a tool call's answer could not be sent; answered with an internal error");
    try {
      call.reply_to->send(render::dump(error_response(call.id, ErrorCode::internal_error, "internal error")));
    } catch (...) {  // NOLINT(bugprone-empty-catch): the channel is released unanswered, and its transport says so
    }
  }
}

// Progress, when asked for: one notification when the call starts to run
// (it may have waited for a worker), then the call's figures once a second
// while it runs, its elapsed seconds as the progress value, which only grows;
// the response itself is the end. All are sent before this returns and so
// before the response. A notification that cannot be sent ends the progress,
// and the call is answered with an internal error.
std::string Dispatcher::answer_with_progress(Call& call) {
  ProgressSink progress;
  std::atomic<bool> progress_failed{false};
  if (!call.progress_token.is_null()) {
    call.reply_to->notify(render::dump(progress_notification(call.progress_token, 0, "running")));
    progress = [this, &call, &progress_failed](const ProgressFigures& figures) {
      if (progress_failed.load()) return;
      // Called on the backend's progress thread: nothing may leave it.
      try {
        const double seconds = static_cast<double>(figures.elapsed.count()) / 1000.0;
        call.reply_to->notify(render::dump(progress_notification(
            call.progress_token, seconds,
            fmt::format("running for {:.1f} s; {} rows read; row cap {}", seconds, figures.rows_read, figures.max_rows))));
      } catch (...) {
        progress_failed.store(true);
        log_internal_error(log_, "a progress notification could not be sent; the call is answered with an internal error");
      }
    };
  }
  std::string response = answer(call, progress);
  if (progress_failed.load()) response = render::dump(error_response(call.id, ErrorCode::internal_error, "internal error"));
  return response;
}

bool Dispatcher::end(Call& call) noexcept {
  std::lock_guard lock(calls_mutex_);
  const bool cancelled = call.cancelled;
  // The id is free before the response is sent: a client may reuse it as
  // soon as it reads the response.
  calls_.erase(call.key);
  call_ended_.notify_all();
  return cancelled;
}

// The response line for one call: its reply, the stand-in when that is over
// the transport's limit, or an internal error when the backend broke.
std::string Dispatcher::answer(Call& call, const ProgressSink& progress) {
  try {
    CallReply reply = backend_.run(call.call, *call.control, progress);
    std::string line = render::dump(
        result_response(call.id, call_result(reply.text(), reply.structured(), reply.is_error(), description_.structured_content)));
    if (line.size() > max_reply_bytes_) {
      CallReply stand_in = backend_.too_large(call.call, line.size());
      line = render::dump(
          result_response(call.id, call_result(stand_in.text(), stand_in.structured(), true, description_.structured_content)));
    }
    return line;
  } catch (...) {
    // The exception's text may carry database words; it is not shown or logged.
    log_internal_error(log_, "a tool call threw; answered with an internal error");
  }
  return render::dump(error_response(call.id, ErrorCode::internal_error, "internal error"));
}

std::size_t Dispatcher::calls_in_flight() const {
  std::lock_guard lock(calls_mutex_);
  return calls_.size();
}

void Dispatcher::close(std::chrono::milliseconds grace) {
  std::vector<std::shared_ptr<Call>> to_cancel;
  std::vector<std::shared_ptr<Call>> dropped;  // released after the lock
  {
    std::unique_lock lock(calls_mutex_);
    closed_ = true;
    call_ended_.wait_for(lock, grace, [this] { return calls_.empty(); });
    for (auto entry = calls_.begin(); entry != calls_.end();) {
      const std::shared_ptr<Call>& call = entry->second;
      call->cancelled = true;
      if (call->running) {
        to_cancel.push_back(call);
      } else if (pool_.withdraw(*call)) {
        dropped.push_back(call);
        entry = calls_.erase(entry);
        continue;
      }
      ++entry;
    }
  }
  for (const auto& call : to_cancel) call->control->cancel();
  std::unique_lock lock(calls_mutex_);
  call_ended_.wait(lock, [this] { return calls_.empty(); });
}

}  // namespace rawtool::mcp::detail
