// The PostgreSQL driver.
//
// libpqxx manages the connection (a connection policy of ours opens it with
// PQconnectdbParams so a connect timeout and a fallback application name can
// be added to any URL or key=value string, and hands us the PGconn*). The
// execute path is libpq, directly: libpqxx 6 has no pipeline mode, no
// single-row mode, no notice receiver with structured fields and no
// PQresultErrorField per field, and each of those is what this driver exists
// to get right.
//
// One call is one pipeline, sent at once and read in order, so the safety
// wrapping costs no extra round trips:
//
//   read-only:  [set_config(timeouts, session) · Sync]   only when they changed
//               BEGIN READ ONLY · <statement> ·
//               ROLLBACK · pg_advisory_unlock_all() · DEALLOCATE ALL · Sync
//   read-write: [set_config(timeouts, session) · Sync]   only when they changed
//               <statement> · Sync                        (commits on its own)
//               DISCARD ALL · set_config(timeouts, session) · Sync
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
// In read-only mode everything the statement can do to the session is undone
// by ROLLBACK (settings, SET ROLE, cursors, LISTEN: all transactional; nothing
// can be created, and COMMIT inside DO or CALL is refused in a transaction
// block) except what is not transactional: session advisory locks and
// prepared statements, released and deallocated after it. That is why the
// timeouts can be session settings, set once per connection: no read-only
// statement can change them past its call. A read-write statement can, so
// read-write calls end with DISCARD ALL and set this call's timeouts again
// right after it, in the same segment.
//
// If anything is left over all the same (an open transaction, a failed
// cleanup), it is cleaned up synchronously with ROLLBACK and DISCARD ALL, and
// a connection that cannot be cleaned is dropped.
#include "detail/row_budget.hpp"

#include <rawtool/driver.hpp>

#include <fmt/format.h>
#include <libpq-fe.h>
#include <pqxx/connection_base>
#include <pqxx/connectionpolicy>
#include <pqxx/except>

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <system_error>
#include <thread>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>
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

Refusal refuse(RefusalReason reason, std::string explanation) { return Refusal{reason, std::move(explanation)}; }

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

struct ResultDeleter {
  void operator()(PGresult* result) const noexcept { PQclear(result); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

/// Cancel requests in flight. PQcancel blocks until the server has taken the
/// request, and a hung server never takes it, so each request runs on a
/// thread of its own that holds what it uses (this state and the PGcancel)
/// and may outlive the driver. Before a statement's call returns it waits,
/// briefly, for its requests to land, so that none can reach a later statement.
class CancelRequests : public std::enable_shared_from_this<CancelRequests> {
public:
  void start(std::shared_ptr<PGcancel> canceller) noexcept {
    {
      std::lock_guard lock(mutex_);
      ++in_flight_;
    }
    try {
      std::thread([self = shared_from_this(), canceller = std::move(canceller)] {
        char complaint[256];
        PQcancel(canceller.get(), complaint, sizeof complaint);
        std::lock_guard lock(self->mutex_);
        --self->in_flight_;
        self->landed_.notify_all();
      }).detach();
    } catch (const std::system_error&) {
      std::lock_guard lock(mutex_);
      --in_flight_;  // no thread to be had: the deadline still ends the call
    }
  }

  /// True when every request has landed within `patience`.
  bool settle(milliseconds patience) {
    std::unique_lock lock(mutex_);
    return landed_.wait_for(lock, patience, [this] { return in_flight_ == 0; });
  }

private:
  std::mutex mutex_;
  std::condition_variable landed_;
  int in_flight_ = 0;
};

/// Opens connections for libpqxx with PQconnectdbParams: the caller's URL or
/// key=value string is expanded as dbname, with a connect timeout and an
/// application name the caller's own values override.
class ConnectPolicy final : public pqxx::connectionpolicy {
public:
  explicit ConnectPolicy(const std::string& conninfo) : pqxx::connectionpolicy(conninfo) {}

  handle do_startconnect(handle orig) override {
    if (orig != nullptr) return orig;
    const char* const keywords[] = {"connect_timeout", "fallback_application_name", "dbname", nullptr};
    const char* const values[] = {"10", "rawtool", options().c_str(), nullptr};
    handle connection = PQconnectdbParams(keywords, values, 1);
    if (connection == nullptr) throw pqxx::broken_connection{"out of memory while connecting"};
    if (PQstatus(connection) != CONNECTION_OK) {
      std::string complaint = PQerrorMessage(connection);
      PQfinish(connection);
      throw pqxx::broken_connection{complaint};
    }
    connected_ = connection;
    return connection;
  }

  handle do_disconnect(handle orig) noexcept override {
    connected_ = nullptr;
    return pqxx::connectionpolicy::do_disconnect(orig);
  }

  /// The open connection, or null.
  [[nodiscard]] handle connected() const noexcept { return connected_; }

private:
  handle connected_ = nullptr;
};

/// A libpqxx connection that exposes its PGconn*. Constructing it connects
/// (throwing pqxx::broken_connection with the server's complaint).
class Session final : public pqxx::connection_base {
public:
  explicit Session(const std::string& conninfo) : pqxx::connection_base(policy_), policy_(conninfo) {
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

class PostgresDriver final : public Driver {
public:
  PostgresDriver(std::string conninfo, PostgresOptions options)
      : conninfo_(std::move(conninfo)), options_(options) {}
  ~PostgresDriver() override { disconnect(); }

  [[nodiscard]] Engine engine() const noexcept override { return Engine::postgresql; }

  Outcome execute(std::string_view sql, std::span<const Parameter> params, const Limits& limits,
                  AccessMode mode) override;

  void cancel() noexcept override {
    std::shared_ptr<PGcancel> canceller;
    {
      std::lock_guard lock(cancel_mutex_);
      if (!running_ || canceller_ == nullptr) return;
      cancel_requested_.store(true);
      canceller = canceller_;
    }
    cancels_->start(std::move(canceller));
  }

  /// A SELECT 1 through execute, so the same deadline holds. Read-write mode
  /// because it writes nothing and a privileged role's read-only refusal is
  /// not a fault of the connection.
  Health health() override {
    Limits limits;
    limits.statement_timeout = milliseconds(1000);
    const Outcome outcome = execute("SELECT 1", {}, limits, AccessMode::read_write);
    return std::holds_alternative<Rows>(outcome) ? Health::ok : Health::unavailable;
  }

private:
  enum class Stop { none, deadline_cancel, gave_up, broken, abandoned };

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
  Outcome read_statement(const Limits& limits, Clock::time_point started);
  bool drain_query();
  /// Drains `count` queries' results, every one even after one failed.
  bool drain_queries(int count);
  bool expect_sync();
  /// Queues ROLLBACK, pg_advisory_unlock_all() and DEALLOCATE ALL: what undoes
  /// everything a read-only statement can leave behind (see the file comment).
  bool send_read_only_cleanup();
  static constexpr int read_only_cleanup_queries = 3;
  Failure failure_of(const PGresult* result);
  /// The outcome of the statement's error: a cancel or a timeout when it is
  /// one, the database's failure otherwise.
  Outcome error_outcome(const PGresult* result, const Limits& limits, Clock::time_point started);
  /// Reads a read-write statement's results up to its Sync. The statement
  /// commits at that Sync, after its own results, and a commit can fail (a
  /// deferred constraint or trigger): then the outcome is that failure, not
  /// the rows. False when the Sync did not come as expected.
  bool read_commit(Outcome& outcome, const Limits& limits, Clock::time_point started);
  void name_types(std::vector<Column>& columns, const std::vector<Oid>& oids);
  Unavailable broken_connection();
  bool role_is_privileged();

  /// The timeouts this connection's session holds, as set_config left them.
  struct SessionTimeouts {
    milliseconds statement;
    milliseconds lock;
    milliseconds idle_in_transaction;
    bool operator==(const SessionTimeouts&) const = default;
  };

  std::string conninfo_;
  PostgresOptions options_;
  std::optional<SessionTimeouts> session_timeouts_;  ///< as the last clean call left them; unknown after a reset
  std::optional<bool> privileged_;  ///< whether the connection's role can write files or run programs
  std::unique_ptr<Session> session_;
  PGconn* conn_ = nullptr;

  std::mutex cancel_mutex_;  ///< guards canceller_ and running_ against cancel()
  std::shared_ptr<PGcancel> canceller_;
  bool running_ = false;
  std::shared_ptr<CancelRequests> cancels_ = std::make_shared<CancelRequests>();
  std::atomic<bool> cancel_requested_{false};

  Clock::time_point deadline_{};
  Stop stop_ = Stop::none;
  bool cancel_sent_ = false;

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
    // A backend that ended while idle has left its goodbye (or an EOF) in the
    // socket: reading it now finds the connection dead before a statement is sent.
    // Its goodbye and the EOF can take two reads, so read while there is input.
    bool alive = PQstatus(conn_) == CONNECTION_OK;
    for (int reads = 0; alive && reads < 4; ++reads) {
      pollfd socket{PQsocket(conn_), POLLIN, 0};
      if (poll(&socket, 1, 0) == 0) break;
      alive = PQconsumeInput(conn_) == 1 && PQstatus(conn_) == CONNECTION_OK;
    }
    if (alive) return std::nullopt;
    disconnect();
  }
  try {
    auto session = std::make_unique<Session>(conninfo_);
    conn_ = session->handle();
    session_ = std::move(session);
  } catch (const std::exception& e) {
    return Unavailable{Untrusted(std::string_view(e.what()))};
  }
  // Every notice comes to us as fields; libpq's default would print it raw to stderr.
  PQsetNoticeReceiver(conn_, &PostgresDriver::receive_notice, this);
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
  type_names_.clear();
  privileged_.reset();
  session_timeouts_.reset();
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
    pollfd socket{PQsocket(conn_), POLLIN, 0};
    const auto wait = std::chrono::duration_cast<milliseconds>(deadline_ - now).count() + 1;
    const int ready = poll(&socket, 1, static_cast<int>(std::min<long long>(wait, 60'000)));
    if (ready < 0 && errno != EINTR) {
      stop_ = Stop::broken;
      return false;
    }
    if (ready > 0) {
      if (PQconsumeInput(conn_) == 0) stop_ = Stop::broken;
      return stop_ != Stop::broken;
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

bool PostgresDriver::send_read_only_cleanup() {
  bool sent = true;
  for (const char* text : {"ROLLBACK", "SELECT pg_catalog.pg_advisory_unlock_all()", "DEALLOCATE ALL"}) {
    sent = sent && PQsendQueryParams(conn_, text, 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
  }
  return sent;
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
  return failure_of(result);
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

Failure PostgresDriver::failure_of(const PGresult* result) {
  Failure failure;
  failure.engine = Engine::postgresql;
  failure.severity = error_field(result, PG_DIAG_SEVERITY_NONLOCALIZED);
  failure.sqlstate = error_field(result, PG_DIAG_SQLSTATE);
  failure.message = error_field(result, PG_DIAG_MESSAGE_PRIMARY);
  failure.detail = error_field(result, PG_DIAG_MESSAGE_DETAIL);
  failure.hint = error_field(result, PG_DIAG_MESSAGE_HINT);
  failure.context = error_field(result, PG_DIAG_CONTEXT);
  failure.position = position_field(result, PG_DIAG_STATEMENT_POSITION);
  failure.internal_query = error_field(result, PG_DIAG_INTERNAL_QUERY);
  failure.internal_position = position_field(result, PG_DIAG_INTERNAL_POSITION);
  failure.schema = error_field(result, PG_DIAG_SCHEMA_NAME);
  failure.table = error_field(result, PG_DIAG_TABLE_NAME);
  failure.column = error_field(result, PG_DIAG_COLUMN_NAME);
  failure.datatype = error_field(result, PG_DIAG_DATATYPE_NAME);
  failure.constraint = error_field(result, PG_DIAG_CONSTRAINT_NAME);
  return failure;
}

Unavailable PostgresDriver::broken_connection() {
  Unavailable unavailable{text_of(conn_ != nullptr ? PQerrorMessage(conn_) : nullptr)};
  disconnect();
  return unavailable;
}

/// Asked once per connection. Membership counts, not only inherited
/// privileges: a member can SET ROLE inside a DO block. An answer that cannot
/// be had counts as privileged.
bool PostgresDriver::role_is_privileged() {
  if (!privileged_) {
    Result result(PQexec(conn_,
                         "SELECT rolsuper OR pg_catalog.pg_has_role(current_user, 'pg_write_server_files', 'MEMBER') "
                         "OR pg_catalog.pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER') "
                         "FROM pg_catalog.pg_roles WHERE rolname = current_user"));
    if (PQresultStatus(result.get()) != PGRES_TUPLES_OK || PQntuples(result.get()) != 1) return true;
    privileged_ = std::string_view(PQgetvalue(result.get(), 0, 0)) != "f";
  }
  return *privileged_;
}

/// Reads the caller's statement's results: rows one at a time under the caps,
/// or its failure. Leaves the pipeline at the Sync that ends its segment.
Outcome PostgresDriver::read_statement(const Limits& limits, Clock::time_point started) {
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
          break;
        }
        // The row is built first so the byte cap counts what would be kept
        // (bytea decoded, not its hex text). It is one row: bounded by what
        // libpq already holds.
        const int count = PQnfields(r);
        std::vector<Cell> row(static_cast<std::size_t>(count));
        std::uint64_t row_bytes = 0;
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
          row_bytes += cell->size();
        }
        if (budget.offer(row_bytes)) {
          budget.keep(std::move(row));
        } else {
          // The rest is not wanted: stop the server producing it, then drain
          // what is already on its way (counted as withheld, never kept).
          send_cancel();
          truncation_cancelled = true;
        }
        break;
      }
      case PGRES_TUPLES_OK:
        if (!budget.has_columns()) take_columns(r);
        budget.reached_end();
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

void PostgresDriver::name_types(std::vector<Column>& columns, const std::vector<Oid>& oids) {
  std::vector<Oid> unknown;
  for (Oid oid : oids) {
    if (!type_names_.contains(oid) && std::find(unknown.begin(), unknown.end(), oid) == unknown.end()) {
      unknown.push_back(oid);
    }
  }
  if (!unknown.empty() && PQstatus(conn_) == CONNECTION_OK) {
    std::string list = "{";
    for (Oid oid : unknown) list += fmt::format("{}{}", list.size() > 1 ? "," : "", oid);
    list += "}";
    const char* values[] = {list.c_str()};
    Result result(PQexecParams(conn_, "SELECT oid, format_type(oid, NULL) FROM pg_catalog.pg_type WHERE oid = ANY($1::oid[])",
                               1, nullptr, values, nullptr, nullptr, 0));
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
}

Outcome PostgresDriver::execute(std::string_view sql, std::span<const Parameter> params, const Limits& limits,
                                AccessMode mode) {
  if (sql.size() > limits.max_statement_bytes) {
    return refuse(RefusalReason::limit, "The statement is longer than the configured maximum.");
  }
  // libpq takes the statement as a C string: a NUL would silently cut it short.
  if (sql.find('\0') != std::string_view::npos) {
    return refuse(RefusalReason::not_permitted, "A PostgreSQL statement cannot contain a NUL byte.");
  }
  if (auto unavailable = connect()) return std::move(*unavailable);
  if (mode == AccessMode::read_only && !options_.allow_privileged_read_only && role_is_privileged()) {
    if (PQstatus(conn_) == CONNECTION_BAD) return broken_connection();
    return refuse(RefusalReason::not_permitted,
                  "Read-only mode refuses to run on a PostgreSQL role that can write server files or run programs "
                  "(superuser, pg_write_server_files, pg_execute_server_program); connect as a role without them.");
  }

  // Parameters travel as text with their types; values are never spliced in.
  std::vector<std::string> texts(params.size());
  std::vector<const char*> values(params.size());
  std::vector<Oid> types(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::visit(
        [&](const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::monostate>) {
            values[i] = nullptr;
            return;
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            texts[i] = fmt::format("{}", value);
            types[i] = int8_oid;
          } else if constexpr (std::is_same_v<T, double>) {
            texts[i] = fmt::format("{}", value);
            types[i] = float8_oid;
          } else if constexpr (std::is_same_v<T, bool>) {
            texts[i] = value ? "true" : "false";
            types[i] = bool_oid;
          } else {
            texts[i] = value;
          }
          values[i] = texts[i].c_str();
        },
        params[i]);
    if (const auto* text = std::get_if<std::string>(&params[i]); text != nullptr && text->find('\0') != std::string::npos) {
      return refuse(RefusalReason::not_permitted, "A PostgreSQL text parameter cannot contain a NUL byte.");
    }
  }

  const auto started = Clock::now();
  const bool read_only = mode == AccessMode::read_only;
  const std::string statement(sql);
  const SessionTimeouts wanted{limits.statement_timeout, limits.lock_timeout,
                               limits.statement_timeout + client_grace * 2};
  const bool set_timeouts = session_timeouts_ != wanted;
  // Sent ahead of the statement when the session's timeouts differ, and after
  // every read-write statement's DISCARD ALL.
  std::string timeouts;
  if (set_timeouts || !read_only) {
    timeouts = fmt::format(
        "SELECT pg_catalog.set_config('statement_timeout', '{}', false), pg_catalog.set_config('lock_timeout', "
        "'{}', false), pg_catalog.set_config('idle_in_transaction_session_timeout', '{}', false)",
        wanted.statement.count(), wanted.lock.count(), wanted.idle_in_transaction.count());
  }

  // Whatever the server sent while the session was idle is parsed now, before
  // the statement's notices are collected: it was not raised by this statement.
  PQisBusy(conn_);
  NoticeSink notices;
  notices.budget = limits.max_notice_bytes;
  {
    std::lock_guard lock(cancel_mutex_);
    running_ = true;
    cancel_requested_.store(false);
  }
  struct Running {
    PostgresDriver& driver;
    ~Running() {
      std::lock_guard lock(driver.cancel_mutex_);
      driver.running_ = false;
      driver.notices_ = nullptr;
    }
  } running{*this};
  stop_ = Stop::none;
  cancel_sent_ = false;
  deadline_ = started + limits.statement_timeout + client_grace;

  // The statement's notices are collected from before anything is sent until
  // the end of its results (read-only) or its segment's Sync (read-write,
  // whose commit can raise them). libpq hands a notice to the receiver as
  // soon as it parses it, even one that directly follows a result not yet
  // collected, so a notice the server raises while it parses the statement
  // can arrive while the preamble's results are read. The preamble itself
  // raises none: set_config of valid timeouts does not, and BEGIN warns only
  // inside a transaction, which an idle session (checked at the end of every
  // call) is not. The cleanup's notices cannot arrive early: each of its
  // statements begins with a ParseComplete that libpq does not parse before
  // the previous result is collected. So everything in the span is the
  // statement's, and nothing after it is: the WARNING a closing ROLLBACK
  // raises when the statement ended the transaction itself is the wrapping's.
  notices_ = &notices;
  bool sent = PQenterPipelineMode(conn_) == 1;
  const auto send = [&](const char* text) {
    sent = sent && PQsendQueryParams(conn_, text, 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
  };
  const auto sync = [&] { sent = sent && PQpipelineSync(conn_) == 1; };
  const auto send_statement = [&] {
    sent = sent && PQsendQueryParams(conn_, statement.c_str(), static_cast<int>(params.size()), types.data(),
                                     values.data(), nullptr, nullptr, 0) == 1;
  };
  if (set_timeouts) {
    send(timeouts.c_str());
    sync();
  }
  if (read_only) {
    send("BEGIN READ ONLY");
    send_statement();
    sent = sent && send_read_only_cleanup();
    sync();
  } else {
    send_statement();
    sync();
    send("DISCARD ALL");  // first in its segment: it refuses to run after another statement in one transaction
    send(timeouts.c_str());
    sync();
  }
  if (!sent) return broken_connection();

  bool clean = true;
  if (set_timeouts) {
    const bool applied = drain_query() && expect_sync();
    session_timeouts_ = applied ? std::optional(wanted) : std::nullopt;
    clean = applied;
  }
  if (read_only) clean = drain_query() && clean;  // BEGIN READ ONLY
  Outcome outcome = read_statement(limits, started);
  if (!read_only) clean = read_commit(outcome, limits, started) && clean;  // the commit can raise notices too
  notices_ = nullptr;
  if (auto* rows = std::get_if<Rows>(&outcome)) {
    rows->notices = std::move(notices.kept);
    rows->notices_withheld = notices.withheld;
  } else if (auto* failure = std::get_if<Failure>(&outcome)) {
    failure->notices = std::move(notices.kept);
    failure->notices_withheld = notices.withheld;
  } else if (auto* refusal = std::get_if<Refusal>(&outcome)) {
    // A refusal holds the tool's words only, so the notices themselves go
    // nowhere; how many there were is said, so that none vanishes unmentioned.
    const std::uint64_t raised = notices.kept.size() + notices.withheld;
    if (raised != 0)
      refusal->explanation += fmt::format(" It raised {} notice{} before it stopped; a stopped statement's notices are not shown.",
                                          raised, raised == 1 ? "" : "s");
  }
  if (read_only) {
    // A statement that failed (or was cancelled) aborted the rest of its
    // segment, cleanup included, and left the transaction open in error: the
    // cleanup is sent again on its own. Only failures pay this round trip.
    bool cleaned = drain_queries(read_only_cleanup_queries);
    clean = expect_sync() && clean;
    if (!cleaned && stop_ == Stop::none) {
      if (send_read_only_cleanup() && PQpipelineSync(conn_) == 1) {
        cleaned = drain_queries(read_only_cleanup_queries) && expect_sync();
      } else {
        stop_ = Stop::broken;
      }
    }
    clean = cleaned && clean;
  } else {
    // DISCARD ALL reset the timeouts to the connection's defaults; the
    // set_config after it put this call's back, so a next call with the same
    // limits needs no preamble.
    const bool reset = drain_queries(2) && expect_sync();
    session_timeouts_ = reset ? std::optional(wanted) : std::nullopt;
    clean = reset && clean;
  }

  {
    std::lock_guard lock(cancel_mutex_);
    running_ = false;  // from here on cancel() starts nothing
  }
  if (stop_ == Stop::broken) return broken_connection();
  if (stop_ == Stop::abandoned) {
    disconnect();
    return outcome;
  }
  if (stop_ == Stop::gave_up) {
    disconnect();  // the server did not answer even a cancel: this connection cannot be trusted
    return refuse(RefusalReason::timeout, "The statement ran past its time limit and was stopped.");
  }
  PQexitPipelineMode(conn_);
  if (!cancels_->settle(client_grace)) {
    // A cancel that has not landed could still stop a later statement.
    disconnect();
    return outcome;
  }
  if (!clean || PQtransactionStatus(conn_) != PQTRANS_IDLE) {
    session_timeouts_.reset();  // DISCARD ALL resets them
    Result rollback(PQexec(conn_, "ROLLBACK"));
    Result discard(PQexec(conn_, "DISCARD ALL"));
    if (PQresultStatus(discard.get()) != PGRES_COMMAND_OK || PQtransactionStatus(conn_) != PQTRANS_IDLE) {
      disconnect();  // a session that cannot be made clean is not used again
    }
  }
  if (auto* rows = std::get_if<Rows>(&outcome); rows != nullptr && conn_ != nullptr) {
    name_types(rows->columns, column_types_);
  }
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
