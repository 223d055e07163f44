#pragma once

// Round trips to a PostgreSQL server that never wait past a deadline, and the
// bounded cancel requests they (and the statement pipeline) send. Private to
// the PostgreSQL driver.
//
// libpq's synchronous calls (PQexec and its kin) wait for the server's answer
// without a bound: against a server that stops answering (a network
// partition, a host that froze) they hang, and with them whatever waits for
// the call. Every query the driver sends outside its statement pipeline (the
// connect-time queries, the audit, describe, type names, the cleanup after a
// call, prepared-transaction recovery) goes through round_trip instead: sent
// with the asynchronous API, flushed and read while polling the socket until
// the deadline. Past it, the query is cancelled (a request on the bounded
// cancel threads, not waited for) and the connection given up: it is left
// with the query pending, which gave_up() reports and idle_connection_alive
// refuses, so that its owner answers the call as a lost connection and the
// next call opens a fresh one.

#include <libpq-fe.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>

namespace rawtool::detail {

using SteadyClock = std::chrono::steady_clock;

struct ResultDeleter {
  void operator()(PGresult* result) const noexcept { PQclear(result); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

/// What waiting on a connection's socket found.
enum class Ready { yes, timeout, broken };

/// Waits until `conn`'s socket is ready for `events` (POLLIN or POLLOUT) or
/// `until` passes. With POLLIN, what arrived is read (PQconsumeInput): broken
/// when that fails. The one wait of the driver's reads.
Ready wait_socket(PGconn* conn, short events, SteadyClock::time_point until);

/// A command of a round trip: what PQexec, PQexecParams, PQprepare and
/// PQdescribePrepared send, as their asynchronous forms.
struct Command {
  const char* text = nullptr;  ///< the query (several statements when no values), or the statement to prepare
  std::span<const char* const> values{};  ///< text parameters; any makes it one statement (extended protocol)
  bool one_statement = false;             ///< the extended protocol (one statement) even with no values
  const char* prepare = nullptr;          ///< prepare `text` under this name (types: `types`)
  const char* describe = nullptr;         ///< describe this prepared statement; `text` unused
  std::span<const Oid> types{};
};

/// Sends `command` on `conn` and reads every result, without waiting past
/// `deadline`. Returns what PQexec would: the first failed result, else the
/// last one; null when it could not be sent, the connection broke, or the
/// deadline passed. Past the deadline it requests a cancel (see
/// CancelRequests) and leaves the query pending: the connection is given up
/// (gave_up). Leaves `conn` non-blocking (PQsetnonblocking), as the driver
/// keeps its connections. REQUIRES: `conn` idle and not in pipeline mode
/// (otherwise null, nothing sent).
Result round_trip(PGconn* conn, const Command& command, SteadyClock::time_point deadline);

/// `text` with no parameters: PQexec's form (several statements allowed).
inline Result round_trip(PGconn* conn, const char* text, SteadyClock::time_point deadline) {
  return round_trip(conn, Command{.text = text}, deadline);
}

/// True when a round trip on `conn` was given up at its deadline (its query
/// is still pending outside pipeline mode): the connection is not used again.
bool gave_up(PGconn* conn);

/// How many cancel requests the whole process has in flight at most.
inline constexpr int max_cancel_threads = 2;

/// Cancel requests in flight from one owner (a driver, or round_trip's own).
/// PQcancel blocks until the server has taken the request, with no timeout
/// (libpq 15 ignores connect_timeout and uses no deadline for it), and a hung
/// server never takes it. So each request runs on a thread of its own that
/// holds what it uses (this state and the PGcancel) and may outlive the
/// owner, and the process runs at most max_cancel_threads of them at once: a
/// further request is dropped. Dropping is safe because a cancel only ever
/// hastens an end that is bounded without it: a statement past its deadline
/// is given up a grace later whether or not its cancel was sent, and ended
/// from the reserve connection (postgres_terminator.hpp), and a round trip
/// gives its connection up at once. Thread-safe.
class CancelRequests : public std::enable_shared_from_this<CancelRequests> {
public:
  /// Starts `canceller`'s request unless the process's bound is reached.
  /// True when it was started.
  bool start(std::shared_ptr<PGcancel> canceller) noexcept;

  /// True when every request this owner started has landed within `patience`.
  bool settle(std::chrono::milliseconds patience);

private:
  std::mutex mutex_;
  std::condition_variable landed_;
  int in_flight_ = 0;  ///< guarded by mutex_
};

}  // namespace rawtool::detail
