#pragma once

// What a rawtool process killed without a chance to act (SIGKILL, the OOM
// killer) leaves running on the server, and how the next one ends it.
// Private to the PostgreSQL driver.
//
// A backend whose statement turned the client check off and catches its
// cancel does not notice that its client died, so nothing but another
// session ends it. The design:
//   - Each process keeps one record file in a private directory (mode 0700,
//     owned by the user; see record_directory), holding an exclusive flock on
//     it while it lives. The file lists, per configured database (a digest of
//     its connection string and password file, never the string, which may
//     hold a password), the server processes of the process's direct
//     connections, each as its pid AND its backend_start: a pid alone may be
//     reused by anyone's session, and a statement can change its own
//     application_name, so that is not used.
//   - A connection's line is removed when it closes while idle (its backend
//     then ends on its own) and kept when it was given up with a statement
//     running that rawtool could not confirm ended.
//   - Before its first statement on a database, a process takes, one by one,
//     the flock of every other record file; one it can take belongs to a
//     process that has ended. It ends, as that database's role, each
//     recorded backend of that database still present with the same pid and
//     backend_start (pg_terminate_backend, then waits until pg_stat_activity
//     no longer shows it), and removes those lines (the file, once empty).
//     A live process, such as a second `rawtool mcp` started with the same
//     configuration, holds its flock, so its sessions are never touched;
//     sessions no rawtool recorded are never touched.
// Through a transaction pooler the server process changes from one
// transaction to the next and the client connection names none, so nothing
// is recorded there: a pooled read-only call learns its server process only
// inside its own transaction. What remains is in docs/postgres-orphans.md.

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace rawtool::detail {

/// The digest that names a configured database in record files: the same
/// connection string and password file give the same key.
std::string target_key(std::string_view conninfo, std::string_view password_file);

/// Where record files live: $RAWTOOL_RUNTIME_DIR when set, else
/// $XDG_RUNTIME_DIR/rawtool, else /tmp/rawtool-<uid>. Created with mode 0700;
/// a directory not owned by the user or open to others is not used, and then
/// nothing is recorded or ended.
std::string record_directory();

/// One server process in this process's record file, from construction until
/// destruction (or forever, after keep()). Not copyable; movable by pointer.
class RecordedBackend {
public:
  RecordedBackend(const std::string& key, int pid, std::int64_t backend_start_us);
  ~RecordedBackend();
  RecordedBackend(const RecordedBackend&) = delete;
  RecordedBackend& operator=(const RecordedBackend&) = delete;

  /// The backend may outlive its connection (given up, not confirmed ended):
  /// its line stays for the next process with this configuration to end.
  void keep() noexcept { kept_ = true; }

private:
  std::uint64_t id_ = 0;  ///< 0: not recorded (no usable directory)
  bool kept_ = false;
};

/// Ends, from `conn`, what processes that have ended recorded for `key`, as
/// described above. Runs once per key per process, before `conn` runs anything
/// else; a caller with the same key that comes meanwhile waits until it is
/// done. A round that could not finish (the connection failed) is tried again
/// at the next connection. Its queries wait no later than `deadline` (then
/// the connection is given up: gave_up in postgres_round_trip.hpp).
/// REQUIRES: `conn` idle, not in pipeline mode.
void end_orphans(PGconn* conn, const std::string& key, std::chrono::steady_clock::time_point deadline);

/// This connection's server process start, in microseconds since the epoch,
/// as the server reports it (pg_stat_activity.backend_start), and its pid: the
/// pair a record holds. {0, 0} when the server did not answer by `deadline`.
struct BackendIdentity {
  int pid = 0;
  std::int64_t start_us = 0;
};
BackendIdentity backend_identity(PGconn* conn, std::chrono::steady_clock::time_point deadline);

}  // namespace rawtool::detail
