#pragma once

#include <rawtool/argument_error.hpp>
#include <rawtool/arguments.hpp>
#include <rawtool/catalog.hpp>
#include <rawtool/config.hpp>
#include <rawtool/driver.hpp>
#include <rawtool/render/surface.hpp>

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rawtool {

namespace detail {
struct ToolInternals;
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
  Cancellation();
  void cancel() noexcept;
  [[nodiscard]] bool cancelled() const noexcept;

private:
  friend class Tool;
  struct State;
  std::shared_ptr<State> state_;
};

struct CallOptions {
  /// Label of the database to use; empty means the first configured one.
  std::string database;
  Cancellation* cancellation = nullptr;
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
  /// (the README's log schema lists every event).
  Reply certified(std::string_view name, const nlohmann::json& params, const CallOptions& options = {});

  /// The catalog: names, parameters, and descriptions as the catalog_prose
  /// setting says. Never an error.
  Reply describe_catalog() const;

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

  /// Connects to every configured database, through its pool, and reports
  /// the server and every hazard its driver checks for (see PostgresOptions).
  /// For operators' checks; blocks until each has answered or failed.
  std::vector<DatabaseCheck> inspect_databases();

  [[nodiscard]] bool raw_path_enabled() const noexcept;
  [[nodiscard]] const Config& config() const noexcept;
  /// The loaded catalog (for listing tools; its descriptions are untrusted and
  /// shown only through the renderer).
  [[nodiscard]] const Catalog& catalog() const noexcept;

private:
  friend struct detail::ToolInternals;  // the MCP server writes its events to the same log
  struct Impl;
  explicit Tool(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rawtool
