#pragma once

#include <rawtool/tool.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace rawtool::mcp {

namespace detail {
class Metrics;
}

/// Prometheus metrics of an MCP server, served at http://`listen`/metrics in
/// the Prometheus text format (`listen` is HOST:PORT as for HttpServer; port
/// 0 picks a free one, given by port()). Give it to serve() (ServerOptions)
/// or HttpServer. The figures: tool calls by tool, database and outcome
/// (ok, failed, refused with its reason, cancelled, timeout, unavailable),
/// their durations, rows and reply bytes; each database's pool (connections
/// in use and idle, waits); the hazards the start-up audit found; over HTTP,
/// requests by status, the memory budget, and sessions and calls in flight
/// by token; rawtool's version. Every label is a configured name or a fixed
/// word: nothing a database or an agent wrote becomes a label. The listener
/// has no authentication: serve it on loopback or a network only the scraper
/// reaches. `tool` outlives it.
class MetricsServer {
public:
  /// Checks the address; binds nothing yet. Throws ConfigError (field
  /// "metrics.listen") when it is not HOST:PORT with HOST an IP address or
  /// localhost.
  MetricsServer(Tool& tool, std::string_view listen);
  ~MetricsServer();
  /// Whether `listen` is an address the constructor takes.
  static bool valid_address(std::string_view listen);
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// Audits every database once (connecting to each, as check-config
  /// --connect does) for the hazard figures, then binds and serves on a
  /// thread of its own. Once only. Throws std::runtime_error when the
  /// address cannot be bound.
  void start();
  /// The port start() bound.
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// The text GET /metrics answers now.
  [[nodiscard]] std::string text() const;
  /// For serve() and HttpServer: where they record.
  [[nodiscard]] detail::Metrics& recorder() noexcept;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct ServerOptions {
  /// Longest request line accepted; a longer line is answered with a JSON-RPC
  /// error (-32600, without an id) and skipped, and the server keeps serving.
  /// The reader holds at most this many bytes of one line plus a 64 KiB chunk.
  std::size_t max_line_bytes = 4 * 1024 * 1024;
  /// tools/call requests served at once; 0 means the tool's configured
  /// max_concurrent_calls.
  std::size_t max_concurrent_calls = 0;
  /// Where each call's figures go; none when null. Outlives serve().
  MetricsServer* metrics = nullptr;
};

/// Serves the Model Context Protocol (newline-delimited JSON-RPC 2.0) for
/// `tool`, reading requests from `in_fd` and writing only protocol messages to
/// `out_fd`, until end of input. The server's own events (serving, stopped,
/// ignored, output_closed, internal_error; component "mcp") go to the Tool's
/// operator log, beside the Tool's own. Returns the process exit status (0).
/// Blocks the calling thread.
///
/// Protocol versions 2025-11-25 (answered by default), 2025-06-18, 2025-03-26
/// and 2024-11-05; capabilities: tools only. Tools: raw_sql, and raw_sql_write
/// when the databases' access modes differ (only when the raw path is
/// enabled); certified_query, or one tool per catalog query with
/// certified_tools "per_query"; describe_catalog; describe_schema.
///
/// Threads: the calling thread reads requests and answers at once what needs
/// no tool (initialize, ping, tools/list, errors, notifications/cancelled);
/// each tool call is handed to one of max_concurrent_calls worker threads, so
/// ping and cancellation are served while calls run. A call that finds every
/// worker busy waits in a FIFO queue (up to 256 calls; beyond that it is
/// answered with error -32000). notifications/cancelled stops a running call
/// through its Cancellation, or drops a waiting one; neither is answered. One
/// lock around every write keeps each message one whole line.
///
/// End of input (or an `out_fd` that can no longer be written): calls already
/// accepted get 1.5 s to finish and be answered; then what still runs is
/// cancelled and what still waits is dropped, neither answered, and serve
/// returns once its workers have stopped.
///
/// A write to a closed `out_fd` must not kill the process, so serve ignores
/// SIGPIPE process-wide when its disposition is still the default.
///
/// Throws ConfigError before it reads anything when check_tool_names does.
int serve(Tool& tool, int in_fd, int out_fd, const ServerOptions& options = {});

/// Throws ConfigError (field "catalog: queries[i] (name).name") when, with
/// certified_tools "per_query", a catalog query is named as one of the MCP
/// server's own tools (raw_sql, raw_sql_write, certified_query,
/// describe_catalog, describe_schema), which its own tool would hide. The
/// names are the MCP server's, so the check is too: serve() and HttpServer
/// make it before they serve, and the command line when it opens a
/// configuration.
void check_tool_names(const Tool& tool);

/// Loads the OAuth issuer's key set as `rawtool mcp --http` would at start
/// (http.oauth.jwks_url or jwks_file) and says what it holds, e.g. "3 signing
/// keys usable, 1 ignored". Throws std::runtime_error, in rawtool's words
/// naming the URL or file, when it cannot be fetched, is not a key set, or
/// holds no RS256/ES256 signing key; std::logic_error without http.oauth.
std::string check_oauth_keys(const Config& config);

/// The MCP Streamable HTTP transport for `tool` at http://`listen`/mcp
/// (`listen` is HOST:PORT, HOST an IP address, [IPv6] or localhost; port 0
/// picks a free one, logged in the "serving" event and given by port()). The
/// configuration's `http` key sets the tokens, the origins, the limits.
///
/// start() serves on threads of the server's own and returns; stop() asks it
/// to stop, from any thread; wait() blocks until it has: accepting stops, the
/// calls in flight get http.shutdown_grace_seconds to finish and be
/// answered, the rest are cancelled and answered 503, the workers are joined,
/// and only then does the I/O stop. The server installs no signal handling:
/// a program that stops on SIGTERM waits for the signal itself and calls
/// stop() (as `rawtool mcp --http` does). An exception on any of the
/// server's threads is logged and answered; it never ends the process.
class HttpServer {
public:
  /// Checks the address and the configuration; binds nothing yet. Throws
  /// ConfigError (field "http" or "http.tokens...") when the address is not
  /// one or the configuration cannot be served safely on it: no tokens on an
  /// address that is not loopback without http.allow_unauthenticated, or a
  /// token limited to some databases while the catalog has queries on others
  /// (certified queries are not yet scoped per token), or when
  /// check_tool_names refuses it. `tool` outlives the server.
  HttpServer(Tool& tool, std::string_view listen, MetricsServer* metrics = nullptr);
  /// stop(), then wait().
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds the address and serves. Once only. Throws std::runtime_error
  /// when the address cannot be bound.
  void start();
  /// The port start() bound.
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// Asks the server to stop and returns at once. Thread-safe, idempotent;
  /// not async-signal-safe (call it from a thread that waits for signals).
  void stop() noexcept;
  /// Blocks until stop() was called and the server has stopped; returns 0.
  int wait();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rawtool::mcp
