#pragma once

// The PostgreSQL driver's class, shared by the files that implement it, one
// seam each. Private to the driver.
//
//   postgres_driver.cpp      the driver's face: a stop reaching the running
//                            call, the read-only audit and reserve gates,
//                            inspect()
//   postgres_connection.cpp  opening and closing the connection: the libpqxx
//                            session, the password file, the connect-time
//                            queries, the session's settings
//   postgres_pipeline.cpp    running one statement: what the wrapping
//                            pipeline sends and in what order, the cleanup,
//                            the end of a call
//   postgres_results.cpp     reading what the pipeline brings: single-row
//                            reads under the call's deadline and cancel,
//                            rows, failures and notices as rawtool's values
//   postgres_describe.cpp    describe() and the names of types
//   postgres_recovery.cpp    what a statement leaves that the call must end:
//                            a backend that ignored its cancel, a transaction
//                            it prepared
//   postgres_parameters.cpp  parameters as libpq takes them
// beside the older ones: postgres_round_trip (bounded queries and cancel
// requests), postgres_audit, postgres_terminator (the reserve connection),
// postgres_orphans (what a killed process left running).
//
// libpqxx manages the connection (postgres_connection.cpp). The execute path
// is libpq, directly: libpqxx 6 has no pipeline mode, no single-row mode, no
// notice receiver with structured fields and no PQresultErrorField per field,
// and each of those is what this driver exists to get right.
//
// Nothing waits on the server without a bound: the pipeline reads under the
// statement's deadline (wait_for_input), and every query sent outside it (the
// connect-time queries, the audit, type names, describe, the cleanup, the
// recovery of a prepared transaction) is a detail::round_trip, under the
// call's deadline or, for the connection's own work, its connect timeout
// (connection_bound_). A round trip past its deadline gives the connection
// up; the call is answered as a lost connection (or, after its statement,
// with the statement's answer), and the next call opens a fresh one.

#include "postgres_audit.hpp"
#include "postgres_orphans.hpp"
#include "postgres_parameters.hpp"
#include "postgres_round_trip.hpp"
#include "postgres_terminator.hpp"

#include <rawtool/driver.hpp>

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace rawtool::detail {

using Clock = std::chrono::steady_clock;

/// How long past statement_timeout the client waits before it cancels on its
/// own, and again before it gives the connection up.
inline constexpr std::chrono::milliseconds client_grace{2000};

/// How long the server may take over a query of the connection's own
/// (connect-time queries, cleanup, recovery, inspect) when the connection
/// string sets no connect_timeout; otherwise the connect timeout bounds them
/// too, as libpq reads it (at least 2 s). Describe and a call's audit are
/// bounded by their call's deadline instead.
inline constexpr std::chrono::milliseconds default_connection_bound{10000};

inline Refusal refuse(RefusalReason reason, Trusted explanation) { return Refusal{reason, std::move(explanation)}; }
inline Refusal refuse(RefusalReason reason, Literal explanation) { return Refusal{reason, explanation}; }

inline Untrusted text_of(const char* text) { return text == nullptr ? Untrusted{} : Untrusted(text, std::strlen(text)); }

inline bool sqlstate_is(const PGresult* result, std::string_view code) {
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  return state != nullptr && code == state;
}

/// The libpqxx connection that owns a driver's PGconn (postgres_connection.cpp).
class Session;

class PostgresDriver final : public Driver {
public:
  PostgresDriver(std::string conninfo, PostgresOptions options);
  ~PostgresDriver() override;

  [[nodiscard]] Engine engine() const noexcept override { return Engine::postgresql; }

  using Driver::execute;
  Outcome execute(std::string_view sql, std::span<const Parameter> params, const Limits& limits, AccessMode mode,
                  std::stop_token stop) override;

  std::variant<StatementShape, Failure, Refusal, Unavailable> describe(std::string_view sql,
                                                                       std::span<const Parameter> params,
                                                                       AccessMode mode) override;

  std::variant<DatabaseReport, Unavailable> inspect() override;
  std::variant<DatabaseReport, Unavailable> inspect_until(std::stop_token stop) override;

private:
  /// Why the call's pipeline stopped before its end, if it did.
  enum class Stop { none, deadline_cancel, gave_up, broken, abandoned };

  /// The notices of a statement, as they arrive.
  struct NoticeSink {
    std::vector<Notice> kept;
    std::uint64_t withheld = 0;
    std::uint64_t budget = 0;  ///< bytes still free for kept notices
    bool closed = false;       ///< a notice did not fit: every later one is withheld too
  };

  /// The timeouts this connection's session holds, as set_config left them.
  struct SessionTimeouts {
    std::chrono::milliseconds statement;
    std::chrono::milliseconds lock;
    std::chrono::milliseconds idle_in_transaction;
    bool operator==(const SessionTimeouts&) const = default;
  };

  struct Call;

  /// Opens the connection unless one is open and alive. A stop requested
  /// while it connects ends the wait (the answer is then Unavailable, and the
  /// caller, which sees the stop, says it was cancelled).
  std::optional<Unavailable> connect(const std::stop_token& stop = {});
  void disconnect() noexcept;
  /// libpq's notice receiver: `running` is the Call the connection runs (see
  /// execute), null between calls, when every notice is dropped.
  static void receive_notice(void* running, const PGresult* notice);

  // Reading the pipeline's results (postgres_results.cpp).

  /// The next result of the pipeline, waiting no later than the call's
  /// deadline; on the deadline it cancels once, and after a further grace it
  /// gives up. Returns null at the end of each query's results, or when stopped.
  Result next_result(Call& call);
  /// Waits until input arrives and reads it, under the same deadline rules.
  /// False when the call must stop (given up, or the connection broke).
  bool wait_for_input(Call& call);
  /// Reads and drops a COPY TO STDOUT stream after cancelling it.
  void discard_copy_out(Call& call);
  /// Asks the server to cancel what the connection runs (see CancelRequests).
  void send_cancel() noexcept;
  /// What a call's stop does while its statement runs (running_): marks the
  /// call and sends the server one cancel request. From any thread.
  void cancel_running() noexcept;
  /// `bounded`: the results are a FETCH of at most max_rows + 1 rows (see
  /// run_read_only), so reaching the row cap needs no cancel, and the end of
  /// the results is the end of the statement's rows only when fewer came,
  /// and a failure's count of rows before it is not known.
  Outcome read_statement(Call& call, bool bounded);
  bool drain_query(Call& call);
  /// Drains `count` queries' results, every one even after one failed.
  bool drain_queries(Call& call, int count);
  bool expect_sync(Call& call);
  /// The outcome of the statement's error: a cancel or a timeout when it is
  /// one, the database's failure otherwise.
  Outcome error_outcome(Call& call, const PGresult* result);
  /// Reads a read-write statement's results up to its Sync. The statement
  /// commits at that Sync, after its own results, and a commit can fail (a
  /// deferred constraint or trigger): then the outcome is that failure, not
  /// the rows. False when the Sync did not come as expected.
  bool read_commit(Call& call, Outcome& outcome);

  // The pipeline (postgres_pipeline.cpp).

  /// Queues ROLLBACK, pg_advisory_unlock_all() and DEALLOCATE ALL: what undoes
  /// everything a read-only statement can leave behind (see postgres_pipeline.cpp).
  /// `again`: sent on its own after the first one was skipped, the
  /// transaction in error.
  bool send_read_only_cleanup(const Call& call, bool again = false);
  /// Reads what send_read_only_cleanup queued; false when any part failed.
  bool drain_read_only_cleanup(Call& call, bool again = false);
  /// Where a statement can prepare its transaction, the read-only transaction
  /// answers when it began (see ended_transaction_refusal).
  [[nodiscard]] bool finds_prepared_transactions() const { return audit_ && audit_->prepared_transactions; }
  Outcome run_read_only(Call& call);
  Outcome run_read_write(Call& call);
  /// What every call does after its pipeline: notices to the outcome, the
  /// stops (give up, broken), the session made clean, the prepared
  /// transaction a statement left behind, the connection given up when it
  /// holds a large buffer.
  Outcome finish(Call& call, Outcome outcome, bool read_only);
  bool send_text(const char* text);
  /// Queues a statement of the wrapping: under `name` (Parse, then Bind and
  /// Execute) when the call is `named`, as the unnamed statement otherwise.
  bool send_wrapping(const Call& call, const char* name, const char* text);
  /// Reads what send_wrapping queued; false when any part failed.
  bool drain_wrapping(Call& call);
  /// The first result of the statement send_statement queued (for a named
  /// call, the Parse's failure when it failed).
  Result next_statement_result(Call& call);
  /// Queues BEGIN READ ONLY and the query that sets the call's timeouts in it.
  bool send_transaction_start(const Call& call);
  /// Reads what send_transaction_start queued, keeping the server process and
  /// transaction it names in `call`; false when either failed.
  bool read_transaction_start(Call& call);
  /// True unless the server process that answered when the connection began
  /// is the one PQbackendPID names: through a pooler (or when that could not
  /// be read) PQbackendPID is not a server process of this session.
  [[nodiscard]] bool through_pooler() const;
  /// The server process running the call's statement, or 0 when it is not known.
  [[nodiscard]] int statement_backend(const Call& call, bool read_only) const;
  bool send_statement(const Call& call, const std::string& text);
  /// Reads the timeouts' preamble, if it was sent; false when it failed.
  bool read_timeouts(Call& call);
  Unavailable broken_connection_or_stop(Call& call);

  /// Names the columns' types, asking the server for those not yet known
  /// (waiting no later than `deadline`); true when it asked.
  bool name_types(std::vector<Column>& columns, const std::vector<Oid>& oids, Clock::time_point deadline);
  /// The connection is gone, or was given up by a round trip past its
  /// deadline: the call is answered by broken_connection().
  [[nodiscard]] bool lost() const { return conn_ == nullptr || PQstatus(conn_) == CONNECTION_BAD || detail::gave_up(conn_); }
  /// Closes the connection; its complaint, for the log.
  Unavailable broken_connection();
  /// The refusal read-only mode answers with on this connection, if any: the
  /// session's audit, asked when it is missing or older than audit_lifetime,
  /// waiting no later than `deadline`.
  std::optional<Refusal> audit_refusal(Clock::time_point deadline);
  /// The refusal for a call that would start a statement while no reserve
  /// connection is held to end it (see postgres_terminator.hpp), if any.
  std::optional<Refusal> reserve_refusal();
  /// Ends the server process `pid` from a second connection of the same role,
  /// for a statement of this connection that ignored its cancel, then waits
  /// for this connection's socket to close. True when the backend is known to
  /// have ended.
  bool end_backend(int pid);
  /// After a statement ended rawtool's read-only transaction itself: finds a
  /// transaction it prepared, by what the call's wrapping answered, and rolls
  /// it back. The refusal that replaces the call's reply, in rawtool's words.
  Refusal ended_transaction_refusal(const Call& call);

  // Every member is the driver's or its connection's: what lives for one
  // call only is in its Call, which execute makes and drops.

  std::string conninfo_;
  PostgresOptions options_;
  /// The bound of the connection's own queries (see default_connection_bound),
  /// as its connect timeout sets it.
  std::chrono::milliseconds connection_bound_ = default_connection_bound;
  std::optional<SessionTimeouts> session_timeouts_;  ///< as the last clean call left them; unknown after a reset
  /// Whether the session's role may execute dblink_connect, as the first
  /// read-write call of the connection asked (see run_read_write).
  std::optional<bool> dblink_executable_;
  std::optional<detail::SessionAudit> audit_;  ///< of this connection's session; see audit_refusal
  /// The connection room the last audit found (see connection_room_hazard).
  std::optional<Hazard> room_hazard_;
  /// Shared with every driver of this database in the process.
  std::shared_ptr<detail::Terminator> terminator_;
  /// Names this database in record files (see postgres_orphans.hpp).
  std::string target_key_;
  /// This connection's server process in the process's record file; null
  /// through a pooler, and when not connected.
  std::unique_ptr<detail::RecordedBackend> recorded_;
  Clock::time_point audited_at_{};
  /// The session's unnamed prepared statement is the guard, left there by the
  /// last read-only call (see postgres_pipeline.cpp). Set only at the end of a
  /// call whose pipeline left it so and that sent nothing after it; every
  /// other use of the connection (an audit, describe, inspect, a reconnect)
  /// may replace that statement and clears this first.
  bool guard_kept_ = false;
  std::unique_ptr<Session> session_;  ///< complete in postgres_connection.cpp
  PGconn* conn_ = nullptr;
  bool direct_ = false;  ///< PQbackendPID is this session's server process (read at connect)
  std::unordered_map<Oid, Untrusted> type_names_;  ///< per connection

  std::mutex cancel_mutex_;  ///< guards canceller_ and running_ against cancel_running()
  /// The connection's cancel key: made at connect, dropped at disconnect.
  std::shared_ptr<PGcancel> canceller_;
  /// The call that runs its statement now, which its stop marks; null
  /// between calls and once a call's pipeline has ended (see finish).
  Call* running_ = nullptr;
  /// The cancel requests sent on this connection's behalf. The connection's,
  /// not a call's: a request targets the connection's server process and may
  /// land after the call that sent it has returned, so a call settles every
  /// one still in flight before the connection runs anything more (finish).
  std::shared_ptr<detail::CancelRequests> cancels_ = std::make_shared<detail::CancelRequests>();
};

/// One call of execute: what it sends, what it has learnt so far, and where
/// it stands against its deadline and its caller's cancel. Made when the call
/// starts and dropped when it returns, so nothing of one call reaches the
/// next; the driver points at it (running_) only while its statement runs.
struct PostgresDriver::Call {
  Call(const Limits& call_limits, const BoundParameters& call_bound, std::string_view sql, SessionTimeouts wanted_timeouts)
      : limits(call_limits),
        bound(call_bound),
        statement(sql),
        started(Clock::now()),
        wanted(wanted_timeouts),
        deadline(started + call_limits.statement_timeout + client_grace) {
    notices.budget = call_limits.max_notice_bytes;
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  const Limits& limits;
  const BoundParameters& bound;
  std::string statement;
  Clock::time_point started;
  SessionTimeouts wanted;
  /// The set_config of the timeouts: the session's, sent before the statement
  /// when they differ (and after every read-write statement); through a
  /// pooler, the read-only transaction's first query, which sets them local
  /// to it and answers which server process runs it (see read_transaction_start).
  std::string timeouts;
  bool set_timeouts = false;
  NoticeSink notices;   ///< the statement's
  NoticeSink wrapping;  ///< the cleanup's: any notice here means the statement ended the transaction
  /// Where the connection's notices go now: `notices`, then `wrapping`; null
  /// outside the span of the stream in which the statement's arrive (see execute).
  NoticeSink* collecting = nullptr;
  bool clean = true;  ///< every wrapping step answered as expected
  /// The session may hold what no reset undoes (see run_read_write): the
  /// connection is closed after the call.
  bool give_up_connection = false;
  /// A read-only call through a pooler (see through_pooler): its timeouts are
  /// set by the first query of its transaction, which also answers which
  /// server process runs it.
  bool pooled = false;
  /// The server process that ran the pooled read-only transaction, as the
  /// transaction answered: 0 until it has, and on a direct connection.
  int server_pid = 0;
  /// Where a statement can prepare its transaction: when the read-only
  /// transaction began, as the server answered; empty until it has.
  std::string transaction_started;
  /// A read-only call whose transaction runs the guard before the statement
  /// (in the timeouts' query through a pooler, in `guard` elsewhere).
  bool guarded = false;
  std::string guard;
  /// The guard failed: the statement did not run, and the call is answered by
  /// the audit, asked again (see execute).
  bool guard_tripped = false;
  /// The guard runs as the session's unnamed prepared statement and every
  /// other statement of the pipeline is sent under a name of its own, so that
  /// it stays there for the next call (see postgres_pipeline.cpp): a guarded
  /// read-only call on a direct connection.
  bool named = false;
  /// On entry: the guard is already the unnamed statement, and is only bound
  /// and run. On return from run_read_only: the pipeline left it there.
  bool guard_kept = false;

  /// When the pipeline stops waiting: the statement's time limit and a grace,
  /// then, once it has cancelled, a further grace (see wait_for_input).
  Clock::time_point deadline;
  Stop stop = Stop::none;
  bool cancel_sent = false;  ///< a cancel went out for this call (the deadline's or the caller's)
  /// Set by the call's stop, from any thread, while the driver points at this call.
  std::atomic<bool> cancel_requested{false};
  /// The largest row or error message of the call, in bytes of its fields.
  std::uint64_t largest_message = 0;
  /// Rows the statement sent, kept or not (for Failure::rows_before_failure).
  std::uint64_t rows_seen = 0;
  /// The type of each of the statement's columns, named once it has answered.
  std::vector<Oid> column_types;
};

/// The database's failure, its fields copied; a failure whose fields pass
/// limits.max_bytes keeps a prefix of each and their size and digest
/// (Failure::withheld). `fields_bytes` is set to the size of its fields.
Failure failure_of(const PGresult* result, const Limits& limits, std::uint64_t rows_before_failure,
                   std::uint64_t& fields_bytes);

}  // namespace rawtool::detail
