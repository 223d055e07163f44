#pragma once

// The read-only audit of a PostgreSQL session: what its role can become and
// do that a READ ONLY transaction, rolled back, does not contain. Private to
// the PostgreSQL driver; see PostgresOptions in driver.hpp for the contract.

#include <rawtool/driver.hpp>

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>
#include <string>

namespace rawtool::detail {

struct SessionAudit {
  DatabaseReport report;
  /// max_prepared_transactions > 0: a statement can prepare its transaction.
  bool prepared_transactions = false;
  /// The hazards found that are refused only because the operator listed
  /// their kind (PostgresOptions::refuse_hazards).
  std::vector<HazardKind> refused_by_setting;
  /// A SQL expression read-only mode evaluates in every call's transaction,
  /// before the statement, so that a privilege granted since this audit is
  /// seen before the statement runs: 1, or, when the session can become one of
  /// the roles this audit found that read_only_refusal refuses a session for
  /// reaching, an error (division_by_zero), which aborts the transaction and
  /// with it the statement. What it does not see is seen at the next audit
  /// (see postgres_audit.cpp). Refers to no table: it can stand in a SELECT
  /// of its own or beside other columns. Built from numbers only.
  std::string guard;
};

/// Runs the audit on `conn` (two round trips), waiting no later than
/// `deadline`. std::nullopt when the server did not answer it as expected;
/// the caller then treats the session as refused, or as lost when the
/// deadline passed (gave_up in postgres_round_trip.hpp). A hazard of a kind
/// in `refuse_hazards` is marked refused.
/// REQUIRES: the connection is idle and not in pipeline mode.
std::optional<SessionAudit> audit_session(PGconn* conn, std::chrono::steady_clock::time_point deadline,
                                          std::span<const HazardKind> refuse_hazards = {});

/// The refusal read-only mode answers with while `audit` holds a refused
/// hazard, in rawtool's own words (no role or function names); std::nullopt
/// when nothing is refused.
std::optional<Refusal> read_only_refusal(const SessionAudit& audit);

}  // namespace rawtool::detail
