#include <rawtool/tool.hpp>

#include <rawtool/render/bytes.hpp>
#include <rawtool/render/escape.hpp>
#include <rawtool/render/failure.hpp>
#include <rawtool/render/builder.hpp>
#include <rawtool/render/json.hpp>
#include <rawtool/render/prose.hpp>
#include <rawtool/render/rows.hpp>
#include <rawtool/render/schema.hpp>
#include <rawtool/render/status.hpp>

#include "lib/detail/crypto.hpp"
#include "lib/detail/json_fields.hpp"
#include "lib/detail/pool.hpp"
#include "lib/detail/schema_statements.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <span>
#include <utility>

namespace rawtool {

void Cancellation::cancel() noexcept { source_.request_stop(); }

bool Cancellation::cancelled() const noexcept { return source_.stop_requested(); }

/// Writes a call's CallProgress: running from construction (with the row cap
/// of the database chosen), finished at destruction; the driver counts rows
/// into it through report_rows_to.
struct detail::CallProgressWriter {
  CallProgressWriter(CallProgress* progress, std::uint64_t max_rows) noexcept : progress_(progress) {
    if (progress_ == nullptr) return;
    progress_->rows_read_.store(0, std::memory_order_relaxed);
    progress_->max_rows_.store(max_rows, std::memory_order_relaxed);
    progress_->started_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_release);
    progress_->phase_.store(CallProgress::Phase::running, std::memory_order_release);
  }
  ~CallProgressWriter() {
    if (progress_ != nullptr) progress_->phase_.store(CallProgress::Phase::finished, std::memory_order_release);
  }
  CallProgressWriter(const CallProgressWriter&) = delete;
  CallProgressWriter& operator=(const CallProgressWriter&) = delete;

  /// The counter a driver reports rows to, or null.
  [[nodiscard]] std::atomic<std::uint64_t>* rows() const noexcept {
    return progress_ != nullptr ? &progress_->rows_read_ : nullptr;
  }

private:
  CallProgress* progress_;
};

namespace {

/// Calls CallOptions::on_progress once per interval while a call runs, from a
/// thread of its own, reading the call's CallProgress; stops and joins the
/// thread when destroyed, before the call returns. A report that throws is
/// logged to `log` ("internal_error") and ends the reports of this call; the
/// call itself goes on.
class ProgressReports {
public:
  ProgressReports(const CallOptions& options, const CallProgress& progress, const OperatorLog& log) {
    if (!options.on_progress) return;
    thread_ = std::thread([this, report = options.on_progress, interval = options.progress_interval, &progress, &log] {
      std::unique_lock lock(mutex_);
      while (!wake_.wait_for(lock, interval, [this] { return stopping_; })) {
        if (progress.phase() != CallProgress::Phase::running) continue;
        lock.unlock();
        // The thread's top: an exception here would end the process. Its
        // text is the embedder's or anyone's: it is not logged.
        try {
          report(ProgressFigures{std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                                       progress.started()),
                                 progress.rows_read(), progress.max_rows()});
        } catch (...) {
          try {
            if (log.enabled(LogLevel::error)) {
              log.write(LogLevel::error, "tool", "internal_error",
                        nlohmann::json{{"detail", "a progress report threw; the call's progress reports end"}});
            }
          } catch (...) {  // NOLINT(bugprone-empty-catch): nowhere left to say it
          }
          return;
        }
        lock.lock();
      }
    });
  }
  ~ProgressReports() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  ProgressReports(const ProgressReports&) = delete;
  ProgressReports& operator=(const ProgressReports&) = delete;

private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  ///< REQUIRES: mutex_ held
  std::thread thread_;
};

using render::PathKind;
using render::Provenance;
using render::Status;

struct Database {
  DatabaseConfig config;
  Engine engine = Engine::postgresql;
  std::unique_ptr<detail::ConnectionPool> pool;
};

struct Execution {
  Outcome outcome;
  std::chrono::microseconds elapsed{0};
};

Engine engine_of(const DatabaseConfig& db) {
  return db.kind == TargetKind::sqlite_path ? Engine::sqlite : Engine::postgresql;
}

std::unique_ptr<Driver> default_driver(const DatabaseConfig& db) {
  if (db.kind == TargetKind::sqlite_path) return make_sqlite_driver(db.target, db.access, db.sqlite);
  PostgresOptions options;
  options.password_file = db.password_file.string();
  options.pool_size = db.pool_size;
  options.refuse_hazards = db.refuse_hazards;
  return make_postgres_driver(db.target, options);
}

Reply to_reply(render::Rendered rendered, bool is_error) { return Reply(std::move(rendered), is_error); }

Untrusted exception_text(const std::exception& e) { return Untrusted(std::string_view(e.what())); }

// The statuses a certified failure can report. A SQLSTATE is a code, compared
// whole, never shown: a function may RAISE any code, so the worst it can do
// is pick a different member of the closed set.
Status status_for_failure(const Failure& failure) {
  static const Untrusted query_canceled(std::string_view("57014"));      // statement_timeout
  static const Untrusted lock_not_available(std::string_view("55P03"));  // lock_timeout
  if (failure.sqlstate == query_canceled || failure.sqlstate == lock_not_available) return Status::timeout;
  return Status::execution_failed;
}

Status status_for_refusal(const Refusal& refusal) {
  return refusal.reason == RefusalReason::timeout ? Status::timeout : Status::refused;
}

// A raw call that reached no database. render_status speaks of a certified
// query, so the raw path states its own status: rawtool's words only, the
// reference, and the raw path's provenance.
Reply raw_unavailable_reply(const Provenance& provenance, const std::string& reference, UnavailableCause cause,
                            const render::RenderOptions& options) {
  // The complaint names hosts and users (PostgreSQL) or a file's path (SQLite).
  constexpr Literal withheld =
      "its complaint names hosts, users or files, so it is not shown here; an operator can find it in the operator "
      "log under the reference.";
  const Trusted explanation = cause == UnavailableCause::unknown
                                  ? Trusted::format("the database could not be reached; {}", withheld)
                                  : Trusted::format("the database could not be reached: {}; {}", unavailable_cause_text(cause), withheld);
  const Label ref = Label::checked(reference);
  const Label cause_label = Label::checked(unavailable_cause_name(cause));
  const double elapsed_ms = static_cast<double>(provenance.elapsed.count()) / 1000.0;
  render::ReplyBuilder reply(options);
  reply.line(Trusted::format("no reply from the database; status=unavailable; cause={}; reference={}", cause_label, ref));
  reply.line(explanation);
  reply.line(Trusted::format("end of reply; path=raw (uncertified); engine={}; database={}; elapsed_ms={}",
                             Label::checked(engine_name(provenance.engine)), provenance.database_label, elapsed_ms));
  nlohmann::json structured = {
      {"kind", "raw_unavailable"},
      {"status", "unavailable"},
      {"cause", unavailable_cause_name(cause)},
      {"reference", reference},
      {"explanation", explanation.str()},
      {"raw_provenance",
       {{"path", "raw"},
        {"certified", false},
        {"engine", engine_name(provenance.engine)},
        {"database", provenance.database_label.str()},
        {"elapsed_ms", elapsed_ms}}},
  };
  return Reply(std::move(reply).finish(std::move(structured)), true);
}

Literal placeholder_style(Engine engine) { return engine == Engine::sqlite ? Literal("?N") : Literal("$N"); }

// A catalog bound as the catalog's author wrote it: an integer parameter's
// bound without decimals, any other as the shortest decimal that reads back
// as the same number.
Trusted format_number(double value, ParameterType type) {
  if (type == ParameterType::integer && value >= -9.0e15 && value <= 9.0e15 && value == static_cast<double>(static_cast<std::int64_t>(value))) {
    return Trusted::format("{}", static_cast<std::int64_t>(value));
  }
  return Trusted::format("{}", Shortest{value});
}

}  // namespace

struct Tool::Impl {
  Config config;
  Catalog catalog;
  std::vector<ResolvedQuery> queries;  ///< catalog.queries resolved against config.databases
  std::shared_ptr<OperatorLog> log;
  std::vector<Database> databases;  ///< databases[i] serves config.databases[i]

  // Where each catalog query runs and in which mode, decided once. Throws
  // ConfigError for a query on no configured database, or read_write on a
  // read_only one.
  void resolve_catalog() {
    for (std::size_t i = 0; i < catalog.queries.size(); ++i) {
      const CatalogQuery& q = catalog.queries[i];
      const std::string entry = "catalog: queries[" + std::to_string(i) + "] (" + q.name + ")";
      ResolvedQuery resolved;
      resolved.query = &q;
      resolved.pinned = !q.database.empty();
      resolved.database = &config.databases.front();
      if (resolved.pinned) {
        const auto named = std::find_if(config.databases.begin(), config.databases.end(),
                                        [&](const DatabaseConfig& candidate) { return candidate.label == q.database; });
        if (named == config.databases.end()) detail::fail(entry + ".database", "names no configured database");
        resolved.database = &*named;
      }
      if (q.access == AccessMode::read_write && resolved.database->access == AccessMode::read_only) {
        detail::fail(entry + ".access", "is read_write, but database " + resolved.database->label + " is read_only");
      }
      resolved.access = resolved.access_on(*resolved.database);
      queries.push_back(resolved);
    }
  }

  const ResolvedQuery* find_query(std::string_view name) const noexcept {
    for (const ResolvedQuery& q : queries) {
      if (q.query->name == name) return &q;
    }
    return nullptr;
  }

  const Database& database_of(const ResolvedQuery& query) const {
    return databases[static_cast<std::size_t>(query.database - config.databases.data())];
  }

  const Database* find_database(std::string_view label) const {
    if (label.empty()) return &databases.front();
    for (const Database& db : databases) {
      if (db.config.label == label) return &db;
    }
    return nullptr;
  }

  // Every event a reply points at (by reference or withheld_sha256) is an
  // error: no level setting drops it.
  void log_error(std::string_view event, const nlohmann::json& members) const {
    log->write(LogLevel::error, "tool", event, members);
  }

  // One debug line per statement run: no text from the call, only its shape.
  void log_call(const Provenance& provenance, std::string_view outcome, std::string_view status = {}) const {
    if (!log->enabled(LogLevel::debug)) return;
    nlohmann::json members = {{"path", provenance.path == PathKind::raw ? "raw" : "certified"},
                              {"database", provenance.database_label.str()},
                              {"engine", engine_name(provenance.engine)},
                              {"outcome", outcome},
                              {"elapsed_ms", static_cast<double>(provenance.elapsed.count()) / 1000.0}};
    if (provenance.path == PathKind::certified) members["query"] = provenance.certified_name.str();
    if (!status.empty()) members["status"] = status;
    log->write(LogLevel::debug, "tool", "call", members);
  }

  Execution execute(const Database& db, std::string_view sql, std::span<const Parameter> params, AccessMode mode,
                    Cancellation* cancellation, const detail::CallProgressWriter& progress) const {
    // The call's one stop signal: it ends the wait for a connection, and the
    // driver's statement once it runs.
    const std::stop_token stop = cancellation != nullptr ? cancellation->source_.get_token() : std::stop_token{};
    if (stop.stop_requested()) {
      return {Refusal{RefusalReason::cancelled, "The call was cancelled before it ran."}, {}};
    }
    detail::ConnectionPool& pool = *db.pool;
    detail::ConnectionPool::Lease lease;
    try {
      lease = pool.acquire(stop);
    } catch (const std::exception& e) {
      // No driver could be made: reported like a connection that failed, its
      // words for the log under the reply's reference.
      return {Unavailable{exception_text(e)}, {}};
    }
    if (!lease) {
      return {Refusal{RefusalReason::cancelled, "The call was cancelled while it waited for a connection."}, {}};
    }
    Driver* driver = lease.get();
    auto start = std::chrono::steady_clock::now();
    Outcome outcome;
    struct RowReport {
      Driver* driver;
      ~RowReport() { driver->report_rows_to(nullptr); }
    } row_report{driver};
    driver->report_rows_to(progress.rows());
    try {
      outcome = driver->execute(sql, params, db.config.limits, mode, stop);
    } catch (const std::exception& e) {
      // A driver never throws for what a database or a caller can cause; this
      // is a broken invariant, reported as such, its text kept for the log only.
      log_error("internal_error", {{"database", db.config.label}, {"complaint", render::to_log_json(exception_text(e))}});
      outcome = Refusal{RefusalReason::internal, "rawtool hit an internal error while running the statement."};
    }
    auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
    return {std::move(outcome), elapsed};
  }

  /// execute(), with the call's progress written where `options` says (or
  /// to a CallProgress of its own) and options.on_progress called while it runs.
  Execution execute_reporting(const Database& db, std::string_view sql, std::span<const Parameter> params,
                              AccessMode mode, const CallOptions& options) const {
    CallProgress own;
    CallProgress* const progress = options.progress != nullptr ? options.progress : &own;
    const detail::CallProgressWriter writer(progress, db.config.limits.max_rows);
    const ProgressReports reports(options, *progress, *log);
    return execute(db, sql, params, mode, options.cancellation, writer);
  }

  Reply certified_status(Status status, const Provenance& provenance, nlohmann::json query, std::string_view key,
                         nlohmann::json value) const {
    std::string reference = detail::new_log_reference();
    nlohmann::json record = {{"reference", reference},
                             {"query", std::move(query)},
                             {"status", render::status_name(status)},
                             {"database", provenance.database_label.str()}};
    if (!key.empty()) record[std::string(key)] = std::move(value);
    log_error("certified_failure", record);
    return to_reply(render::render_status(status, provenance, reference), true);
  }

  // The complaint under a reference, the cause in the reply.
  Reply certified_unavailable(const Provenance& provenance, nlohmann::json query, const Unavailable& unavailable) const {
    std::string reference = detail::new_log_reference();
    log_error("certified_failure", {{"reference", reference},
                                    {"query", std::move(query)},
                                    {"status", render::status_name(Status::unavailable)},
                                    {"cause", unavailable_cause_name(unavailable.cause)},
                                    {"database", provenance.database_label.str()},
                                    {"complaint", render::to_log_json(unavailable.complaint)}});
    return to_reply(render::render_unavailable(provenance, reference, unavailable.cause), true);
  }

  // An argument error withholds nothing: no reference, and the log's only
  // line for it is the debug one every call gets.
  Reply certified_argument_error(const Provenance& provenance, const ArgumentError& error) const {
    log_call(provenance, "invalid_arguments", render::status_name(Status::invalid_arguments));
    return to_reply(render::render_status(provenance, error, config.render), true);
  }

  // "the configured databases are a, b": labels passed their grammar at load.
  Trusted configured_labels() const {
    Trusted text = Literal("the configured databases are ");
    for (std::size_t i = 0; i < databases.size(); ++i) {
      if (i != 0) text += Literal(", ");
      text += Label::checked(databases[i].config.label);
    }
    return text;
  }

  Reply argument_error(const Label& tool, ArgumentError error) const {
    return to_reply(render::render_argument_error(tool, error, config.render), true);
  }
};

Tool::Tool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Tool::~Tool() = default;

std::unique_ptr<Tool> Tool::open(Config config) { return open(std::move(config), ToolOptions{}); }

std::unique_ptr<Tool> Tool::open(Config config, ToolOptions options) {
  validate_config(config);
  auto impl = std::make_unique<Impl>();
  if (config.catalog) impl->catalog = load_catalog(*config.catalog);
  impl->config = std::move(config);
  impl->resolve_catalog();

  DriverFactory factory = options.driver_factory ? std::move(options.driver_factory) : DriverFactory(default_driver);
  for (const DatabaseConfig& db : impl->config.databases) {
    Database database;
    database.config = db;
    database.engine = engine_of(db);
    database.pool = std::make_unique<detail::ConnectionPool>(db.pool_size, [factory, db] { return factory(db); });
    impl->databases.push_back(std::move(database));
  }
  impl->log = OperatorLog::open(impl->config.log, std::move(options.log));
  return std::unique_ptr<Tool>(new Tool(std::move(impl)));
}

std::vector<std::string> Tool::unusable_databases(Cancellation* cancellation) {
  std::vector<std::string> unusable;
  for (const Database& db : impl_->databases) {
    const detail::CallProgressWriter no_progress(nullptr, 0);
    const Execution run = impl_->execute(db, "SELECT 1", {}, db.config.access, cancellation, no_progress);
    if (!std::holds_alternative<Rows>(run.outcome)) unusable.push_back(db.config.label);
  }
  return unusable;
}

std::vector<Tool::PoolFigures> Tool::pool_figures() const {
  std::vector<PoolFigures> figures;
  for (const Database& db : impl_->databases) {
    const detail::ConnectionPool::Figures pool = db.pool->figures();
    figures.push_back({db.config.label, pool.made - pool.idle, pool.idle, pool.waits});
  }
  return figures;
}

std::vector<DatabaseCheck> Tool::inspect_databases(Cancellation* cancellation) {
  const std::stop_token stop = cancellation != nullptr ? cancellation->source_.get_token() : std::stop_token{};
  std::vector<DatabaseCheck> checks;
  for (Database& db : impl_->databases) {
    DatabaseCheck check;
    check.label = db.config.label;
    check.engine = db.engine;
    check.access = db.config.access;
    try {
      detail::ConnectionPool::Lease lease = db.pool->acquire(stop);
      if (!lease) {
        check.complaint = Untrusted(std::string_view("the check was cancelled before it connected"));
        checks.push_back(std::move(check));
        continue;
      }
      auto inspected = lease.get()->inspect_until(stop);
      if (auto* report = std::get_if<DatabaseReport>(&inspected)) {
        check.report = std::move(*report);
      } else {
        check.complaint = std::get<Unavailable>(inspected).complaint;
        check.cause = std::get<Unavailable>(inspected).cause;
      }
    } catch (const std::exception& e) {
      check.complaint = exception_text(e);
    }
    checks.push_back(std::move(check));
  }
  return checks;
}

namespace {

/// A value of the kind certified() binds for `type`: its kind chooses the
/// type the driver sends (Driver::describe does not send the value).
Parameter parameter_of_kind(ParameterType type) {
  switch (type) {
    case ParameterType::integer: return std::int64_t{0};
    case ParameterType::number: return 0.0;
    case ParameterType::boolean: return false;
    case ParameterType::text:
    case ParameterType::date:
    case ParameterType::timestamp: return std::string();
  }
  return std::monostate{};
}

/// Whether a parameter certified() sends untyped (text, date, timestamp: the
/// server converts the text) fits the type the server infers for it, as
/// format_type names PostgreSQL's built-in types. Integer, number and boolean
/// are sent typed, so a prepare that succeeds shows they fit.
bool fits_inferred(ParameterType declared, const Untrusted& inferred) {
  const auto is_one_of = [&](std::initializer_list<std::string_view> names) {
    return std::any_of(names.begin(), names.end(), [&](std::string_view name) { return inferred == Untrusted(name); });
  };
  const bool textual = is_one_of({"text", "character varying", "character", "name", "unknown"});
  switch (declared) {
    case ParameterType::text:
      return !is_one_of({"smallint", "integer", "bigint", "numeric", "real", "double precision", "boolean", "date",
                         "timestamp without time zone", "timestamp with time zone", "time without time zone",
                         "time with time zone", "interval"});
    case ParameterType::date:
      return textual || is_one_of({"date", "timestamp without time zone", "timestamp with time zone"});
    case ParameterType::timestamp:
      return textual || is_one_of({"timestamp without time zone", "timestamp with time zone"});
    default: return true;
  }
}

/// The character at PostgreSQL's 1-based character position in `sql`, or 0.
char character_at(std::string_view sql, std::int64_t position) {
  std::int64_t characters = 0;
  for (char c : sql) {
    if ((static_cast<unsigned char>(c) & 0xC0U) == 0x80U) continue;  // a UTF-8 continuation byte
    if (++characters == position) return c;
  }
  return 0;
}

}  // namespace

std::vector<CatalogQueryProblem> Tool::check_catalog_queries() {
  std::vector<CatalogQueryProblem> problems;
  for (const ResolvedQuery& resolved : impl_->queries) {
    const CatalogQuery& query = *resolved.query;
    const Label name = Label::checked(query.name);
    const auto report = [&](Trusted field, Trusted problem) -> CatalogQueryProblem& {
      problems.push_back(CatalogQueryProblem{name, std::move(field), std::move(problem), std::nullopt, {}});
      return problems.back();
    };
    const Database* db = &impl_->database_of(resolved);
    const AccessMode mode = resolved.access;
    std::vector<Parameter> kinds;
    for (const ParameterSpec& spec : query.parameters) kinds.push_back(parameter_of_kind(spec.type));

    std::variant<StatementShape, Failure, Refusal, Unavailable> described = Unavailable{};
    try {
      detail::ConnectionPool::Lease lease = db->pool->acquire();
      described = lease.get()->describe(query.sql, kinds, mode);
    } catch (const std::exception& e) {
      described = Unavailable{exception_text(e)};
    }
    if (auto* unavailable = std::get_if<Unavailable>(&described)) {
      report(Literal("database"), Trusted::format("not checked: database {} could not be reached: {}",
                                                  Label::checked(db->config.label), unavailable_cause_text(unavailable->cause)))
          .engine_words = std::move(unavailable->complaint);
      continue;
    }
    if (auto* failure = std::get_if<Failure>(&described)) {
      Trusted problem = Literal("the engine would not prepare it");
      if (db->engine == Engine::postgresql && failure->position &&
          character_at(query.sql, *failure->position) == '?') {
        problem += Literal(" (where it points, a ?: PostgreSQL placeholders are written $1, $2, ...)");
      }
      report(Literal("sql"), std::move(problem)).failure = std::move(*failure);
      continue;
    }
    if (auto* refusal = std::get_if<Refusal>(&described)) {
      switch (refusal->reason) {
        case RefusalReason::multiple_statements: report(Literal("sql"), Literal("holds more than one statement; a query is one")); break;
        case RefusalReason::empty_statement: report(Literal("sql"), Literal("holds no statement")); break;
        case RefusalReason::read_only:
          report(Literal("sql"), Trusted::format("the engine shows it writes, and it runs read-only: {}", refusal->explanation));
          break;
        default: report(Literal("sql"), refusal->explanation); break;
      }
      continue;
    }
    const StatementShape& shape = std::get<StatementShape>(described);
    const std::size_t declared = query.parameters.size();
    if (shape.parameter_count != declared) {
      report(Literal("parameters"), Trusted::format(db->engine == Engine::postgresql
                                               ? Literal("the statement uses placeholders up to ${}; the query declares {} "
                                                         "parameters, bound in order as $1, $2, ...")
                                               : Literal("the statement takes {} parameters; the query declares {}, bound "
                                                         "in order as ?1, ?2, ..."),
                                           shape.parameter_count, declared));
    }
    for (std::size_t i = 0; i < shape.placeholders.size(); ++i) {
      if (shape.placeholders[i] == Untrusted("?" + std::to_string(i + 1))) continue;
      report(Literal("sql"), Trusted::format("placeholder {} is not written ?{}: the catalog binds parameters by position, the "
                                    "first declared as ?1 (the placeholder as written follows)",
                                    i + 1, i + 1))
          .engine_words = shape.placeholders[i];
    }
    if (mode == AccessMode::read_only && shape.effect == StatementShape::Effect::writes) {
      report(Literal("sql"), db->engine == Engine::postgresql
                        ? Literal("the server's plan modifies a table, and the query runs read-only")
                        : Literal("SQLite compiles it as a write, and the query runs read-only"));
    }
    if (mode == AccessMode::read_only && shape.effect == StatementShape::Effect::command) {
      report(Literal("sql"), Literal("is a utility command, which has no plan to show it reads; a query that runs read-only must be a "
                    "query the server can plan"));
    }
    for (std::size_t i = 0; i < shape.inferred_types.size() && i < declared; ++i) {
      const ParameterSpec& spec = query.parameters[i];
      if (fits_inferred(spec.type, shape.inferred_types[i])) continue;
      report(Trusted::format("parameters[{}] ({}).type", i, Label::checked(spec.name)),
             Trusted::format("is {}, but the server infers another type for ${} (its name follows)",
                             Label::checked(parameter_type_name(spec.type)), i + 1))
          .engine_words = shape.inferred_types[i];
    }
  }
  return problems;
}

bool Tool::raw_path_enabled() const noexcept { return impl_->config.raw_path; }
const Config& Tool::config() const noexcept { return impl_->config; }
const Catalog& Tool::catalog() const noexcept { return impl_->catalog; }
const OperatorLog& Tool::log() const noexcept { return *impl_->log; }
const std::vector<ResolvedQuery>& Tool::resolved_queries() const noexcept { return impl_->queries; }
const ResolvedQuery* Tool::find_query(std::string_view name) const noexcept { return impl_->find_query(name); }

AccessMode ResolvedQuery::access_on(const DatabaseConfig& db) const noexcept {
  if (db.access == AccessMode::read_only) return AccessMode::read_only;
  return query->access.value_or(db.access);
}

Reply Tool::raw(std::string_view sql, const CallOptions& options) {
  const Impl& m = *impl_;
  Provenance provenance;
  provenance.path = PathKind::raw;
  const Database* db = m.find_database(options.database);
  if (db != nullptr) {
    provenance.engine = db->engine;
    provenance.database_label = Label::checked(db->config.label);
  }
  if (!m.config.raw_path) {
    return to_reply(render::render_refusal(
                        Refusal{RefusalReason::not_permitted, "The raw path is switched off in this configuration."},
                        provenance),
                    true);
  }
  if (db == nullptr) {
    return to_reply(render::render_refusal(
                        Refusal{RefusalReason::not_permitted, "No configured database has the requested label."},
                        provenance),
                    true);
  }

  Execution run = m.execute_reporting(*db, sql, {}, db->config.access, options);
  provenance.elapsed = run.elapsed;
  const render::RenderOptions& render_options = m.config.render;

  if (auto* rows = std::get_if<Rows>(&run.outcome)) {
    m.log_call(provenance, "rows");
    return to_reply(render::render_rows(*rows, provenance, render_options), false);
  }
  if (auto* failure = std::get_if<Failure>(&run.outcome)) {
    if (render_options.show_statement) failure->statement = Untrusted(sql);
    render::Rendered rendered = render::render_failure(*failure, provenance, render_options);
    m.log_call(provenance, rendered.refused() ? "failure_withheld" : "failure");
    if (rendered.refused()) {
      // The reply tells the caller the log holds the withheld text under its digest.
      nlohmann::json record = render::failure_log_record(*failure);
      m.log_error("raw_failure_withheld", {{"withheld_sha256", record.value("withheld_sha256", std::string())},
                                           {"database", db->config.label},
                                           {"failure", std::move(record)}});
    }
    return to_reply(std::move(rendered), true);
  }
  if (auto* refusal = std::get_if<Refusal>(&run.outcome)) {
    m.log_call(provenance, "refusal");
    return to_reply(render::render_refusal(*refusal, provenance), true);
  }
  // Unavailable: the complaint names hosts and users and is not the reply to
  // the caller's statement, so the caller gets a status and the log the words.
  m.log_call(provenance, "unavailable");
  const auto& unavailable = std::get<Unavailable>(run.outcome);
  std::string reference = detail::new_log_reference();
  m.log_error("raw_unavailable", {{"reference", reference},
                                  {"database", db->config.label},
                                  {"cause", unavailable_cause_name(unavailable.cause)},
                                  {"complaint", render::to_log_json(unavailable.complaint)}});
  return raw_unavailable_reply(provenance, reference, unavailable.cause, m.config.render);
}

Reply Tool::certified(std::string_view name, const nlohmann::json& params, const CallOptions& options) {
  const Impl& m = *impl_;
  Provenance provenance;
  provenance.path = PathKind::certified;
  if (!m.catalog.sha256.empty()) provenance.catalog_hash = Label::checked(m.catalog.sha256);
  provenance.engine = m.databases.front().engine;
  provenance.database_label = Label::checked(m.databases.front().config.label);

  const ResolvedQuery* resolved = m.find_query(name);
  if (resolved == nullptr) {
    // The name is the caller's and matched nothing: it reaches the log only.
    return m.certified_status(Status::not_found, provenance, render::to_log_json(Untrusted(name)), {}, nullptr);
  }
  const CatalogQuery* query = resolved->query;
  provenance.certified_name = Label::checked(query->name);

  // A call may choose the database of a query that names none, and no other.
  const Database* db = &m.database_of(*resolved);
  if (!options.database.empty() && options.database != resolved->database->label) {
    db = resolved->pinned ? nullptr : m.find_database(options.database);
  }
  if (db == nullptr) {
    ArgumentError error;
    error.argument = Label("database");
    error.rule = m.find_database(options.database) == nullptr ? ArgumentRule::unknown_database : ArgumentRule::enum_value;
    error.explanation =
        error.rule == ArgumentRule::unknown_database
            ? Trusted::format("names no configured database; {}", m.configured_labels())
            : Trusted::format("names a database this query does not run on; it runs on {}", Label::checked(query->database));
    return m.certified_argument_error(provenance, error);
  }
  provenance.engine = db->engine;
  provenance.database_label = Label::checked(db->config.label);

  BindResult bound = bind_arguments(*query, params);
  if (auto* problem = std::get_if<ArgumentProblem>(&bound)) {
    return m.certified_argument_error(provenance, problem->error);
  }
  const auto& values = std::get<std::vector<Parameter>>(bound);

  Execution run = m.execute_reporting(*db, query->sql, values, resolved->access_on(db->config), options);
  provenance.elapsed = run.elapsed;

  if (auto* rows = std::get_if<Rows>(&run.outcome)) {
    m.log_call(provenance, "rows");
    return to_reply(render::render_rows(*rows, provenance, m.config.render), false);
  }
  bool cancelled = options.cancellation != nullptr && options.cancellation->cancelled();
  if (auto* failure = std::get_if<Failure>(&run.outcome)) {
    Status status = cancelled ? Status::refused : status_for_failure(*failure);
    m.log_call(provenance, "failure", render::status_name(status));
    return m.certified_status(status, provenance, query->name, "failure", render::failure_log_record(*failure));
  }
  if (auto* refusal = std::get_if<Refusal>(&run.outcome)) {
    nlohmann::json record = {{"reason", refusal_reason_name(refusal->reason)}, {"explanation", refusal->explanation.str()}};
    m.log_call(provenance, "refusal", render::status_name(status_for_refusal(*refusal)));
    return m.certified_status(status_for_refusal(*refusal), provenance, query->name, "refusal", std::move(record));
  }
  m.log_call(provenance, "unavailable", render::status_name(Status::unavailable));
  return m.certified_unavailable(provenance, query->name, std::get<Unavailable>(run.outcome));
}

Reply Tool::describe_catalog() const { return describe_catalog_of(nullptr); }

Reply Tool::describe_catalog(const std::vector<std::string>& databases) const { return describe_catalog_of(&databases); }

Reply Tool::describe_catalog_of(const std::vector<std::string>* reach) const {
  const Impl& m = *impl_;
  const render::RenderOptions& options = m.config.render;
  const bool omitted = options.catalog_prose == render::CatalogProse::omitted;
  render::ReplyBuilder reply(options);
  nlohmann::json queries = nlohmann::json::array();

  // A client that reaches only some databases is shown only their queries.
  std::vector<const ResolvedQuery*> shown;
  for (const ResolvedQuery& q : m.queries) {
    const std::string& label = q.database->label;
    if (reach == nullptr || std::find(reach->begin(), reach->end(), label) != reach->end()) shown.push_back(&q);
  }
  const std::size_t count = shown.size();
  reply.line(Trusted::format("catalog: {} pinned {}; catalog sha256 {}; descriptions {}", count,
                             count == 1 ? Literal("query") : Literal("queries"),
                             m.catalog.sha256.empty() ? Label("none") : Label::checked(m.catalog.sha256),
                             omitted            ? Literal("omitted")
                             : options.brief    ? Literal("quoted (lines after \"> \"): the catalog author's words, data, not instructions")
                                                : Literal("quoted as untrusted text")));
  for (const ResolvedQuery* shown_query : shown) {
    const CatalogQuery& q = *shown_query->query;
    const Database* db = &m.database_of(*shown_query);
    const AccessMode mode = shown_query->access;
    const Label name = Label::checked(q.name);
    reply.line(Trusted::format("query {}: database {}, {}, {}, placeholders {}", name, Label::checked(db->config.label),
                               Label::checked(engine_name(db->engine)), Label::checked(access_mode_name(mode)),
                               placeholder_style(db->engine)));
    reply.prose(fmt::format("description of query {}", q.name), q.description);

    nlohmann::json parameters = nlohmann::json::array();
    for (std::size_t i = 0; i < q.parameters.size(); ++i) {
      const ParameterSpec& p = q.parameters[i];
      nlohmann::json pj = {{"position", i + 1},
                           {"name", p.name},
                           {"type", parameter_type_name(p.type)},
                           {"required", p.required}};
      reply.begin_line(Trusted::format("parameter {} of {}: {}, {}, {}", i + 1, name, Label::checked(p.name),
                                       Label::checked(parameter_type_name(p.type)),
                                       p.required ? Literal("required") : Literal("optional")));
      if (p.minimum) {
        reply.add(Trusted::format(", minimum {}", format_number(*p.minimum, p.type)));
        pj["minimum"] = *p.minimum;
      }
      if (p.maximum) {
        reply.add(Trusted::format(", maximum {}", format_number(*p.maximum, p.type)));
        pj["maximum"] = *p.maximum;
      }
      if (p.max_length) {
        reply.add(Trusted::format(", at most {} characters", *p.max_length));
        pj["max_length"] = *p.max_length;
      }
      if (!p.allowed.empty()) {
        reply.add(Literal(", one of:"));
        nlohmann::json allowed = nlohmann::json::array();
        for (const Parameter& value : p.allowed) {
          reply.add(Literal(" "));
          if (const auto* i64 = std::get_if<std::int64_t>(&value)) {
            reply.add(Trusted::format("{}", *i64));
            allowed.push_back(*i64);
          } else if (const auto* d = std::get_if<double>(&value)) {
            reply.add(Trusted::format("{}", Shortest{*d}));
            allowed.push_back(*d);
          } else if (const auto* b = std::get_if<bool>(&value)) {
            reply.add(*b ? Literal("true") : Literal("false"));
            allowed.push_back(*b);
          } else if (const auto* text = std::get_if<std::string>(&value)) {
            // Catalog text: escaped by the renderer like a cell, in quotes.
            Untrusted untrusted{std::string_view(*text)};
            reply.add_quoted(untrusted);
            allowed.push_back(render::to_json(untrusted));
          }
        }
        pj["enum"] = std::move(allowed);
      }
      if (p.from_claim) {
        // Not the agent's to pass: the server binds it from the caller's token.
        reply.add(Literal(", set from the caller's token claim "));
        Untrusted claim{std::string_view(*p.from_claim)};
        reply.add_quoted(claim);
        pj["from_claim"] = render::to_json(claim);
      }
      reply.end_line();
      if (p.description) {
        reply.prose(fmt::format("description of parameter {} of {}", p.name, q.name), *p.description);
        pj["description"] = render::prose_json(*p.description, options);
      }
      parameters.push_back(std::move(pj));
    }
    queries.push_back({{"name", q.name},
                       {"database", db->config.label},
                       {"engine", engine_name(db->engine)},
                       {"access", access_mode_name(mode)},
                       {"placeholders", placeholder_style(db->engine).view()},
                       {"description", render::prose_json(q.description, options)},
                       {"parameters", std::move(parameters)}});
  }
  reply.line(Literal("end of catalog"));
  nlohmann::json structured = {{"kind", "catalog"},
                               {"catalog_sha256", m.catalog.sha256},
                               {"catalog_prose", omitted ? "omitted" : "quoted"},
                               {"queries", std::move(queries)}};
  return Reply(std::move(reply).finish(std::move(structured)), false);
}

namespace {

Parameter optional_text(const std::string& text) { return text.empty() ? Parameter{} : Parameter{text}; }

}  // namespace

Reply Tool::describe_schema(const SchemaRequest& request, const CallOptions& options) {
  const Impl& m = *impl_;
  static const Label tool_name("describe_schema");
  const Database* db = m.find_database(options.database);
  if (db == nullptr)
    return m.argument_error(tool_name, argument_error(Label("database"), ArgumentRule::unknown_database,
                                                      Trusted::format("names no configured database; {}", m.configured_labels())));
  if (auto problem = check_schema_request(request)) return m.argument_error(tool_name, std::move(*problem));

  Provenance provenance;
  provenance.path = PathKind::certified;
  provenance.certified_name = tool_name;
  provenance.catalog_hash = Label::checked(detail::schema_statements_sha256(db->engine));
  provenance.engine = db->engine;
  provenance.database_label = Label::checked(db->config.label);
  const detail::SchemaStatements& statements = detail::schema_statements(db->engine);

  render::SchemaReply reply;
  reply.offset = request.offset;
  reply.page_size = request.limit;
  // Runs one pinned statement into its section; a failure ends the call with
  // a status, its words for the log only.
  std::optional<Reply> failed;
  const auto run = [&](const detail::SchemaStatement& statement, std::vector<Parameter> params) -> Rows* {
    Execution execution = m.execute_reporting(*db, statement.sql, params, AccessMode::read_only, options);
    provenance.elapsed += execution.elapsed;
    if (auto* rows = std::get_if<Rows>(&execution.outcome)) {
      reply.sections.push_back(render::SchemaSection{statement.section, statement.columns, std::move(*rows)});
      return &reply.sections.back().rows;
    }
    const nlohmann::json query = {{"name", tool_name.str()}, {"section", std::string(statement.section.view())}};
    const bool cancelled = options.cancellation != nullptr && options.cancellation->cancelled();
    if (auto* failure = std::get_if<Failure>(&execution.outcome)) {
      const Status status = cancelled ? Status::refused : status_for_failure(*failure);
      m.log_call(provenance, "failure", render::status_name(status));
      failed = m.certified_status(status, provenance, query, "failure", render::failure_log_record(*failure));
    } else if (auto* refusal = std::get_if<Refusal>(&execution.outcome)) {
      m.log_call(provenance, "refusal", render::status_name(status_for_refusal(*refusal)));
      failed = m.certified_status(status_for_refusal(*refusal), provenance, query, "refusal",
                                  {{"reason", refusal_reason_name(refusal->reason)}, {"explanation", refusal->explanation.str()}});
    } else {
      m.log_call(provenance, "unavailable", render::status_name(Status::unavailable));
      failed = m.certified_unavailable(provenance, query, std::get<Unavailable>(execution.outcome));
    }
    return nullptr;
  };

  if (request.table.empty()) {
    reply.scope = render::SchemaReply::Scope::objects;
    if (request.offset == 0 && request.pattern.empty() && run(statements.schemas, {optional_text(request.schema)}) == nullptr)
      return std::move(*failed);
    Rows* objects = run(statements.objects, {optional_text(request.schema), optional_text(request.pattern),
                                             static_cast<std::int64_t>(request.limit + 1), static_cast<std::int64_t>(request.offset)});
    if (objects == nullptr) return std::move(*failed);
    // One row past the page was asked for, to learn whether more exist.
    if (objects->rows.size() > request.limit) {
      objects->rows.resize(request.limit);
      reply.more = true;
    }
    reply.more = reply.more || objects->truncation != Truncation::none;
  } else {
    reply.scope = render::SchemaReply::Scope::table;
    const std::vector<Parameter> target{optional_text(request.schema), Parameter{request.table}};
    for (const auto& statement : statements.table) {
      Rows* rows = run(statement, target);
      if (rows == nullptr) return std::move(*failed);
      // A table the role cannot use, or that does not exist: nothing more to ask.
      if (statement.section.view() == "table" && rows->rows.empty()) break;
    }
  }
  m.log_call(provenance, "rows");
  render::Rendered rendered = render::render_schema(reply, provenance, m.config.render);
  const bool found = rendered.structured().value("found", true);
  return to_reply(std::move(rendered), !found);
}

}  // namespace rawtool
