// Opening and closing a PostgreSQL driver's connection: the libpqxx session
// that owns the PGconn, the password file read afresh at each connect, the
// connect-time queries (which server process this is, what a killed rawtool
// left running) and the session's settings (notices as fields, terse errors,
// non-blocking). Kept apart from the pipeline because everything here is the
// connection's, outlives any one call, and is torn down in one place
// (disconnect), which every path that gives a connection up goes through.
#include "detail/postgres_driver.hpp"

#include <libpq-fe.h>
#include <pqxx/version>
#if PQXX_VERSION_MAJOR >= 7
#include <pqxx/connection>
#else
#include <pqxx/connection_base>
#include <pqxx/connectionpolicy>
#endif
#include <pqxx/except>

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>

namespace rawtool::detail {
namespace {

using std::chrono::milliseconds;

/// The connect timeout libpq uses for `conn` (connect_timeout, at least 2 s as
/// libpq reads it); default_connection_bound when it waits without one.
milliseconds connection_bound_of(PGconn* conn) {
  milliseconds bound = default_connection_bound;
  PQconninfoOption* options = PQconninfo(conn);
  for (const PQconninfoOption* option = options; option != nullptr && option->keyword != nullptr; ++option) {
    if (std::string_view(option->keyword) != "connect_timeout" || option->val == nullptr) continue;
    int seconds = 0;
    const char* end = option->val + std::strlen(option->val);
    if (std::from_chars(option->val, end, seconds).ec == std::errc{} && seconds > 0) {
      bound = std::chrono::seconds(std::max(seconds, 2));
    }
  }
  PQconninfoFree(options);
  return bound;
}

/// The first SQLSTATE in libpq's account of a failed connection, or empty.
/// libpq keeps no result for a connection that failed, so the code the server
/// sent (28P01, 3D000, ...) is read where libpq writes it with
/// PQERRORS_VERBOSE: after the severity and two spaces, five characters and a
/// colon, "FATAL:  28P01: ...". The server's own words come after the code, so
/// the first match is libpq's; the severity is not matched, as it is
/// translated. Only the code is taken, and only to pick a cause.
std::string_view server_code(std::string_view message) {
  const auto is_code_char = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'); };
  for (std::size_t at = message.find(":  "); at != std::string_view::npos; at = message.find(":  ", at + 1)) {
    const std::string_view code = message.substr(at + 3, 5);
    if (code.size() == 5 && std::all_of(code.begin(), code.end(), is_code_char) && message.substr(at + 8, 2) == ": ") {
      return code;
    }
  }
  return {};
}

/// Why the connection `conn` failed, from the last state libpq reached, the
/// server's code and whether it wanted a password: never from libpq's words.
UnavailableCause cause_of_failure(PGconn* conn, ConnStatusType reached, std::string_view message) {
  const std::string_view code = server_code(message);
  if (code == "28P01") return UnavailableCause::authentication_failed;
  if (code == "28000") return UnavailableCause::role_refused;
  if (code == "3D000") return UnavailableCause::no_such_database;
  if (code == "53300" || code == "57P03" || code == "57P01") return UnavailableCause::server_unavailable;
  if (!code.empty()) return UnavailableCause::unknown;
  if (PQconnectionNeedsPassword(conn) != 0) return UnavailableCause::authentication_failed;
  switch (reached) {
    case CONNECTION_NEEDED:  // name lookup, or a connect() refused at once
    case CONNECTION_STARTED: return UnavailableCause::refused;
    case CONNECTION_SSL_STARTUP: return UnavailableCause::tls_failed;
    case CONNECTION_MADE:
    case CONNECTION_AWAITING_RESPONSE:
    case CONNECTION_AUTH_OK: return UnavailableCause::connection_lost;
    default: return UnavailableCause::unknown;
  }
}

/// Opens a connection with PQconnectStartParams: the caller's URL or
/// key=value string is expanded as dbname, with a connect timeout and an
/// application name the caller's own values override. Polls it to the end of
/// its connect timeout (connection_bound_of) so that the state it stopped in
/// is known. Returns an open connection the caller owns, or libpq's complaint
/// and the cause.
struct Opening {
  PGconn* connection = nullptr;  ///< null when it failed
  std::string complaint;
  UnavailableCause cause = UnavailableCause::unknown;

  [[nodiscard]] Unavailable unavailable() const { return Unavailable{Untrusted(std::string_view(complaint)), cause}; }
};

Opening open_connection(const std::string& conninfo, const std::optional<std::string>& password,
                        const std::stop_token& stop = {}) {
  // Keywords after dbname override what its expansion set: the password
  // file's password replaces one in the connection string. libpq skips a
  // keyword whose value is null.
  const char* const keywords[] = {"connect_timeout", "fallback_application_name", "dbname", "password", nullptr};
  const std::string timeout = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(default_connection_bound).count());
  const char* const values[] = {timeout.c_str(), "rawtool", conninfo.c_str(), password ? password->c_str() : nullptr, nullptr};
  PGconn* connection = PQconnectStartParams(keywords, values, 1);
  if (connection == nullptr) return Opening{nullptr, "out of memory while connecting", UnavailableCause::unknown};
  PQsetErrorVerbosity(connection, PQERRORS_VERBOSE);  // the server's code in the message (server_code)
  const auto deadline = std::chrono::steady_clock::now() + connection_bound_of(connection);
  ConnStatusType reached = CONNECTION_NEEDED;
  PostgresPollingStatusType polling = PGRES_POLLING_WRITING;
  bool timed_out = false;
  bool stopped = false;
  while (PQstatus(connection) != CONNECTION_BAD && polling != PGRES_POLLING_OK) {
    if (polling == PGRES_POLLING_READING || polling == PGRES_POLLING_WRITING) {
      if (stop.stop_requested()) {
        stopped = true;
        break;
      }
      // In slices, so that a stop is seen within one.
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      pollfd socket{PQsocket(connection), static_cast<short>(polling == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0};
      const int ready = left > 0 ? ::poll(&socket, 1, static_cast<int>(std::min<long long>(left, 100))) : 0;
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) {
        if (std::chrono::steady_clock::now() < deadline) continue;
        timed_out = true;
        break;
      }
    }
    reached = PQstatus(connection);
    polling = PQconnectPoll(connection);
  }
  if (!timed_out && PQstatus(connection) == CONNECTION_OK && polling == PGRES_POLLING_OK) {
    PQsetErrorVerbosity(connection, PQERRORS_DEFAULT);
    return Opening{connection, {}, UnavailableCause::unknown};
  }
  const char* said = PQerrorMessage(connection);
  Opening failed{nullptr,
                 timed_out  ? "rawtool gave up: the connection was not complete within its connect_timeout"
                 : stopped ? "the call was cancelled while rawtool connected"
                            : std::string(said != nullptr ? said : ""),
                 UnavailableCause::unknown};
  if (timed_out) {
    failed.cause = UnavailableCause::timed_out;
  } else if (!stopped) {
    failed.cause = cause_of_failure(connection, reached, failed.complaint);
  }
  PQfinish(connection);
  return failed;
}

#if PQXX_VERSION_MAJOR < 7
/// open_connection, for libpqxx: throws pqxx::broken_connection with the complaint.
PGconn* open_or_throw(const std::string& conninfo, const std::optional<std::string>& password) {
  Opening opened = open_connection(conninfo, password);
  if (opened.connection == nullptr) throw pqxx::broken_connection{opened.complaint};
  return opened.connection;
}
#endif
}  // namespace

// Two ways to hand libpqxx a connection we opened: libpqxx 6 (Debian 12) asks a
// connection policy to open it and has no way to adopt one; libpqxx 7 (Debian
// 13) removed connection policies and adopts an open PGconn* instead
// (connection::seize_raw_connection). Either way the session owns the PGconn
// and closes it when it ends.
#if PQXX_VERSION_MAJOR >= 7

/// A libpqxx connection over a PGconn* open_connection opened, which it
/// owns from then on, and exposes.
class Session final {
public:
  Session(PGconn* opened, const std::string&, std::optional<std::string>) : handle_(opened), connection_(adopt(handle_)) {}

  /// The libpq connection; owned by this session.
  [[nodiscard]] PGconn* handle() const noexcept { return handle_; }

private:
  /// libpqxx's connection over `handle`, which it then owns; on failure the
  /// handle is closed here, as no connection took it.
  static pqxx::connection adopt(PGconn* handle) {
    try {
      return pqxx::connection::seize_raw_connection(handle);
    } catch (...) {
      PQfinish(handle);
      throw;
    }
  }

  PGconn* handle_;
  pqxx::connection connection_;
};

#else

/// Hands libpqxx 6 the connection open_connection opened (and, should
/// libpqxx reconnect, opens another) and remembers the one open.
class ConnectPolicy final : public pqxx::connectionpolicy {
public:
  ConnectPolicy(PGconn* opened, const std::string& conninfo, std::optional<std::string> password)
      : pqxx::connectionpolicy(conninfo), password_(std::move(password)), opened_(opened) {}

  handle do_startconnect(handle orig) override {
    if (orig != nullptr) return orig;
    connected_ = opened_ != nullptr ? std::exchange(opened_, nullptr) : open_or_throw(options(), password_);
    return connected_;
  }

  ~ConnectPolicy() noexcept override {
    if (opened_ != nullptr) PQfinish(opened_);  // libpqxx failed before it took it
  }
  ConnectPolicy(const ConnectPolicy&) = delete;
  ConnectPolicy& operator=(const ConnectPolicy&) = delete;

  handle do_disconnect(handle orig) noexcept override {
    connected_ = nullptr;
    return pqxx::connectionpolicy::do_disconnect(orig);
  }

  /// The open connection, or null.
  [[nodiscard]] handle connected() const noexcept { return connected_; }

private:
  std::optional<std::string> password_;
  handle opened_;
  handle connected_ = nullptr;
};

/// A libpqxx connection over a PGconn* open_connection opened, which it
/// owns from then on, and exposes.
class Session final : public pqxx::connection_base {
public:
  Session(PGconn* opened, const std::string& conninfo, std::optional<std::string> password)
      : pqxx::connection_base(policy_), policy_(opened, conninfo, std::move(password)) {
    init();
  }

  /// The libpq connection; owned by this session.
  [[nodiscard]] PGconn* handle() const noexcept { return policy_.connected(); }

  ~Session() { close(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

private:
  ConnectPolicy policy_;
};

#endif

PostgresDriver::PostgresDriver(std::string conninfo, PostgresOptions options)
    : conninfo_(std::move(conninfo)),
      options_(std::move(options)),
      terminator_(detail::Terminator::of(conninfo_, options_.password_file)),
      target_key_(detail::target_key(conninfo_, options_.password_file)) {}

PostgresDriver::~PostgresDriver() { disconnect(); }

std::optional<Unavailable> PostgresDriver::connect(const std::stop_token& stop) {
  if (conn_ != nullptr) {
    // A backend that ended while idle is found dead here, before a statement is sent.
    if (detail::idle_connection_alive(conn_)) return std::nullopt;
    disconnect();
  }
  std::optional<std::string> password;
  if (!options_.password_file.empty()) {
    auto read = read_password_file(options_.password_file);
    if (auto* unavailable = std::get_if<Unavailable>(&read)) return std::move(*unavailable);
    password = std::move(std::get<std::string>(read));
  }
  const Opening opened = open_connection(conninfo_, password, stop);
  if (opened.connection == nullptr) return opened.unavailable();
  try {
    auto session = std::make_unique<Session>(opened.connection, conninfo_, std::move(password));
    conn_ = session->handle();
    session_ = std::move(session);
  } catch (const std::exception& e) {
    return Unavailable{Untrusted(std::string_view(e.what()))};
  }
  // Every notice comes to us as fields; libpq's default would print it raw to
  // stderr. Until a call runs (see execute), they are dropped.
  PQsetNoticeReceiver(conn_, &PostgresDriver::receive_notice, nullptr);
  // The driver reads every field on its own (PQresultErrorField) and never
  // libpq's composed message, which is a further copy of each field per error,
  // twice over (the result's and the connection's): severity and SQLSTATE are
  // all libpq needs to compose. A huge error then costs three copies, not five.
  PQsetErrorVerbosity(conn_, PQERRORS_SQLSTATE);
  // Non-blocking: libpq's blocking mode waits without a bound for the socket
  // to take what is sent, which a server that stopped reading never does.
  // The pipeline's sends are flushed by wait_for_input, under the statement's
  // deadline, and every other query's by detail::round_trip.
  if (PQsetnonblocking(conn_, 1) != 0) return broken_connection();
  connection_bound_ = connection_bound_of(conn_);
  const Clock::time_point deadline = Clock::now() + connection_bound_;
  // Whether PQbackendPID is this session's server process: not through a
  // pooler, which hands out a key of its own. Read once per connection, so
  // that a read-write call (which has no audit) never ends a process by a
  // number that may be anyone's.
  const detail::BackendIdentity own = detail::backend_identity(conn_, deadline);
  if (lost()) return broken_connection();
  direct_ = own.pid != 0 && own.pid == PQbackendPID(conn_);
  // Before this process's first statement on the database: what a rawtool
  // with this configuration that was killed left running is ended; then this
  // connection's own server process is recorded, so that a successor can do
  // the same for it (see postgres_orphans.hpp).
  detail::end_orphans(conn_, target_key_, deadline);
  if (lost()) return broken_connection();
  if (direct_ && own.start_us != 0) recorded_ = std::make_unique<detail::RecordedBackend>(target_key_, own.pid, own.start_us);
  std::lock_guard lock(cancel_mutex_);
  canceller_ = std::shared_ptr<PGcancel>(PQgetCancel(conn_), &PQfreeCancel);
  return std::nullopt;
}

void PostgresDriver::disconnect() noexcept {
  {
    std::lock_guard lock(cancel_mutex_);
    canceller_.reset();
  }
  session_.reset();
  conn_ = nullptr;
  guard_kept_ = false;
  // Closed while idle, its server process ends on its own; one that may run
  // on was kept (RecordedBackend::keep) before this.
  recorded_.reset();
  type_names_.clear();
  audit_.reset();
  room_hazard_.reset();
  session_timeouts_.reset();
  dblink_executable_.reset();
}

Unavailable PostgresDriver::broken_connection() {
  const bool gave_up = detail::gave_up(conn_);
  Unavailable unavailable{gave_up ? Untrusted(std::string_view("the server did not answer in time: rawtool gave the connection up "
                                                               "(the next call opens a new one)"))
                                  : text_of(conn_ != nullptr ? PQerrorMessage(conn_) : nullptr),
                          gave_up ? UnavailableCause::timed_out : UnavailableCause::connection_lost};
  disconnect();
  return unavailable;
}

}  // namespace rawtool::detail
