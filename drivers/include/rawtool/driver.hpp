#pragma once

#include <rawtool/outcome.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rawtool {

/// Whether a statement may change the database. Read-write is only ever an
/// explicit operator setting.
enum class AccessMode { read_only, read_write };

/// "read_only" or "read_write".
std::string_view access_mode_name(AccessMode mode) noexcept;

/// What a cell and a row cost against Limits::max_bytes beyond their data:
/// about what each takes on the wire (a length word) and in a reply (`null,`).
/// Memory for a kept result is then at most a small multiple of max_bytes
/// (a cell's place in rawtool's structures is 40 bytes, five times its cost),
/// however wide the rows and however empty their cells.
inline constexpr std::uint64_t cell_overhead_bytes = 8;
inline constexpr std::uint64_t row_overhead_bytes = 8;

/// Limits on one statement. Every one holds whatever the statement does.
struct Limits {
  std::chrono::milliseconds statement_timeout{5000};
  std::chrono::milliseconds lock_timeout{1000};
  std::uint64_t max_rows = 1000;
  /// Bytes of the result kept: cell and column-name data, plus
  /// `cell_overhead_bytes` for every cell and `row_overhead_bytes` for every
  /// row, so NULLs, empty strings and rows of no columns are not free. A row
  /// that would pass it is left out whole and counted, never shortened.
  std::uint64_t max_bytes = 1024 * 1024;
  /// Longest statement accepted, in bytes.
  std::size_t max_statement_bytes = 256 * 1024;
  /// Bytes of NOTICE and WARNING data kept per statement: the six fields of
  /// each notice (severity, SQLSTATE, message, detail, hint, context) summed.
  /// A budget of its own, not a share of max_bytes: notices arrive between
  /// rows (a RAISE NOTICE in a function called per row), and sharing would let
  /// them push rows out, making a byte_cap truncation depend on how chatty a
  /// function is. Notices are context beside the answer, so the default is
  /// small, leaving room for the failure they may precede in the renderer's
  /// default budget. Notices are kept in the order they arrive until the first
  /// that would pass the budget; that one and every later one is counted in
  /// notices_withheld, never kept in part. Memory for a call's notices is
  /// bounded by this, whatever the statement raises.
  std::uint64_t max_notice_bytes = 8 * 1024;
};

/// The refusal for a statement longer than `limits.max_statement_bytes`, with
/// both sizes, or nothing. Every driver asks it before anything else, so a
/// statement past the limit costs no connection.
std::optional<Refusal> statement_size_refusal(std::string_view sql, const Limits& limits);

/// A bound parameter of a pinned query: NULL, integer, number, boolean or text
/// (dates and timestamps travel as validated text). Never spliced into SQL.
using Parameter = std::variant<std::monostate, std::int64_t, double, bool, std::string>;

/// Kinds of hazard: what a connection's role or server allows that a READ ONLY
/// transaction, rolled back, does not contain.
enum class HazardKind {
  superuser,              ///< the session can become a superuser role (SET ROLE, also inside DO)
  server_files,           ///< it can become pg_read_server_files or pg_write_server_files
  server_program,         ///< it can become pg_execute_server_program (COPY ... PROGRAM)
  replication,            ///< it can become a REPLICATION role: replication slots outlive any transaction
  signal_any_backend,     ///< it can become pg_signal_backend: it can cancel or end other roles' sessions
  server_state_function,  ///< it can EXECUTE a function whose effect outlives the transaction (WAL switch, stats reset, ...)
  server_file_function,   ///< it can EXECUTE a function that reads or writes server files (pg_read_file, lo_export, ...)
  logical_message,        ///< it can put text into the WAL stream with pg_logical_emit_message
  remote_connection,      ///< it can EXECUTE dblink: another connection, outside the read-only transaction
  foreign_server,         ///< it can use a foreign server (postgres_fdw and the like)
  signal_same_role,       ///< it can cancel or end other sessions of a role it can become
  transaction_ids,        ///< it can consume transaction IDs (pg_current_xact_id, txid_current)
  shared_role,            ///< other sessions use a role it can become
  prepared_transactions,  ///< max_prepared_transactions > 0: PREPARE TRANSACTION is possible (contained)
  connection_limit,       ///< the role's CONNECTION LIMIT or max_connections: room for the pool and its reserve connection
  database_owner,         ///< a role it can become owns the database: ANALYZE of every table outlives a rollback
  schema_owner,           ///< a role it can become owns schemas (nothing past a read-only rollback)
  table_owner,            ///< ... owns tables or materialized views: ANALYZE outlives a rollback
  sequence_owner,         ///< ... owns sequences (nothing past a read-only rollback)
  function_owner,         ///< ... owns functions or procedures (nothing past a read-only rollback)
  maintain,               ///< PostgreSQL 17+: it can become pg_maintain or holds MAINTAIN on tables (ANALYZE)
  security_definer,       ///< it can EXECUTE SECURITY DEFINER functions of a role it cannot become
  server_log,             ///< the server logs what its statements raise (log_min_messages below fatal)
};

/// The kind's stable name, e.g. "superuser"; the configuration's
/// refuse_hazards takes these names.
std::string_view hazard_kind_name(HazardKind kind) noexcept;

/// The kind named `name` (as hazard_kind_name gives it), or std::nullopt.
std::optional<HazardKind> hazard_kind_from_name(std::string_view name) noexcept;

/// Every kind the configuration's refuse_hazards may name, in declaration
/// order: all but connection_limit, which is refused exactly when the pool and
/// its reserve connection have no room, and otherwise only informs.
std::span<const HazardKind> hazard_kinds() noexcept;

/// One hazard a driver found when it connected.
struct Hazard {
  HazardKind kind = HazardKind::superuser;
  /// True when read-only mode refuses every statement while it holds.
  bool refused = false;
  /// rawtool's own words: what it allows and how to remove it.
  Trusted explanation;
  /// The roles, functions or settings involved, as the server names them;
  /// at most a few dozen, the first ones in an order that puts the worst first.
  std::vector<Untrusted> names;
  /// How many more there are than `names` lists.
  std::uint64_t names_left_out = 0;
};

/// What a driver learns about its database when it connects: for an
/// operator's checks (rawtool check-config --connect), never for an agent.
struct DatabaseReport {
  Engine engine = Engine::postgresql;
  Untrusted server_version;  ///< PostgreSQL's server_version; SQLite's library version
  Untrusted encoding;        ///< PostgreSQL's server_encoding; SQLite's PRAGMA encoding
  Untrusted role;            ///< PostgreSQL's session_user; empty for SQLite
  std::vector<Hazard> hazards;
  /// PostgreSQL: which running server the connection reached, as the server
  /// itself answers (when its postmaster started, to the microsecond, and
  /// the port it listens on), so that two databases reached by different
  /// host names, a socket or a pooler compare equal when they are one server
  /// (one pg_stat_activity, one set of roles). A restart between two
  /// connections makes one server look like two. Empty for SQLite, and when
  /// the server did not answer.
  Untrusted server;
};

/// What an engine makes of one statement it prepared without running it: for
/// an operator's check of a catalog (rawtool check-config --connect), never
/// for an agent.
struct StatementShape {
  /// How many parameters the statement takes: the highest placeholder number
  /// used ($n on PostgreSQL, ?n on SQLite, where a named or bare placeholder
  /// takes the next number).
  std::size_t parameter_count = 0;
  /// SQLite: each placeholder as it is written ("?1", ":name", "?" for a bare
  /// one), in number order. Empty on PostgreSQL, where only $n exists.
  std::vector<Untrusted> placeholders;
  /// PostgreSQL: the type the server gives each parameter when the statement
  /// is prepared with no types given (format_type's name, "unknown" for one
  /// it cannot tell, the statement failing to prepare then), in number order.
  /// Empty on SQLite, which types no parameter.
  std::vector<Untrusted> inferred_types;
  /// What the statement does, as the engine's own view of it shows.
  enum class Effect {
    reads,    ///< nothing the engine compiled or planned writes
    writes,   ///< SQLite: sqlite3_stmt_readonly is false; PostgreSQL: the plan modifies a table (also inside WITH)
    command,  ///< PostgreSQL: a utility command, which has no plan to show what it does
  };
  Effect effect = Effect::reads;
};

/// One connection to one database. A Driver runs one statement at a time
/// (calls to execute must not overlap); each call is stopped through its own
/// stop token. Connecting is lazy and repeated: a connection that failed or
/// dropped is re-established on the next execute.
class Driver {
public:
  virtual ~Driver() = default;
  Driver() = default;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  /// Where execute() reports how many rows the running statement has read so
  /// far, kept or not (rows past a cap are read to be counted, and count), for
  /// a progress display; null for nowhere. Set by the thread that calls
  /// execute, between calls. The driver stores each new count with a relaxed
  /// store as rows arrive, so any thread may load it at any time. The counter
  /// must outlive the calls it is set for.
  void report_rows_to(std::atomic<std::uint64_t>* rows_read) noexcept { rows_read_ = rows_read; }

  [[nodiscard]] virtual Engine engine() const noexcept = 0;

  /// Runs exactly one statement under `limits` and `mode`. Returns Rows, the
  /// database's Failure, a Refusal (more than one statement, read-only
  /// violation detected by the engine's own hooks, cancelled, timeout), or
  /// Unavailable when no connection could be had or it broke. Never throws for
  /// anything a database or a caller can cause.
  ///
  /// Time: passing limits.statement_timeout is Refusal{timeout} on both
  /// engines (on PostgreSQL, the server's SQLSTATE 57014 when the statement
  /// has run that long, or the client's own deadline: statement_timeout plus
  /// a grace, then a cancel, then the connection is given up). A 57014 raised
  /// sooner, by the statement itself, stays a Failure. lock_timeout is the
  /// database's Failure (SQLSTATE 55P03; SQLite's SQLITE_BUSY).
  ///
  /// Notices: Rows and Failure carry every NOTICE and WARNING the caller's
  /// statement raised (for a Failure, the ones before it), in the order they
  /// arrived, byte for byte, up to limits.max_notice_bytes; the ones past it
  /// are counted in notices_withheld. Messages raised by the driver's own
  /// wrapping are not the statement's and are not included: on PostgreSQL,
  /// the WARNING that the closing ROLLBACK raises when the statement already
  /// ended the read-only transaction (COMMIT, ROLLBACK, END). A Refusal
  /// (timeout, cancel, COPY) carries no notices: it holds the tool's words
  /// only, and its explanation says how many notices the statement raised
  /// before it stopped. SQLite has no notices; its outcomes carry none.
  ///
  /// A read-write statement commits when it ends; a commit that fails (a
  /// deferred constraint or trigger) is the database's Failure, never Rows,
  /// and the notices the commit raised belong to the statement.
  ///
  /// Parameters bind to $1.. (PostgreSQL) or ?1.. (SQLite). A PostgreSQL
  /// statement or text parameter holding a NUL byte is refused (libpq takes C
  /// strings, so it would be cut short).
  ///
  /// Read-only mode on PostgreSQL, beyond the READ ONLY transaction that is
  /// always rolled back:
  ///   - the session's audit (see PostgresOptions) can refuse every statement;
  ///   - a statement that ends the wrapping transaction itself (COMMIT,
  ///     ROLLBACK, END, ABORT, PREPARE TRANSACTION; the closing ROLLBACK's
  ///     warning shows it) is Refusal{read_only}, never Rows; a transaction it
  ///     prepared is found by the virtual transaction ID it keeps and rolled
  ///     back, and the refusal says so;
  ///   - a query runs through a cursor that fetches limits.max_rows + 1 rows,
  ///     so the server stops at the row cap; a statement a cursor cannot hold
  ///     is run as it is, with its own reply and positions;
  ///   - a statement that does not stop when cancelled (it can catch the
  ///     cancel) is ended after the grace: the driver ends its backend from a
  ///     second connection of the same role (pg_terminate_backend), waits for
  ///     this connection to close, and never uses it again; the refusal says
  ///     whether the end was confirmed. The same holds for a stop. That
  ///     second connection is opened before any statement and kept in
  ///     reserve, one per database (conninfo and password file) per process,
  ///     shared by its drivers: while it cannot be had (a connection limit is
  ///     reached) every call, in either mode, is Refusal{limit} and starts
  ///     nothing.
  ///
  /// Orphans (both modes, direct connections): each connection's server
  /// process (pid and backend_start) is recorded in a per-process file,
  /// locked while the process lives, in a private directory
  /// ($RAWTOOL_RUNTIME_DIR, else $XDG_RUNTIME_DIR/rawtool, else
  /// /tmp/rawtool-<uid>). Before a process's first statement on a database,
  /// its driver ends what processes that died (SIGKILL) with the same
  /// conninfo and password file recorded there and left running; the
  /// sessions of live processes and of anyone else are not touched. See
  /// docs/postgres-orphans.md.
  ///
  /// Memory: a row is sized before it is copied, so a row the caps withhold
  /// costs no copy; a failure whose fields pass limits.max_bytes keeps a
  /// prefix of each plus their size and digest (Failure::withheld). Peak
  /// memory is then what libpq itself holds for the largest message (its
  /// input buffer and the result it builds from it), and a call that received
  /// a message over 8 MiB closes its connection afterwards, which gives that
  /// buffer back. Failure::rows_before_failure counts the rows a statement
  /// sent before it failed; it is empty (not known) when a PostgreSQL query in
  /// read-only mode failed in its cursor's FETCH, which sends none of its
  /// rows when it fails.
  ///
  /// Stop: `stop` is the call's one stop signal. A stop requested before
  /// the statement is sent makes execute return Refusal{cancelled} without
  /// sending it; one requested while it runs cancels it (on PostgreSQL a
  /// cancel request, and the statement is ended after the grace if it goes
  /// on; on SQLite an interrupt), and execute returns Refusal{cancelled}
  /// unless the statement had already failed. request_stop() may come from
  /// any thread at any time; the token belongs to this one call, so nothing
  /// of it reaches the next.
  virtual Outcome execute(std::string_view sql, std::span<const Parameter> params, const Limits& limits,
                          AccessMode mode, std::stop_token stop) = 0;
  /// execute with no way to stop it but its limits.
  Outcome execute(std::string_view sql, std::span<const Parameter> params, const Limits& limits, AccessMode mode) {
    return execute(sql, params, limits, mode, std::stop_token{});
  }

  /// Prepares `sql` on the database without running it, as execute would in
  /// `mode`, binding parameters of the kinds in `params` (their kinds choose
  /// the types execute sends; the values are not sent). Returns its shape; the
  /// engine's Failure when it would not prepare (syntax, unknown names, types
  /// that do not fit); a Refusal for what the driver itself refuses (empty,
  /// more than one statement, a write its read-only hooks deny at prepare);
  /// Unavailable when no connection could be had. Runs nothing of the
  /// statement: PostgreSQL prepares and describes it, then plans it
  /// (EXPLAIN, parameters NULL) inside a READ ONLY transaction that is rolled
  /// back, so only functions the planner folds (IMMUTABLE ones called with
  /// constants) are evaluated; SQLite compiles it with sqlite3_prepare_v3.
  /// Like execute, it must not overlap execute. The default is a Refusal, for
  /// drivers that cannot prepare without running.
  virtual std::variant<StatementShape, Failure, Refusal, Unavailable> describe(std::string_view sql,
                                                                               std::span<const Parameter> params,
                                                                               AccessMode mode);

  /// Connects if needed and reports the server and every hazard the driver
  /// checks for (read afresh, not from a cache). Like execute, it must not
  /// overlap execute. Unavailable when no connection could be had.
  virtual std::variant<DatabaseReport, Unavailable> inspect() = 0;
  /// inspect(), ended early (Unavailable) once `stop` is requested while it
  /// connects. The default, for drivers that connect at once, ignores it.
  virtual std::variant<DatabaseReport, Unavailable> inspect_until(std::stop_token /*stop*/) { return inspect(); }

protected:
  /// For implementations: the running statement has read `rows` rows so far.
  void report_rows_read(std::uint64_t rows) const noexcept {
    if (rows_read_ != nullptr) rows_read_->store(rows, std::memory_order_relaxed);
  }

private:
  std::atomic<std::uint64_t>* rows_read_ = nullptr;
};

/// How a PostgreSQL driver treats what a READ ONLY transaction cannot stop.
///
/// When it connects, and again at least once a minute, the driver audits its
/// session: every role the session user (and the current user) can become,
/// directly or through a chain of memberships, whatever their INHERIT setting
/// (SET ROLE reaches them all, also inside a DO block), and what those roles
/// may execute. Hazards marked `refused` make read-only mode refuse every
/// statement (Refusal not_permitted, in rawtool's words; inspect() names the
/// roles and functions):
///   - a reachable superuser, pg_read_server_files, pg_write_server_files,
///     pg_execute_server_program, pg_signal_backend or REPLICATION role;
///   - EXECUTE, through any reachable role, on a pg_catalog function whose
///     effect outlives a rolled-back transaction or reaches server files
///     (pg_switch_wal, pg_create_restore_point, pg_reload_conf, the
///     pg_stat_reset family, lo_import/lo_export, pg_read_file, ...), or on
///     dblink's functions;
///   - EXECUTE on pg_logical_emit_message while wal_level is logical (the
///     text would reach change-data-capture consumers).
///   - ownership, by a reachable role, of the database or of a table,
///     partitioned table, materialized view or foreign table in it, and (on
///     PostgreSQL 17 and later) pg_maintain or the MAINTAIN privilege on a
///     table: each lets a statement ANALYZE, whose new statistics
///     (pg_class.reltuples and relpages, the analyze counters) are written
///     outside the transaction and outlive the rollback.
/// Hazards not refused are reported only: other sessions of a reachable
/// role (a statement can cancel or end them with pg_cancel_backend and
/// pg_terminate_backend), transaction IDs consumed by pg_current_xact_id,
/// usable foreign servers, logical messages at a lower wal_level,
/// max_prepared_transactions > 0 (contained: see execute), schemas,
/// sequences and functions owned by a reachable role (a READ ONLY
/// transaction refuses everything their owner could do with them beyond what
/// others can), SECURITY DEFINER functions the session can execute whose
/// owner it cannot become (what they do is up to their code: one owned by a
/// superuser may run a program on the server host), and a log_min_messages
/// below fatal (a statement can then write to the server's log in a loop).
/// A role whose CONNECTION LIMIT (or a server whose max_connections)
/// leaves no room for pool_size connections and the reserve one is refused;
/// a limit with room is reported with the figures. `refuse_hazards` turns
/// any of the reported kinds into refused ones.
struct PostgresOptions {
  /// Runs read-only statements even where the audit refuses them, whatever
  /// refuse_hazards says; for trusted setups only.
  bool allow_privileged_read_only = false;
  /// Kinds read-only mode refuses whenever the audit finds them, on top of
  /// the ones it always refuses (the operator's choice, e.g. security_definer
  /// where every such function is known to be unsafe).
  std::vector<HazardKind> refuse_hazards;
  /// A file holding the password (its whole content, one trailing line break
  /// dropped), read afresh each time the driver connects, so a rotated secret
  /// is picked up; it takes the place of a password in the connection string.
  /// Empty: none. A file that cannot be read makes the connection Unavailable
  /// with a complaint in rawtool's words.
  std::string password_file;
  /// How many drivers with this conninfo the embedding program runs at once
  /// (its pool size): the audit checks that the role's CONNECTION LIMIT and
  /// the server's max_connections leave room for them and for the reserve
  /// connection (see execute), and read-only mode refuses where they do not
  /// (HazardKind::connection_limit).
  std::size_t pool_size = 1;
};

/// A PostgreSQL driver for a libpq connection string or URL; an empty string
/// uses the PG* environment variables. Does not connect until first used.
std::unique_ptr<Driver> make_postgres_driver(std::string conninfo, PostgresOptions options = {});

/// What a read-only SQLite driver does with a database in WAL mode whose -wal
/// and -shm files do not both exist. SQLite can read a WAL database only
/// through those files: while another connection has the database open they
/// exist, but when the last one closes it removes them, and a reader that
/// opens the database then would create both beside it. They outlast the
/// reader (a read-only connection can neither checkpoint nor remove them), and
/// they cannot be made in a read-only folder.
enum class SqliteReadOnlyWal {
  /// Read through the files only when both exist (a writer has the database
  /// open, or left them); otherwise every call is Refusal{not_permitted} and
  /// no file is made. While it reads, the connection keeps its place in the
  /// -shm's shared memory as every reader does, and sees every committed
  /// change. While it is open the files stay: the writer that would remove
  /// them on closing cannot while another connection has the database.
  existing_files,
  /// Let SQLite create the -wal and -shm files when they are missing (the
  /// folder must be writable); they stay after rawtool closes the database.
  create_files,
  /// Open the database as immutable (SQLite's `immutable=1`): no locks, no
  /// -wal or -shm, no file made. Only for a file that nothing changes while
  /// rawtool has it open and whose WAL has been checkpointed (read-only media,
  /// a copied snapshot): SQLite ignores any -wal file, and gives wrong answers
  /// or errors if the file changes.
  immutable,
};

/// "existing_files", "create_files" or "immutable".
std::string_view sqlite_read_only_wal_name(SqliteReadOnlyWal value) noexcept;

/// How a SQLite driver opens its database.
struct SqliteOptions {
  /// Used in read-only mode only; a read-write driver creates what SQLite needs.
  SqliteReadOnlyWal read_only_wal = SqliteReadOnlyWal::existing_files;
  /// Read-write mode only: whether opening a database file that does not exist
  /// creates it. When false, a missing file is Unavailable, as in read-only
  /// mode, so a mistyped or vanished path never becomes an empty database. A
  /// configuration file sets it false unless it says otherwise.
  bool create_if_missing = true;
};

/// A SQLite driver for a file path or ":memory:". The path is always a file
/// path, never a URI. Read-only mode opens the file read-only and never
/// creates a file beside it that outlasts a call (no -journal, and no -wal or
/// -shm unless options.read_only_wal says so); a path that does not exist is
/// Unavailable in read-only mode. ":memory:" in read-only mode is an empty
/// database: it answers expressions and nothing can be created in it. A
/// driver opened read-only refuses read-write calls (Refusal{read_only}).
/// ATTACH, DETACH (and so VACUUM INTO), load_extension and the pragmas that
/// change a setting of the whole process (hard_heap_limit, soft_heap_limit,
/// temp_store_directory, data_store_directory) are refused in both modes
/// (Refusal{not_permitted}).
///
/// Reading a setting is allowed in read-only mode (`PRAGMA journal_mode`);
/// changing one is not. A setting a read-write statement changes on its
/// connection (`PRAGMA locking_mode = EXCLUSIVE`, `PRAGMA foreign_keys = 0`)
/// ends with its call: the connection is closed and the next call opens a
/// fresh one. Settings stored in the file (user_version, journal_mode = WAL)
/// are the database's and stay.
///
/// Memory. Each call sets SQLite's length limit (SQLITE_LIMIT_LENGTH: the
/// longest value or row SQLite will make or load) to max_bytes, and to at
/// least 32 MiB: a cell longer than max_bytes is never kept, but a statement
/// may read or compute on a larger value (`length(doc)`, `substr(doc, 1, 80)`)
/// and be shown what fits. Past it the call is Refusal{limit} naming the
/// length limit and its value, and a stored value longer than it cannot be
/// read at all, not even in part. All of SQLite's memory is bounded by its
/// heap limit, which is process-wide (see set_sqlite_heap_limit); a call that
/// reaches it is Refusal{limit} naming the heap limit and its value. The
/// connection is usable after either.
///
/// Interruption. After every call the statement is finalized and the
/// connection is left in autocommit mode, with no transaction open and no
/// statement pending, whatever stopped the statement (a stop, the time
/// limit, a limit, an error); when a ROLLBACK cannot get it there, the
/// connection is closed and the next call opens a new one. A write that was
/// stopped leaves none of its changes.
std::unique_ptr<Driver> make_sqlite_driver(std::string path, AccessMode mode, SqliteOptions options = {});

/// SQLite's hard heap limit (sqlite3_hard_heap_limit64) bounds the memory of
/// every SQLite connection in the process together: SQLite has no limit per
/// connection. A statement that would pass it fails with SQLITE_NOMEM, and so
/// may a statement running beside it on another connection.
///
/// By default rawtool manages it. When the first SQLite driver runs a call,
/// unless something in the process already set a limit, rawtool sets it to
/// the larger of 48 MiB and the largest length limit of any call so far plus
/// 16 MiB (with default limits: 48 MiB), and raises it, never lowers it, when a
/// call with a larger length limit comes. It stops managing it as soon as
/// anything else sets it: this function, or sqlite3_hard_heap_limit64 called
/// by the embedding program.
///
/// `bytes` takes it over: that many bytes, applied at once and kept; 0 turns
/// the limit off (a statement's memory is then bounded only by the length
/// limit and the number of columns). std::nullopt hands it back to rawtool.
/// Thread-safe.
void set_sqlite_heap_limit(std::optional<std::uint64_t> bytes);

/// The hard heap limit in force for SQLite in this process, in bytes; 0 when
/// there is none.
[[nodiscard]] std::uint64_t sqlite_heap_limit() noexcept;

/// How libpq would take a database target: the one rule by which rawtool tells
/// a PostgreSQL target from a SQLite path, here and in its configuration.
enum class LibpqForm {
  none,      ///< not a connection string: a path, a sqlite: URL, empty, blank
  url,       ///< begins "postgresql://" or "postgres://", libpq's URI designators
  keywords,  ///< key=value pairs that PQconninfoParse accepts, at least one of them
};

/// The form of `target`, without connecting and without reading the
/// environment or a service file. A key=value string is whatever
/// PQconninfoParse parses, so it follows libpq's own keywords and quoting
/// ('single quotes', backslash escapes, spaces around '='): "sslrootcert=ca.pem
/// host=db" is one, "data=1.db" (an unknown keyword) and "my file.db" (no '=')
/// are not. A URL is not parsed here: a malformed one is still PostgreSQL's,
/// and libpq names what is wrong with it when it connects.
[[nodiscard]] LibpqForm libpq_form(std::string_view target);

/// Chooses the engine from the target: libpq connection strings (libpq_form)
/// go to PostgreSQL; "sqlite:" prefixes, ":memory:" and other paths go to
/// SQLite.
std::unique_ptr<Driver> make_driver(std::string_view target, AccessMode mode);

}  // namespace rawtool
