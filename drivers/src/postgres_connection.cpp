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

#include <algorithm>
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

/// Opens a connection with PQconnectdbParams: the caller's URL or key=value
/// string is expanded as dbname, with a connect timeout and an application
/// name the caller's own values override. Returns an open connection the
/// caller owns, or throws pqxx::broken_connection with libpq's complaint.
PGconn* open_connection(const std::string& conninfo, const std::optional<std::string>& password) {
  // Keywords after dbname override what its expansion set: the password
  // file's password replaces one in the connection string. libpq skips a
  // keyword whose value is null.
  const char* const keywords[] = {"connect_timeout", "fallback_application_name", "dbname", "password", nullptr};
  const std::string timeout = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(default_connection_bound).count());
  const char* const values[] = {timeout.c_str(), "rawtool", conninfo.c_str(), password ? password->c_str() : nullptr, nullptr};
  PGconn* connection = PQconnectdbParams(keywords, values, 1);
  if (connection == nullptr) throw pqxx::broken_connection{"out of memory while connecting"};
  if (PQstatus(connection) != CONNECTION_OK) {
    std::string complaint = PQerrorMessage(connection);
    PQfinish(connection);
    throw pqxx::broken_connection{complaint};
  }
  return connection;
}
}  // namespace

// Two ways to hand libpqxx a connection we opened: libpqxx 6 (Debian 12) asks a
// connection policy to open it and has no way to adopt one; libpqxx 7 (Debian
// 13) removed connection policies and adopts an open PGconn* instead
// (connection::seize_raw_connection). Either way the session owns the PGconn
// and closes it when it ends.
#if PQXX_VERSION_MAJOR >= 7

/// A libpqxx connection that exposes its PGconn*. Constructing it connects
/// (throwing pqxx::broken_connection with the server's complaint).
class Session final {
public:
  Session(const std::string& conninfo, std::optional<std::string> password)
      : handle_(open_connection(conninfo, password)), connection_(adopt(handle_)) {}

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

/// Opens connections for libpqxx 6 (open_connection) and remembers the one open.
class ConnectPolicy final : public pqxx::connectionpolicy {
public:
  ConnectPolicy(const std::string& conninfo, std::optional<std::string> password)
      : pqxx::connectionpolicy(conninfo), password_(std::move(password)) {}

  handle do_startconnect(handle orig) override {
    if (orig != nullptr) return orig;
    connected_ = open_connection(options(), password_);
    return connected_;
  }

  handle do_disconnect(handle orig) noexcept override {
    connected_ = nullptr;
    return pqxx::connectionpolicy::do_disconnect(orig);
  }

  /// The open connection, or null.
  [[nodiscard]] handle connected() const noexcept { return connected_; }

private:
  std::optional<std::string> password_;
  handle connected_ = nullptr;
};

/// A libpqxx connection that exposes its PGconn*. Constructing it connects
/// (throwing pqxx::broken_connection with the server's complaint).
class Session final : public pqxx::connection_base {
public:
  Session(const std::string& conninfo, std::optional<std::string> password)
      : pqxx::connection_base(policy_), policy_(conninfo, std::move(password)) {
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

std::optional<Unavailable> PostgresDriver::connect() {
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
  try {
    auto session = std::make_unique<Session>(conninfo_, std::move(password));
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
  Unavailable unavailable{detail::gave_up(conn_)
                              ? Untrusted(std::string_view("the server did not answer in time: rawtool gave the connection up "
                                                           "(the next call opens a new one)"))
                              : text_of(conn_ != nullptr ? PQerrorMessage(conn_) : nullptr)};
  disconnect();
  return unavailable;
}

}  // namespace rawtool::detail
