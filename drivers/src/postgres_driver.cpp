// The PostgreSQL driver's face: a stop reaching the running call, the gates a call passes
// before its statement is sent (the session's read-only audit, the reserve
// connection), and inspect(). How the rest is split is in
// detail/postgres_driver.hpp.
#include "detail/postgres_driver.hpp"

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace rawtool {
namespace detail {
namespace {

/// How long a session's audit stands before it is asked again (see PostgresOptions).
constexpr std::chrono::seconds audit_lifetime{60};

}  // namespace

void PostgresDriver::cancel_running() noexcept {
  std::shared_ptr<PGcancel> canceller;
  {
    std::lock_guard lock(cancel_mutex_);
    if (running_ == nullptr || canceller_ == nullptr) return;
    // One request per call: a statement that ignores it is ended after the
    // grace (see wait_for_input).
    if (running_->cancel_requested.exchange(true)) return;
    canceller = canceller_;
  }
  cancels_->start(std::move(canceller));
}

std::variant<DatabaseReport, Unavailable> PostgresDriver::inspect() { return inspect_until({}); }

std::variant<DatabaseReport, Unavailable> PostgresDriver::inspect_until(std::stop_token stop) {
  guard_kept_ = false;
  if (auto unavailable = connect(stop)) return std::move(*unavailable);
  const Clock::time_point deadline = Clock::now() + connection_bound_;
  std::optional<detail::SessionAudit> audit = detail::audit_session(conn_, deadline, options_.refuse_hazards);
  if (!audit) {
    if (lost()) return broken_connection();
    return Unavailable{text_of(PQerrorMessage(conn_))};
  }
  audit_ = audit;
  audited_at_ = Clock::now();
  // The epoch as a numeric, not the timestamp's or a float's text, which
  // follow settings a database can have of its own (TimeZone, DateStyle,
  // extra_float_digits).
  const Result server = round_trip(conn_,
                                   "SELECT EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time())::numeric(20, 6)::text "
                                   "|| ' port ' || pg_catalog.current_setting('port')",
                                   deadline);
  if (lost()) return broken_connection();
  if (PQresultStatus(server.get()) == PGRES_TUPLES_OK && PQntuples(server.get()) == 1) {
    audit->report.server = text_of(PQgetvalue(server.get(), 0, 0));
  }
  room_hazard_ = detail::connection_room_hazard(conn_, options_.pool_size, deadline);
  if (lost()) return broken_connection();
  if (room_hazard_) audit->report.hazards.push_back(*room_hazard_);
  return std::move(audit->report);
}

std::optional<Refusal> PostgresDriver::audit_refusal(Clock::time_point deadline) {
  if (!audit_ || Clock::now() - audited_at_ >= audit_lifetime) {
    audit_ = detail::audit_session(conn_, deadline, options_.refuse_hazards);
    audited_at_ = Clock::now();
    room_hazard_ = audit_ ? detail::connection_room_hazard(conn_, options_.pool_size, deadline) : std::nullopt;
    if (!audit_) {
      return refuse(RefusalReason::not_permitted,
                    "Read-only mode could not audit what this connection's role can do, so it refuses to run.");
    }
  }
  if (options_.allow_privileged_read_only) return std::nullopt;
  if (auto refusal = detail::read_only_refusal(*audit_)) {
    // A refused session is audited again on its next call, so that a REVOKE
    // is seen as soon as the guard sees a GRANT.
    audit_.reset();
    return refusal;
  }
  if (room_hazard_ && room_hazard_->refused) {
    return refuse(RefusalReason::not_permitted,
                  "Read-only mode refuses to run on this connection: the role's CONNECTION LIMIT (or the server's "
                  "max_connections) leaves no room beside the pool for the connection rawtool keeps in reserve to end "
                  "a statement that ignores its cancel. `rawtool check-config --connect` shows the limits; raise the "
                  "limit or lower pool_size.");
  }
  return std::nullopt;
}

std::optional<Refusal> PostgresDriver::reserve_refusal() {
  // Bounded like the driver's own connection (connect_timeout); a refused
  // connection (a limit reached) answers at once.
  if (terminator_->ready(Clock::now() + std::chrono::seconds(10))) return std::nullopt;
  return refuse(RefusalReason::limit,
                "rawtool could not open the second connection of this role that it keeps in reserve to end a "
                "statement that ignores its cancel (the role's CONNECTION LIMIT or the server's max_connections may "
                "be reached), so it did not start the statement. Try again once other sessions have closed; "
                "`rawtool check-config --connect` shows the limits.");
}

}  // namespace detail

std::unique_ptr<Driver> make_postgres_driver(std::string conninfo, PostgresOptions options) {
  return std::make_unique<detail::PostgresDriver>(std::move(conninfo), options);
}

}  // namespace rawtool
