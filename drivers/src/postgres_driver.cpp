// The PostgreSQL driver.
//
// libpqxx manages the connection (we open it with PQconnectdbParams so a
// connect timeout and a fallback application name can be added to any URL or
// key=value string, hand it to libpqxx and keep the PGconn*). The
// execute path is libpq, directly: libpqxx 6 has no pipeline mode, no
// single-row mode, no notice receiver with structured fields and no
// PQresultErrorField per field, and each of those is what this driver exists
// to get right.
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
//
// Nothing waits on the server without a bound: the pipeline reads under the
// statement's deadline (wait_for_input), and every query sent outside it (the
// connect-time queries, the audit, type names, describe, the cleanup, the
// recovery of a prepared transaction) is a detail::round_trip, under the
// call's deadline or, for the connection's own work, its connect timeout
// (connection_bound_). A round trip past its deadline gives the connection
// up; the call is answered as a lost connection (or, after its statement,
// with the statement's answer), and the next call opens a fresh one.
#include "detail/postgres_audit.hpp"
#include "detail/postgres_orphans.hpp"
#include "detail/postgres_round_trip.hpp"
#include "detail/postgres_terminator.hpp"
#include "detail/row_budget.hpp"

#include <rawtool/driver.hpp>

#include <fmt/format.h>
#include <libpq-fe.h>
#include <pqxx/version>
#if PQXX_VERSION_MAJOR >= 7
#include <pqxx/connection>
#else
#include <pqxx/connection_base>
#include <pqxx/connectionpolicy>
#endif
#include <pqxx/except>

#include <rawtool/crypto.hpp>

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <system_error>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <utility>
#include <vector>

namespace rawtool {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr Oid bytea_oid = 17;
constexpr Oid int8_oid = 20;
constexpr Oid bool_oid = 16;
constexpr Oid float8_oid = 701;

/// How long past statement_timeout the client waits before it cancels on its
/// own, and again before it gives the connection up.
constexpr milliseconds client_grace{2000};

/// How long the server may take over a query of the connection's own
/// (connect-time queries, cleanup, recovery, inspect) when the connection
/// string sets no connect_timeout; otherwise the connect timeout bounds them
/// too, as libpq reads it (at least 2 s). Describe and a call's audit are
/// bounded by their call's deadline instead.
constexpr milliseconds default_connection_bound{10000};

/// The statement_timeout describe plans under; its round trips wait that and
/// a grace.
constexpr milliseconds describe_timeout{10000};

/// How long a session's audit stands before it is asked again (see PostgresOptions).
constexpr std::chrono::seconds audit_lifetime{60};

/// How often a backend running a statement checks that its client is still
/// there (client_connection_check_interval, PostgreSQL 14 and later): a backend
/// whose statement ignores cancellation then ends soon after rawtool drops its
/// connection, even when ending it from a second connection is not possible.
constexpr milliseconds client_check_interval{1000};

/// A call that received a protocol message larger than this drops its
/// connection afterwards: libpq keeps its input buffer at the largest message
/// it has read, and only closing the connection gives that memory back.
constexpr std::uint64_t keep_connection_below_bytes = 8 * 1024 * 1024;

Refusal refuse(RefusalReason reason, Trusted explanation) { return Refusal{reason, std::move(explanation)}; }
Refusal refuse(RefusalReason reason, Literal explanation) { return Refusal{reason, explanation}; }

/// A tripped guard's answer when the audit, asked again, no longer refuses:
/// the role's privileges changed back in between.
Refusal guard_refusal() {
  return refuse(RefusalReason::not_permitted,
                "The statement did not run: the privileges of this connection's role changed as the call began (it "
                "could become a role that read-only mode refuses). Run it again; `rawtool check-config --connect` "
                "shows what the role can do.");
}

Untrusted text_of(const char* text) { return text == nullptr ? Untrusted{} : Untrusted(text, std::strlen(text)); }

Untrusted error_field(const PGresult* result, int field) { return text_of(PQresultErrorField(result, field)); }

std::optional<std::int64_t> position_field(const PGresult* result, int field) {
  const char* text = PQresultErrorField(result, field);
  if (text == nullptr) return std::nullopt;
  std::int64_t value = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

bool sqlstate_is(const PGresult* result, std::string_view code) {
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  return state != nullptr && code == state;
}

using detail::Command;
using detail::Result;
using detail::round_trip;

struct ConnectionDeleter {
  void operator()(PGconn* conn) const noexcept { PQfinish(conn); }
};

/// The length a bytea value's text form decodes to, without decoding it: the
/// byte cap is checked before anything is copied. Hex form ("\x" and two
/// digits a byte) or the escape form ("\\" and "\ooo" a byte each).
std::size_t bytea_length(const char* text, std::size_t length) {
  if (length >= 2 && text[0] == '\\' && text[1] == 'x') return (length - 2) / 2;
  std::size_t decoded = 0;
  for (std::size_t i = 0; i < length; ++decoded) {
    if (text[i] != '\\') {
      ++i;
    } else if (i + 1 < length && text[i + 1] == '\\') {
      i += 2;
    } else {
      i += 4;
    }
  }
  return decoded;
}


using detail::read_password_file;

/// The connect timeout libpq uses for `conn` (connect_timeout, at least 2 s as
/// libpq reads it); default_connection_bound when it waits without one.
milliseconds connection_bound_of(PGconn* conn) {
  milliseconds bound = default_connection_bound;
  PQconninfoOption* options = PQconninfo(conn);
  for (const PQconninfoOption* option = options; option != nullptr && option->keyword != nullptr; ++option) {
    if (std::string_view(option->keyword) != "connect_timeout" || option->val == nullptr) continue;
    int seconds = 0;
    const char* end = option->val + std::strlen(option->val);
    if (std::from_chars(option->val, end, seconds).ec == std::errc{} && seconds > 0) {
      bound = std::chrono::seconds(std::max(seconds, 2));
    }
  }
  PQconninfoFree(options);
  return bound;
}

/// Opens a connection with PQconnectdbParams: the caller's URL or key=value
/// string is expanded as dbname, with a connect timeout and an application
/// name the caller's own values override. Returns an open connection the
/// caller owns, or throws pqxx::broken_connection with libpq's complaint.
PGconn* open_connection(const std::string& conninfo, const std::optional<std::string>& password) {
  // Keywords after dbname override what its expansion set: the password
  // file's password replaces one in the connection string. libpq skips a
  // keyword whose value is null.
  const char* const keywords[] = {"connect_timeout", "fallback_application_name", "dbname", "password", nullptr};
  const std::string timeout = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(default_connection_bound).count());
  const char* const values[] = {timeout.c_str(), "rawtool", conninfo.c_str(), password ? password->c_str() : nullptr, nullptr};
  PGconn* connection = PQconnectdbParams(keywords, values, 1);
  if (connection == nullptr) throw pqxx::broken_connection{"out of memory while connecting"};
  if (PQstatus(connection) != CONNECTION_OK) {
    std::string complaint = PQerrorMessage(connection);
    PQfinish(connection);
    throw pqxx::broken_connection{complaint};
  }
  return connection;
}

// Two ways to hand libpqxx a connection we opened: libpqxx 6 (Debian 12) asks a
// connection policy to open it and has no way to adopt one; libpqxx 7 (Debian
// 13) removed connection policies and adopts an open PGconn* instead
// (connection::seize_raw_connection). Either way the session owns the PGconn
// and closes it when it ends.
#if PQXX_VERSION_MAJOR >= 7

/// A libpqxx connection that exposes its PGconn*. Constructing it connects
/// (throwing pqxx::broken_connection with the server's complaint).
class Session final {
public:
  Session(const std::string& conninfo, std::optional<std::string> password)
      : handle_(open_connection(conninfo, password)), connection_(adopt(handle_)) {}

  /// The libpq connection; owned by this session.
  [[nodiscard]] PGconn* handle() const noexcept { return handle_; }

private:
  /// libpqxx's connection over `handle`, which it then owns; on failure the
  /// handle is closed here, as no connection took it.
  static pqxx::connection adopt(PGconn* handle) {
    try {
      return pqxx::connection::seize_raw_connection(handle);
    } catch (...) {
      PQfinish(handle);
      throw;
    }
  }

  PGconn* handle_;
  pqxx::connection connection_;
};

#else

/// Opens connections for libpqxx 6 (open_connection) and remembers the one open.
class ConnectPolicy final : public pqxx::connectionpolicy {
public:
  ConnectPolicy(const std::string& conninfo, std::optional<std::string> password)
      : pqxx::connectionpolicy(conninfo), password_(std::move(password)) {}

  handle do_startconnect(handle orig) override {
    if (orig != nullptr) return orig;
    connected_ = open_connection(options(), password_);
    return connected_;
  }

  handle do_disconnect(handle orig) noexcept override {
    connected_ = nullptr;
    return pqxx::connectionpolicy::do_disconnect(orig);
  }

  /// The open connection, or null.
  [[nodiscard]] handle connected() const noexcept { return connected_; }

private:
  std::optional<std::string> password_;
  handle connected_ = nullptr;
};

/// A libpqxx connection that exposes its PGconn*. Constructing it connects
/// (throwing pqxx::broken_connection with the server's complaint).
class Session final : public pqxx::connection_base {
public:
  Session(const std::string& conninfo, std::optional<std::string> password)
      : pqxx::connection_base(policy_), policy_(conninfo, std::move(password)) {
    init();
  }

  /// The libpq connection; owned by this session.
  [[nodiscard]] PGconn* handle() const noexcept { return policy_.connected(); }

  ~Session() { close(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

private:
  ConnectPolicy policy_;
};

#endif

class PostgresDriver final : public Driver {
public:
  PostgresDriver(std::string conninfo, PostgresOptions options)
      : conninfo_(std::move(conninfo)),
        options_(std::move(options)),
        terminator_(detail::Terminator::of(conninfo_, options_.password_file)),
        target_key_(detail::target_key(conninfo_, options_.password_file)) {}
  ~PostgresDriver() override { disconnect(); }

  [[nodiscard]] Engine engine() const noexcept override { return Engine::postgresql; }

  Outcome execute(std::string_view sql, std::span<const Parameter> params, const Limits& limits,
                  AccessMode mode) override;

  void cancel() noexcept override {
    std::shared_ptr<PGcancel> canceller;
    {
      std::lock_guard lock(cancel_mutex_);
      if (!running_) {
        cancel_pending_ = true;  // for the execute() about to start, until arm()
        return;
      }
      if (canceller_ == nullptr) return;
      // One request per call: a statement that ignores it is ended after the
      // grace whatever more come (see wait_for_input), so callers may repeat
      // cancel() until the call returns without a thread and a connection each.
      if (cancel_requested_.exchange(true)) return;
      canceller = canceller_;
    }
    cancels_->start(std::move(canceller));
  }

  void arm() noexcept override {
    std::lock_guard lock(cancel_mutex_);
    cancel_pending_ = false;
  }

  std::variant<StatementShape, Failure, Refusal, Unavailable> describe(std::string_view sql,
                                                                       std::span<const Parameter> params,
                                                                       AccessMode mode) override;

  std::variant<DatabaseReport, Unavailable> inspect() override {
    guard_kept_ = false;
    if (auto unavailable = connect()) return std::move(*unavailable);
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

private:
  enum class Stop { none, deadline_cancel, gave_up, broken, abandoned };

  struct Call;

  std::optional<Unavailable> connect();
  void disconnect() noexcept;
  void on_notice(const PGresult* notice);
  static void receive_notice(void* self, const PGresult* notice) {
    static_cast<PostgresDriver*>(self)->on_notice(notice);
  }

  /// The next result of the pipeline, waiting no later than the deadline; on
  /// the deadline it cancels once, and after a further grace it gives up.
  /// Returns null at the end of each query's results, or when stopped.
  Result next_result();
  /// Waits until input arrives and reads it, under the same deadline rules.
  /// False when the call must stop (given up, or the connection broke).
  bool wait_for_input();
  /// Reads and drops a COPY TO STDOUT stream after cancelling it.
  void discard_copy_out();
  void send_cancel() noexcept;
  /// `bounded`: the results are a FETCH of at most max_rows + 1 rows (see
  /// run_read_only), so reaching the row cap needs no cancel, and the end of
  /// the results is the end of the statement's rows only when fewer came.
  Outcome read_statement(const Limits& limits, Clock::time_point started, bool bounded);
  bool drain_query();
  /// Drains `count` queries' results, every one even after one failed.
  bool drain_queries(int count);
  bool expect_sync();
  /// Queues ROLLBACK, pg_advisory_unlock_all() and DEALLOCATE ALL: what undoes
  /// everything a read-only statement can leave behind (see the file comment).
  /// `again`: sent on its own after the first one was skipped, the
  /// transaction in error.
  bool send_read_only_cleanup(const Call& call, bool again = false);
  /// Reads what send_read_only_cleanup queued; false when any part failed.
  bool drain_read_only_cleanup(const Call& call, bool again = false);
  /// Where a statement can prepare its transaction, the read-only transaction
  /// answers when it began (see ended_transaction_refusal).
  [[nodiscard]] bool finds_prepared_transactions() const { return audit_ && audit_->prepared_transactions; }
  /// The database's failure, its fields copied; a failure whose fields pass
  /// limits.max_bytes keeps a prefix of each and their size and digest
  /// (Failure::withheld).
  Failure failure_of(const PGresult* result, const Limits& limits);
  /// The outcome of the statement's error: a cancel or a timeout when it is
  /// one, the database's failure otherwise.
  Outcome error_outcome(const PGresult* result, const Limits& limits, Clock::time_point started);
  /// Reads a read-write statement's results up to its Sync. The statement
  /// commits at that Sync, after its own results, and a commit can fail (a
  /// deferred constraint or trigger): then the outcome is that failure, not
  /// the rows. False when the Sync did not come as expected.
  bool read_commit(Outcome& outcome, const Limits& limits, Clock::time_point started);
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
  bool drain_wrapping(const Call& call);
  /// The first result of the statement send_statement queued (for a named
  /// call, the Parse's failure when it failed).
  Result next_statement_result(const Call& call);
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
  Unavailable broken_connection_or_stop();
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

  /// The timeouts this connection's session holds, as set_config left them.
  struct SessionTimeouts {
    milliseconds statement;
    milliseconds lock;
    milliseconds idle_in_transaction;
    bool operator==(const SessionTimeouts&) const = default;
  };

  std::string conninfo_;
  PostgresOptions options_;
  /// The bound of the connection's own queries (see default_connection_bound),
  /// as its connect timeout sets it.
  milliseconds connection_bound_ = default_connection_bound;
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
  /// last read-only call (see the file comment). Set only at the end of a
  /// call whose pipeline left it so and that sent nothing after it; every
  /// other use of the connection (an audit, describe, inspect, a reconnect)
  /// may replace that statement and clears this first.
  bool guard_kept_ = false;
  std::unique_ptr<Session> session_;
  PGconn* conn_ = nullptr;

  std::mutex cancel_mutex_;  ///< guards canceller_ and running_ against cancel()
  std::shared_ptr<PGcancel> canceller_;
  bool running_ = false;
  bool direct_ = false;  ///< PQbackendPID is this session's server process (read at connect)
  bool cancel_pending_ = false;  ///< cancel() came while nothing ran; guarded by cancel_mutex_
  std::shared_ptr<detail::CancelRequests> cancels_ = std::make_shared<detail::CancelRequests>();
  std::atomic<bool> cancel_requested_{false};

  Clock::time_point deadline_{};
  Stop stop_ = Stop::none;
  bool cancel_sent_ = false;
  /// The largest row or error message of the call, in bytes of its fields.
  std::uint64_t largest_message_ = 0;
  /// Rows the statement sent, kept or not (for Failure::rows_before_failure).
  std::uint64_t rows_seen_ = 0;

  /// The notices of the statement being run, as they arrive.
  struct NoticeSink {
    std::vector<Notice> kept;
    std::uint64_t withheld = 0;
    std::uint64_t budget = 0;  ///< bytes still free for kept notices
    bool closed = false;       ///< a notice did not fit: every later one is withheld too
  };
  /// Where the statement's notices go; null outside the span of the stream in
  /// which they arrive (see execute).
  NoticeSink* notices_ = nullptr;

  std::unordered_map<Oid, Untrusted> type_names_;  ///< per connection
  std::vector<Oid> column_types_;                  ///< of the statement being read
};

std::optional<Unavailable> PostgresDriver::connect() {
  if (conn_ != nullptr) {
    // A backend that ended while idle is found dead here, before a statement is sent.
    if (detail::idle_connection_alive(conn_)) return std::nullopt;
    disconnect();
  }
  std::optional<std::string> password;
  if (!options_.password_file.empty()) {
    auto read = read_password_file(options_.password_file);
    if (auto* unavailable = std::get_if<Unavailable>(&read)) return std::move(*unavailable);
    password = std::move(std::get<std::string>(read));
  }
  try {
    auto session = std::make_unique<Session>(conninfo_, std::move(password));
    conn_ = session->handle();
    session_ = std::move(session);
  } catch (const std::exception& e) {
    return Unavailable{Untrusted(std::string_view(e.what()))};
  }
  // Every notice comes to us as fields; libpq's default would print it raw to stderr.
  PQsetNoticeReceiver(conn_, &PostgresDriver::receive_notice, this);
  // The driver reads every field on its own (PQresultErrorField) and never
  // libpq's composed message, which is a further copy of each field per error,
  // twice over (the result's and the connection's): severity and SQLSTATE are
  // all libpq needs to compose. A huge error then costs three copies, not five.
  PQsetErrorVerbosity(conn_, PQERRORS_SQLSTATE);
  // Non-blocking: libpq's blocking mode waits without a bound for the socket
  // to take what is sent, which a server that stopped reading never does.
  // The pipeline's sends are flushed by wait_for_input, under the statement's
  // deadline, and every other query's by detail::round_trip.
  if (PQsetnonblocking(conn_, 1) != 0) return broken_connection();
  connection_bound_ = connection_bound_of(conn_);
  const Clock::time_point deadline = Clock::now() + connection_bound_;
  // Whether PQbackendPID is this session's server process: not through a
  // pooler, which hands out a key of its own. Read once per connection, so
  // that a read-write call (which has no audit) never ends a process by a
  // number that may be anyone's.
  const detail::BackendIdentity own = detail::backend_identity(conn_, deadline);
  if (lost()) return broken_connection();
  direct_ = own.pid != 0 && own.pid == PQbackendPID(conn_);
  // Before this process's first statement on the database: what a rawtool
  // with this configuration that was killed left running is ended; then this
  // connection's own server process is recorded, so that a successor can do
  // the same for it (see postgres_orphans.hpp).
  detail::end_orphans(conn_, target_key_, deadline);
  if (lost()) return broken_connection();
  if (direct_ && own.start_us != 0) recorded_ = std::make_unique<detail::RecordedBackend>(target_key_, own.pid, own.start_us);
  std::lock_guard lock(cancel_mutex_);
  canceller_ = std::shared_ptr<PGcancel>(PQgetCancel(conn_), &PQfreeCancel);
  return std::nullopt;
}

void PostgresDriver::disconnect() noexcept {
  {
    std::lock_guard lock(cancel_mutex_);
    canceller_.reset();
  }
  session_.reset();
  conn_ = nullptr;
  guard_kept_ = false;
  // Closed while idle, its server process ends on its own; one that may run
  // on was kept (RecordedBackend::keep) before this.
  recorded_.reset();
  type_names_.clear();
  audit_.reset();
  room_hazard_.reset();
  session_timeouts_.reset();
  dblink_executable_.reset();
}


void PostgresDriver::on_notice(const PGresult* notice) {
  if (notices_ == nullptr) return;
  NoticeSink& sink = *notices_;
  constexpr int fields[] = {PG_DIAG_SEVERITY_NONLOCALIZED, PG_DIAG_SQLSTATE,     PG_DIAG_MESSAGE_PRIMARY,
                            PG_DIAG_MESSAGE_DETAIL,        PG_DIAG_MESSAGE_HINT, PG_DIAG_CONTEXT};
  // Sized before anything is copied, so that a loop of RAISE NOTICE costs a
  // count per notice past the budget, not memory.
  std::uint64_t size = 0;
  for (const int field : fields) {
    const char* text = PQresultErrorField(notice, field);
    if (text != nullptr) size += std::strlen(text);
  }
  if (sink.closed || size > sink.budget) {
    sink.closed = true;
    ++sink.withheld;
    return;
  }
  sink.budget -= size;
  sink.kept.push_back(Notice{error_field(notice, fields[0]), error_field(notice, fields[1]),
                             error_field(notice, fields[2]), error_field(notice, fields[3]),
                             error_field(notice, fields[4]), error_field(notice, fields[5])});
}

void PostgresDriver::send_cancel() noexcept {
  std::shared_ptr<PGcancel> canceller;
  {
    std::lock_guard lock(cancel_mutex_);
    canceller = canceller_;
  }
  if (canceller != nullptr) cancels_->start(std::move(canceller));
}

bool PostgresDriver::wait_for_input() {
  for (;;) {
    const auto now = Clock::now();
    if (cancel_requested_.load() && !cancel_sent_) {
      // The caller's cancel has been sent (cancel()); a statement that ignores
      // it is given up after the grace, like one past its deadline.
      cancel_sent_ = true;
      deadline_ = std::min(deadline_, now + client_grace);
    }
    if (now >= deadline_) {
      if (cancel_sent_) {
        stop_ = Stop::gave_up;
        return false;
      }
      send_cancel();
      cancel_sent_ = true;
      if (stop_ == Stop::none) stop_ = Stop::deadline_cancel;
      deadline_ = now + client_grace;
      continue;
    }
    // What the socket has not taken yet of the pipeline is pushed on here;
    // the server may need to be read from before it reads more.
    const int unsent = PQflush(conn_);
    if (unsent < 0) {
      stop_ = Stop::broken;
      return false;
    }
    const short events = unsent == 0 ? POLLIN : POLLIN | POLLOUT;
    // Woken at least every quarter second to see a cancel from the caller.
    switch (detail::wait_socket(conn_, events, std::min(deadline_, now + milliseconds(250)))) {
      case detail::Ready::yes:
        return true;
      case detail::Ready::broken:
        stop_ = Stop::broken;
        return false;
      case detail::Ready::timeout:
        break;
    }
  }
}

Result PostgresDriver::next_result() {
  if (stop_ == Stop::gave_up || stop_ == Stop::broken || stop_ == Stop::abandoned) return nullptr;
  while (PQisBusy(conn_) == 1) {
    if (!wait_for_input()) break;
  }
  if (stop_ == Stop::gave_up) return nullptr;
  Result result(PQgetResult(conn_));
  if (PQstatus(conn_) == CONNECTION_BAD) stop_ = Stop::broken;
  return result;
}

void PostgresDriver::discard_copy_out() {
  send_cancel();
  for (;;) {
    char* buffer = nullptr;
    const int received = PQgetCopyData(conn_, &buffer, 1);
    if (buffer != nullptr) PQfreemem(buffer);
    if (received > 0) continue;
    if (received < 0) return;  // -1: the copy ended; -2: the connection failed (next_result sees it)
    if (!wait_for_input()) return;
  }
}

bool PostgresDriver::drain_query() {
  bool ok = true;
  while (Result result = next_result()) {
    const ExecStatusType status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) ok = false;
  }
  return ok && stop_ == Stop::none;
}

bool PostgresDriver::drain_queries(int count) {
  bool ok = true;
  for (int i = 0; i < count; ++i) ok = drain_query() && ok;
  return ok;
}

bool PostgresDriver::expect_sync() {
  Result result = next_result();
  return result != nullptr && PQresultStatus(result.get()) == PGRES_PIPELINE_SYNC;
}

Outcome PostgresDriver::error_outcome(const PGresult* result, const Limits& limits, Clock::time_point started) {
  if (sqlstate_is(result, "57014") && cancel_requested_.load()) {
    return refuse(RefusalReason::cancelled, "The statement was cancelled.");
  }
  if (sqlstate_is(result, "57014") &&
      (stop_ == Stop::deadline_cancel || Clock::now() - started >= limits.statement_timeout)) {
    return refuse(RefusalReason::timeout, "The statement ran past its time limit and was stopped.");
  }
  return failure_of(result, limits);
}

bool PostgresDriver::read_commit(Outcome& outcome, const Limits& limits, Clock::time_point started) {
  // After the error, libpq ends the query with a null result before the Sync.
  for (int ends = 0; ends < 3;) {
    Result result = next_result();
    if (result == nullptr) {
      if (stop_ != Stop::none) return false;
      ++ends;
      continue;
    }
    const ExecStatusType status = PQresultStatus(result.get());
    if (status == PGRES_PIPELINE_SYNC) return true;
    if (status != PGRES_FATAL_ERROR) return false;
    if (std::holds_alternative<Rows>(outcome)) outcome = error_outcome(result.get(), limits, started);
  }
  return false;
}

Failure PostgresDriver::failure_of(const PGresult* result, const Limits& limits) {
  Failure failure;
  failure.engine = Engine::postgresql;
  failure.rows_before_failure = rows_seen_;
  failure.position = position_field(result, PG_DIAG_STATEMENT_POSITION);
  failure.internal_position = position_field(result, PG_DIAG_INTERNAL_POSITION);
  // In the order of Failure::Withheld's digest.
  const std::pair<int, Untrusted Failure::*> fields[] = {
      {PG_DIAG_SEVERITY_NONLOCALIZED, &Failure::severity}, {PG_DIAG_SQLSTATE, &Failure::sqlstate},
      {PG_DIAG_MESSAGE_PRIMARY, &Failure::message},        {PG_DIAG_MESSAGE_DETAIL, &Failure::detail},
      {PG_DIAG_MESSAGE_HINT, &Failure::hint},              {PG_DIAG_CONTEXT, &Failure::context},
      {PG_DIAG_INTERNAL_QUERY, &Failure::internal_query},  {PG_DIAG_SCHEMA_NAME, &Failure::schema},
      {PG_DIAG_TABLE_NAME, &Failure::table},               {PG_DIAG_COLUMN_NAME, &Failure::column},
      {PG_DIAG_DATATYPE_NAME, &Failure::datatype},         {PG_DIAG_CONSTRAINT_NAME, &Failure::constraint},
  };
  std::uint64_t total = 0;
  for (const auto& [code, member] : fields) {
    const char* text = PQresultErrorField(result, code);
    if (text != nullptr) total += std::strlen(text);
  }
  largest_message_ = std::max(largest_message_, total);
  if (total <= limits.max_bytes) {
    for (const auto& [code, member] : fields) failure.*member = error_field(result, code);
    return failure;
  }
  // Too large to keep: hashed where libpq holds it, and only a prefix of each
  // field copied, for the operator's log. The renderer refuses it.
  crypto::Sha256 digest;  // in the framing of Failure::Withheld
  for (const auto& [code, member] : fields) {
    const char* text = PQresultErrorField(result, code);
    const std::string_view field = text == nullptr ? std::string_view() : std::string_view(text);
    digest.update_field(field);
    failure.*member = Untrusted(field.substr(0, Failure::failure_prefix_bytes));
  }
  digest.update_field({});  // the statement, which the driver does not put in a failure
  failure.withheld = Failure::Withheld{total, digest.hex_digest()};
  return failure;
}

Unavailable PostgresDriver::broken_connection() {
  Unavailable unavailable{detail::gave_up(conn_)
                              ? Untrusted(std::string_view("the server did not answer in time: rawtool gave the connection up "
                                                           "(the next call opens a new one)"))
                              : text_of(conn_ != nullptr ? PQerrorMessage(conn_) : nullptr)};
  disconnect();
  return unavailable;
}

/// Reads the caller's statement's results: rows one at a time under the caps,
/// or its failure. Leaves the pipeline at the Sync that ends its segment.
Outcome PostgresDriver::read_statement(const Limits& limits, Clock::time_point started, bool bounded) {
  PQsetSingleRowMode(conn_);
  detail::RowBudget budget(limits);
  std::vector<Oid>& oids = column_types_;
  oids.clear();
  std::optional<Outcome> outcome;
  bool truncation_cancelled = false;

  const auto take_columns = [&](const PGresult* result) {
    const int count = PQnfields(result);
    std::vector<Column> columns(static_cast<std::size_t>(count));
    oids.resize(columns.size());
    for (int c = 0; c < count; ++c) {
      const char* name = PQfname(result, c);
      columns[static_cast<std::size_t>(c)].name = text_of(name);
      oids[static_cast<std::size_t>(c)] = PQftype(result, c);
    }
    budget.set_columns(std::move(columns));
  };

  while (Result result = next_result()) {
    const PGresult* r = result.get();
    switch (PQresultStatus(r)) {
      case PGRES_SINGLE_TUPLE: {
        if (!budget.has_columns() && budget.open()) take_columns(r);
        if (!budget.open()) {
          budget.offer(0);  // drained after the cap: counted, never kept
          report_rows_read(++rows_seen_);
          break;
        }
        // The row is built first so the byte cap counts what would be kept
        // (bytea decoded, not its hex text). It is one row: bounded by what
        // libpq already holds.
        // Sized before anything is copied: a row the caps withhold costs no
        // copy, so memory stays at what libpq itself holds for one row.
        const int count = PQnfields(r);
        std::uint64_t row_bytes = 0;
        std::uint64_t message_bytes = 0;
        for (int c = 0; c < count; ++c) {
          if (PQgetisnull(r, 0, c) == 1) continue;
          const auto length = static_cast<std::size_t>(PQgetlength(r, 0, c));
          message_bytes += length;
          row_bytes += PQftype(r, c) == bytea_oid ? bytea_length(PQgetvalue(r, 0, c), length) : length;
        }
        largest_message_ = std::max(largest_message_, message_bytes);
        report_rows_read(++rows_seen_);
        if (budget.offer(row_bytes)) {
          std::vector<Cell> row(static_cast<std::size_t>(count));
          for (int c = 0; c < count; ++c) {
            if (PQgetisnull(r, 0, c) == 1) continue;
            const char* value = PQgetvalue(r, 0, c);
            const auto length = static_cast<std::size_t>(PQgetlength(r, 0, c));
            Cell& cell = row[static_cast<std::size_t>(c)];
            if (PQftype(r, c) == bytea_oid) {
              std::size_t decoded_length = 0;
              unsigned char* decoded = PQunescapeBytea(reinterpret_cast<const unsigned char*>(value), &decoded_length);
              if (decoded != nullptr) {
                cell = Untrusted(reinterpret_cast<const char*>(decoded), decoded_length);
                PQfreemem(decoded);
              }
            }
            if (!cell) cell = Untrusted(value, length);
          }
          budget.keep(std::move(row));
        } else if (!bounded || budget.truncation() == Truncation::byte_cap) {
          // The rest is not wanted: stop the server producing it, then drain
          // what is already on its way (counted as withheld, never kept). A
          // bounded FETCH past the row cap has nothing more on its way.
          send_cancel();
          truncation_cancelled = true;
        }
        break;
      }
      case PGRES_TUPLES_OK:
        if (!budget.has_columns()) take_columns(r);
        // A FETCH that filled its max_rows + 1 leaves the cursor open: more may follow.
        if (!bounded || rows_seen_ <= limits.max_rows) budget.reached_end();
        break;
      case PGRES_COMMAND_OK: {
        const char* affected = PQcmdTuples(result.get());
        std::uint64_t count = 0;
        const char* end = affected + std::strlen(affected);
        if (*affected != '\0' && std::from_chars(affected, end, count).ec == std::errc{}) budget.set_rows_affected(count);
        budget.reached_end();
        break;
      }
      case PGRES_EMPTY_QUERY:
        outcome = refuse(RefusalReason::empty_statement, "The statement is empty.");
        break;
      case PGRES_COPY_OUT:
      case PGRES_COPY_IN:
      case PGRES_COPY_BOTH:
        // COPY to or from the client has no place in a reply. A copy out is
        // cancelled and its data dropped. A copy in cannot be ended inside a
        // pipeline (libpq's CopyFail adds a Sync of its own), so the
        // connection is given up: closing it rolls the statement back.
        if (PQresultStatus(r) == PGRES_COPY_OUT) discard_copy_out();
        else stop_ = Stop::abandoned;
        outcome = refuse(RefusalReason::not_permitted, "COPY to or from the client is not supported.");
        break;
      case PGRES_FATAL_ERROR:
      case PGRES_NONFATAL_ERROR:
        if (truncation_cancelled && sqlstate_is(r, "57014")) {
          break;  // our own cancel after the cap: the rest stays unread
        }
        if (stop_ == Stop::broken || outcome.has_value()) break;  // the COPY already refused; this is its end
        outcome = error_outcome(r, limits, started);
        break;
      case PGRES_PIPELINE_ABORTED:
        // The preamble failed, so the statement did not run.
        outcome = refuse(RefusalReason::internal, "The read-only transaction could not be started.");
        break;
      default:
        outcome = refuse(RefusalReason::internal, "The server sent a reply this tool does not understand.");
        break;
    }
  }
  if (outcome) return std::move(*outcome);
  return std::move(budget).take();
}

bool PostgresDriver::name_types(std::vector<Column>& columns, const std::vector<Oid>& oids, Clock::time_point deadline) {
  std::vector<Oid> unknown;
  for (Oid oid : oids) {
    if (!type_names_.contains(oid) && std::find(unknown.begin(), unknown.end(), oid) == unknown.end()) {
      unknown.push_back(oid);
    }
  }
  const bool ask = !unknown.empty() && PQstatus(conn_) == CONNECTION_OK;
  if (ask) {
    std::string list = "{";
    for (Oid oid : unknown) list += fmt::format("{}{}", list.size() > 1 ? "," : "", oid);
    list += "}";
    const char* values[] = {list.c_str()};
    const Result result = round_trip(
        conn_,
        Command{.text = "SELECT oid, format_type(oid, NULL) FROM pg_catalog.pg_type WHERE oid = ANY($1::oid[])", .values = values},
        deadline);
    if (PQresultStatus(result.get()) == PGRES_TUPLES_OK) {
      for (int row = 0; row < PQntuples(result.get()); ++row) {
        Oid oid = 0;
        const char* text = PQgetvalue(result.get(), row, 0);
        std::from_chars(text, text + std::strlen(text), oid);
        type_names_[oid] = Untrusted(PQgetvalue(result.get(), row, 1),
                                     static_cast<std::size_t>(PQgetlength(result.get(), row, 1)));
      }
    }
  }
  for (std::size_t c = 0; c < columns.size() && c < oids.size(); ++c) {
    const auto found = type_names_.find(oids[c]);
    if (found != type_names_.end()) columns[c].type_name = found->second;
  }
  return ask;
}

/// Parameters as libpq takes them: text with a type, or NULL. Values are
/// never spliced into the statement.
struct BoundParameters {
  std::vector<std::string> texts;
  std::vector<const char*> values;
  std::vector<Oid> types;
};

std::variant<BoundParameters, Refusal> bind_parameters(std::span<const Parameter> params) {
  BoundParameters bound;
  bound.texts.resize(params.size());
  bound.values.resize(params.size());
  bound.types.resize(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (const auto* text = std::get_if<std::string>(&params[i]); text != nullptr && text->find('\0') != std::string::npos) {
      return refuse(RefusalReason::not_permitted, "A PostgreSQL text parameter cannot contain a NUL byte.");
    }
    std::visit(
        [&](const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::monostate>) {
            bound.values[i] = nullptr;
            return;
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            bound.texts[i] = fmt::format("{}", value);
            bound.types[i] = int8_oid;
          } else if constexpr (std::is_same_v<T, double>) {
            bound.texts[i] = fmt::format("{}", value);
            bound.types[i] = float8_oid;
          } else if constexpr (std::is_same_v<T, bool>) {
            bound.texts[i] = value ? "true" : "false";
            bound.types[i] = bool_oid;
          } else {
            bound.texts[i] = value;
          }
          bound.values[i] = bound.texts[i].c_str();
        },
        params[i]);
  }
  return bound;
}

std::variant<StatementShape, Failure, Refusal, Unavailable> PostgresDriver::describe(std::string_view sql,
                                                                                     std::span<const Parameter> params,
                                                                                     AccessMode /*mode*/) {
  // Read-only or not, nothing here runs the statement, so the mode changes
  // nothing: the transaction is READ ONLY and rolled back either way.
  guard_kept_ = false;
  if (sql.find('\0') != std::string_view::npos) {
    return refuse(RefusalReason::not_permitted, "A PostgreSQL statement cannot contain a NUL byte.");
  }
  auto bound = bind_parameters(params);
  if (auto* refusal = std::get_if<Refusal>(&bound)) return std::move(*refusal);
  const std::vector<Oid>& types = std::get<BoundParameters>(bound).types;
  if (auto unavailable = connect()) return std::move(*unavailable);
  rows_seen_ = 0;
  const std::string text(sql);
  // Every statement here is the unnamed one. A pooler that tracks named
  // statements (PgBouncer from 1.21 with max_prepared_statements, on by
  // default from 1.22) renames them on the server, where SQL cannot find them
  // by their name, and keeps them there after the session deallocates them.
  constexpr const char* unnamed = "";
  const auto command_ok = [](const Result& result) { return PQresultStatus(result.get()) == PGRES_COMMAND_OK; };
  // Planning can evaluate IMMUTABLE functions; the timeout bounds them, and
  // the client waits that long and a grace for each answer.
  const Clock::time_point deadline = Clock::now() + describe_timeout + client_grace;
  const auto exec = [&](const char* query) { return round_trip(conn_, query, deadline); };
  const std::string set_timeout = fmt::format("SET LOCAL statement_timeout = {}", describe_timeout.count());
  if (!command_ok(exec("BEGIN READ ONLY")) || !command_ok(exec(set_timeout.c_str()))) {
    return broken_connection();
  }
  // Prepared statements outlive a rollback: both go with it, in one message,
  // so that a transaction pooler, which may hand the session's next message
  // to another server connection once the rollback leaves it idle, cannot
  // leave the statements behind on this one.
  const auto end = [&]() -> bool {
    return command_ok(exec("ROLLBACK; DEALLOCATE ALL")) && PQtransactionStatus(conn_) == PQTRANS_IDLE;
  };
  const auto failed = [&](const Result& result) -> std::variant<StatementShape, Failure, Refusal, Unavailable> {
    if (lost() || result == nullptr || PQresultStatus(result.get()) != PGRES_FATAL_ERROR) return broken_connection();
    Failure failure = failure_of(result.get(), Limits{});
    if (!end()) return broken_connection();
    return failure;
  };

  // With the types execute sends: what fails here fails there.
  Result prepared = round_trip(conn_, Command{.text = text.c_str(), .prepare = unnamed, .types = types}, deadline);
  if (!command_ok(prepared)) return failed(prepared);
  Result described = round_trip(conn_, Command{.describe = unnamed}, deadline);
  if (PQresultStatus(described.get()) != PGRES_COMMAND_OK) return failed(described);
  StatementShape shape;
  // The types given, and more when the statement uses a higher $n.
  const int typed_count = PQnparams(described.get());
  shape.parameter_count = static_cast<std::size_t>(typed_count);
  std::vector<Oid> typed(static_cast<std::size_t>(typed_count));
  for (int i = 0; i < typed_count; ++i) typed[static_cast<std::size_t>(i)] = PQparamtype(described.get(), i);

  // What the server makes of the placeholders on its own: the highest number
  // used, and the type it infers for each (named below).
  std::vector<Oid> inferred;
  Result savepoint = exec("SAVEPOINT rawtool_untyped");
  if (!command_ok(savepoint)) return failed(savepoint);
  Result untyped = round_trip(conn_, Command{.text = text.c_str(), .prepare = unnamed}, deadline);
  if (command_ok(untyped)) {
    Result untyped_described = round_trip(conn_, Command{.describe = unnamed}, deadline);
    if (PQresultStatus(untyped_described.get()) == PGRES_COMMAND_OK) {
      shape.parameter_count = static_cast<std::size_t>(PQnparams(untyped_described.get()));
      for (int i = 0; i < PQnparams(untyped_described.get()); ++i) inferred.push_back(PQparamtype(untyped_described.get(), i));
    }
  }
  // A statement whose placeholder types the server cannot tell on its own
  // fails here ($1 alone in a select list); the typed prepare above counts.
  if (!command_ok(exec("ROLLBACK TO SAVEPOINT rawtool_untyped"))) return broken_connection();

  // The plan, with the types above and every parameter NULL, shows whether
  // it modifies a table. The statement parsed alone above as one statement,
  // so after this prefix it is EXPLAIN's statement, nothing else; one that
  // EXPLAIN does not take (a utility command) is a syntax error there.
  constexpr std::string_view explain_prefix = "EXPLAIN (FORMAT JSON) ";
  const std::string explain = std::string(explain_prefix) + text;
  const std::vector<const char*> nulls(typed.size(), nullptr);
  Result plan_savepoint = exec("SAVEPOINT rawtool_plan");
  if (!command_ok(plan_savepoint)) return failed(plan_savepoint);
  Result plan = round_trip(conn_, Command{.text = explain.c_str(), .values = nulls, .one_statement = true, .types = typed},
                           deadline);
  const bool utility = PQresultStatus(plan.get()) == PGRES_FATAL_ERROR &&
                       std::string_view(PQresultErrorField(plan.get(), PG_DIAG_SQLSTATE) != nullptr
                                            ? PQresultErrorField(plan.get(), PG_DIAG_SQLSTATE)
                                            : "") == "42601";
  if (utility) {
    if (!command_ok(exec("ROLLBACK TO SAVEPOINT rawtool_plan"))) return broken_connection();
  } else if (PQresultStatus(plan.get()) != PGRES_TUPLES_OK || PQntuples(plan.get()) != 1) {
    auto failure = failed(plan);
    // A position is the statement's, not the prefixed text's.
    if (auto* f = std::get_if<Failure>(&failure); f != nullptr && f->position && *f->position > static_cast<std::int64_t>(explain_prefix.size())) {
      *f->position -= static_cast<std::int64_t>(explain_prefix.size());
    }
    return failure;
  }
  // The server reads its own JSON: no plan at all is a utility command.
  const char* plan_text[] = {utility ? "[{}]" : PQgetvalue(plan.get(), 0, 0)};
  Result effect = round_trip(conn_,
                             Command{.text = "SELECT CASE WHEN NOT jsonb_path_exists($1::jsonb, '$[0].Plan') THEN 'command' "
                                             "WHEN jsonb_path_exists($1::jsonb, 'strict $.**.\"Node Type\" ? (@ == "
                                             "\"ModifyTable\")') THEN 'writes' ELSE 'reads' END",
                                     .values = plan_text},
                             deadline);
  if (PQresultStatus(effect.get()) != PGRES_TUPLES_OK || PQntuples(effect.get()) != 1) return failed(effect);
  const std::string_view effect_name = PQgetvalue(effect.get(), 0, 0);
  shape.effect = effect_name == "writes"    ? StatementShape::Effect::writes
                 : effect_name == "command" ? StatementShape::Effect::command
                                            : StatementShape::Effect::reads;

  std::vector<Column> named(inferred.size());
  name_types(named, inferred, deadline);
  for (const Column& column : named) shape.inferred_types.push_back(column.type_name);
  if (!end()) return broken_connection();
  return shape;
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


/// What one call sends and what it has learnt so far, passed between the
/// steps of execute.
struct PostgresDriver::Call {
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
  bool clean = true;    ///< every wrapping step answered as expected
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
  /// it stays there for the next call (see the file comment): a guarded
  /// read-only call on a direct connection.
  bool named = false;
  /// On entry: the guard is already the unnamed statement, and is only bound
  /// and run. On return from run_read_only: the pipeline left it there.
  bool guard_kept = false;
};

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
  notices_ = nullptr;
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
    refusal.explanation +=
        " rawtool could not check whether it prepared the transaction for two-phase commit: an operator should look "
        "for one in pg_prepared_xacts.";
    disconnect();
    return refusal;
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
    refusal.explanation +=
        " rawtool could not check whether it prepared the transaction for two-phase commit: an operator should look "
        "for one in pg_prepared_xacts.";
    disconnect();
    return refusal;
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


namespace {

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

bool PostgresDriver::drain_wrapping(const Call& call) {
  const bool parsed = !call.named || drain_query();
  return drain_query() && parsed;
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

bool PostgresDriver::drain_read_only_cleanup(const Call& call, bool again) {
  if (!call.named) return drain_queries(3);
  // Every part is read, whatever failed before it.
  const bool first = again ? drain_wrapping(call) : drain_query();
  const bool second = again ? drain_query() : drain_wrapping(call);
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

Result PostgresDriver::next_statement_result(const Call& call) {
  if (call.named) {
    // The Parse's own result comes first. Its failure (a syntax error, an
    // unknown table) is the statement's: returned, and the skipped Bind's
    // results follow, for the caller to drain as the statement's.
    Result failed;
    while (Result parsed = next_result()) {
      if (PQresultStatus(parsed.get()) == PGRES_FATAL_ERROR && failed == nullptr) failed = std::move(parsed);
    }
    if (failed != nullptr) return failed;
  }
  return next_result();
}

bool PostgresDriver::read_transaction_start(Call& call) {
  bool ok = drain_wrapping(call);  // BEGIN READ ONLY
  if (!call.pooled && !call.guarded) return ok;
  bool answered = false;
  while (Result result = next_result()) {
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
  return ok && (answered || call.guard_tripped) && stop_ == Stop::none;
}

bool PostgresDriver::read_timeouts(Call& call) {
  if (!call.set_timeouts) return true;
  const bool applied = drain_query() && expect_sync();
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
    if (status == PGRES_FATAL_ERROR && declare_refused_statement(declared.get()) && stop_ == Stop::none &&
        !cancel_requested_.load()) {
      as_cursor = false;
    } else if (status == PGRES_FATAL_ERROR) {
      outcome = error_outcome(declared.get(), call.limits, call.started);
      if (auto* failure = std::get_if<Failure>(&*outcome); failure != nullptr && failure->position) {
        // The server counted the cursor's prefix; the caller's statement starts after it.
        *failure->position = std::max<std::int64_t>(1, *failure->position - static_cast<std::int64_t>(cursor_prefix.size()));
      }
    } else if (status != PGRES_COMMAND_OK) {
      call.clean = false;
    }
    while (next_result() != nullptr) {
    }
  }
  if (as_cursor && !outcome) {
    if (call.named) drain_query();  // the FETCH's Parse
    outcome = read_statement(call.limits, call.started, true);  // the FETCH
  } else {
    drain_wrapping(call);  // the FETCH, skipped after the failed DECLARE
  }
  notices_ = &call.wrapping;
  if (!as_cursor) {
    // Nothing of the statement ran: the DECLARE failed before planning. The
    // cleanup was skipped with the rest of the segment; the ROLLBACK that
    // opens the next one ends the failed transaction. That segment is sent
    // unnamed, guard included (parsed again): the statement that is not a
    // query stays the unnamed one.
    drain_read_only_cleanup(call);
    if (!expect_sync()) return broken_connection_or_stop();
    call.named = false;
    call.guard_kept = false;
    call.notices = NoticeSink{};
    call.notices.budget = call.limits.max_notice_bytes;
    call.wrapping = NoticeSink{};
    notices_ = &call.notices;
    sent = send_text("ROLLBACK") && send_transaction_start(call) && send_statement(call, call.statement) &&
           send_read_only_cleanup(call) && PQpipelineSync(conn_) == 1;
    if (!sent) return broken_connection();
    call.clean = drain_query() && call.clean;  // ROLLBACK
    call.clean = read_transaction_start(call) && call.clean;
    if (call.guard_tripped) {
      drain_query();  // the statement, aborted with the segment (unnamed here)
      outcome = guard_refusal();
    } else {
      outcome = read_statement(call.limits, call.started, false);
    }
    notices_ = &call.wrapping;
  }
  // A statement that failed (or was cancelled) aborted the rest of its
  // segment, cleanup included, and left the transaction open in error: the
  // cleanup is sent again on its own. Only failures pay this round trip.
  // Its named statements are parsed again (their Parse was skipped with the
  // segment); if one fails, as when the statement prepared that name itself,
  // the session is reset by finish().
  bool cleaned = drain_read_only_cleanup(call);
  call.clean = expect_sync() && call.clean;
  if (!cleaned && stop_ == Stop::none) {
    if (send_read_only_cleanup(call, true) && PQpipelineSync(conn_) == 1) {
      cleaned = drain_read_only_cleanup(call, true) && expect_sync();
    } else {
      stop_ = Stop::broken;
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
  Outcome outcome = read_statement(call.limits, call.started, false);
  call.clean = read_commit(outcome, call.limits, call.started) && call.clean;  // the commit can raise notices too
  notices_ = &call.wrapping;
  // DISCARD ALL reset the timeouts to the connection's defaults; the
  // set_config after it put this call's back, so a next call with the same
  // limits needs no preamble.
  bool reset = drain_queries(2);
  bool no_temporary_schema = false;  // unless the server says so
  while (Result result = next_result()) {
    const bool answered = PQresultStatus(result.get()) == PGRES_TUPLES_OK && PQntuples(result.get()) == 1;
    no_temporary_schema = answered && std::string_view(PQgetvalue(result.get(), 0, 0)) == "t";
    if (answered && PQnfields(result.get()) == 2) dblink_executable_ = std::string_view(PQgetvalue(result.get(), 0, 1)) == "t";
    reset = reset && answered;
  }
  reset = expect_sync() && reset;
  session_timeouts_ = reset ? std::optional(call.wanted) : std::nullopt;
  call.clean = reset && call.clean;
  call.give_up_connection = !no_temporary_schema || dblink_executable_.value_or(true);
  return outcome;
}

Unavailable PostgresDriver::broken_connection_or_stop() {
  if (stop_ == Stop::none) stop_ = Stop::broken;
  if (recorded_ != nullptr) recorded_->keep();  // broken mid-call: its statement may run on
  return broken_connection();
}

Outcome PostgresDriver::execute(std::string_view sql, std::span<const Parameter> params, const Limits& limits,
                                AccessMode mode) {
  if (auto refusal = statement_size_refusal(sql, limits)) return std::move(*refusal);
  // libpq takes the statement as a C string: a NUL would silently cut it short.
  if (sql.find('\0') != std::string_view::npos) {
    return refuse(RefusalReason::not_permitted, "A PostgreSQL statement cannot contain a NUL byte.");
  }
  auto bound_or_refusal = bind_parameters(params);
  if (auto* refusal = std::get_if<Refusal>(&bound_or_refusal)) return std::move(*refusal);

  // The work before the statement (the audit) waits no longer than the
  // statement itself may.
  const Clock::time_point call_deadline = Clock::now() + limits.statement_timeout + client_grace;
  if (auto unavailable = connect()) return std::move(*unavailable);
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

  Call call{.limits = limits,
            .bound = std::get<BoundParameters>(bound_or_refusal),
            .statement = std::string(sql),
            .started = Clock::now(),
            .wanted = {limits.statement_timeout, limits.lock_timeout, limits.statement_timeout + client_grace * 2},
            .timeouts = {},
            .notices = {},
            .wrapping = {},
            .clean = true,
            .give_up_connection = false,
            .pooled = false,
            .server_pid = 0,
            .transaction_started = {},
            .guarded = false,
            .guard = {},
            .guard_tripped = false,
            .named = false,
            .guard_kept = false};
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
  call.notices.budget = limits.max_notice_bytes;

  // Whatever the server sent while the session was idle is parsed now, before
  // the statement's notices are collected: it was not raised by this statement.
  PQisBusy(conn_);
  bool cancelled_early = false;
  {
    std::lock_guard lock(cancel_mutex_);
    running_ = true;
    cancel_requested_.store(false);
    cancelled_early = std::exchange(cancel_pending_, false);
  }
  struct Running {
    PostgresDriver& driver;
    ~Running() {
      std::lock_guard lock(driver.cancel_mutex_);
      driver.running_ = false;
      driver.notices_ = nullptr;
    }
  } running{*this};
  if (cancelled_early) return refuse(RefusalReason::cancelled, "The call was cancelled before its statement was sent.");
  stop_ = Stop::none;
  cancel_sent_ = false;
  largest_message_ = 0;
  rows_seen_ = 0;
  report_rows_read(0);
  deadline_ = call.started + limits.statement_timeout + client_grace;

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
  notices_ = &call.notices;
  Outcome outcome = read_only ? run_read_only(call) : run_read_write(call);
  notices_ = nullptr;
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
    running_ = false;  // from here on cancel() starts nothing
  }
  if (stop_ == Stop::broken) {
    if (recorded_ != nullptr) recorded_->keep();  // broken mid-call: its statement may run on
    return broken_connection();
  }
  if (stop_ == Stop::abandoned) {
    disconnect();
    return outcome;
  }
  if (stop_ == Stop::gave_up) {
    // The server did not stop the statement when asked (a statement can catch
    // the cancel and go on): it is ended from another connection, and this
    // connection is never used again.
    const bool ended = end_backend(statement_backend(call, read_only));
    if (!ended && recorded_ != nullptr) recorded_->keep();  // for the next rawtool with this configuration to end
    const bool cancelled = cancel_requested_.load();
    disconnect();
    return refuse(cancelled ? RefusalReason::cancelled : RefusalReason::timeout,
                  Trusted::format("The statement {} and did not stop when the server was asked to cancel it; {}",
                                  cancelled ? Literal("was cancelled") : Literal("ran past its time limit"),
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
  if (largest_message_ > keep_connection_below_bytes) disconnect();  // gives libpq's input buffer back
  if (auto* rows = std::get_if<Rows>(&outcome); rows != nullptr && conn_ != nullptr) {
    queried_after = name_types(rows->columns, column_types_, Clock::now() + connection_bound_) || queried_after;
  }
  if (call.give_up_connection) disconnect();  // after the types are named, on this connection
  // Nothing was sent after the pipeline (a reset, the prepared-transaction
  // lookup, type names), so the guard it left is still the unnamed statement.
  guard_kept_ = call.guard_kept && !queried_after && conn_ != nullptr;
  if (cancel_requested_.load() && !std::holds_alternative<Failure>(outcome) && !std::holds_alternative<Refusal>(outcome)) {
    return refuse(RefusalReason::cancelled, "The statement was cancelled.");
  }
  return outcome;
}

}  // namespace

std::unique_ptr<Driver> make_postgres_driver(std::string conninfo, PostgresOptions options) {
  return std::make_unique<PostgresDriver>(std::move(conninfo), options);
}

}  // namespace rawtool
