// The reserve connection that ends a runaway statement, and the connection
// room hazard. See detail/postgres_terminator.hpp.
#include "detail/postgres_terminator.hpp"
#include "detail/postgres_round_trip.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <map>
#include <system_error>

namespace rawtool::detail {
namespace {

using std::chrono::milliseconds;

void ignore_notice(void*, const PGresult*) {}

long long left_ms(SteadyClock::time_point deadline) {
  return std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now()).count();
}

}  // namespace

std::variant<std::string, Unavailable> read_password_file(const std::string& file) {
  const auto unavailable = [](std::string_view why) { return Unavailable{Untrusted(why), UnavailableCause::password_file}; };
  std::FILE* stream = std::fopen(file.c_str(), "rb");
  if (stream == nullptr) {
    return unavailable("rawtool could not open the password file (password_file): " +
                       std::generic_category().message(errno));
  }
  std::string password;
  char buffer[4096];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, stream)) > 0 && password.size() <= 65536) password.append(buffer, got);
  const bool failed = std::ferror(stream) != 0;
  std::fclose(stream);
  if (failed) return unavailable("rawtool could not read the password file (password_file)");
  if (password.size() > 65536) return unavailable("the password file (password_file) is longer than 64 KiB");
  if (password.ends_with('\n')) password.pop_back();
  if (password.ends_with('\r')) password.pop_back();
  if (password.empty()) return unavailable("the password file (password_file) is empty");
  if (password.find('\0') != std::string::npos) return unavailable("the password file (password_file) holds a NUL byte");
  return password;
}

bool idle_connection_alive(PGconn* conn) {
  bool alive = PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) == PQTRANS_IDLE;
  for (int reads = 0; alive && reads < 4; ++reads) {
    pollfd socket{PQsocket(conn), POLLIN, 0};
    if (poll(&socket, 1, 0) == 0) break;
    alive = PQconsumeInput(conn) == 1 && PQstatus(conn) == CONNECTION_OK;
  }
  return alive;
}

PGconn* connect_until(const std::string& conninfo, const std::optional<std::string>& password,
                      SteadyClock::time_point deadline) {
  const char* const keywords[] = {"fallback_application_name", "dbname", "password", nullptr};
  const char* const values[] = {"rawtool", conninfo.c_str(), password ? password->c_str() : nullptr, nullptr};
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectStartParams(keywords, values, 1), &PQfinish);
  if (conn == nullptr || PQstatus(conn.get()) == CONNECTION_BAD) return nullptr;
  for (PostgresPollingStatusType state = PGRES_POLLING_WRITING; state != PGRES_POLLING_OK;) {
    if (state == PGRES_POLLING_FAILED) return nullptr;
    const long long left = left_ms(deadline);
    if (left <= 0) return nullptr;
    pollfd socket{PQsocket(conn.get()), static_cast<short>(state == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0};
    if (poll(&socket, 1, static_cast<int>(left)) < 0 && errno != EINTR) return nullptr;
    state = PQconnectPoll(conn.get());
  }
  PQsetNoticeReceiver(conn.get(), &ignore_notice, nullptr);  // libpq's default would print to stderr
  return conn.release();
}

std::optional<std::string> query_until(PGconn* conn, const char* sql, const std::string& parameter,
                                       SteadyClock::time_point deadline) {
  const char* values[] = {parameter.c_str()};
  const Result result = round_trip(conn, Command{.text = sql, .values = values}, deadline);
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK) return std::nullopt;
  if (PQntuples(result.get()) == 0) return std::string();
  return std::string(PQgetvalue(result.get(), 0, 0));
}

std::shared_ptr<Terminator> Terminator::of(const std::string& conninfo, const std::string& password_file) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::weak_ptr<Terminator>> terminators;
  std::lock_guard lock(mutex);
  std::weak_ptr<Terminator>& slot = terminators[{conninfo, password_file}];
  std::shared_ptr<Terminator> terminator = slot.lock();
  if (terminator == nullptr) {
    terminator = std::make_shared<Terminator>(conninfo, password_file);
    slot = terminator;
  }
  // Entries of terminators no driver holds any more are dropped as they are met.
  std::erase_if(terminators, [](const auto& entry) { return entry.second.expired(); });
  return terminator;
}

Terminator::Terminator(std::string conninfo, std::string password_file)
    : conninfo_(std::move(conninfo)), password_file_(std::move(password_file)) {}

Terminator::~Terminator() {
  if (conn_ != nullptr) PQfinish(conn_);
}

bool Terminator::open_locked(SteadyClock::time_point deadline) {
  if (conn_ != nullptr) {
    if (idle_connection_alive(conn_)) return true;
    PQfinish(conn_);
    conn_ = nullptr;
    open_ = false;
  }
  std::optional<std::string> password;
  if (!password_file_.empty()) {
    auto read = read_password_file(password_file_);
    if (auto* text = std::get_if<std::string>(&read)) password = std::move(*text);
  }
  conn_ = connect_until(conninfo_, password, deadline);
  open_ = conn_ != nullptr;
  return open_;
}

bool Terminator::acquire(SteadyClock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (!released_.wait_until(lock, deadline, [&] { return !in_use_; })) return false;
  in_use_ = true;
  return true;
}

void Terminator::release() {
  {
    std::lock_guard lock(mutex_);
    in_use_ = false;
  }
  released_.notify_one();
}

namespace {

/// Releases an acquired terminator when the scope ends.
template <typename Release>
struct OnExit {
  Release release;
  ~OnExit() { release(); }
};
template <typename Release>
OnExit(Release) -> OnExit<Release>;

}  // namespace

bool Terminator::ready(SteadyClock::time_point deadline) {
  // In use by a termination under way (at most its own short deadline): the
  // connection it uses is the reserve.
  if (!acquire(deadline)) return open_.load();
  const OnExit done{[this] { release(); }};
  return open_locked(deadline);
}

bool Terminator::terminate(int pid, SteadyClock::time_point deadline) {
  if (pid <= 0) return false;
  if (!acquire(deadline)) return false;
  const OnExit done{[this] { release(); }};
  if (!open_locked(deadline)) return false;
  const std::optional<std::string> answer =
      query_until(conn_, "SELECT pg_catalog.pg_terminate_backend($1::integer)", std::to_string(pid), deadline);
  if (!answer) {
    // Left mid-query: not idle, so not fit to be the reserve any more.
    PQfinish(conn_);
    conn_ = nullptr;
    open_ = false;
  }
  return answer == std::optional<std::string>("t");
}

std::optional<Hazard> connection_room_hazard(PGconn* conn, std::size_t pool_size, SteadyClock::time_point deadline) {
  // reserved_connections exists from PostgreSQL 16 on; missing_ok reads NULL before.
  const Result result = round_trip(conn,
                             "SELECT r.rolconnlimit, "
                             "(SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity a "
                             "  WHERE a.usesysid = r.oid AND a.backend_type = 'client backend'), "
                             "pg_catalog.current_setting('max_connections')::integer "
                             "  - pg_catalog.current_setting('superuser_reserved_connections')::integer "
                             "  - coalesce(pg_catalog.current_setting('reserved_connections', true)::integer, 0), "
                             "(SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity a "
                             "  WHERE a.backend_type = 'client backend'), "
                             "r.rolname::text "
                             "FROM pg_catalog.pg_roles r WHERE r.rolname = session_user",
                             deadline);
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK || PQntuples(result.get()) != 1 || PQnfields(result.get()) != 5) {
    return std::nullopt;
  }
  const auto number = [&](int column) {
    long long value = 0;
    const char* text = PQgetvalue(result.get(), 0, column);
    std::from_chars(text, text + PQgetlength(result.get(), 0, column), value);
    return value;
  };
  const long long role_limit = number(0);  // -1: none
  const long long role_sessions = number(1);
  const long long server_limit = number(2);
  const long long server_sessions = number(3);
  const long long wanted = static_cast<long long>(pool_size) + 1;

  Hazard hazard;
  hazard.kind = HazardKind::connection_limit;
  hazard.names.emplace_back(std::string_view(PQgetvalue(result.get(), 0, 4)));
  const Trusted room = Trusted::format(
      " rawtool opens up to {} connection{} for this database (pool_size) and keeps one more in reserve, from which "
      "it ends a statement that ignores its cancel (a statement can turn the server's client check off and catch "
      "the cancel); it starts no statement while it cannot hold that reserve connection. Each rawtool process with "
      "this configuration needs as many. When the audit ran the role had {} session{}, and the server {} client "
      "sessions of the {} it allows roles that are not superusers (max_connections less the reserved ones).",
      pool_size, pool_size == 1 ? Literal("") : Literal("s"), role_sessions, role_sessions == 1 ? Literal("") : Literal("s"),
      server_sessions, server_limit);
  if (role_limit >= 0 && role_limit < wanted) {
    hazard.refused = true;
    hazard.explanation = Trusted::format(
        "the role's CONNECTION LIMIT is {}, which leaves no room for the reserve connection beside a full pool, so "
        "read-only mode refuses to run. Raise it (ALTER ROLE ... CONNECTION LIMIT {} or more per rawtool process) "
        "or lower pool_size.",
        role_limit, wanted);
  } else if (server_limit < wanted) {
    hazard.refused = true;
    hazard.explanation = Trusted::format(
        "the server allows {} connections to roles that are not superusers, which leaves no room for the reserve "
        "connection beside a full pool, so read-only mode refuses to run. Raise max_connections or lower pool_size.",
        server_limit);
  } else if (role_limit >= 0) {
    hazard.explanation = Trusted::format(
        "the role's CONNECTION LIMIT is {}: room for {} rawtool process{} with this configuration at once; when "
        "other sessions fill it, calls are refused before their statement starts.",
        role_limit, role_limit / wanted, role_limit / wanted == 1 ? Literal("") : Literal("es"));
  } else {
    return std::nullopt;
  }
  hazard.explanation += room;
  return hazard;
}

}  // namespace rawtool::detail
