#include "mcp/http_server.hpp"

#include "mcp/dispatcher.hpp"
#include "mcp/http_event_stream.hpp"
#include "mcp/http_idle.hpp"
#include "mcp/http_memory.hpp"
#include "mcp/http_readiness.hpp"
#include "mcp/http_sessions.hpp"
#include "mcp/metrics.hpp"
#include "mcp/worker_pool.hpp"

#include <rawtool/log.hpp>

#include <rawtool/crypto.hpp>
#include <rawtool/render/json.hpp>

// Boost 1.74's Asio uses std::exchange without including <utility> under C++20.
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <sys/socket.h>

namespace rawtool::mcp::detail {

namespace {

/// A limit as a refusal names it: "max_body_bytes=1048576 (http.max_body_bytes)".
std::string http_setting(std::string_view name, std::size_t value) {
  return fmt::format("{}={} (http.{})", name, value, name);
}

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;
using rawtool::OperatorLog;
using Response = http::response<http::string_body>;

constexpr std::size_t max_header_bytes = 16 * 1024;
// A connection closed without reading a request's body is drained of at most
// this much, so the client reads the answer instead of a reset.
constexpr std::size_t max_drain_bytes = 256 * 1024;

using Clock = std::chrono::steady_clock;

class Connection;

class Server {
public:
  Server(Backend& backend, const HttpServerConfig& config, const OperatorLog& log)
      : config_(config),
        log_(log),
        memory_(config.max_memory_bytes),
        pool_(config.max_concurrent_calls, config.max_queued_calls),
        sessions_(backend, pool_, config, log),
        readiness_(config.unusable_databases ? config.unusable_databases
                                             : Readiness::Probe([](Cancellation&) { return std::vector<std::string>{}; }),
                   log),
        acceptor_(asio::make_strand(io_)),
        oauth_(config.oauth ? std::make_unique<OAuthGate>(
                                  *config.oauth,
                                  [describe = config.describe](const std::vector<std::string>& databases) {
                                    return std::make_shared<const ServerDescription>(describe(databases));
                                  },
                                  log)
                            : nullptr) {}

  void start();
  std::uint16_t port() const noexcept { return port_; }
  void stop() noexcept;
  int wait();

  const HttpServerConfig& config() const noexcept { return config_; }
  const OperatorLog& log() const noexcept { return log_; }

  /// Which sessions exist, whose they are, and the limits on them.
  SessionRegistry& sessions() noexcept { return sessions_; }

  /// The connections waiting for a request, one of which a new connection
  /// closes at max_connections.
  IdleConnections& idle() noexcept { return idle_; }

  /// What requests, running calls and unwritten answers hold, in all.
  MemoryBudget& memory() noexcept { return memory_; }

  /// Whether every database can be used, for /readyz.
  Readiness& readiness() noexcept { return readiness_; }

  /// OAuth access tokens; nullptr when none are accepted.
  OAuthGate* oauth() noexcept { return oauth_.get(); }
  /// Whether /mcp requests must carry a token.
  bool authenticates() const noexcept { return !config_.clients.empty() || oauth_ != nullptr; }

  /// Ends `session` off the I/O threads (its running statements are
  /// cancelled, which may take a moment), then runs `done` on `executor`.
  void close_in_background(std::shared_ptr<HttpSession> session, asio::any_io_executor executor, std::function<void()> done) {
    std::lock_guard lock(closers_mutex_);
    join_closers(false);
    auto finished = std::make_shared<std::atomic<bool>>(false);
    closers_.push_back({std::thread([this, session = std::move(session), executor = std::move(executor), done = std::move(done),
                                     finished]() mutable {
                          // A thread's top: what throws is logged, and the
                          // request is answered all the same (its session is
                          // out of the registry already).
                          try {
                            session->dispatcher->close(std::chrono::milliseconds(0));
                          } catch (...) {
                            log_internal_error(log_, "ending a session threw; the session is ended");
                          }
                          try {
                            asio::post(executor, std::move(done));
                          } catch (...) {
                            log_internal_error(log_, "answering the end of a session threw; its connection is closed");
                          }
                          *finished = true;
                        }),
                        finished});
  }

  /// Requests handed to a session whose answer is not yet written: counted
  /// by begin_write, uncounted by end_write once it is written or failed.
  void begin_write() {
    std::lock_guard lock(written_mutex_);
    ++requests_in_flight_;
  }
  void end_write() {
    std::lock_guard lock(written_mutex_);
    if (--requests_in_flight_ == 0) written_.notify_all();
  }
  /// Connections open.
  std::atomic<std::size_t> connections{0};
  /// Set once a stop signal came: a call that ends unanswered was cancelled
  /// by the stop, and its request is told so.
  std::atomic<bool> stopping{false};

private:
  void accept();
  /// The stop, in the reverse order of start (see HttpServer).
  void shut_down();
  void run_io() noexcept;

  const HttpServerConfig& config_;
  const OperatorLog& log_;
  // Declared before everything that can hold a connection, so destroyed
  // after it: a connection leaves it when it is destroyed.
  IdleConnections idle_;
  MemoryBudget memory_;       // declared before the connections, whose charges it outlives
  WorkerPool pool_;           // outlives the sessions, which are declared after it
  SessionRegistry sessions_;  // made on pool_; its unregistered sessions (held by connections) are released before it
  Readiness readiness_;
  std::mutex written_mutex_;
  std::condition_variable written_;     // requests_in_flight_ reached 0
  std::size_t requests_in_flight_ = 0;  // guarded by written_mutex_
  std::mutex closers_mutex_;
  struct Closer {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };
  // Joins the closers that are done, or every one. Needs closers_mutex_.
  void join_closers(bool all) {
    for (auto closer = closers_.begin(); closer != closers_.end();) {
      if (!all && !*closer->finished) {
        ++closer;
        continue;
      }
      closer->thread.join();
      closer = closers_.erase(closer);
    }
  }
  std::vector<Closer> closers_;  // sessions being ended by DELETE; guarded by closers_mutex_
  // Declared after the pool and the sessions, so destroyed before them: the
  // connections its handlers still hold release their sessions (closed by
  // the stop) while the joined pool still exists. By then wait() has joined
  // the workers and the closers, so nothing posts to it any more.
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::steady_timer accept_pause_{acceptor_.get_executor()};
  std::size_t accept_failures_ = 0;      // in a row; on the acceptor's strand
  std::size_t refused_connections_ = 0;  // in a row; on the acceptor's strand
  std::size_t made_room_ = 0;            // connections closed for a new one, in a row; on the acceptor's strand
  // Once the acceptor closes, a connection waiting for a worker's answer has
  // no operation pending; the guard keeps the I/O threads running for it
  // until shut_down() stops them.
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> keep_running_;
  std::vector<std::thread> io_threads_;  // started by start(), joined by shut_down()
  std::uint16_t port_ = 0;
  std::mutex stop_mutex_;
  std::condition_variable stop_changed_;
  std::mutex start_mutex_;
  bool serving_ = false;        // start() bound the address; guarded by start_mutex_
  bool start_called_ = false;   // guarded by stop_mutex_
  bool stopping_ = false;       // stop() was called; guarded by stop_mutex_
  bool shutting_down_ = false;  // a wait() runs the stop; guarded by stop_mutex_
  bool shut_down_ = false;      // the stop is complete; guarded by stop_mutex_
  // Declared after io_, so destroyed before it: its fetch thread, which posts
  // to connections, is joined while their executors exist.
  std::unique_ptr<OAuthGate> oauth_;
};

/// One TCP connection: reads a request, decides, answers, reads the next.
/// Every handler runs on the connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
public:
  Connection(tcp::socket socket, Server& server) : stream_(std::move(socket)), server_(server) { ++server_.connections; }
  ~Connection() {
    if (waiting_) server_.idle().leave(*waiting_);
    // An answer whose write failed part way (an event stream the client left)
    // counts no more once nothing can write it.
    if (counted(phase_)) enter(Phase::closing);
    --server_.connections;
  }

  void start() { read_header(); }

  /// The response to the message in flight (on the strand), with what its
  /// call reserved of the memory budget (empty for an answer made at once).
  void deliver(std::string message, MemoryBudget::Charge reserved);
  /// The message in flight gets no response: a notification, or a call that
  /// was cancelled (on the strand).
  void deliver_nothing();
  /// A notification about the message in flight (progress), sent when the
  /// request is answered as an event stream (on the strand).
  void deliver_event(const std::string& message);

private:
  void read_header();
  void read_request_header();
  /// Taken from the waiting connections, under `ticket`, to admit a new one
  /// (on the strand): closed, unless it has stopped waiting under that
  /// ticket meanwhile (its request's headers came).
  void close_for_room(IdleConnections::Ticket ticket);
  /// Answers a request Beast could not parse with 400 (431 for headers over
  /// the limit), logs it and closes; false for an error that is no request
  /// (the client closed, or went quiet).
  bool refuse_malformed(const beast::error_code& error);
  /// What makes a request one the server cannot serve on this connection.
  enum class Malformed {
    framing,       ///< its HTTP could not be parsed, or its body's length cannot be known: 400
    host,          ///< not exactly one valid Host, or none in HTTP/1.1 (RFC 9112, 3.2): 400
    header_limit,  ///< its headers are over max_header_bytes: 431
  };
  /// Answers, logs and closes: nothing after such a request can be trusted
  /// to be framed as its sender meant.
  void refuse_malformed(Malformed what);
  void on_header();
  bool authorize(const http::request<http::string_body>& request);
  void on_body();
  void admit();
  void handle_delete();
  void refuse(http::status status, std::string_view message);
  /// Writes `response`, then reads the next request, or closes when the
  /// request asked so, its body was not read, or `close` (its framing is
  /// malformed: nothing after it can be framed).
  void send(Response response, bool close = false);
  void drain_and_close();
  void watch_for_hangup();
  void answered();
  void start_event_stream();
  void write_stream_piece(EventStream::Piece piece, std::string bytes, EventStream::Written written);
  /// `unanswered`: a request that got no JSON-RPC response (a cancelled call).
  void log_request(unsigned status, bool unanswered = false);

  /// Where the connection is with its request. Changed only by enter(),
  /// which keeps the server's counts that follow from it.
  enum class Phase {
    reading,    ///< waiting for a request, or reading one
    replying,   ///< writing an answer of its own (a refusal, /healthz): no session is involved
    handed,     ///< the request is with its session: counted against it and its token (begin_request)
                ///< and by the stop, which waits for its answer to be written (begin_write)
    watched,    ///< handed, a tool call whose answer is awaited: the socket is watched for a hang-up
    answering,  ///< the session answered; the answer is being written. Still counted: a reply
                ///< waiting for a slow reader holds its token's call slot and the stop's wait
    closing,    ///< the last answer is written: the connection drains and closes
  };
  void enter(Phase next);
  static bool counted(Phase phase) noexcept {
    return phase == Phase::handed || phase == Phase::watched || phase == Phase::answering;
  }
  static bool unanswered(Phase phase) noexcept { return phase == Phase::handed || phase == Phase::watched; }

  /// How the request came by session_.
  enum class SessionOrigin {
    named,       ///< found under the request's Mcp-Session-Id
    made,        ///< made by the request's initialize; not registered (yet, or ever: it failed)
    registered,  ///< registered by the request's initialize: the answer carries its Mcp-Session-Id
    own,         ///< a stateless server's session for this request alone
  };

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Server& server_;
  const HttpClient* client_ = nullptr;
  Phase phase_ = Phase::reading;
  /// Among the server's waiting connections, from when it waits for a
  /// request until that request's headers are complete.
  std::optional<IdleConnections::Ticket> waiting_;
  bool authenticated_ = false;  ///< a request of this connection carried a valid token
  bool keys_refreshed_ = false;  ///< this request's OAuth token waited for the key set once
  std::shared_ptr<const json> claims_;  ///< this request's OAuth token's claims; null otherwise
  bool served_ = false;         ///< a request's headers were complete on this connection
  Clock::time_point opened_ = Clock::now();
  Clock::time_point request_started_;  ///< the first byte of the request being read
  std::shared_ptr<HttpSession> session_;
  SessionOrigin session_origin_ = SessionOrigin::named;
  std::string rpc_method_;  // for the log: the JSON-RPC method, when it is a string
  json request_id_;         // the id of the request in flight; null for a notification
  json message_;            // the request's message, from on_body until admit() hands it to session_
  // Made when the connection drains, not for every idle connection.
  std::unique_ptr<std::array<char, 16 * 1024>> drain_;
  std::size_t drained_ = 0;
  // The answer as text/event-stream (a tool call whose client accepts it and
  // asked for progress): a chunked response, one event per message. Empty
  // for an answer in one body.
  std::optional<EventStream> events_;
  std::shared_ptr<http::response<http::empty_body>> stream_head_;
  std::shared_ptr<http::response_serializer<http::empty_body>> stream_serializer_;
  Accepted accepted_;  // what the request's Accept allows
  // Of the server's memory budget, until the answer is written (or the
  // connection goes): the request's body, and its answer.
  MemoryBudget::Charge body_charge_;
  MemoryBudget::Charge answer_charge_;
};

/// The channel one POST's message is answered through. The response goes to
/// the connection's strand; progress is dropped (the answer is one JSON
/// body); a channel released with nothing sent answers 202.
class RequestChannel final : public ReplyChannel {
public:
  RequestChannel(std::shared_ptr<Connection> connection, asio::any_io_executor strand, MemoryBudget& memory,
                 std::size_t call_reserve, std::shared_ptr<const json> claims)
      : connection_(std::move(connection)), strand_(std::move(strand)), memory_(memory), call_reserve_(call_reserve),
        claims_(std::move(claims)) {}
  ~RequestChannel() override {
    if (!sent_.exchange(true)) asio::post(strand_, [connection = connection_] { connection->deliver_nothing(); });
  }

  void send(std::string message) override {
    if (sent_.exchange(true)) return;
    // The call is over: from here its answer holds its own size, not the
    // call's reservation, while it waits for the strand (hundreds of answers
    // may queue there behind a burst).
    reserved_.resize(message.size());
    asio::post(strand_, [connection = connection_, message = std::move(message), reserved = std::move(reserved_)]() mutable {
      connection->deliver(std::move(message), std::move(reserved));
    });
  }
  void notify(std::string message) override {
    asio::post(strand_, [connection = connection_, message = std::move(message)] { connection->deliver_event(message); });
  }
  /// On the worker, before the call runs; send() follows on the same thread.
  bool reserve() override {
    auto charge = memory_.try_take(call_reserve_);
    if (!charge) return false;
    reserved_ = std::move(*charge);
    return true;
  }
  std::string no_room() const override {
    return fmt::format("{}, what requests, running calls and unread answers may hold, is in use; the call did not "
                       "run; try again shortly",
                       http_setting("max_memory_bytes", memory_.limit()));
  }
  const json* caller_claims() const noexcept override { return claims_.get(); }

private:
  std::shared_ptr<Connection> connection_;
  asio::any_io_executor strand_;
  MemoryBudget& memory_;
  const std::size_t call_reserve_;
  const std::shared_ptr<const json> claims_;  // the request's OAuth token's; null for a static token
  MemoryBudget::Charge reserved_;  // the running call's, handed on with its answer
  std::atomic<bool> sent_{false};
};

/// For a message the server makes up itself and that is answered with
/// nothing (a cancellation on a client's hang-up).
class NoReply final : public ReplyChannel {
public:
  void send(std::string) override {}
};

std::string error_body(ErrorCode code, std::string_view message) {
  return render::dump(error_response(json(), code, message));
}

std::optional<std::string_view> header(const http::request<http::string_body>& request, http::field field) {
  const auto found = request.find(field);
  if (found == request.end()) return std::nullopt;
  return std::string_view(found->value().data(), found->value().size());
}

std::optional<std::string_view> header(const http::request<http::string_body>& request, std::string_view name) {
  const auto found = request.find(beast::string_view(name.data(), name.size()));
  if (found == request.end()) return std::nullopt;
  return std::string_view(found->value().data(), found->value().size());
}

// RFC 9112, 3.2: an HTTP/1.1 request has exactly one Host, any request at
// most one, and its value is a URI's host and port (RFC 3986, 3.2.2), or
// empty. A proxy and the server that disagree on the host disagree on the
// request.
bool host_valid(const http::request<http::string_body>& request) {
  const auto hosts = request.count(http::field::host);
  if (hosts > 1 || (hosts == 0 && request.version() >= 11)) return false;
  if (hosts == 0) return true;
  const auto value = request.find(http::field::host)->value();
  return std::all_of(value.begin(), value.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || std::string_view("-._~%!$&'()*+,;=:[]").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

void Connection::read_header() {
  parser_.emplace();
  parser_->header_limit(max_header_bytes);
  // The body's size is judged after the headers, so that a request that is
  // refused anyway (origin, token) is refused for that reason. (Beast 1.74
  // compares Content-Length with an unset optional limit as over it, so the
  // limit for the headers is the largest number instead.)
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  enter(Phase::reading);
  client_ = nullptr;
  session_.reset();
  session_origin_ = SessionOrigin::named;
  events_.reset();
  rpc_method_.clear();
  request_id_ = nullptr;
  if (!waiting_) {
    waiting_ = server_.idle().enter(authenticated_, [weak = weak_from_this(), executor = stream_.get_executor()](IdleConnections::Ticket ticket) {
      asio::post(executor, [weak, ticket] {
        if (const auto self = weak.lock()) self->close_for_room(ticket);
      });
    });
  }
  if (buffer_.size() != 0) return read_request_header();  // the next request has begun
  // Waiting for a request is bounded by idle_timeout, and for the first
  // request by head_timeout too: a client that connects and sends nothing
  // is not kept for a minute. Once its first byte is here, the whole request
  // by request_timeout, its headers also by head_timeout.
  const auto& config = server_.config();
  stream_.expires_after(served_ ? config.idle_timeout : std::min(config.idle_timeout, config.head_timeout));
  stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code error, std::size_t read) {
    if (error) return;  // closed or idle too long: the connection ends
    self->buffer_.commit(read);
    self->read_request_header();
  });
}

void Connection::close_for_room(IdleConnections::Ticket ticket) {
  if (waiting_ != ticket) return;  // its request's headers came first: it is served
  waiting_.reset();
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);  // the read pending ends, and the connection with it
}

void Connection::read_request_header() {
  const auto& config = server_.config();
  request_started_ = Clock::now();
  Clock::time_point head_deadline = request_started_ + std::min(config.head_timeout, config.request_timeout);
  if (!served_) head_deadline = std::min(head_deadline, opened_ + config.head_timeout);
  stream_.expires_at(head_deadline);
  http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code error, std::size_t) {
    if (self->refuse_malformed(error)) return;
    if (error) return;  // closed or timed out: the connection ends
    self->on_header();
  });
}

bool Connection::refuse_malformed(const beast::error_code& error) {
  // A client that closed or went quiet is not answered; a request Beast could
  // not parse is, so that its sender and the log both learn why it ended.
  if (error.category() != http::make_error_code(http::error::bad_method).category() ||
      error == http::error::end_of_stream || error == http::error::partial_message || error == http::error::short_read) {
    return false;
  }
  refuse_malformed(error == http::error::header_limit ? Malformed::header_limit : Malformed::framing);
  return true;
}

void Connection::refuse_malformed(Malformed what) {
  struct Refusal {
    http::status status;
    std::string_view logged;
    std::string_view message;
  };
  const Refusal refusal = [what]() -> Refusal {
    switch (what) {
      case Malformed::header_limit:
        return {http::status::request_header_fields_too_large, "a request whose headers are over 16 KiB (431)",
                "the request's headers are over 16 KiB"};
      case Malformed::host:
        return {http::status::bad_request, "a request without exactly one valid Host header (400)",
                "the request must have exactly one valid Host header"};
      case Malformed::framing:
        break;
    }
    return {http::status::bad_request, "a request whose HTTP framing could not be parsed (400)",
            "the request's HTTP framing is malformed"};
  }();
  log_event(server_.log(), LogLevel::warn, "rejected", refusal.logged);
  // Whatever follows on this connection cannot be framed: the answer closes it.
  Response response(refusal.status, 11);
  response.set(http::field::content_type, "application/json");
  response.body() = error_body(ErrorCode::invalid_request, refusal.message);
  send(std::move(response), true);
}

void Connection::on_header() {
  if (waiting_) server_.idle().leave(*std::exchange(waiting_, std::nullopt));
  served_ = true;
  stream_.expires_at(request_started_ + server_.config().request_timeout);  // for the body
  const auto& request = parser_->get();
  const auto target = std::string_view(request.target().data(), request.target().size());
  const auto method = request.method();
  // A Transfer-Encoding whose last coding is not chunked leaves the body's
  // length unknowable (RFC 9112, 6.3): the request cannot be framed.
  if (request.find(http::field::transfer_encoding) != request.end() && !parser_->chunked()) {
    return refuse_malformed(Malformed::framing);
  }
  if (!host_valid(request)) return refuse_malformed(Malformed::host);
  if (target == "/healthz") {
    if (method != http::verb::get && method != http::verb::head) return refuse(http::status::method_not_allowed, "");
    Response response(http::status::ok, request.version());
    response.set(http::field::content_type, "text/plain");
    response.body() = method == http::verb::get ? "ok\n" : "";
    return send(std::move(response));
  }
  if (target == "/readyz") {
    // Unauthenticated, as /healthz: it names no database (the log does).
    if (method != http::verb::get && method != http::verb::head) return refuse(http::status::method_not_allowed, "");
    const std::optional<bool> ready = server_.readiness().ready();
    Response response(ready.value_or(false) ? http::status::ok : http::status::service_unavailable, request.version());
    response.set(http::field::content_type, "text/plain");
    if (!ready) response.set(http::field::retry_after, "1");
    const char* body = !ready  ? "not ready: the first check of the databases is under way\n"
                       : *ready ? "ready\n"
                                : "not ready: a database cannot be used; the operator log names it (event readiness)\n";
    response.body() = method == http::verb::get ? body : "";
    return send(std::move(response));
  }
  if (server_.oauth() != nullptr && target.rfind("/.well-known/oauth-protected-resource", 0) == 0 &&
      (target == "/.well-known/oauth-protected-resource" ||
       target == resource_metadata_path(server_.oauth()->settings().rules.resource))) {
    // Unauthenticated: it is how a client learns where to get a token.
    if (method != http::verb::get && method != http::verb::head) return refuse(http::status::method_not_allowed, "");
    Response response(http::status::ok, request.version());
    response.set(http::field::content_type, "application/json");
    response.set(http::field::cache_control, "max-age=3600");
    response.body() = method == http::verb::get ? resource_metadata(server_.oauth()->settings()).dump() : "";
    return send(std::move(response));
  }
  if (target != "/mcp") return refuse(http::status::not_found, "no such endpoint; MCP is served at /mcp");
  if (!origin_allowed(header(request, http::field::origin), server_.config().allowed_origins)) {
    log_event(server_.log(), LogLevel::warn, "rejected", "a request from an origin not in http.allowed_origins (403)");
    return refuse(http::status::forbidden, "this Origin is not allowed");
  }
  if (server_.authenticates() && !authorize(request)) return;
  if (const auto version = header(request, "MCP-Protocol-Version");
      version && negotiate_protocol_version(*version) != *version) {
    return refuse(http::status::bad_request, "unsupported MCP-Protocol-Version");
  }
  const bool sessions = server_.config().sessions;
  if (method == http::verb::delete_ && sessions) return handle_delete();
  if (method != http::verb::post) {
    // No server-to-client stream; without sessions, nothing to end either.
    Response response(http::status::method_not_allowed, request.version());
    response.set(http::field::allow, sessions ? "POST, DELETE" : "POST");
    return send(std::move(response));
  }
  accepted_ = accepted_types(header(request, http::field::accept));
  if (!accepted_.json && !accepted_.event_stream) {
    return refuse(http::status::not_acceptable, "the Accept header must allow application/json or text/event-stream");
  }
  const auto length = parser_->content_length();
  if (length && *length > server_.config().max_body_bytes) {
    log_event(server_.log(), LogLevel::warn, "rejected", "a request body over http.max_body_bytes (413)");
    return refuse(http::status::payload_too_large, "the request body is over " + http_setting("max_body_bytes", server_.config().max_body_bytes));
  }
  parser_->body_limit(server_.config().max_body_bytes);  // a chunked body is stopped at the limit too
  // The body is held until the answer is written: it counts from now (a
  // chunked one as the most it may be).
  auto body = server_.memory().try_take(length ? static_cast<std::size_t>(*length) : server_.config().max_body_bytes);
  if (!body) {
    log_event(server_.log(), LogLevel::warn, "rejected", "a request while http.max_memory_bytes was in use (503)");
    Response response(http::status::service_unavailable, request.version());
    response.set(http::field::retry_after, "1");
    response.set(http::field::content_type, "application/json");
    response.body() = error_body(ErrorCode::server_busy,
                                 http_setting("max_memory_bytes", server_.memory().limit()) +
                                     ", what requests, running calls and unread answers may hold, is in use; try "
                                     "again shortly");
    return send(std::move(response));
  }
  body_charge_ = std::move(*body);
  http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code error, std::size_t) {
    if (error == http::error::body_limit) {
      return self->refuse(http::status::payload_too_large, "the request body is over " + http_setting("max_body_bytes", self->server_.config().max_body_bytes));
    }
    if (self->refuse_malformed(error)) return;
    if (error) return;
    self->on_body();
  });
}

// Sets client_ from the request's bearer token, a static one or an OAuth
// one; false when the request was answered instead (401, 403, 503) or waits
// for a newer key set (on_header runs again once it is fetched).
bool Connection::authorize(const http::request<http::string_body>& request) {
  const auto authorization = header(request, http::field::authorization);
  client_ = authorization ? authenticate(*authorization, server_.config().clients) : nullptr;
  claims_.reset();
  std::optional<OAuthGate::Outcome> outcome;
  OAuthGate* oauth = server_.oauth();
  if (client_ == nullptr && oauth != nullptr && authorization) {
    if (const auto token = bearer_token(*authorization)) {
      const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
      outcome = oauth->check(*token, now);
      if (outcome->kind == OAuthGate::Outcome::Kind::unknown_key && !keys_refreshed_) {
        // Perhaps signed by a key the issuer rotated in: fetch the set again
        // (at most once per interval) and check this request once more.
        keys_refreshed_ = true;
        oauth->refresh([self = shared_from_this()] {
          asio::post(self->stream_.get_executor(), [self] { self->on_header(); });
        });
        return false;
      }
      if (outcome->kind == OAuthGate::Outcome::Kind::accepted) {
        client_ = outcome->client;
        claims_ = outcome->claims;
      }
    }
  }
  keys_refreshed_ = false;
  authenticated_ = authenticated_ || client_ != nullptr;
  if (client_ != nullptr) return true;

  std::string challenge = "Bearer realm=\"rawtool\"";
  if (oauth != nullptr) {
    challenge += ", resource_metadata=\"" + resource_metadata_url(oauth->settings().rules.resource) + "\"";
  }
  using Kind = OAuthGate::Outcome::Kind;
  if (outcome && outcome->kind == Kind::insufficient_scope) {
    log_event(server_.log(), LogLevel::warn, "rejected", "an OAuth token without a scope it needs (403)");
    Response response(http::status::forbidden, request.version());
    response.set(http::field::www_authenticate, challenge + ", error=\"insufficient_scope\", scope=\"" + outcome->scope + "\"");
    response.set(http::field::content_type, "application/json");
    response.body() = error_body(ErrorCode::invalid_request, "the token lacks a scope this server needs: " + outcome->scope);
    send(std::move(response));
    return false;
  }
  if (outcome && outcome->kind == Kind::busy) {
    log_event(server_.log(), LogLevel::error, "rejected",
              "an OAuth token of one identity more than the server remembers (503); restart to forget them");
    Response response(http::status::service_unavailable, request.version());
    response.set(http::field::content_type, "application/json");
    response.body() = error_body(ErrorCode::server_busy,
                                 fmt::format("the server remembers at most {} OAuth identities (a fixed limit) and has "
                                             "met that many; it admits another only after its operator restarts it",
                                             server_.config().oauth->max_identities));
    send(std::move(response));
    return false;
  }
  std::string why = "a request without a valid bearer token (401)";
  if (outcome) why = "a request with an OAuth token refused: " + std::string(describe(outcome->refusal)) + " (401)";
  log_event(server_.log(), LogLevel::warn, "rejected", why);
  Response response(http::status::unauthorized, request.version());
  if (authorization) {
    challenge += ", error=\"invalid_token\"";
    if (outcome) challenge += ", error_description=\"" + std::string(describe(outcome->refusal)) + "\"";
  }
  response.set(http::field::www_authenticate, challenge);
  response.set(http::field::content_type, "application/json");
  response.body() = error_body(ErrorCode::invalid_request, "a valid bearer token is required");
  send(std::move(response));
  return false;
}

void Connection::on_body() {
  const auto& request = parser_->get();
  const auto type = header(request, http::field::content_type);
  if (!type || type->substr(0, 16) != "application/json") {
    return refuse(http::status::unsupported_media_type, "the body must be application/json");
  }
  auto parsed = read_message(request.body());
  if (auto* error = std::get_if<Send>(&parsed)) {
    Response response(http::status::bad_request, request.version());
    response.set(http::field::content_type, "application/json");
    response.body() = render::dump(error->message);
    return send(std::move(response));
  }
  const json& message = std::get<json>(parsed);
  if (message.is_object()) {
    if (const auto id = message.find("id"); id != message.end() && (id->is_string() || id->is_number_integer())) {
      request_id_ = *id;
    }
    if (const auto found = message.find("method"); found != message.end() && found->is_string()) {
      const auto& name = found->get_ref<const std::string&>();
      // Only method names the server knows go to the log; the rest is the client's text.
      static constexpr std::string_view known[] = {"initialize", "notifications/initialized", "ping", "tools/list",
                                                   "tools/call", "notifications/cancelled"};
      rpc_method_ = std::find(std::begin(known), std::end(known), name) != std::end(known) ? name : "other";
    }
  }
  if (!server_.config().sessions) {
    session_ = server_.sessions().make_stateless(client_, rpc_method_ == "initialize",
                                              header(request, "MCP-Protocol-Version").value_or(latest_protocol_version));
    session_origin_ = SessionOrigin::own;
  } else if (rpc_method_ == "initialize") {
    SessionRegistry::SessionLimit met{};
    session_ = server_.sessions().make(client_, &met);
    if (session_ == nullptr) {
      const auto& config = server_.config();
      return refuse(http::status::service_unavailable,
                    met == SessionRegistry::SessionLimit::per_token
                        ? "this token has " + http_setting("max_sessions_per_token", config.max_sessions_per_token) +
                              " sessions open; end one (DELETE) or wait until one idles out"
                        : http_setting("max_sessions", config.max_sessions) +
                              " sessions are open and none can be ended for this one; try again later");
    }
    session_origin_ = SessionOrigin::made;
  } else {
    const auto id = header(request, "Mcp-Session-Id");
    if (!id) return refuse(http::status::bad_request, "Mcp-Session-Id is required after initialize");
    session_ = server_.sessions().find(std::string(*id), client_);
    if (session_ == nullptr) return refuse(http::status::not_found, "no such session; initialize again");
  }
  message_ = std::move(std::get<json>(parsed));
  admit();
}

// Hands message_ to session_, or answers that its token has no call slot
// free, or waits for one that an answer being written holds.
void Connection::admit() {
  const bool tool_call = rpc_method_ == "tools/call";
  std::function<void()> on_room;  // only a tool call can wait
  if (tool_call) on_room = [self = shared_from_this()] { asio::post(self->stream_.get_executor(), [self] { self->admit(); }); };
  const auto admission = server_.sessions().begin_request(*session_, tool_call, std::move(on_room));
  if (admission == SessionRegistry::Admission::later) return;
  const auto& request = parser_->get();
  if (admission == SessionRegistry::Admission::busy) {
    if (session_origin_ == SessionOrigin::own) server_.sessions().end_stateless(session_);  // answered here, never counted
    Response response(http::status::ok, request.version());
    response.set(http::field::content_type, "application/json");
    response.body() = render::dump(error_response(
        request_id_, ErrorCode::server_busy,
        "this token has " + http_setting("max_calls_per_token", server_.config().max_calls_per_token) +
            " tool calls running; try again when one has answered"));
    log_request(200);
    return send(std::move(response));
  }
  const json message = std::move(message_);
  enter(Phase::handed);
  stream_.expires_never();  // the answer may wait for a tool call
  bool event_stream = false;
  if (tool_call && message.contains("params") && message["params"].is_object()) {
    const json& params = message["params"];
    const bool wants_progress = params.contains("_meta") && params["_meta"].is_object() &&
                                params["_meta"].contains("progressToken");
    event_stream = wants_progress && accepted_.event_stream;
  }
  // A client that takes only an event stream gets every answer as one.
  if (!accepted_.json) event_stream = true;
  if (event_stream) start_event_stream();
  auto channel = std::make_shared<RequestChannel>(shared_from_this(), stream_.get_executor(), server_.memory(),
                                                  server_.config().call_reserve_bytes, claims_);
  auto handled = Dispatcher::Handled::answered;
  try {
    handled = session_->dispatcher->handle(message, channel);
  } catch (...) {
    // Answered with an internal error, unless its answer went out already;
    // the exception's text may carry outside words and is not shown.
    log_internal_error(server_.log(), "handling a request threw; answered with an internal error");
    channel->send(render::dump(error_response(request_id_, ErrorCode::internal_error, "internal error")));
    return;
  }
  if (handled == Dispatcher::Handled::started && !request_id_.is_null()) {
    enter(Phase::watched);
    watch_for_hangup();
  }
}

// While a tool call runs nothing is read from the client. A client that
// closes the connection gives up on the call, as notifications/cancelled
// would say: the statement is cancelled on the server. Data instead of a
// close (a pipelined request) ends the watch and waits for its turn.
void Connection::watch_for_hangup() {
  stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code error) {
    if (error || self->phase_ != Phase::watched) return;
    char byte = 0;
    const ssize_t peeked = ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (peeked > 0 || (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))) return;
    self->enter(Phase::handed);
    const json cancel{{"jsonrpc", "2.0"},
                      {"method", "notifications/cancelled"},
                      {"params", {{"requestId", self->request_id_}, {"reason", "the client closed the connection"}}}};
    // The session answers a cancellation with nothing; the call's own
    // channel then answers the closed connection, which ends it.
    self->session_->dispatcher->handle(cancel, std::make_shared<NoReply>());
  });
}

// The answer is about to be written: the hang-up watch ends. The request
// counts against its session and token until the answer is written.
void Connection::answered() {
  // The watch's pending wait is left to complete on its own and then does
  // nothing: cancelling it would cancel a progress event being written too.
  if (unanswered(phase_)) enter(Phase::answering);
}

void Connection::enter(Phase next) {
  const Phase was = std::exchange(phase_, next);
  if (next == Phase::reading || next == Phase::closing) {
    // The exchange is over: its answer is written, or will never be.
    body_charge_.release();
    answer_charge_.release();
  }
  if (next == Phase::answering && rpc_method_ == "tools/call") server_.sessions().answering(*session_);
  if (counted(was) && !counted(next)) {
    server_.sessions().end_request(*session_, rpc_method_ == "tools/call", was == Phase::answering);
    if (session_origin_ == SessionOrigin::own) server_.sessions().end_stateless(session_);
  }
  if (!counted(was) && counted(next)) server_.begin_write();
  if (counted(was) && !counted(next)) server_.end_write();
}

void Connection::deliver_event(const std::string& message) {
  if (events_ && unanswered(phase_)) events_->send(message, false);
}

void Connection::deliver(std::string message, MemoryBudget::Charge reserved) {
  answered();
  // Until it is written the answer holds its own size (its call's
  // reservation was resized to it); one made at once is counted now (it is
  // in memory already).
  if (reserved.empty()) reserved = server_.memory().take(message.size());
  answer_charge_ = std::move(reserved);
  if (session_origin_ == SessionOrigin::made) {
    // The session exists once its initialize succeeded.
    const json answer = json::parse(message, nullptr, false);
    if (answer.is_object() && answer.contains("result")) {
      server_.sessions().add(session_);
      session_origin_ = SessionOrigin::registered;
    }
  }
  if (events_) {
    log_request(200);
    return events_->send(message, true);
  }
  Response response(http::status::ok, parser_->get().version());
  response.set(http::field::content_type, "application/json");
  if (session_origin_ == SessionOrigin::registered) response.set("Mcp-Session-Id", session_->id);
  response.body() = std::move(message);
  log_request(200);
  send(std::move(response));
}

void Connection::deliver_nothing() {
  answered();
  if (events_ && events_->begun()) {
    // The stream has begun, its head with 200: it ends with the stop's error,
    // or with no response.
    if (server_.stopping) {
      log_request(200);
      return events_->send(render::dump(error_response(request_id_, ErrorCode::server_busy,
                                                       "the server stopped before this call finished; it was cancelled")),
                           true);
    }
    log_request(200, !request_id_.is_null());
    return events_->send("", true);
  }
  events_.reset();
  if (server_.stopping && !request_id_.is_null() && rpc_method_ == "tools/call") {
    // Cancelled at the stop's deadline: the caller is told, not left waiting.
    Response response(http::status::service_unavailable, parser_->get().version());
    response.set(http::field::content_type, "application/json");
    response.body() = render::dump(
        error_response(request_id_, ErrorCode::server_busy, "the server stopped before this call finished; it was cancelled"));
    log_request(503);
    return send(std::move(response));
  }
  log_request(202, !request_id_.is_null() && !rpc_method_.empty());
  send(Response(http::status::accepted, parser_->get().version()));
}

void Connection::start_event_stream() {
  // Random, not counted: unique across the streams of a session and of a
  // stateless client alike, and telling no client how many others there were.
  events_.emplace(
      [this](EventStream::Piece piece, std::string bytes, EventStream::Written written) {
        write_stream_piece(piece, std::move(bytes), std::move(written));
      },
      crypto::random_hex(8));
}

// One piece of the event stream: each write must be taken within
// request_timeout; between events the call may run as long as it runs.
// After the end, the connection reads its next request.
void Connection::write_stream_piece(EventStream::Piece piece, std::string bytes, EventStream::Written written) {
  const auto self = shared_from_this();
  stream_.expires_after(server_.config().request_timeout);
  switch (piece) {
    case EventStream::Piece::head:
      if (server_.config().metrics != nullptr) server_.config().metrics->record_http_request(200);
      stream_head_ = std::make_shared<http::response<http::empty_body>>(http::status::ok, parser_->get().version());
      stream_head_->set(http::field::content_type, "text/event-stream");
      stream_head_->set(http::field::cache_control, "no-cache");
      stream_head_->set(http::field::server, "rawtool");
      stream_head_->keep_alive(parser_->get().keep_alive());
      stream_head_->chunked(true);
      if (session_origin_ == SessionOrigin::registered) stream_head_->set("Mcp-Session-Id", session_->id);
      stream_serializer_ = std::make_shared<http::response_serializer<http::empty_body>>(*stream_head_);
      http::async_write_header(stream_, *stream_serializer_, [self, written](beast::error_code error, std::size_t) {
        self->stream_.expires_never();
        written(!error);
      });
      return;
    case EventStream::Piece::event: {
      auto body = std::make_shared<std::string>(std::move(bytes));
      asio::async_write(stream_, http::make_chunk(asio::buffer(*body)),
                        [self, body, written](beast::error_code error, std::size_t) {
                          self->stream_.expires_never();
                          written(!error);
                        });
      return;
    }
    case EventStream::Piece::end:
      asio::async_write(stream_, http::make_chunk_last(), [self, written](beast::error_code error, std::size_t) {
        written(!error);
        const bool keep_alive = self->stream_head_->keep_alive();
        self->enter(error || keep_alive ? Phase::reading : Phase::closing);
        if (error) return;
        if (keep_alive) return self->read_header();
        self->drain_and_close();
      });
      return;
  }
}

void Connection::handle_delete() {
  const auto& request = parser_->get();
  const auto id = header(request, "Mcp-Session-Id");
  if (!id) return refuse(http::status::bad_request, "Mcp-Session-Id is required");
  auto session = server_.sessions().remove(std::string(*id), client_);
  if (session == nullptr) return refuse(http::status::not_found, "no such session");
  // Its running statements are cancelled off the I/O threads (ending one
  // that ignores the cancel takes a second connection); the answer follows.
  rpc_method_ = "DELETE";
  server_.close_in_background(std::move(session), stream_.get_executor(), [self = shared_from_this()] {
    self->log_request(204);
    self->send(Response(http::status::no_content, self->parser_->get().version()));
  });
}

void Connection::log_request(unsigned status, bool unanswered) {
  const OperatorLog& log = server_.log();
  if (!log.enabled(LogLevel::info)) return;
  json fields{{"token", client_ != nullptr ? json(client_->name) : json()}, {"method", rpc_method_}, {"status", status}};
  if (client_ != nullptr && !client_->subject.empty()) {
    // The identity provider's words, not rawtool's: quoted as untrusted.
    fields["subject"] = render::to_log_json(Untrusted(client_->subject));
    fields["client_id"] = render::to_log_json(Untrusted(client_->client_id));
  }
  if (unanswered) fields["answered"] = false;
  log.write(LogLevel::info, "http", "request", fields);
}

void Connection::refuse(http::status status, std::string_view message) {
  Response response(status, parser_->get().version());
  if (!message.empty()) {
    response.set(http::field::content_type, "application/json");
    response.body() = error_body(ErrorCode::invalid_request, message);
  }
  send(std::move(response));
}

void Connection::send(Response response, bool close) {
  // A request whose body was not read cannot be followed by another on this
  // connection.
  const bool keep_alive = !close && parser_->is_done() && parser_->get().keep_alive();
  if (server_.config().metrics != nullptr) server_.config().metrics->record_http_request(response.result_int());
  response.keep_alive(keep_alive);
  response.set(http::field::server, "rawtool");
  response.prepare_payload();
  auto shared = std::make_shared<Response>(std::move(response));
  stream_.expires_after(server_.config().request_timeout);
  if (!counted(phase_)) enter(Phase::replying);
  http::async_write(stream_, *shared, [self = shared_from_this(), shared](beast::error_code error, std::size_t) {
    self->enter(error || shared->keep_alive() ? Phase::reading : Phase::closing);
    if (error) return;
    if (shared->keep_alive()) return self->read_header();
    self->drain_and_close();
  });
}

void Connection::drain_and_close() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_.expires_after(std::chrono::seconds(1));
  if (!drain_) drain_ = std::make_unique<std::array<char, 16 * 1024>>();
  stream_.async_read_some(asio::buffer(*drain_), [self = shared_from_this()](beast::error_code error, std::size_t read) {
    self->drained_ += read;
    if (!error && self->drained_ < max_drain_bytes) return self->drain_and_close();
    beast::error_code closing;
    self->stream_.socket().close(closing);
  });
}

void Server::accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (error) {
      // Out of file descriptors (or another resource): accepting again at
      // once would spin; wait a little for connections to close.
      if (!accept_failures_++) log_event(log_, LogLevel::warn, "accept_failed", "a connection could not be accepted; retrying");
      accept_pause_.expires_after(std::chrono::milliseconds(50));
      accept_pause_.async_wait([this](beast::error_code) { accept(); });
      return;
    }
    accept_failures_ = 0;
    std::function<void()> close_waiting;
    if (connections.load() >= config_.max_connections) {
      // Room is made by closing the oldest connection that waits for a
      // request, first among those that never carried a valid token, so that
      // idle sockets cannot lock everyone out. It closes on its own strand, a
      // moment later: until then the server holds one connection more.
      close_waiting = idle_.take_oldest();
      if (close_waiting) {
        close_waiting();
        if (!made_room_++) {
          log_event(log_, LogLevel::warn, "made_room",
                    "at http.max_connections: the oldest connection waiting for a request was closed for a new one");
        }
      } else {
        made_room_ = 0;
      }
    } else {
      made_room_ = 0;
    }
    if (connections.load() >= config_.max_connections && !close_waiting) {
      // Over the limit, and every connection busy with a request: closed at
      // once, before a byte is read.
      beast::error_code ignored;
      socket.close(ignored);
      if (!refused_connections_++) log_event(log_, LogLevel::warn, "rejected", "a connection over http.max_connections was closed");
    } else {
      refused_connections_ = 0;
      // An event stream is written as its head and then one chunk per event.
      // With Nagle's algorithm each small write after the first waited for
      // the client's delayed ACK (about 40 ms on Linux), once per call.
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Connection>(std::move(socket), *this)->start();
    }
    accept();
  });
}

void Server::stop() noexcept {
  stopping = true;
  std::lock_guard lock(stop_mutex_);
  stopping_ = true;
  stop_changed_.notify_all();
}

void Server::start() {
  // Held until the server serves: a stop meanwhile waits for the start.
  const std::lock_guard starting(start_mutex_);
  {
    std::lock_guard lock(stop_mutex_);
    if (start_called_) throw std::logic_error("HttpServer::start called twice");
    start_called_ = true;
    if (stopping_) return;  // stopped before it started: nothing to serve
  }
  const tcp::endpoint endpoint(asio::ip::make_address(config_.listen.host), config_.listen.port);
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(asio::socket_base::max_listen_connections);
  const tcp::endpoint bound = acceptor_.local_endpoint();
  port_ = bound.port();
  serving_ = true;  // from here on, the stop has something to stop
  (void)readiness_.ready();  // the first check, so that /readyz has an answer soon
  if (oauth_) oauth_->start();  // the key set, before the first request

  accept();
  keep_running_.emplace(asio::make_work_guard(io_));
  for (std::size_t i = 0; i < std::max<std::size_t>(1, config_.io_threads); ++i) io_threads_.emplace_back([this] { run_io(); });
  const std::string where = bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
  if (log_.enabled(LogLevel::info)) {
    log_.write(LogLevel::info, "mcp", "serving",
               json{{"detail", "MCP over Streamable HTTP"}, {"url", "http://" + where + ":" + std::to_string(bound.port()) + "/mcp"},
                    {"authentication", oauth_ ? (config_.clients.empty() ? "oauth" : "bearer tokens and oauth")
                                       : config_.clients.empty() ? "none" : "bearer tokens"}});
  }
}

// An I/O thread's top: a handler that throws is logged and the thread goes
// on serving (Asio allows run() again after a handler threw); the handler's
// connection is closed once nothing holds it any more.
void Server::run_io() noexcept {
  for (;;) {
    try {
      io_.run();
      return;
    } catch (...) {
      log_internal_error(log_, "an HTTP handler threw; its connection is closed");
    }
  }
}

int Server::wait() {
  {
    std::unique_lock lock(stop_mutex_);
    stop_changed_.wait(lock, [this] { return stopping_; });
    if (shutting_down_) {
      stop_changed_.wait(lock, [this] { return shut_down_; });
      return 0;
    }
    shutting_down_ = true;
  }
  shut_down();
  std::lock_guard lock(stop_mutex_);
  shut_down_ = true;
  stop_changed_.notify_all();
  return 0;
}

void Server::shut_down() {
  // Nothing to stop for a server that never served (not started, or its
  // address could not be bound).
  const std::lock_guard starting(start_mutex_);
  readiness_.stop();  // a check under way is cancelled: its database may be the one that hangs
  if (!serving_) return;
  // 1. Every session is closed: the calls in flight get the grace, all
  // sessions together, then the rest are cancelled. A session made from now
  // on is closed as it is made or registered. (Marked before the acceptor
  // closes: a connection refused means a new session starts no call.)
  auto sessions = sessions_.close_all();
  // 2. No new connection.
  asio::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
  const auto deadline = Clock::now() + config_.shutdown_grace;
  for (const auto& session : sessions) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    session->dispatcher->close(std::max(left, std::chrono::milliseconds(0)));
  }
  sessions.clear();
  // 3. So are the sessions a DELETE ended.
  {
    std::lock_guard lock(closers_mutex_);
    join_closers(true);
  }
  // 4. The workers are joined. A worker posts a call's answer to its
  // connection after the call has left its session: only once the workers
  // are joined has every answer been posted.
  pool_.join();
  // 5. The answers are written while the I/O still runs.
  {
    std::unique_lock lock(written_mutex_);
    written_.wait_for(lock, std::chrono::seconds(2), [this] { return requests_in_flight_ == 0; });
  }
  // 6. Only then does the I/O stop.
  io_.stop();
  for (auto& thread : io_threads_) thread.join();
  io_threads_.clear();
  // A DELETE read meanwhile: its answer, posted to the stopped I/O, is never
  // written.
  {
    std::lock_guard lock(closers_mutex_);
    join_closers(true);
  }
  log_event(log_, LogLevel::info, "stopped", "a stop signal");
}

}  // namespace

class HttpServer::Impl final : public Server {
public:
  using Server::Server;
};

HttpServer::HttpServer(Backend& backend, const HttpServerConfig& config, const OperatorLog& log)
    : impl_(std::make_unique<Impl>(backend, config, log)) {
  if (config.metrics == nullptr) return;
  config.metrics->set_http_source([server = impl_.get()] {
    HttpFigures figures;
    figures.memory_held = server->memory().held();
    figures.memory_limit = server->memory().limit();
    for (const SessionRegistry::TokenLoad& load : server->sessions().load())
      figures.tokens.push_back({load.token, load.sessions, load.calls});
    return figures;
  });
}

HttpServer::~HttpServer() {
  impl_->stop();
  impl_->wait();
  // A scrape under way finishes before this returns; none starts after.
  if (impl_->config().metrics != nullptr) impl_->config().metrics->set_http_source({});
}

void HttpServer::start() { impl_->start(); }
std::uint16_t HttpServer::port() const noexcept { return impl_->port(); }
void HttpServer::stop() noexcept { impl_->stop(); }
int HttpServer::wait() { return impl_->wait(); }

}  // namespace rawtool::mcp::detail
