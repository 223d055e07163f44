#pragma once

// The connection a PostgreSQL driver ends a runaway statement from, and what
// the role's and the server's connection limits leave room for. Private to
// the PostgreSQL driver.
//
// A statement can turn the server's client check off
// (set_config('client_connection_check_interval', '0', true)) and catch its
// cancel in a loop: then only pg_terminate_backend, run from another session
// of the same role, ends it. Opening that session at the moment it is needed
// fails exactly when the role's CONNECTION LIMIT or the server's
// max_connections is reached, which is the moment a pool under load is in.
// So the other session is opened before any statement runs and kept in
// reserve, one per configured database and process, shared by every driver
// of that database: a statement starts only while it is held (see
// Terminator::ready). The cost is one idle connection per database per
// process. Keeping none and looking for an idle sibling of the pool instead
// fails when every pooled connection runs such a statement (a pool of one
// always does), and a check of the role's limit alone cannot see other
// sessions filling it.

#include <rawtool/driver.hpp>

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

namespace rawtool::detail {

using SteadyClock = std::chrono::steady_clock;

/// The password in `file`: its bytes, one trailing line break (LF or CR LF)
/// dropped. Unavailable, in rawtool's words, when it cannot be read or is empty.
std::variant<std::string, Unavailable> read_password_file(const std::string& file);

/// Whether the idle connection `conn` is still usable. An idle connection has
/// nothing to read: input means the backend ended (idle_session_timeout, a
/// restart, pg_terminate_backend) and left its goodbye or an EOF, which can
/// take two reads, or sent a parameter change, which is read and dropped.
/// A connection that is not idle (a round trip given up at its deadline left
/// its query pending) is not alive either.
bool idle_connection_alive(PGconn* conn);

/// Opens a connection for `conninfo` (with the password, when given) without
/// blocking past `deadline`. Null when it could not.
PGconn* connect_until(const std::string& conninfo, const std::optional<std::string>& password,
                      SteadyClock::time_point deadline);

/// Runs `sql` with one text parameter on `conn` without waiting past
/// `deadline`. The first cell ("" when no row), or std::nullopt when it
/// failed or the deadline passed.
std::optional<std::string> query_until(PGconn* conn, const char* sql, const std::string& parameter,
                                       SteadyClock::time_point deadline);

/// A second connection of a database's role, held in reserve to end a
/// statement of that role's pooled connections. Thread-safe.
class Terminator {
public:
  /// The terminator of the database `conninfo` names, shared by every driver
  /// of this process with the same conninfo and password file.
  static std::shared_ptr<Terminator> of(const std::string& conninfo, const std::string& password_file);

  Terminator(std::string conninfo, std::string password_file);
  ~Terminator();
  Terminator(const Terminator&) = delete;
  Terminator& operator=(const Terminator&) = delete;

  /// True when the reserve connection is open, opening it (again) when it is
  /// missing or the server closed it, without waiting past `deadline`. A
  /// caller starts no statement while this is false.
  bool ready(SteadyClock::time_point deadline);

  /// Ends the server process `pid` with pg_terminate_backend from the reserve
  /// connection (or, when that has closed, from a new one), without waiting
  /// past `deadline`. True when the server answered that it signalled it.
  bool terminate(int pid, SteadyClock::time_point deadline);

private:
  /// Takes the connection for one use, waiting for another use to end no
  /// later than `deadline`; false when it did not end in time. A mutex and a
  /// condition variable rather than std::timed_mutex, whose try_lock_until
  /// calls pthread_mutex_clocklock, which ThreadSanitizer (GCC 12's) does not
  /// intercept: it would see every such lock as a misuse and no ordering.
  bool acquire(SteadyClock::time_point deadline);
  void release();

  /// REQUIRES: acquired. Opens the connection when it is missing or dead.
  bool open_locked(SteadyClock::time_point deadline);

  const std::string conninfo_;
  const std::string password_file_;
  std::mutex mutex_;
  std::condition_variable released_;
  bool in_use_ = false;     ///< guarded by mutex_
  PGconn* conn_ = nullptr;  ///< used only between acquire and release
  std::atomic<bool> open_{false};
};

/// The hazard of a role whose CONNECTION LIMIT, or a server whose
/// max_connections, leaves no room for `pool_size` connections and the
/// reserve one beside them (refused), or a report of the room there is when
/// the role has a limit. std::nullopt when neither applies or the server did
/// not answer by `deadline`. REQUIRES: `conn` idle and not in pipeline mode.
std::optional<Hazard> connection_room_hazard(PGconn* conn, std::size_t pool_size, SteadyClock::time_point deadline);

}  // namespace rawtool::detail
