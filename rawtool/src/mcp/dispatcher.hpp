#pragma once

// One client's MCP session, whatever carries its messages: it takes one
// parsed JSON-RPC message at a time, answers what it can at once (initialize,
// ping, tools/list, errors), starts tool calls on a WorkerPool shared with
// other sessions, cancels them on notifications/cancelled, and sends progress
// and responses back through the channel each message came with. The stdio
// server (server.hpp) is one transport over it; a transport with many
// sessions makes one Dispatcher per session over one pool and one Backend.

#include "mcp/backend.hpp"
#include "mcp/protocol.hpp"
#include "mcp/worker_pool.hpp"

#include <rawtool/log.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace rawtool::mcp::detail {

/// Writes one of the server's own events (serving, draining, stopped, ignored,
/// output_closed, internal_error) to the operator log, component "mcp".
/// `detail` is rawtool's own words, never the client's or the database's.
void log_event(const rawtool::OperatorLog& log, LogLevel level, std::string_view event,
               std::string_view detail);

/// log_event(..., LogLevel::error, "internal_error", detail), for a catch at
/// a thread's top: never throws (a log that cannot be written is let go).
void log_internal_error(const rawtool::OperatorLog& log, std::string_view detail) noexcept;

/// Where the messages about one client message go: the response to a
/// request, and the notifications sent about it while it runs (progress). A
/// transport may give every message the same channel (stdio) or each its own
/// (an HTTP request's response stream).
class ReplyChannel {
public:
  virtual ~ReplyChannel() = default;
  ReplyChannel() = default;
  ReplyChannel(const ReplyChannel&) = delete;
  ReplyChannel& operator=(const ReplyChannel&) = delete;

  /// Sends one serialised JSON-RPC message (ASCII, no line break). Called
  /// from the thread that handles a message and from workers, possibly at
  /// once: an implementation serialises its writes. A channel that can no
  /// longer be written drops the message.
  virtual void send(std::string message) = 0;

  /// Sends a notification about the message in flight (progress), before its
  /// response. By default like send(); a transport that can carry only the
  /// response (an HTTP request answered with one JSON body) drops it, one
  /// that streams the answer sends it as an event.
  virtual void notify(std::string message) { send(std::move(message)); }

  /// Called by the worker about to run a tool call, before any of it runs:
  /// whether the transport has room for what the call may hold (its rows,
  /// its answer). False: the call does not run and is answered "busy", in
  /// no_room()'s words. By default there is always room.
  virtual bool reserve() { return true; }
  /// Why reserve() found no room, naming the limit, its value and its setting.
  virtual std::string no_room() const { return "the transport has no room for this call; try again shortly"; }

  /// The claims of the caller's validated OAuth token, from which a catalog
  /// parameter bound to a claim takes its value; nullptr (the default) when
  /// the caller has none.
  virtual const nlohmann::json* caller_claims() const noexcept { return nullptr; }
};

/// Thread-safe: handle() may be called from several threads at once, and
/// close() from any thread. Holds each tool call's channel until the call is
/// answered or dropped, then releases it: a channel whose last owner lets go
/// without a response having been sent belongs to a call that got none
/// (cancelled, or dropped at close()).
class Dispatcher {
public:
  /// What handle() did with a message, for a transport that answers each
  /// message on its own.
  enum class Handled {
    answered,  ///< the response went through the channel before handle() returned
    started,   ///< a tool call was accepted: its progress and response come through the channel from a worker,
               ///< unless it is cancelled
    no_reply,  ///< a notification or a client's response: nothing is sent
  };

  /// `backend`, `pool` and `log` are shared with other sessions and outlive
  /// this one. `description` is this session's own: the tools it lists and the
  /// databases raw_sql may name. A tool reply whose response message would be
  /// longer than `max_reply_bytes` is replaced by Backend::too_large.
  Dispatcher(Backend& backend, WorkerPool& pool, ServerDescription description, std::size_t max_reply_bytes,
             const rawtool::OperatorLog& log);
  /// close() with no grace.
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  /// Handles one parsed message (any JSON value: a batch or a non-object is
  /// answered as an invalid request). The answer, if any, goes to `reply_to`.
  Handled handle(const nlohmann::json& message, const std::shared_ptr<ReplyChannel>& reply_to);

  /// Ends the session: its accepted calls get up to `grace` to finish and be
  /// answered; then those still running are cancelled and those still waiting
  /// are dropped, with no response. Returns when none of its calls runs any
  /// more. A tool call handled afterwards is refused.
  void close(std::chrono::milliseconds grace);

  /// Tool calls accepted and not yet answered or dropped (running or waiting).
  [[nodiscard]] std::size_t calls_in_flight() const;

  /// Takes the session as initialized with `protocol_version`, without an
  /// initialize: a stateless transport's session of one request.
  void assume_initialized(std::string protocol_version);

private:
  struct Call;

  Handled start(StartCall start, const std::shared_ptr<ReplyChannel>& reply_to);
  void cancel(const nlohmann::json& request_id);
  void run(Call& call) noexcept;
  std::string answer_with_progress(Call& call);
  std::string answer(Call& call, const ProgressSink& progress);
  /// Marks `call` ended (its id is free again); true when it was cancelled.
  bool end(Call& call) noexcept;

  Backend& backend_;
  WorkerPool& pool_;
  const ServerDescription description_;
  const std::size_t max_reply_bytes_;
  const rawtool::OperatorLog& log_;

  std::mutex session_mutex_;
  Session session_;  // guarded by session_mutex_

  mutable std::mutex calls_mutex_;
  std::condition_variable call_ended_;                          // a call left calls_
  std::unordered_map<std::string, std::shared_ptr<Call>> calls_;  // waiting or running, by id_key; guarded by calls_mutex_
  bool closed_ = false;                                           // guarded by calls_mutex_
};

}  // namespace rawtool::mcp::detail
