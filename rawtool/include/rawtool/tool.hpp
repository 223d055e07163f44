#pragma once

#include <rawtool/argument_error.hpp>
#include <rawtool/arguments.hpp>
#include <rawtool/catalog.hpp>
#include <rawtool/config.hpp>
#include <rawtool/driver.hpp>
#include <rawtool/render/surface.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rawtool {

namespace detail {
struct CallProgressWriter;
}

/// One reply, both halves, as the renderer wrote them: a Reply wraps a
/// render::Rendered, which only the renderer makes. `is_error` is true for
/// failures, refusals and statuses; the text and structured halves always
/// describe the same thing.
class Reply {
public:
  Reply() = default;
  /// A refused rendering is always an error.
  Reply(render::Rendered rendered, bool is_error) : rendered_(std::move(rendered)), is_error_(is_error || rendered_.refused()) {}

  [[nodiscard]] const std::string& text() const noexcept { return rendered_.text(); }
  [[nodiscard]] const nlohmann::json& structured() const noexcept { return rendered_.structured(); }
  [[nodiscard]] bool is_error() const noexcept { return is_error_; }
  [[nodiscard]] const render::Rendered& rendered() const noexcept { return rendered_; }

private:
  render::Rendered rendered_;
  bool is_error_ = false;
};

/// Lets another thread cancel one call. Pass it in CallOptions; cancel() from
/// any thread stops the statement if it runs, stops the wait for a pooled
/// connection if the call is waiting, and makes the call return a cancelled
/// refusal (raw path) or the `refused` status (certified path). A call whose
/// Cancellation was cancelled before it started does not run at all.
/// Thread-safe. Serves one call at a time; once cancelled it stays cancelled.
class Cancellation {
public:
  void cancel() noexcept;
  [[nodiscard]] bool cancelled() const noexcept;

private:
  friend class Tool;
  std::stop_source source_;
};

/// What one call is doing, for a progress display: the command line's
/// progress line, an MCP server's progress notifications. Pass it in
/// CallOptions; the library and the driver write it while the call runs, and
/// any thread may read it at any time, as often as it likes: each read is one
/// atomic load, and nothing the call does waits for a reader. Rows are
/// counted as the driver reads them, so the figure grows while a statement
/// streams its rows; where the server makes a result whole before sending it
/// (PostgreSQL in read-only mode fetches through a cursor, and the server
/// computes each FETCH before its first row), it stays at 0 until then.
/// Serves one call at a time; reused, it starts again from 0.
class CallProgress {
public:
  enum class Phase {
    idle,      ///< the call has not started
    running,   ///< the call is waiting for a connection or its statement runs
    finished,  ///< the call has returned
  };

  [[nodiscard]] Phase phase() const noexcept { return phase_.load(std::memory_order_acquire); }
  /// When the call started (std::chrono::steady_clock); the epoch while idle.
  [[nodiscard]] std::chrono::steady_clock::time_point started() const noexcept {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(started_.load(std::memory_order_acquire)));
  }
  /// Rows the statement has read so far, kept or not (rows read past the row
  /// cap, to be counted as left out, count too).
  [[nodiscard]] std::uint64_t rows_read() const noexcept { return rows_read_.load(std::memory_order_relaxed); }
  /// The row cap (max_rows) of the database the call runs on; 0 until chosen.
  [[nodiscard]] std::uint64_t max_rows() const noexcept { return max_rows_.load(std::memory_order_relaxed); }

private:
  friend struct detail::CallProgressWriter;
  std::atomic<Phase> phase_{Phase::idle};
  std::atomic<std::chrono::steady_clock::duration::rep> started_{0};
  std::atomic<std::uint64_t> rows_read_{0};
  std::atomic<std::uint64_t> max_rows_{0};
};

/// A call's figures at one moment, as CallOptions::on_progress receives them.
struct ProgressFigures {
  std::chrono::milliseconds elapsed{0};  ///< since the call started
  std::uint64_t rows_read = 0;           ///< as CallProgress::rows_read
  std::uint64_t max_rows = 0;            ///< the row cap of the database the call runs on
};

struct CallOptions {
  /// Label of the database to use; empty means the first configured one.
  std::string database;
  Cancellation* cancellation = nullptr;
  /// Where the call reports its progress; null for nowhere. Must outlive the call.
  CallProgress* progress = nullptr;
  /// Called with the call's figures while it runs, for a progress display
  /// that is pushed rather than polled (an MCP server's notifications/progress):
  /// first once the call has run progress_interval, then once per interval,
  /// from a thread the call starts for it, and never after the call returns
  /// (the call joins that thread first). It should return quickly: the next
  /// report waits for it, the call's statement does not. Empty: no thread.
  std::function<void(const ProgressFigures&)> on_progress;
  /// How often on_progress is called; the rate it is bounded to.
  std::chrono::milliseconds progress_interval{1000};
};

/// Makes the driver for one pooled connection. Called lazily, from a calling
/// thread, at most pool_size times per database at a time.
using DriverFactory = std::function<std::unique_ptr<Driver>(const DatabaseConfig& database)>;

/// How a Tool talks to the world outside the configuration file.
struct ToolOptions {
  /// Where log lines go, in place of the configuration's log destination (its
  /// level still applies). Empty: the destination Config::log names, opened by
  /// Tool::open; stderr when it names none.
  LogSink log;
  /// Where drivers come from; empty means the real drivers (make_postgres_driver
  /// for PostgreSQL targets, make_sqlite_driver for SQLite paths). Tests put a
  /// scripted driver here.
  DriverFactory driver_factory;
};

/// One configured database as `rawtool check-config --connect` reports it:
/// for the operator who asked, never for an agent.
struct DatabaseCheck {
  std::string label;
  Engine engine = Engine::postgresql;
  AccessMode access = AccessMode::read_only;
  /// What the driver found, when it could connect.
  std::optional<DatabaseReport> report;
  /// Why it could not, in the driver's and the library's words (they name
  /// hosts and users); empty when it could.
  Untrusted complaint;
  /// The same in rawtool's words, from a closed set.
  UnavailableCause cause = UnavailableCause::unknown;
};

/// One thing wrong with a catalog query, found by preparing it on its
/// database without running it (Tool::check_catalog_queries): for the
/// operator who asked, never for an agent.
struct CatalogQueryProblem {
  Label query;      ///< the query's name
  Trusted field;    ///< the field at fault: "sql", "parameters", "parameters[0] (id).type", "database"
  Trusted problem;  ///< rawtool's words
  /// The engine's complaint, when it would not prepare the statement.
  std::optional<Failure> failure;
  /// Further words from the engine or the library: the type the server
  /// infers, or why the database could not be reached. Empty when none.
  Untrusted engine_words;
};

/// A catalog query as Tool::open resolved it against the configuration: the
/// one place that decides where a query runs and in which access mode. The
/// certified path, describe_catalog, check_catalog_queries and the MCP
/// server's tools all read it. Its pointers live as long as the Tool.
struct ResolvedQuery {
  const CatalogQuery* query = nullptr;
  /// The database the query names, else the first configured one: where it
  /// runs when the call names none.
  const DatabaseConfig* database = nullptr;
  /// True when the query names its database: a call may not run it on
  /// another. A query that names none runs where a call's
  /// CallOptions::database says, in access_on() that database.
  bool pinned = false;
  /// access_on(*database).
  AccessMode access = AccessMode::read_only;

  /// The query's access mode on `db`: its own within the database's (never
  /// read_write on a read_only database), the database's when it sets none.
  [[nodiscard]] AccessMode access_on(const DatabaseConfig& db) const noexcept;
};

/// rawtool's library API: the raw path and the certified path over a pool of
/// connections per configured database. Safe for concurrent calls from many
/// threads; the Tool must outlive every call made on it.
///
/// Each database has its own pool of at most pool_size drivers, made on first
/// use; a call that finds them all busy waits for one (a Cancellation ends the
/// wait). Expected database outcomes are never exceptions: every call returns
/// a Reply.
class Tool {
public:
  /// Validates the configuration, loads the catalog and opens the operator
  /// log (a file named by the configuration is created if missing; one that
  /// cannot be opened for appending is a ConfigError naming log.path). Throws
  /// ConfigError before anything is served; does not connect.
  static std::unique_ptr<Tool> open(Config config);
  static std::unique_ptr<Tool> open(Config config, ToolOptions options);
  ~Tool();

  /// The caller's own SQL, one statement, configured access mode and limits.
  /// A failure is rendered as untrusted content. When the raw path is switched
  /// off, raw() is absent from every surface and this returns a refusal.
  /// Unavailable (no connection) is a status-only reply: the complaint names
  /// hosts and users, so it goes to the log under the reply's reference.
  Reply raw(std::string_view sql, const CallOptions& options = {});

  /// A pinned query by name with bound parameters (a JSON object; values of
  /// the declared type, or strings in that type's textual form). On failure:
  /// a status from the closed set and a log reference, no database text; the
  /// complaint goes to the operator log as one JSON line under that reference,
  /// at level error: {"ts":...,"level":"error","component":"tool",
  /// "event":"certified_failure","reference":...,"query":...,"status":...,
  /// "database":..., "failure"|"refusal"|"complaint"|"problem"|"arguments":...}
  /// (docs/operator-log.md's line schema lists every event).
  Reply certified(std::string_view name, const nlohmann::json& params, const CallOptions& options = {});

  /// The catalog: names, parameters, and descriptions as the catalog_prose
  /// setting says. Never an error.
  Reply describe_catalog() const;
  /// The same, listing only the queries that run on `databases` (labels): what
  /// a client that reaches only those databases is shown.
  Reply describe_catalog(const std::vector<std::string>& databases) const;

  /// What the connected role can use in one database (options.database):
  /// without request.table, a page of its tables, views, materialized views
  /// and foreign tables with row-count estimates and comments (and, on the
  /// first page, its schemas); with it, that table's columns with types,
  /// nullability and defaults, its primary, unique and foreign keys and other
  /// constraints, its indexes and comments. PostgreSQL lists only what the
  /// role has some privilege on (USAGE on the schema, SELECT on the table or
  /// one of its columns, SELECT on each column shown); SQLite lists the file.
  ///
  /// It runs rawtool's own pinned statements, read-only, so it is on the
  /// certified side: every identifier, type name, default and comment is
  /// rendered as untrusted content (render::render_schema), and a failure is a
  /// status and a log reference, never database text (logged as the event
  /// certified_failure with query "describe_schema"). Arguments that do not
  /// fit (an unknown database label, a limit out of range, a name that is not
  /// UTF-8 text) are an argument error naming the argument and the rule; a
  /// table the role cannot use is a reply that says so (found=false), an error.
  Reply describe_schema(const SchemaRequest& request, const CallOptions& options = {});

  /// The labels of the databases that cannot be used now: each runs
  /// `SELECT 1` in its access mode, through its pool, under its connect and
  /// statement timeouts; one that does not answer with a row (unreachable,
  /// or refused, as read-only mode refuses a role with a refused hazard) is
  /// listed. Blocks until each has answered; `cancellation` ends it early
  /// (the databases not yet asked are listed). For readiness checks.
  std::vector<std::string> unusable_databases(Cancellation* cancellation = nullptr);

  /// One database's connection pool, now: for metrics.
  struct PoolFigures {
    std::string label;
    std::size_t in_use = 0;   ///< connections leased to calls
    std::size_t idle = 0;     ///< connections open and waiting for a call
    std::uint64_t waits = 0;  ///< calls that found every connection in use and the pool full, so far
  };
  /// Every database's pool, in configuration order. Cheap: takes each pool's lock once.
  [[nodiscard]] std::vector<PoolFigures> pool_figures() const;

  /// Connects to every configured database, through its pool, and reports
  /// the server and every hazard its driver checks for (see PostgresOptions).
  /// For operators' checks; blocks until each has answered or failed, or
  /// `cancellation` ends it (a connection under way ends within 100 ms; the
  /// databases not yet asked are reported unreachable, cause unknown).
  std::vector<DatabaseCheck> inspect_databases(Cancellation* cancellation = nullptr);

  /// Prepares every catalog query on its database without running it (see
  /// Driver::describe), in the mode certified() would run it, and reports
  /// what the engine finds wrong: it does not prepare (syntax, unknown
  /// names, declared types that do not fit), it is more than one statement,
  /// it takes more or fewer parameters than it declares, a SQLite placeholder
  /// that is not ?N, a write where the query runs read-only, a text, date or
  /// timestamp parameter whose type the PostgreSQL server infers otherwise.
  /// Queries on a database that cannot be reached are reported as not
  /// checked. Empty when every query prepares as declared. Blocks.
  std::vector<CatalogQueryProblem> check_catalog_queries();

  [[nodiscard]] bool raw_path_enabled() const noexcept;
  [[nodiscard]] const Config& config() const noexcept;
  /// The loaded catalog (for listing tools; its descriptions are untrusted and
  /// shown only through the renderer).
  [[nodiscard]] const Catalog& catalog() const noexcept;
  /// Every catalog query, in catalog order, resolved at open.
  [[nodiscard]] const std::vector<ResolvedQuery>& resolved_queries() const noexcept;
  /// The resolved query called `name`, or nullptr.
  [[nodiscard]] const ResolvedQuery* find_query(std::string_view name) const noexcept;
  /// The operator log the Tool writes to (see the configuration's log key
  /// and ToolOptions::log). A server built over the Tool writes its own
  /// events there too, as the MCP server does (component "mcp").
  [[nodiscard]] const OperatorLog& log() const noexcept;

private:
  struct Impl;
  explicit Tool(std::unique_ptr<Impl> impl);
  Reply describe_catalog_of(const std::vector<std::string>* reach) const;  // null: every database
  std::unique_ptr<Impl> impl_;
};

}  // namespace rawtool
