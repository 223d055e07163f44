#pragma once

// The HTTP transport's sessions: which exist (Mcp-Session-Id), whose they
// are, how many there may be, when an idle one ends, and how many tool calls
// a token has running. No socket here: the server asks, the registry decides.
//
// A session belongs to the token that opened it. Every lookup and every end
// takes the asking token and finds nothing for another token's session, as
// for an id that never existed: a token can neither see, use nor end another
// token's session.

#include "mcp/dispatcher.hpp"
#include "mcp/http_access.hpp"
#include "mcp/http_server.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rawtool {
class OperatorLog;
}

namespace rawtool::mcp::detail {

class Backend;
class WorkerPool;

/// One MCP session over HTTP: its id, the token that opened it and the
/// dispatcher that answers it.
struct HttpSession {
  std::string id;                      // empty for a stateless request's session
  const HttpClient* client = nullptr;  // nullptr: the server has no tokens
  std::unique_ptr<Dispatcher> dispatcher;

  HttpSession() = default;
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;
  ~HttpSession();

private:
  friend class SessionRegistry;
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_used{};       // guarded by the registry's mutex
  std::size_t requests_in_flight = 0;  // guarded by the registry's mutex
  /// Set from make until add: the session holds a place under the session
  /// limits that its initialize has not yet filled. Run once, if the session
  /// is dropped before it is registered (a failed or abandoned initialize),
  /// to give the place back.
  std::function<void()> release_place;
};

/// Thread-safe: every member may be called from any thread at once. Every
/// limit is checked and counted in one step under one lock, so a burst
/// cannot pass a limit between the two. `backend`, `pool`, `config` and
/// `log` outlive the registry; the registry outlives every session it made
/// (an unregistered session gives its place back to it when dropped).
class SessionRegistry {
public:
  using Clock = std::chrono::steady_clock;
  /// Sessions are limited by config.max_sessions, config.max_sessions_per_token
  /// and config.session_idle, tool calls by config.max_calls_per_token; each
  /// session's dispatcher shows its token's description (config.open without
  /// tokens). `now` is the clock idleness is measured by.
  SessionRegistry(Backend& backend, WorkerPool& pool, const HttpServerConfig& config,
                  const rawtool::OperatorLog& log, std::function<Clock::time_point()> now = Clock::now);
  SessionRegistry(const SessionRegistry&) = delete;
  SessionRegistry& operator=(const SessionRegistry&) = delete;

  /// A new session for `client` with a fresh random id, or nullptr when
  /// max_sessions_per_token are open for this client, or max_sessions are
  /// open and none can be taken, once idle sessions (of any token) are ended.
  /// When max_sessions are open, the least recently used session with no
  /// request in flight of the token holding the most is ended to make room,
  /// if that token holds at least two more than `client`: one token cannot
  /// lock another out, and two never take places from each other in turn.
  /// Not found until add(), but counted against both limits from now on.
  /// For nullptr, `met` (when given) is set to the limit that refused it.
  enum class SessionLimit { per_token, total };
  std::shared_ptr<HttpSession> make(const HttpClient* client, SessionLimit* met = nullptr);
  /// Registers a session from make(), in the place it holds: its initialize
  /// succeeded.
  void add(std::shared_ptr<HttpSession> session);
  /// The registered session `id` names, when `client` opened it; nullptr
  /// otherwise (no such id, another token's, or ended).
  std::shared_ptr<HttpSession> find(const std::string& id, const HttpClient* client);
  /// Ends the session as find() would find it: it is found no more and its
  /// place is free. The caller closes its dispatcher. nullptr as for find().
  std::shared_ptr<HttpSession> remove(const std::string& id, const HttpClient* client);

  /// A session for one request of a stateless server: no id, no session
  /// limit, but closed with the rest by close_all() until end_stateless().
  /// Any request but initialize finds it initialized.
  std::shared_ptr<HttpSession> make_stateless(const HttpClient* client, bool initialize, std::string_view protocol_version);
  void end_stateless(const std::shared_ptr<HttpSession>& session);

  /// Whether a request may be handed to its session.
  enum class Admission {
    admitted,  ///< counted until end_request (a session with a request in flight is not idle)
    busy,      ///< a tool call over its token's max_calls_per_token; nothing counted
    later,     ///< as busy, but one of the token's calls is only an answer being written, which no
               ///< other call waits for: nothing counted, and `on_room` runs once a call of the
               ///< token ends, to ask again
  };
  /// A tool call counts against its token until its answer is written (an
  /// unread answer holds its slot); a client that sends its next call the
  /// moment it has read an answer may reach the server before the server
  /// learns the write ended, and waits for that instead of being refused.
  /// `on_room` runs on the thread that ends the call, or of close_all(),
  /// without the registry's lock; it is dropped unrun for `admitted` and `busy`.
  Admission begin_request(HttpSession& session, bool tool_call, std::function<void()> on_room = {});
  /// The answer to a tool call begun on `session` is being written: it still
  /// counts, but a call of its token that finds no room waits for it (later).
  void answering(HttpSession& session);
  /// Uncounts a request begun on `session`; `answering` when answering() was
  /// called for it.
  void end_request(HttpSession& session, bool tool_call, bool answering = false);

  /// Each token's open sessions and tool calls in flight, in configuration
  /// order ("" for the one client of a server without tokens).
  struct TokenLoad {
    std::string token;
    std::size_t sessions = 0;
    std::size_t calls = 0;
  };
  std::vector<TokenLoad> load();

  /// Every session, registered or stateless, for the stop to close; from now
  /// on a session registered or made stateless is closed as it comes, so
  /// that it starts no call. Calls waiting for room (later) ask again now.
  std::vector<std::shared_ptr<HttpSession>> close_all();

private:
  using Sessions = std::unordered_map<std::string, std::shared_ptr<HttpSession>>;
  std::unique_ptr<Dispatcher> make_dispatcher(const HttpClient* client) const;
  /// The registered session make() ends for a token holding `held`, or
  /// sessions_.end(). Needs mutex_.
  Sessions::iterator fairest_to_end(std::size_t held);

  Backend& backend_;
  WorkerPool& pool_;
  const HttpServerConfig& config_;
  const rawtool::OperatorLog& log_;
  std::function<Clock::time_point()> now_;
  std::mutex mutex_;
  Sessions sessions_;                                                         // guarded by mutex_
  std::unordered_map<const HttpClient*, std::size_t> sessions_by_client_;    // registered and unregistered; guarded by mutex_
  std::size_t unregistered_ = 0;  // made, initialize not yet succeeded; guarded by mutex_
  std::unordered_map<const HttpClient*, std::size_t> calls_by_client_;  // tool calls accepted; guarded by mutex_
  std::unordered_map<const HttpClient*, std::size_t> answering_by_client_;  // of those, answers being written; guarded by mutex_
  // Calls that found their token's slots taken by answers being written,
  // each to ask again when one of that token's calls ends; guarded by mutex_.
  std::unordered_map<const HttpClient*, std::vector<std::function<void()>>> waiting_;
  std::vector<std::shared_ptr<HttpSession>> stateless_;                 // guarded by mutex_
  bool closing_ = false;  // close_all() was called; guarded by mutex_
};

}  // namespace rawtool::mcp::detail
