// What a PostgreSQL statement can leave behind that its call must end before
// it answers: a server process that ignored its cancel (ended from the
// reserve connection, postgres_terminator.hpp) and a transaction a read-only
// statement prepared for two-phase commit (found by the virtual transaction
// ID it keeps, and rolled back). Both run after the pipeline, on what the
// call learnt (its Call), and both may give the connection up.
#include "detail/postgres_driver.hpp"

#include <libpq-fe.h>

#include <poll.h>

#include <chrono>
#include <string>

namespace rawtool::detail {

bool PostgresDriver::end_backend(int pid) {
  if (pid <= 0) return false;
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  // From the reserve connection of the same role (see postgres_terminator.hpp):
  // it is what PostgreSQL allows without pg_signal_backend, and it was opened
  // before the statement began, so neither the role's connection limit nor
  // the server's can stop it now. Used without blocking, so that a server
  // that hangs cannot hold the call past the deadline.
  if (!terminator_->terminate(pid, deadline)) return false;
  // The backend's end closes this connection's socket: that, not a lookup by
  // pid, is what shows that the session that ran the statement is gone.
  for (;;) {
    switch (detail::wait_socket(conn_, POLLIN, deadline)) {
      case detail::Ready::broken:
        return PQstatus(conn_) == CONNECTION_BAD;
      case detail::Ready::timeout:
        return false;
      case detail::Ready::yes:
        break;
    }
  }
}

Refusal PostgresDriver::ended_transaction_refusal(const Call& call) {
  Refusal refusal = refuse(RefusalReason::read_only,
                           "The statement ended rawtool's read-only transaction itself (as COMMIT, ROLLBACK, END, ABORT "
                           "and PREPARE TRANSACTION do), which read-only mode does not allow, so its reply is not shown.");
  if (!finds_prepared_transactions() || conn_ == nullptr) return refusal;
  // The answer when the lookup below cannot be made or fails; the connection
  // is given up.
  const auto unchecked = [&] {
    refusal.explanation +=
        " rawtool could not check whether it prepared the transaction for two-phase commit: an operator should look "
        "for one in pg_prepared_xacts.";
    disconnect();
    return refusal;
  };
  // A prepared transaction keeps the virtual transaction ID of the
  // transaction that prepared it (its lock on its own transaction ID shows it
  // in pg_locks), whose first part is the backend ID of the session. No other
  // session holds that ID while this one lives, so a transaction prepared
  // with this session's backend ID since this session began is the
  // statement's. When this lookup runs on the server process that ran the
  // statement (always on a direct connection) that is what it matches.
  // Through a transaction pooler it can run on another one, which cannot ask
  // for the backend ID of an idle process (reading pg_locks in every call
  // would cost every call more than the whole of its wrapping): it then
  // takes every transaction prepared in this database since the statement's
  // began, and the rollback succeeds only for those of a role this session
  // may end (its own, which the audit asks to be rawtool's alone). A
  // statement that prepared one was refused either way.
  if (call.pooled && (call.transaction_started.empty() || call.server_pid == 0)) {
    return unchecked();
  }
  const std::string pid = std::to_string(call.server_pid);
  const char* values[] = {call.pooled ? call.transaction_started.c_str() : nullptr, pid.c_str()};
  // After the statement: bounded like the connection's own work.
  const Clock::time_point deadline = Clock::now() + connection_bound_;
  const Result found = round_trip(
      conn_,
      Command{.text =
      "SELECT p.gid FROM pg_catalog.pg_prepared_xacts p "
      "JOIN pg_catalog.pg_locks x ON x.locktype = 'transactionid' AND x.transactionid = p.transaction AND x.pid IS NULL "
      "LEFT JOIN pg_catalog.pg_locks me ON me.locktype = 'virtualxid' AND me.pid = pg_catalog.pg_backend_pid() "
      "WHERE p.database = pg_catalog.current_database() AND CASE "
      "WHEN $2::integer = 0 OR $2::integer = pg_catalog.pg_backend_pid() THEN "
      "pg_catalog.split_part(x.virtualtransaction, '/', 1) = pg_catalog.split_part(me.virtualtransaction, '/', 1) "
      "AND p.prepared >= (SELECT a.backend_start FROM pg_catalog.pg_stat_activity a WHERE a.pid = pg_catalog.pg_backend_pid()) "
      "ELSE p.prepared >= $1::timestamptz END",
              .values = values},
      deadline);
  if (PQresultStatus(found.get()) != PGRES_TUPLES_OK) {
    return unchecked();
  }
  int rolled_back = 0;
  int left_behind = 0;
  for (int row = 0; row < PQntuples(found.get()); ++row) {
    // The identifier is the statement's own text: quoted by libpq, never spliced raw.
    char* literal = PQescapeLiteral(conn_, PQgetvalue(found.get(), row, 0),
                                    static_cast<std::size_t>(PQgetlength(found.get(), row, 0)));
    if (literal == nullptr) {
      ++left_behind;
      continue;
    }
    const std::string rollback = std::string("ROLLBACK PREPARED ") + literal;
    PQfreemem(literal);
    const Result done = round_trip(conn_, rollback.c_str(), deadline);
    if (PQresultStatus(done.get()) == PGRES_COMMAND_OK) {
      ++rolled_back;
    } else {
      ++left_behind;
    }
  }
  if (rolled_back > 0)
    refusal.explanation += " It had prepared the transaction for two-phase commit; rawtool rolled the prepared transaction back.";
  if (left_behind > 0) {
    refusal.explanation +=
        " It had prepared the transaction for two-phase commit, and rawtool could not roll it back: an operator must "
        "run ROLLBACK PREPARED for it (pg_prepared_xacts lists it under this connection's role).";
    disconnect();
  }
  return refusal;
}

}  // namespace rawtool::detail
