#pragma once

// The read-only audit of a PostgreSQL session: what its role can become and
// do that a READ ONLY transaction, rolled back, does not contain. Private to
// the PostgreSQL driver; see PostgresOptions in driver.hpp for the contract.

#include <rawtool/driver.hpp>

#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace rawtool::detail {

struct SessionAudit {
  DatabaseReport report;
  /// max_prepared_transactions > 0: a statement can prepare its transaction.
  bool prepared_transactions = false;
};

/// Runs the audit on `conn` (one round trip). std::nullopt when the server
/// did not answer it as expected; the caller then treats the session as
/// refused. REQUIRES: the connection is idle and not in pipeline mode.
std::optional<SessionAudit> audit_session(PGconn* conn);

/// The refusal read-only mode answers with while `audit` holds a refused
/// hazard, in rawtool's own words (no role or function names); std::nullopt
/// when nothing is refused.
std::optional<Refusal> read_only_refusal(const SessionAudit& audit);

/// A SQL expression read-only mode evaluates in every call's transaction,
/// before the statement, so that a privilege granted since the audit is seen
/// before the statement runs: 1, or, when the session can become a role that
/// the audit refuses (the same rules, kept in one place), the error
/// guard_sqlstate, which aborts the transaction and with it the statement.
/// What else the audit refuses (EXECUTE on its listed functions, settings) is
/// seen when the audit is asked again. Refers to no table of the statement's:
/// it can stand in a SELECT of its own or beside other columns.
std::string_view read_only_guard_expression();

/// The SQLSTATE of a tripped guard (division_by_zero). Only the guard's own
/// query can raise it there: the statement has not run yet.
inline constexpr std::string_view guard_sqlstate = "22012";

}  // namespace rawtool::detail
