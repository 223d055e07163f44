// Running one statement on a PostgreSQL connection: what the pipeline that
// wraps it sends and in what order, the cleanup that leaves the session as it
// found it, and the end of the call (finish); its results are read in
// postgres_results.cpp. Everything a call learns while it runs lives in its
// PostgresDriver::Call and ends with it; what outlives it (the session's
// timeouts, the kept guard) is the connection's.
//
// One call is one pipeline, sent at once and read in order, so the safety
// wrapping costs no extra round trips:
//
//   read-only:  [set_config(timeouts, session) · Sync]   only when they changed
//               BEGIN READ ONLY · guard · <statement> ·
//               guard · ROLLBACK · DEALLOCATE ALL · Sync
//               (the guard also calls pg_advisory_unlock_all(); see below)
//   through a pooler:
//               BEGIN READ ONLY · pg_backend_pid(), set_config(timeouts, local), guard · Flush ·
//               <statement> · ROLLBACK · pg_advisory_unlock_all() · DEALLOCATE ALL · Sync
//   read-write: [set_config(timeouts, session) · Sync]   only when they changed
//               <statement> · Sync                        (commits on its own)
//               DISCARD ALL · set_config(timeouts, session) · fresh? · Sync
//
// The statement goes through the extended protocol, so it is exactly one
// statement: the server refuses a second.
//
// Each Sync costs the server a flush and the client a wake-up, and those,
// not the statements, are most of the wrapping's price (tests/bench/drivers
// measures each part), so the read-only call has one. A read-only statement
// that fails aborts the rest of its segment, cleanup included: the cleanup is
// then sent again, on its own, which costs failures one round trip. A
// read-write statement keeps its own Sync, so that it commits whatever its
// cleanup does.
//
// The guard sees a privilege granted to the role since its audit before the
// statement runs (a long-lived connection is audited once a minute): when the
// session can become a role the audit refuses, it fails, which aborts the rest
// of the segment, statement included, and the call is answered with the
// audit, asked again at once (detail::SessionAudit::guard says what it
// covers, and postgres_audit.cpp what waits for the next audit).
//
// Parsing and planning the guard would cost a read-only SELECT 1 about half
// again its time (tests/bench/drivers: select1_pipe_guarded), so on a direct
// connection it stays prepared from one call to the next, and is only bound
// and run. It is kept as the session's unnamed prepared statement, the one
// statement SQL cannot reach: PREPARE, DEALLOCATE (ALL) and EXECUTE take only
// names, which a statement's dynamic SQL can use to put its own statement in
// place of any named one. Every other statement of the call is therefore sent
// under a name and parsed afresh (a Parse of a name the statement prepared
// fails, which stops the segment before anything runs under it), and DEALLOCATE
// ALL drops them all with whatever the statement prepared. The guard's query
// also releases the advisory locks: run again after the statement, before
// ROLLBACK, it is the cleanup's unlock, with no parsing either. Anything else
// sent on the connection (the audit, describe, a type lookup, the cleanup sent
// again after a failure, the preamble) replaces the unnamed statement; the
// guard is parsed again on the next call (guard_kept_ says when it need not
// be). Through a pooler nothing of this applies: the guard is a column of the
// timeouts' query.
//
// In read-only mode everything the statement can do to the session is undone
// by ROLLBACK (settings, SET ROLE, cursors, LISTEN: all transactional; nothing
// can be created, and COMMIT inside DO or CALL is refused in a transaction
// block) except what is not transactional: session advisory locks and
// prepared statements, released and deallocated after it, before the Sync.
//
// No read-only statement can change the session past its call, which is
// why its timeouts can be session settings, set once per connection. That
// holds on a session of one's own. A pooler in transaction mode (PgBouncer)
// hands each transaction, and each segment up to a Sync that leaves the
// session idle, to any server connection of its pool: session timeouts would
// stay behind for the pooler's next client and be missing where the next
// call runs, and PQbackendPID names the pooler's key, not the process that
// runs the statement. A connection is known to go through one when the
// pg_backend_pid() it reads as it connects is not PQbackendPID; its read-only
// calls then set their timeouts local to their transaction, in a query that
// also answers which server process runs it (which a statement that ignores
// its cancel is ended by), and nothing of theirs stays on the connection.
// That query costs each call a statement, which direct connections are
// spared. A read-write
// statement commits on its own (it may be one that refuses a transaction
// block, as VACUUM does), so its timeouts are session settings, and a
// read-write call ends with DISCARD ALL and sets this call's timeouts again
// right after it, in the same segment: that needs a session of its own, not
// a transaction pool.
//
// DISCARD ALL leaves some things behind that a later caller can see, and
// the same segment asks after those it can: the session's temporary schema
// (pg_my_temp_schema() stays set once a temporary object was made, even
// after DISCARD TEMP) and, once per connection, whether its role may execute
// dblink_connect, whose connections (named or not) DISCARD ALL leaves open
// for the next caller to use as whoever opened them, and which nothing can
// list. A connection that may hold either is given up after the call, not
// reset: on a role that may open dblink connections, after every read-write
// call (read-only mode refuses such a role). What nothing can ask after
// stays, in both modes: a custom setting's name (SET myapp.x makes the
// placeholder myapp.x, whose value RESET ALL and ROLLBACK empty but which
// stays defined, so current_setting('myapp.x', true) answers '' where a
// fresh session answers NULL; values never stay), and which libraries the
// server process has loaded (LOAD, or an extension's function, whose
// settings then show in pg_settings). tests/drivers/postgres_session_state_test
// walks each family, and pins these two.
//
// If anything is left over all the same (an open transaction, a failed
// cleanup), it is cleaned up with ROLLBACK and DISCARD ALL, and a connection
// that cannot be cleaned is dropped.
#include "detail/postgres_driver.hpp"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

namespace rawtool::detail {
namespace {

using std::chrono::milliseconds;

/// How often a backend running a statement checks that its client is still
/// there (client_connection_check_interval, PostgreSQL 14 and later): a backend
/// whose statement ignores cancellation then ends soon after rawtool drops its
/// connection, even when ending it from a second connection is not possible.
constexpr milliseconds client_check_interval{1000};

/// A call that received a protocol message larger than this drops its
/// connection afterwards: libpq keeps its input buffer at the largest message
/// it has read, and only closing the connection gives that memory back.
constexpr std::uint64_t keep_connection_below_bytes = 8 * 1024 * 1024;

/// A tripped guard's answer when the audit, asked again, no longer refuses:
/// the role's privileges changed back in between.
Refusal guard_refusal() {
  return refuse(RefusalReason::not_permitted,
                "The statement did not run: the privileges of this connection's role changed as the call began (it "
                "could become a role that read-only mode refuses). Run it again; `rawtool check-config --connect` "
                "shows what the role can do.");
}

/// The prefix that makes a statement a cursor; a position the server reports
/// in it is shifted back by its length (ASCII: characters and bytes agree).
constexpr std::string_view cursor_prefix = "DECLARE rawtool_cursor NO SCROLL CURSOR FOR ";

/// A DECLARE that failed for one of these did so because the statement is not
/// a query a cursor can hold (a syntax error at its first word, SELECT INTO,
/// data-modifying WITH, or the server's own "cannot open as cursor"), or the
/// statement has a syntax error of its own; it is then run as it is, and its
/// own failure, position and message are what the caller sees.
bool declare_refused_statement(const PGresult* result) {
  return sqlstate_is(result, "42601") || sqlstate_is(result, "42P11") || sqlstate_is(result, "0A000");
}

}  // namespace

bool PostgresDriver::send_text(const char* text) {
  return PQsendQueryParams(conn_, text, 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
}

bool PostgresDriver::send_wrapping(const Call& call, const char* name, const char* text) {
  if (!call.named) return send_text(text);
  return PQsendPrepare(conn_, name, text, 0, nullptr) == 1 &&
         PQsendQueryPrepared(conn_, name, 0, nullptr, nullptr, nullptr, 0) == 1;
}

bool PostgresDriver::drain_wrapping(Call& call) {
  const bool parsed = !call.named || drain_query(call);
  return drain_query(call) && parsed;
}

bool PostgresDriver::send_read_only_cleanup(const Call& call, bool again) {
  if (!call.named) {
    return send_text("ROLLBACK") && send_text("SELECT pg_catalog.pg_advisory_unlock_all()") && send_text("DEALLOCATE ALL");
  }
  // The kept statement releases the advisory locks (and runs the guard again,
  // which costs it nothing): bound, not parsed or planned. It runs before
  // ROLLBACK, so that when it fails the transaction is left in error, as by a
  // failed statement, and the cleanup is sent again (see run_read_only); sent
  // again, after ROLLBACK has ended that transaction.
  const auto unlock = [&] { return PQsendQueryPrepared(conn_, "", 0, nullptr, nullptr, nullptr, 0) == 1; };
  const auto rollback = [&] { return send_wrapping(call, "rawtool_rollback", "ROLLBACK"); };
  return (again ? rollback() && unlock() : unlock() && rollback()) &&
         send_wrapping(call, "rawtool_deallocate", "DEALLOCATE ALL");
}

bool PostgresDriver::drain_read_only_cleanup(Call& call, bool again) {
  if (!call.named) return drain_queries(call, 3);
  // Every part is read, whatever failed before it.
  const bool first = again ? drain_wrapping(call) : drain_query(call);
  const bool second = again ? drain_query(call) : drain_wrapping(call);
  const bool deallocated = drain_wrapping(call);
  return first && second && deallocated;
}

bool PostgresDriver::send_transaction_start(const Call& call) {
  if (!send_wrapping(call, "rawtool_begin", "BEGIN READ ONLY")) return false;
  if (!call.pooled) {
    if (!call.guarded) return true;
    // Kept: bound and run only, with no parsing or planning (the unnamed
    // statement, which no SQL can replace: see the file comment).
    if (call.guard_kept) return PQsendQueryPrepared(conn_, "", 0, nullptr, nullptr, nullptr, 0) == 1;
    return send_text(call.guard.c_str());
  }
  // The server holds its replies until the Sync, so a statement that never
  // ends would keep its process ID from us without the flush.
  return send_text(call.timeouts.c_str()) && PQsendFlushRequest(conn_) == 1;
}

bool PostgresDriver::through_pooler() const { return !direct_; }

int PostgresDriver::statement_backend(const Call& call, bool read_only) const {
  if (read_only && call.server_pid != 0) return call.server_pid;
  // On a direct connection the server named its process when the connection
  // began. Through a pooler that is the pooler's key, which may be any
  // process's ID: unknown then, rather than a guess that ends someone else's.
  return through_pooler() ? 0 : PQbackendPID(conn_);
}

bool PostgresDriver::send_statement(const Call& call, const std::string& text) {
  const int count = static_cast<int>(call.bound.values.size());
  if (!call.named) {
    return PQsendQueryParams(conn_, text.c_str(), count, call.bound.types.data(), call.bound.values.data(), nullptr,
                             nullptr, 0) == 1;
  }
  return PQsendPrepare(conn_, "rawtool_statement", text.c_str(), count, call.bound.types.data()) == 1 &&
         PQsendQueryPrepared(conn_, "rawtool_statement", count, call.bound.values.data(), nullptr, nullptr, 0) == 1;
}

Result PostgresDriver::next_statement_result(Call& call) {
  if (call.named) {
    // The Parse's own result comes first. Its failure (a syntax error, an
    // unknown table) is the statement's: returned, and the skipped Bind's
    // results follow, for the caller to drain as the statement's.
    Result failed;
    while (Result parsed = next_result(call)) {
      if (PQresultStatus(parsed.get()) == PGRES_FATAL_ERROR && failed == nullptr) failed = std::move(parsed);
    }
    if (failed != nullptr) return failed;
  }
  return next_result(call);
}

bool PostgresDriver::read_transaction_start(Call& call) {
  bool ok = drain_wrapping(call);  // BEGIN READ ONLY
  if (!call.pooled && !call.guarded) return ok;
  bool answered = false;
  while (Result result = next_result(call)) {
    const PGresult* r = result.get();
    // The guard's query failing for any reason but a cancel is taken as the
    // guard tripping: the audit asked again then decides (see execute).
    if (PQresultStatus(r) == PGRES_FATAL_ERROR && !sqlstate_is(r, "57014")) call.guard_tripped = call.guarded;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) continue;
    answered = !call.pooled;
    if (!call.pooled) continue;
    const char* pid = PQgetvalue(r, 0, 0);
    answered = std::from_chars(pid, pid + std::strlen(pid), call.server_pid).ec == std::errc{};
    if (finds_prepared_transactions()) call.transaction_started = PQgetvalue(r, 0, PQnfields(r) - 1);
  }
  return ok && (answered || call.guard_tripped) && call.stop == Stop::none;
}

bool PostgresDriver::read_timeouts(Call& call) {
  if (!call.set_timeouts) return true;
  const bool applied = drain_query(call) && expect_sync(call);
  session_timeouts_ = applied ? std::optional(call.wanted) : std::nullopt;
  return applied;
}

// Read-only: one pipeline, one Sync, one round trip:
//   [set_config(timeouts) · Sync]  BEGIN READ ONLY · guard · DECLARE cursor FOR
//   <statement> · FETCH max_rows + 1 · guard · ROLLBACK · DEALLOCATE ALL · Sync
// (the guard kept as the unnamed statement, the rest named: see the file comment)
// (through a pooler: no session timeouts; after BEGIN READ ONLY, the query
// that sets them local to the transaction and runs the guard, and a Flush).
// Through the cursor the server makes only the rows the cap can use, where the
// statement's plan streams. A statement a cursor cannot hold (EXPLAIN, SHOW,
// COMMIT, ...) costs one more round trip: run as it is, in a new transaction:
//   ROLLBACK · BEGIN READ ONLY · guard [pooled: in set_config · Flush] · <statement> · cleanup · Sync
// A pooler keeps the failed transaction's server connection for that second
// segment: a session in a failed transaction block is not idle.
Outcome PostgresDriver::run_read_only(Call& call) {
  const std::string declare = std::string(cursor_prefix) + call.statement;
  const std::string fetch = fmt::format("FETCH FORWARD {} FROM rawtool_cursor", call.limits.max_rows + 1);

  bool sent = PQenterPipelineMode(conn_) == 1;
  if (call.set_timeouts) sent = sent && send_text(call.timeouts.c_str()) && PQpipelineSync(conn_) == 1;
  sent = sent && send_transaction_start(call) && send_statement(call, declare) &&
         send_wrapping(call, "rawtool_fetch", fetch.c_str()) && send_read_only_cleanup(call) && PQpipelineSync(conn_) == 1;
  if (!sent) return broken_connection();

  call.clean = read_timeouts(call);
  call.clean = read_transaction_start(call) && call.clean;
  bool as_cursor = true;
  std::optional<Outcome> outcome;
  if (call.guard_tripped) {
    // Nothing of the statement ran; execute() answers with the audit.
    drain_wrapping(call);  // the DECLARE, aborted with the segment
    outcome = guard_refusal();
  } else if (Result declared = next_statement_result(call); declared != nullptr) {
    const ExecStatusType status = PQresultStatus(declared.get());
    if (status == PGRES_FATAL_ERROR && declare_refused_statement(declared.get()) && call.stop == Stop::none &&
        !call.cancel_requested.load()) {
      as_cursor = false;
    } else if (status == PGRES_FATAL_ERROR) {
      outcome = error_outcome(call, declared.get());
      if (auto* failure = std::get_if<Failure>(&*outcome); failure != nullptr && failure->position) {
        // The server counted the cursor's prefix; the caller's statement starts after it.
        *failure->position = std::max<std::int64_t>(1, *failure->position - static_cast<std::int64_t>(cursor_prefix.size()));
      }
    } else if (status != PGRES_COMMAND_OK) {
      call.clean = false;
    }
    while (next_result(call) != nullptr) {
    }
  }
  if (as_cursor && !outcome) {
    if (call.named) drain_query(call);  // the FETCH's Parse
    outcome = read_statement(call, true);  // the FETCH
  } else {
    drain_wrapping(call);  // the FETCH, skipped after the failed DECLARE
  }
  call.collecting = &call.wrapping;
  if (!as_cursor) {
    // Nothing of the statement ran: the DECLARE failed before planning. The
    // cleanup was skipped with the rest of the segment; the ROLLBACK that
    // opens the next one ends the failed transaction. That segment is sent
    // unnamed, guard included (parsed again): the statement that is not a
    // query stays the unnamed one.
    drain_read_only_cleanup(call);
    if (!expect_sync(call)) return broken_connection_or_stop(call);
    call.named = false;
    call.guard_kept = false;
    call.notices = NoticeSink{};
    call.notices.budget = call.limits.max_notice_bytes;
    call.wrapping = NoticeSink{};
    call.collecting = &call.notices;
    sent = send_text("ROLLBACK") && send_transaction_start(call) && send_statement(call, call.statement) &&
           send_read_only_cleanup(call) && PQpipelineSync(conn_) == 1;
    if (!sent) return broken_connection();
    call.clean = drain_query(call) && call.clean;  // ROLLBACK
    call.clean = read_transaction_start(call) && call.clean;
    if (call.guard_tripped) {
      drain_query(call);  // the statement, aborted with the segment (unnamed here)
      outcome = guard_refusal();
    } else {
      outcome = read_statement(call, false);
    }
    call.collecting = &call.wrapping;
  }
  // A statement that failed (or was cancelled) aborted the rest of its
  // segment, cleanup included, and left the transaction open in error: the
  // cleanup is sent again on its own. Only failures pay this round trip.
  // Its named statements are parsed again (their Parse was skipped with the
  // segment); if one fails, as when the statement prepared that name itself,
  // the session is reset by finish().
  bool cleaned = drain_read_only_cleanup(call);
  call.clean = expect_sync(call) && call.clean;
  if (!cleaned && call.stop == Stop::none) {
    if (send_read_only_cleanup(call, true) && PQpipelineSync(conn_) == 1) {
      cleaned = drain_read_only_cleanup(call, true) && expect_sync(call);
    } else {
      call.stop = Stop::broken;
    }
  }
  call.clean = cleaned && call.clean;
  call.guard_kept = call.named && call.clean && !call.guard_tripped;
  return std::move(*outcome);
}

namespace {

/// After DISCARD ALL: true when the session has no temporary schema, which
/// stays once a temporary object was made (see the file comment). A function
/// call: it costs the segment next to nothing.
constexpr const char* fresh_session_query = "SELECT pg_catalog.pg_my_temp_schema() = 0";

/// The same, and whether the session's role may execute dblink_connect
/// (whose connections nothing can list, see the file comment): asked once per
/// connection, since the join costs the server a millisecond. The ownership
/// of the extension's functions (pg_depend), not their names alone, says
/// which are dblink's.
constexpr const char* fresh_session_and_dblink_query =
    "SELECT pg_catalog.pg_my_temp_schema() = 0, EXISTS (SELECT FROM pg_catalog.pg_extension e "
    "JOIN pg_catalog.pg_depend d ON d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass "
    "AND d.refobjid = e.oid AND d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.deptype = 'e' "
    "JOIN pg_catalog.pg_proc p ON p.oid = d.objid "
    "WHERE e.extname = 'dblink' AND p.proname IN ('dblink_connect', 'dblink_connect_u') "
    "AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE'))";

}  // namespace

// Read-write: the statement keeps its own Sync, so that it commits whatever
// its cleanup does; the cleanup resets the session, sets this call's
// timeouts again and asks whether the session is now as a fresh one:
//   [set_config(timeouts) · Sync]  <statement> · Sync
//   DISCARD ALL · set_config(timeouts) · fresh_session_query · Sync
Outcome PostgresDriver::run_read_write(Call& call) {
  bool sent = PQenterPipelineMode(conn_) == 1;
  if (call.set_timeouts) sent = sent && send_text(call.timeouts.c_str()) && PQpipelineSync(conn_) == 1;
  sent = sent && send_statement(call, call.statement) && PQpipelineSync(conn_) == 1 &&
         send_text("DISCARD ALL") &&  // first in its segment: it refuses to run after another statement in one transaction
         send_text(call.timeouts.c_str()) &&
         send_text(dblink_executable_.has_value() ? fresh_session_query : fresh_session_and_dblink_query) && PQpipelineSync(conn_) == 1;
  if (!sent) return broken_connection();

  call.clean = read_timeouts(call);
  Outcome outcome = read_statement(call, false);
  call.clean = read_commit(call, outcome) && call.clean;  // the commit can raise notices too
  call.collecting = &call.wrapping;
  // DISCARD ALL reset the timeouts to the connection's defaults; the
  // set_config after it put this call's back, so a next call with the same
  // limits needs no preamble.
  bool reset = drain_queries(call, 2);
  bool no_temporary_schema = false;  // unless the server says so
  while (Result result = next_result(call)) {
    const bool answered = PQresultStatus(result.get()) == PGRES_TUPLES_OK && PQntuples(result.get()) == 1;
    no_temporary_schema = answered && std::string_view(PQgetvalue(result.get(), 0, 0)) == "t";
    if (answered && PQnfields(result.get()) == 2) dblink_executable_ = std::string_view(PQgetvalue(result.get(), 0, 1)) == "t";
    reset = reset && answered;
  }
  reset = expect_sync(call) && reset;
  session_timeouts_ = reset ? std::optional(call.wanted) : std::nullopt;
  call.clean = reset && call.clean;
  call.give_up_connection = !no_temporary_schema || dblink_executable_.value_or(true);
  return outcome;
}

Unavailable PostgresDriver::broken_connection_or_stop(Call& call) {
  if (call.stop == Stop::none) call.stop = Stop::broken;
  if (recorded_ != nullptr) recorded_->keep();  // broken mid-call: its statement may run on
  return broken_connection();
}

Outcome PostgresDriver::execute(std::string_view sql, std::span<const Parameter> params, const Limits& limits,
                                AccessMode mode, std::stop_token stop) {
  const auto stopped_before_sent = [this] {
    return refuse(RefusalReason::cancelled, "The call was cancelled before its statement was sent.");
  };
  if (stop.stop_requested()) return stopped_before_sent();
  if (auto refusal = statement_size_refusal(sql, limits)) return std::move(*refusal);
  auto bound_or_refusal = bind_parameters(sql, params);
  if (auto* refusal = std::get_if<Refusal>(&bound_or_refusal)) return std::move(*refusal);

  // The work before the statement (the audit) waits no longer than the
  // statement itself may.
  const Clock::time_point call_deadline = Clock::now() + limits.statement_timeout + client_grace;
  if (auto unavailable = connect(stop)) {
    if (stop.stop_requested()) return stopped_before_sent();
    return std::move(*unavailable);
  }
  // Whatever this call does, the guard is the unnamed statement afterwards
  // only if finish() says so.
  bool guard_kept = std::exchange(guard_kept_, false);
  const bool read_only = mode == AccessMode::read_only;
  if (read_only) {
    const Clock::time_point audited = audited_at_;
    std::optional<Refusal> refusal = audit_refusal(call_deadline);
    if (lost()) return broken_connection();
    if (refusal) return std::move(*refusal);
    if (audited_at_ != audited) guard_kept = false;  // the audit's queries replaced it, and the guard may differ
  }
  if (auto refusal = reserve_refusal()) return std::move(*refusal);

  Call call(limits, std::get<BoundParameters>(bound_or_refusal), sql,
            {limits.statement_timeout, limits.lock_timeout, limits.statement_timeout + client_grace * 2});
  // Through a pooler the read-only timeouts are local to the transaction, so
  // that no setting outlives the call on whichever server connection ran it;
  // elsewhere they are the session's, sent only when they change, which
  // saves every call a statement (tests/bench/drivers: select1_pipe_full_one_sync
  // against select1_pipe_full_local_timeouts).
  call.pooled = read_only && through_pooler();
  call.guarded = read_only && !options_.allow_privileged_read_only && audit_.has_value();
  // Kept as the unnamed statement, the guard also releases the advisory
  // locks at the end of the call (see send_read_only_cleanup).
  if (call.guarded && !call.pooled) {
    call.guard = fmt::format("SELECT pg_catalog.pg_advisory_unlock_all(), {}", audit_->guard);
  }
  call.set_timeouts = !call.pooled && session_timeouts_ != call.wanted;
  // A pooler may not keep named statements, nor run a transaction's
  // statements where the last one ran. The timeouts' preamble replaces the
  // unnamed statement.
  call.named = call.guarded && !call.pooled;
  call.guard_kept = call.named && guard_kept && !call.set_timeouts;
  if (call.pooled || call.set_timeouts || !read_only) {
    const std::string_view local = call.pooled ? "true" : "false";
    call.timeouts = fmt::format(
        "SELECT {}pg_catalog.set_config('statement_timeout', '{}', {}), pg_catalog.set_config('lock_timeout', "
        "'{}', {}), pg_catalog.set_config('idle_in_transaction_session_timeout', '{}', {})",
        call.pooled ? "pg_catalog.pg_backend_pid(), " : "", call.wanted.statement.count(), local,
        call.wanted.lock.count(), local, call.wanted.idle_in_transaction.count(), local);
    if (PQserverVersion(conn_) >= 140000) {
      call.timeouts += fmt::format(", pg_catalog.set_config('client_connection_check_interval', '{}', {})",
                                   client_check_interval.count(), local);
    }
    // When the transaction began: a transaction the statement prepares was
    // prepared after it (see ended_transaction_refusal).
    if (call.pooled && call.guarded) call.timeouts += fmt::format(", {}", audit_->guard);
    if (call.pooled && finds_prepared_transactions()) call.timeouts += ", pg_catalog.transaction_timestamp()::text";
  }

  // Whatever the server sent while the session was idle is parsed now, before
  // the statement's notices are collected: it was not raised by this statement.
  PQisBusy(conn_);
  {
    std::lock_guard lock(cancel_mutex_);
    running_ = &call;
  }
  // The connection's notices go to this call (to call.collecting) until it
  // returns; its stop reaches it until then, or until finish() lets go.
  // `running` is declared after `call`, and `on_stop` after `running`, so they
  // let go in that order before the call ends.
  PQsetNoticeReceiver(conn_, &PostgresDriver::receive_notice, &call);
  struct Running {
    PostgresDriver& driver;
    ~Running() {
      std::lock_guard lock(driver.cancel_mutex_);
      driver.running_ = nullptr;
      if (driver.conn_ != nullptr) PQsetNoticeReceiver(driver.conn_, &PostgresDriver::receive_notice, nullptr);
    }
  } running{*this};
  // A stop from here on is a cancel request; one that came during the audit
  // or the connect means nothing is sent.
  if (stop.stop_requested()) return stopped_before_sent();
  const std::stop_callback on_stop(stop, [this] { cancel_running(); });
  report_rows_read(0);

  // The statement's notices are collected from before anything is sent until
  // the end of its results (read-only) or its segment's Sync (read-write,
  // whose commit can raise them). libpq hands a notice to the receiver as
  // soon as it parses it, even one that directly follows a result not yet
  // collected, so a notice the server raises while it parses the statement
  // can arrive while the preamble's results are read. The preamble itself
  // raises none: set_config of valid timeouts does not, BEGIN warns only
  // inside a transaction, which an idle session (checked at the end of every
  // call) is not, and taking an advisory lock raises nothing. The cleanup's
  // notices cannot arrive early: each of its statements begins with a
  // ParseComplete that libpq does not parse before the previous result is
  // collected. So everything in the span is the statement's, and nothing
  // after it is.
  //
  // The cleanup raises a notice only when the statement already ended the
  // read-only transaction: then ROLLBACK warns that there is no transaction
  // in progress. Its notices go to a sink of their own, and any one of them
  // means the statement ended the wrapping (COMMIT, ROLLBACK, PREPARE
  // TRANSACTION): a violation, answered with a refusal, never with rows.
  call.collecting = &call.notices;
  Outcome outcome = read_only ? run_read_only(call) : run_read_write(call);
  call.collecting = nullptr;
  if (std::holds_alternative<Unavailable>(outcome)) return outcome;
  outcome = finish(call, std::move(outcome), read_only);
  if (!call.guard_tripped || std::holds_alternative<Unavailable>(outcome)) return outcome;
  // The session can now become a role the audit refuses: the audit is asked
  // again, now, and its refusal is the answer, in the words it always has.
  audit_.reset();
  if (auto unavailable = connect()) return std::move(*unavailable);
  // After the statement: bounded like the connection's own work.
  std::optional<Refusal> refusal = audit_refusal(Clock::now() + connection_bound_);
  if (lost()) return broken_connection();
  if (refusal) return std::move(*refusal);
  return outcome;  // granted and revoked again in between: the statement still did not run
}

Outcome PostgresDriver::finish(Call& call, Outcome outcome, bool read_only) {
  if (auto* rows = std::get_if<Rows>(&outcome)) {
    rows->notices = std::move(call.notices.kept);
    rows->notices_withheld = call.notices.withheld;
  } else if (auto* failure = std::get_if<Failure>(&outcome)) {
    failure->notices = std::move(call.notices.kept);
    failure->notices_withheld = call.notices.withheld;
  } else if (auto* refusal = std::get_if<Refusal>(&outcome)) {
    // A refusal holds the tool's words only, so the notices themselves go
    // nowhere; how many there were is said, so that none vanishes unmentioned.
    const std::uint64_t raised = call.notices.kept.size() + call.notices.withheld;
    if (raised != 0)
      refusal->explanation += Trusted::format(" It raised {} notice{} before it stopped; a stopped statement's notices are not shown.",
                                              raised, raised == 1 ? Literal("") : Literal("s"));
  }
  const bool ended_transaction = read_only && (call.wrapping.withheld != 0 || !call.wrapping.kept.empty());

  {
    std::lock_guard lock(cancel_mutex_);
    running_ = nullptr;  // from here on a stop starts nothing
  }
  if (call.stop == Stop::broken) {
    if (recorded_ != nullptr) recorded_->keep();  // broken mid-call: its statement may run on
    return broken_connection();
  }
  if (call.stop == Stop::abandoned) {
    disconnect();
    return outcome;
  }
  if (call.stop == Stop::gave_up) {
    // The server did not stop the statement when asked (a statement can catch
    // the cancel and go on): it is ended from another connection, and this
    // connection is never used again.
    const bool ended = end_backend(statement_backend(call, read_only));
    if (!ended && recorded_ != nullptr) recorded_->keep();  // for the next rawtool with this configuration to end
    const bool cancelled = call.cancel_requested.load();
    disconnect();
    return refuse(cancelled ? RefusalReason::cancelled : RefusalReason::timeout,
                  Trusted::format("The statement {} and did not stop when the server was asked to cancel it; {}",
                                  cancelled ? Trusted(Literal("was cancelled"))
                                            : Trusted::format("ran past its time limit, statement_timeout_ms={} "
                                                              "(limits.statement_timeout_ms),",
                                                              call.limits.statement_timeout.count()),
                                  ended ? Literal("rawtool ended its server session.")
                                        : Literal("rawtool closed its connection but could not confirm that the server "
                                                  "ended the session.")));
  }
  PQexitPipelineMode(conn_);
  if (!cancels_->settle(client_grace)) {
    // A cancel that has not landed could still stop a later statement.
    disconnect();
    return outcome;
  }
  bool queried_after = false;
  if (!call.clean || PQtransactionStatus(conn_) != PQTRANS_IDLE) {
    queried_after = true;
    session_timeouts_.reset();  // DISCARD ALL resets them
    // After the statement, when the call's deadline may have passed: bounded
    // like the connection's own work.
    const Clock::time_point deadline = Clock::now() + connection_bound_;
    const Result rollback = round_trip(conn_, "ROLLBACK", deadline);
    const Result discard = round_trip(conn_, "DISCARD ALL", deadline);
    if (PQresultStatus(discard.get()) != PGRES_COMMAND_OK || PQtransactionStatus(conn_) != PQTRANS_IDLE) {
      disconnect();  // a session that cannot be made clean is not used again
    }
  }
  if (ended_transaction) {
    queried_after = true;
    Refusal violation = ended_transaction_refusal(call);
    // The database's own failure (a PREPARE TRANSACTION the server refused)
    // stays its reply; anything else the statement produced is replaced.
    if (!std::holds_alternative<Failure>(outcome)) outcome = std::move(violation);
  }
  if (call.largest_message > keep_connection_below_bytes) disconnect();  // gives libpq's input buffer back
  if (auto* rows = std::get_if<Rows>(&outcome); rows != nullptr && conn_ != nullptr) {
    queried_after = name_types(rows->columns, call.column_types, Clock::now() + connection_bound_) || queried_after;
  }
  if (call.give_up_connection) disconnect();  // after the types are named, on this connection
  // Nothing was sent after the pipeline (a reset, the prepared-transaction
  // lookup, type names), so the guard it left is still the unnamed statement.
  guard_kept_ = call.guard_kept && !queried_after && conn_ != nullptr;
  if (call.cancel_requested.load() && !std::holds_alternative<Failure>(outcome) && !std::holds_alternative<Refusal>(outcome)) {
    return refuse(RefusalReason::cancelled, "The statement was cancelled.");
  }
  return outcome;
}

}  // namespace rawtool::detail
