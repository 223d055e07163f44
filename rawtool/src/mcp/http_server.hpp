#pragma once

// The Streamable HTTP transport (MCP 2025-11-25) over the same core as stdio:
// each MCP session is a Dispatcher, every session's tool calls run on one
// WorkerPool over one Backend. HTTP itself is Boost.Beast's: this file only
// decides what to answer.
//
//   POST /mcp     one JSON-RPC message; a request is answered with one JSON
//                 body, or, for a tool call that asked for progress from a
//                 client that accepts text/event-stream, with an event stream
//                 (progress, then the response); a notification or response
//                 with 202
//   GET /mcp      405 (no server-to-client stream yet)
//   DELETE /mcp   ends the session named by Mcp-Session-Id
//   GET /healthz  200, no authentication, no information
//   GET /.well-known/oauth-protected-resource[/mcp]
//                 with OAuth: the Protected Resource Metadata (RFC 9728)
//
// Every /mcp request is checked before its body is read: Origin (403),
// bearer token, static or OAuth (401 with WWW-Authenticate; an OAuth token
// short of a scope 403), Content-Length over max_body_bytes (413, the
// connection closed unread).

#include "mcp/backend.hpp"
#include "mcp/http_access.hpp"
#include "mcp/http_oauth.hpp"
#include "mcp/protocol.hpp"

#include <rawtool/log.hpp>
#include <rawtool/tool.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rawtool::mcp::detail {

class Metrics;

struct HttpServerConfig {
  ListenAddress listen{"127.0.0.1", 0};
  /// The labels of the databases that cannot be used now, for GET /readyz
  /// (see Readiness); empty: every database counts as usable.
  std::function<std::vector<std::string>(Cancellation&)> unusable_databases;
  /// Where the server's figures go (requests by status, the memory budget,
  /// sessions and calls by token); none when null. Outlives the server.
  Metrics* metrics = nullptr;
  /// The tokens; empty (and no oauth): no authentication, every session is
  /// shown `open`.
  std::vector<HttpClient> clients;
  /// OAuth access tokens accepted beside `clients` (OAuthGate); none when unset.
  std::optional<OAuthSettings> oauth;
  /// What a session of an OAuth identity reaching these databases is shown.
  std::function<ServerDescription(const std::vector<std::string>&)> describe;
  ServerDescription open;
  std::vector<std::string> allowed_origins;
  std::size_t max_body_bytes = 1024 * 1024;
  /// Connections open at once; one more is closed as soon as it is accepted.
  std::size_t max_connections = 1024;
  /// Threads running Beast's I/O; tool calls run on the pool, not here.
  std::size_t io_threads = 2;
  std::size_t max_concurrent_calls = 4;
  std::size_t max_queued_calls = 256;
  std::size_t max_reply_bytes = 8 * 1024 * 1024;
  /// What the server's requests may hold at once, in all (MemoryBudget): the
  /// bodies of requests being read or served, call_reserve_bytes for each
  /// tool call running, and each answer until it is written. A request whose
  /// body does not fit is answered 503; a call that does not fit when a
  /// worker takes it, -32000 without running.
  std::size_t max_memory_bytes = 256 * 1024 * 1024;
  /// What a running tool call may hold: its rows and its answer (up to
  /// max_reply_bytes) while it is made. Once answered, the call holds its
  /// answer's size instead.
  std::size_t call_reserve_bytes = 24 * 1024 * 1024;
  /// Sessions open at once, and per token; an initialize beyond either is
  /// answered 503. Sessions idle longer than session_idle are ended first.
  std::size_t max_sessions = 1024;
  std::size_t max_sessions_per_token = 1024;
  /// Tool calls one token may have accepted at once (0: no limit); one more
  /// is answered with a JSON-RPC error -32000.
  std::size_t max_calls_per_token = 0;
  /// A session with no request in flight and none for this long is ended
  /// (checked when a session is opened).
  std::chrono::milliseconds session_idle{3600 * 1000};
  /// A client that takes longer than request_timeout to send a request's
  /// headers and body once it has begun, or to take a response, or that
  /// sends no request for idle_timeout, is disconnected; so is one whose
  /// request headers are not complete within head_timeout (of the opening of
  /// the connection for its first request, of the first byte for later ones).
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds idle_timeout{60000};
  std::chrono::milliseconds head_timeout{10000};
  /// False: stateless. No Mcp-Session-Id is issued or read; every request is
  /// answered by a session of its own that lives as long as the request, so
  /// any instance behind a load balancer can take any request. A call is
  /// cancelled by closing its connection (notifications/cancelled, sent on
  /// another request, finds nothing to cancel).
  bool sessions = true;
  /// At a stop: how long calls in flight may still finish and be answered
  /// before the rest are cancelled.
  std::chrono::milliseconds shutdown_grace{5000};
};

/// One HTTP server: start() binds and serves, stop() asks it to stop from any
/// thread, wait() blocks until it has stopped. It installs no signal
/// handling: whoever owns the process's signals (the command line) calls
/// stop().
///
/// The stop: the server stops accepting, lets the calls in flight finish for
/// shutdown_grace and answers them, cancels the rest and answers each of
/// those 503 with a JSON-RPC error naming the stop; a session opened while it
/// stops starts no call. Then the workers are joined (nothing they run can
/// post an answer after this), the answers are written (at most 2 s more),
/// and only then do the I/O threads stop and the I/O objects go.
///
/// Logs "serving" with the bound address (so a caller that asked for port 0
/// learns the port), one "request" event per authenticated /mcp request
/// naming the token (never the token itself), and "stopped". An exception on
/// any of its threads is caught, logged ("internal_error"), and the request
/// it belonged to answered with an internal error; the server keeps serving.
class HttpServer {
public:
  /// `backend`, `config` and `log` outlive the server.
  HttpServer(Backend& backend, const HttpServerConfig& config, const rawtool::OperatorLog& log);
  /// stop(), then wait().
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds the address, starts the I/O threads and logs "serving". Once
  /// only. Throws std::runtime_error when the address cannot be bound.
  void start();
  /// The port bound by start().
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// Asks the server to stop; returns at once. Thread-safe and idempotent;
  /// not for a signal handler (it takes a lock). Before start(): the server
  /// will not start.
  void stop() noexcept;
  /// Blocks until stop() was called and the stop above is complete; returns
  /// 0. Thread-safe: the first caller runs the stop, others wait for it.
  int wait();

private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rawtool::mcp::detail
