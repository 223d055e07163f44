#pragma once

// The read-only audit of a PostgreSQL session: what its role can become and
// do that a READ ONLY transaction, rolled back, does not contain. Private to
// the PostgreSQL driver; see PostgresOptions in driver.hpp for the contract.

#include <rawtool/driver.hpp>

#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace rawtool::detail {

struct SessionAudit {
  DatabaseReport report;
  /// max_prepared_transactions > 0: a statement can prepare its transaction.
  bool prepared_transactions = false;
  /// The hazards found that are refused only because the operator listed
  /// their kind (PostgresOptions::refuse_hazards).
  std::vector<HazardKind> refused_by_setting;
};

/// Runs the audit on `conn` (one round trip). std::nullopt when the server
/// did not answer it as expected; the caller then treats the session as
/// refused. A hazard of a kind in `refuse_hazards` is marked refused.
/// REQUIRES: the connection is idle and not in pipeline mode.
std::optional<SessionAudit> audit_session(PGconn* conn, std::span<const HazardKind> refuse_hazards = {});

/// The refusal read-only mode answers with while `audit` holds a refused
/// hazard, in rawtool's own words (no role or function names); std::nullopt
/// when nothing is refused.
std::optional<Refusal> read_only_refusal(const SessionAudit& audit);

}  // namespace rawtool::detail
