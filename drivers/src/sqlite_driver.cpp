// The SQLite driver. Read-only mode is enforced by SQLite itself, in layers
// that each hold alone: the file is opened read-only, through a VFS that
// creates no file, `query_only` is on, an authorizer denies every action that
// writes or reaches outside the database file, sqlite3_stmt_readonly() must
// agree before a statement runs, defensive mode is on and schema code is not
// trusted. Memory is bounded by SQLite's length limit, set per call from the
// caps, and by its heap limit, which is process-wide.
#include "detail/row_budget.hpp"
#include "detail/sqlite_failure.hpp"
#include "detail/sqlite_pragmas.hpp"
#include "detail/sqlite_vfs.hpp"

#include <rawtool/driver.hpp>

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <stop_token>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace rawtool {
namespace {

using Clock = std::chrono::steady_clock;

Refusal refuse(RefusalReason reason, Trusted explanation) { return Refusal{reason, std::move(explanation)}; }
Refusal refuse(RefusalReason reason, Literal explanation) { return Refusal{reason, explanation}; }

/// Skips whitespace, comments and empty statements (bare semicolons). What is
/// left, if anything, is a further statement.
bool only_trivia(std::string_view rest) {
  std::size_t i = 0;
  while (i < rest.size()) {
    const char c = rest[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == ';') {
      ++i;
    } else if (rest.substr(i, 2) == "--") {
      const std::size_t end = rest.find('\n', i);
      i = end == std::string_view::npos ? rest.size() : end + 1;
    } else if (rest.substr(i, 2) == "/*") {
      const std::size_t end = rest.find("*/", i + 2);
      i = end == std::string_view::npos ? rest.size() : end + 2;  // SQLite accepts an unterminated comment
    } else {
      return false;
    }
  }
  return true;
}

Untrusted owned_text(const char* text) { return text == nullptr ? Untrusted{} : Untrusted(text, std::strlen(text)); }

constexpr std::uint64_t mib = 1024 * 1024;
/// The length limit never goes below this: a statement may read and compute
/// on values larger than any cell the byte cap keeps.
constexpr std::uint64_t length_limit_floor = 32 * mib;
/// The heap limit rawtool manages never goes below this.
constexpr std::uint64_t heap_limit_floor = 48 * mib;
/// Room the managed heap limit leaves above the largest length limit: the
/// page cache, the schema, a statement's other values.
constexpr std::uint64_t heap_limit_headroom = 16 * mib;

sqlite3_int64 to_sqlite_int64(std::uint64_t value) noexcept {
  return static_cast<sqlite3_int64>(std::min<std::uint64_t>(value, std::numeric_limits<sqlite3_int64>::max()));
}

/// SQLite's hard heap limit as rawtool manages it; see set_sqlite_heap_limit.
class HeapLimit {
public:
  static HeapLimit& instance() {
    static HeapLimit limit;
    return limit;
  }

  /// A call is about to run under `length_limit`: while rawtool manages the
  /// limit, make it room for that.
  void make_room_for(std::uint64_t length_limit) {
    std::lock_guard lock(mutex_);
    const std::uint64_t now = sqlite_heap_limit();
    if (!looked_) {
      looked_ = true;
      if (now != 0) managed_ = false;  // set before rawtool's first call: the embedding program's
    } else if (managed_ && now != applied_) {
      managed_ = false;  // set by the embedding program since rawtool last did
    }
    largest_length_limit_ = std::max(largest_length_limit_, length_limit);
    if (managed_ && now < target()) apply(target());
  }

  void take_over(std::optional<std::uint64_t> bytes) {
    std::lock_guard lock(mutex_);
    looked_ = true;
    managed_ = !bytes.has_value();
    apply(bytes ? *bytes : target());
  }

private:
  [[nodiscard]] std::uint64_t target() const noexcept {
    return std::max(heap_limit_floor, largest_length_limit_ + heap_limit_headroom);
  }
  void apply(std::uint64_t bytes) {
    sqlite3_hard_heap_limit64(to_sqlite_int64(bytes));
    applied_ = sqlite_heap_limit();
  }

  std::mutex mutex_;
  bool looked_ = false;   ///< whether rawtool has looked at the process's limit yet
  bool managed_ = true;   ///< whether rawtool sets the limit
  std::uint64_t applied_ = 0;
  std::uint64_t largest_length_limit_ = 0;
};

// ---- A VFS that creates no file that outlasts a connection ----

sqlite3_vfs* wrapped(sqlite3_vfs* vfs) noexcept { return static_cast<sqlite3_vfs*>(vfs->pAppData); }

int open_without_creating(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  sqlite3_vfs* real = wrapped(vfs);
  constexpr int lasting = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL | SQLITE_OPEN_SUPER_JOURNAL;
  if ((flags & lasting) != 0) flags &= ~SQLITE_OPEN_CREATE;
  if ((flags & SQLITE_OPEN_WAL) != 0 && name != nullptr) {
    // The -shm is opened next, by the shared-memory methods, which create it
    // when it is missing; so it must exist now. SQLite holds a shared lock on
    // the database by now, and the connection that would remove the -wal and
    // the -shm must first take an exclusive one: what exists now stays.
    const std::string shm = std::string(sqlite3_filename_database(name)) + "-shm";
    int exists = 0;
    if (real->xAccess(real, shm.c_str(), SQLITE_ACCESS_EXISTS, &exists) != SQLITE_OK || exists == 0) {
      return SQLITE_CANTOPEN;
    }
  }
  return real->xOpen(real, name, file, flags, out_flags);
}

/// The wrapper's methods, each handing the call to the wrapped VFS. The
/// file objects are the wrapped VFS's own, so only opening differs.
sqlite3_vfs make_no_create_vfs(sqlite3_vfs* real) {
  sqlite3_vfs vfs{};
  vfs.iVersion = std::min(real->iVersion, 3);
  vfs.szOsFile = real->szOsFile;
  vfs.mxPathname = real->mxPathname;
  vfs.zName = "rawtool-no-create";
  vfs.pAppData = real;
  vfs.xOpen = &open_without_creating;
  vfs.xDelete = [](sqlite3_vfs* v, const char* name, int sync) { return wrapped(v)->xDelete(wrapped(v), name, sync); };
  vfs.xAccess = [](sqlite3_vfs* v, const char* name, int flags, int* out) {
    return wrapped(v)->xAccess(wrapped(v), name, flags, out);
  };
  vfs.xFullPathname = [](sqlite3_vfs* v, const char* name, int size, char* out) {
    return wrapped(v)->xFullPathname(wrapped(v), name, size, out);
  };
  if (real->xDlOpen != nullptr) {
    vfs.xDlOpen = [](sqlite3_vfs* v, const char* name) { return wrapped(v)->xDlOpen(wrapped(v), name); };
    vfs.xDlError = [](sqlite3_vfs* v, int size, char* out) { wrapped(v)->xDlError(wrapped(v), size, out); };
    vfs.xDlSym = [](sqlite3_vfs* v, void* handle, const char* symbol) {
      return wrapped(v)->xDlSym(wrapped(v), handle, symbol);
    };
    vfs.xDlClose = [](sqlite3_vfs* v, void* handle) { wrapped(v)->xDlClose(wrapped(v), handle); };
  }
  vfs.xRandomness = [](sqlite3_vfs* v, int size, char* out) { return wrapped(v)->xRandomness(wrapped(v), size, out); };
  vfs.xSleep = [](sqlite3_vfs* v, int microseconds) { return wrapped(v)->xSleep(wrapped(v), microseconds); };
  vfs.xCurrentTime = [](sqlite3_vfs* v, double* out) { return wrapped(v)->xCurrentTime(wrapped(v), out); };
  vfs.xGetLastError = [](sqlite3_vfs* v, int size, char* out) {
    return wrapped(v)->xGetLastError(wrapped(v), size, out);
  };
  if (vfs.iVersion >= 2) {
    vfs.xCurrentTimeInt64 = [](sqlite3_vfs* v, sqlite3_int64* out) {
      return wrapped(v)->xCurrentTimeInt64(wrapped(v), out);
    };
  }
  if (vfs.iVersion >= 3) {
    vfs.xSetSystemCall = [](sqlite3_vfs* v, const char* name, sqlite3_syscall_ptr call) {
      return wrapped(v)->xSetSystemCall(wrapped(v), name, call);
    };
    vfs.xGetSystemCall = [](sqlite3_vfs* v, const char* name) { return wrapped(v)->xGetSystemCall(wrapped(v), name); };
    vfs.xNextSystemCall = [](sqlite3_vfs* v, const char* name) {
      return wrapped(v)->xNextSystemCall(wrapped(v), name);
    };
  }
  return vfs;
}

// ---- Paths ----

/// `path` as a URI SQLite reads back as exactly that file name, whatever it
/// holds ('?', '#', '%', a leading "file:"), with `query` appended.
std::string file_uri(std::string_view path, std::string_view query) {
  std::string uri = "file:";
  // An empty authority, so that a path starting with "//" is not read as a host.
  if (!path.empty() && path.front() == '/') uri += "//";
  for (const char c : path) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
                       c == '.' || c == '-' || c == '_' || c == '~';
    if (plain) {
      uri += c;
    } else {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
  }
  if (!query.empty()) {
    uri += '?';
    uri += query;
  }
  return uri;
}

/// True when the file at `path` is a SQLite database in WAL mode: bytes 18 and
/// 19 of its header, the write and read format versions, are 2.
bool database_file_is_wal(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::array<char, 20> header{};
  if (!file.read(header.data(), static_cast<std::streamsize>(header.size()))) return false;
  return header[18] == 2 && header[19] == 2;
}

class SqliteDriver final : public Driver {
public:
  SqliteDriver(std::string path, AccessMode mode, SqliteOptions options)
      : path_(std::move(path)), mode_(mode), options_(options) {}

  ~SqliteDriver() override {
    std::lock_guard lock(db_mutex_);
    if (db_ != nullptr) sqlite3_close_v2(db_);
    if (memory_holder_ != nullptr) sqlite3_close_v2(memory_holder_);
    if (wal_holder_ != nullptr) sqlite3_close_v2(wal_holder_);  // the last: it checkpoints, as the connection did
  }

  [[nodiscard]] Engine engine() const noexcept override { return Engine::sqlite; }

  using Driver::execute;
  Outcome execute(std::string_view sql, std::span<const Parameter> params, const Limits& limits, AccessMode mode,
                  std::stop_token stop) override {
    if (auto refusal = statement_size_refusal(sql, limits)) return std::move(*refusal);
    // sqlite3_prepare_v3 takes the length as an int.
    if (sql.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      return refuse(RefusalReason::limit, "The statement is longer than SQLite can take.");
    }
    if (mode == AccessMode::read_write && mode_ == AccessMode::read_only) {
      return refuse(RefusalReason::read_only, "This database was opened read-only.");
    }
    if (stop.stop_requested()) {
      return refuse(RefusalReason::cancelled, "The call was cancelled before its statement was sent.");
    }
    const Call call(*this, limits);
    // Declared after `call`: gone before the call's cleanup, which runs to its
    // end. A stop that came since the check above runs it at once, and the
    // statement is refused at its first step.
    const std::stop_callback on_stop(stop, [this] { interrupt(); });
    return run_call(sql, params, limits, mode);
  }

  std::variant<StatementShape, Failure, Refusal, Unavailable> describe(std::string_view sql,
                                                                       std::span<const Parameter> /*params*/,
                                                                       AccessMode mode) override {
    const Limits limits;
    if (sql.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      return refuse(RefusalReason::limit, "The statement is longer than the configured maximum.");
    }
    if (mode == AccessMode::read_write && mode_ == AccessMode::read_only) {
      return refuse(RefusalReason::read_only, "This database was opened read-only.");
    }
    const Call call(*this, limits);
    // What open_database and stopped answer: never Rows.
    const auto as_shape_outcome = [](Outcome& outcome) -> std::variant<StatementShape, Failure, Refusal, Unavailable> {
      if (auto* failure = std::get_if<Failure>(&outcome)) return std::move(*failure);
      if (auto* unavailable = std::get_if<Unavailable>(&outcome)) return std::move(*unavailable);
      if (auto* refusal = std::get_if<Refusal>(&outcome)) return std::move(*refusal);
      return refuse(RefusalReason::internal, "The statement was run instead of prepared.");
    };
    sqlite3_stmt* raw = nullptr;
    std::optional<Outcome> instead = prepare(sql, limits, mode, raw);
    const Statement statement(raw);
    if (instead) return as_shape_outcome(*instead);
    StatementShape shape;
    shape.parameter_count = static_cast<std::size_t>(sqlite3_bind_parameter_count(raw));
    for (int i = 1; i <= sqlite3_bind_parameter_count(raw); ++i) {
      const char* name = sqlite3_bind_parameter_name(raw, i);
      shape.placeholders.push_back(name == nullptr ? Untrusted(std::string_view("?")) : owned_text(name));
    }
    shape.effect = writes(raw) ? StatementShape::Effect::writes : StatementShape::Effect::reads;
    return shape;
  }

  /// Through execute: opening is checked the same way (a WAL
  /// database read-only mode cannot read without making files is reported
  /// with the refusal's words).
  std::variant<DatabaseReport, Unavailable> inspect() override {
    Outcome outcome = execute("PRAGMA encoding", {}, Limits{}, AccessMode::read_only);
    if (auto* unavailable = std::get_if<Unavailable>(&outcome)) return std::move(*unavailable);
    if (const auto* refusal = std::get_if<Refusal>(&outcome)) return Unavailable{Untrusted(refusal->explanation.view())};
    if (const auto* failure = std::get_if<Failure>(&outcome)) return Unavailable{failure->message};
    DatabaseReport report;
    report.engine = Engine::sqlite;
    report.server_version = owned_text(sqlite3_libversion());
    const Rows& rows = std::get<Rows>(outcome);
    if (!rows.rows.empty() && !rows.rows[0].empty() && rows.rows[0][0]) report.encoding = *rows.rows[0][0];
    return report;
  }

private:
  enum class DeniedBy { nothing, write, policy };

  /// Owns a prepared statement.
  class Statement {
  public:
    explicit Statement(sqlite3_stmt* statement) noexcept : statement_(statement) {}
    ~Statement() { sqlite3_finalize(statement_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

  private:
    sqlite3_stmt* statement_;
  };

  /// One call, from before the connection is opened to after it is cleaned:
  /// the deadline and the cancel flag hold for all of it (opening and
  /// preparing can run SQL, loading the schema), and whatever the statement
  /// left behind is undone when the call ends.
  class Call {
  public:
    Call(SqliteDriver& driver, const Limits& limits) : driver_(driver) { driver_.begin_call(limits); }
    ~Call() { driver_.end_call(); }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

  private:
    SqliteDriver& driver_;
  };

  void begin_call(const Limits& limits) {
    deadline_ = Clock::now() + limits.statement_timeout;
    timeout_ms_ = limits.statement_timeout.count();
    timed_out_ = false;
    reopen_after_call_ = false;
    std::lock_guard lock(db_mutex_);
    cancel_requested_.store(false);
    running_.store(true);
  }

  /// What a call's stop does while the call runs: marks it and interrupts
  /// the statement. From any thread.
  void interrupt() noexcept {
    std::lock_guard lock(db_mutex_);
    if (!running_.load()) return;
    cancel_requested_.store(true);
    if (db_ != nullptr) sqlite3_interrupt(db_);
  }

  /// Leaves the connection as a freshly opened one would be, or closes it so
  /// that the next call opens one. The statement is already finalized.
  ///
  /// Connections are shared by every caller (token, OAuth subject, stdio
  /// session) of this database's pool, so what one call leaves on its
  /// connection must not reach the next call, whoever makes it. What a
  /// statement can leave on a SQLite connection, and what ends it here:
  /// - an open transaction or savepoint: rolled back below, or the
  ///   connection is closed;
  /// - a setting (a pragma with an argument): the authorizer marks the call,
  ///   and the connection is closed;
  /// - anything in the temp schema (tables, views, triggers, also ON a main
  ///   table, indexes, virtual tables), the rowid last inserted and the change
  ///   counts: only a statement that writes makes them, and SQLite compiles
  ///   every write, to the temp database too, into a program that
  ///   sqlite3_stmt_readonly() reports as not read-only; run() marks such a
  ///   call, and the connection is closed. The counts are also checked here,
  ///   which costs nothing, in case a write ever got past that;
  /// - ATTACH: refused in every mode (authorizer, and a limit of 0);
  /// - functions, collations, modules: SQL cannot create them; the one SQL
  ///   function that registers something (fts3_tokenizer) and
  ///   load_extension are denied by the authorizer.
  /// So a read-only call, the common case, keeps its connection, and only a
  /// call that wrote pays for opening a new one (docs/sqlite.md has the figures). A
  /// read-write ":memory:" database lives in memory that memory_holder_ keeps
  /// open, so reopening keeps its tables and drops only the connection.
  void end_call() noexcept {
    {
      std::lock_guard lock(db_mutex_);
      running_.store(false);
    }
    // The deadline and a cancel were the statement's; the cleanup runs to its end.
    deadline_ = Clock::time_point::max();
    cancel_requested_.store(false);
    if (db_ == nullptr) return;
    bool clean = connection_is_clean();
    if (!clean) {
      // A statement may leave a transaction open (BEGIN, SAVEPOINT).
      const int rolled_back = sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      clean = rolled_back == SQLITE_OK && connection_is_clean();
    }
    const bool as_opened = sqlite3_total_changes64(db_) == 0 && sqlite3_last_insert_rowid(db_) == 0;
    if (!clean || reopen_after_call_ || !as_opened) close_connection();
  }

  [[nodiscard]] bool connection_is_clean() const noexcept {
    return sqlite3_get_autocommit(db_) != 0 && sqlite3_txn_state(db_, nullptr) == SQLITE_TXN_NONE &&
           sqlite3_next_stmt(db_, nullptr) == nullptr;
  }

  /// Closes the connection (releasing every lock it holds); the next call opens a new one.
  void close_connection() noexcept {
    std::lock_guard lock(db_mutex_);
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }

  /// Opens the database if needed and prepares `sql` for a call in `mode`:
  /// sets `raw` to the statement (the caller owns it, also when an answer is
  /// returned) and returns nothing, or returns what the call answers instead
  /// (the engine's failure, a denial, an empty statement, more than one).
  std::optional<Outcome> prepare(std::string_view sql, const Limits& limits, AccessMode mode, sqlite3_stmt*& raw) {
    if (auto refused = open_database(limits)) return refused;
    read_only_ = mode == AccessMode::read_only;
    apply_limits(limits);

    denied_ = DeniedBy::nothing;
    actions_ = 0;
    pragma_read_ = false;
    const char* tail = nullptr;
    const int prepared = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), 0, &raw, &tail);
    if (prepared != SQLITE_OK) {
      if (denied_ != DeniedBy::nothing) return refusal_for_denial();
      return stopped(prepared);
    }
    if (raw == nullptr) return refuse(RefusalReason::empty_statement, "The statement is empty.");
    const std::size_t used = static_cast<std::size_t>(tail - sql.data());
    if (!only_trivia(sql.substr(used))) {
      return refuse(RefusalReason::multiple_statements, "Only one statement may run per call.");
    }
    return std::nullopt;
  }

  /// Whether a prepared statement writes. sqlite3_stmt_readonly() judges by
  /// the program SQLite compiled, and counts `PRAGMA journal_mode` as a write
  /// whatever its argument. A statement that is nothing but a pragma the
  /// authorizer let through as a read is judged by the authorizer's lists
  /// instead.
  [[nodiscard]] bool writes(sqlite3_stmt* statement) const noexcept {
    const bool only_a_pragma_read = pragma_read_ && actions_ == 1;
    return sqlite3_stmt_readonly(statement) == 0 && !only_a_pragma_read;
  }

  Outcome run_call(std::string_view sql, std::span<const Parameter> params, const Limits& limits, AccessMode mode) {
    sqlite3_stmt* raw = nullptr;
    std::optional<Outcome> instead = prepare(sql, limits, mode, raw);
    const Statement statement(raw);
    if (instead) return std::move(*instead);
    if (read_only_ && writes(raw)) {
      return refuse(RefusalReason::read_only, "The statement would write, and this connection is read-only.");
    }
    if (auto bad = bind(raw, params)) return std::move(*bad);
    // A cancel that came while the statement was prepared: SQLite forgets an
    // interrupt when a statement starts on an idle connection.
    if (cancel_requested_.load()) return refuse(RefusalReason::cancelled, "The statement was cancelled.");
    return run(raw, limits);
  }

  /// Sets this call's length limit and makes room for it in the heap limit.
  void apply_limits(const Limits& limits) {
    const std::uint64_t wanted = std::max(length_limit_floor, limits.max_bytes);
    sqlite3_limit(db_, SQLITE_LIMIT_LENGTH,
                  static_cast<int>(std::min<std::uint64_t>(wanted, std::numeric_limits<int>::max())));
    // SQLite caps it at the largest it was built for; name the one in force.
    length_limit_ = static_cast<std::uint64_t>(sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1));
    HeapLimit::instance().make_room_for(length_limit_);
    sqlite3_busy_timeout(db_, static_cast<int>(std::min<std::chrono::milliseconds::rep>(
                                  limits.lock_timeout.count(), std::numeric_limits<int>::max())));
  }

  /// Why sqlite3_open_v2 failed with `code`: the file missing, or there and
  /// not openable, told apart by asking the file system, not SQLite's words.
  /// The complaint, for the operator log, names the path.
  Unavailable open_failure(int code, sqlite3* db) const {
    const std::string said = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
    if ((code & 0xff) != SQLITE_CANTOPEN) return Unavailable{Untrusted(fmt::format("{}: {}", path_, said))};
    std::error_code error;
    if (!std::filesystem::exists(std::filesystem::path(path_), error) && !error) {
      return Unavailable{Untrusted(fmt::format("the SQLite file {} does not exist", path_)), UnavailableCause::file_missing};
    }
    return Unavailable{Untrusted(fmt::format("the SQLite file {} could not be opened: {}", path_, said)),
                       UnavailableCause::file_unreadable};
  }

  /// Opens the database on first use. Returns what the call answers instead
  /// when it cannot: Unavailable, or a Refusal for a WAL database that cannot
  /// be read without making files.
  std::optional<Outcome> open_database(const Limits& limits) {
    if (db_ != nullptr) return std::nullopt;
    if (path_.find('\0') != std::string::npos) {
      return Unavailable{Untrusted(std::string_view("the SQLite path holds a NUL byte"))};
    }
    const bool read_only = mode_ == AccessMode::read_only;
    const bool in_memory = path_ == ":memory:";
    int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_EXRESCODE;
    if (!read_only && (options_.create_if_missing || in_memory)) flags |= SQLITE_OPEN_CREATE;
    std::string name = path_;
    const char* vfs = nullptr;
    if (in_memory && !read_only) {
      // A connection that wrote is closed after its call (see end_call), so a
      // read-write ":memory:" database is a memdb database of this driver's
      // own, which another connection, never given a statement, keeps open.
      // Its name is reachable only through a URI, and ATTACH is refused.
      static std::atomic<std::uint64_t> memory_databases{0};
      if (memory_name_.empty()) memory_name_ = fmt::format("file:/rawtool-memory-{}?vfs=memdb", ++memory_databases);
      name = memory_name_;
      flags |= SQLITE_OPEN_URI;
      if (memory_holder_ == nullptr) {
        const int held = sqlite3_open_v2(name.c_str(), &memory_holder_, flags, nullptr);
        if (held != SQLITE_OK) {
          Unavailable unavailable{memory_holder_ != nullptr ? owned_text(sqlite3_errmsg(memory_holder_))
                                                            : owned_text(sqlite3_errstr(held))};
          sqlite3_close_v2(memory_holder_);
          memory_holder_ = nullptr;
          return unavailable;
        }
      }
    } else if (!in_memory) {
      flags |= SQLITE_OPEN_URI;
      std::string_view query;
      if (read_only) {
        switch (options_.read_only_wal) {
          case SqliteReadOnlyWal::existing_files:
            vfs = detail::no_create_vfs_name();
            break;
          case SqliteReadOnlyWal::immutable:
            query = "immutable=1";
            vfs = detail::no_create_vfs_name();
            break;
          case SqliteReadOnlyWal::create_files:
            break;
        }
      }
      name = file_uri(path_, query);
    }
    sqlite3* db = nullptr;
    const int opened = sqlite3_open_v2(name.c_str(), &db, flags, vfs);
    if (opened != SQLITE_OK) {
      Unavailable unavailable = open_failure(opened, db);
      sqlite3_close_v2(db);
      return unavailable;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
    // ATTACH creates files; no mode may attach another database.
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
    if (read_only) sqlite3_exec(db, "PRAGMA query_only = 1", nullptr, nullptr, nullptr);
    sqlite3_set_authorizer(db, &SqliteDriver::authorize, this);
    sqlite3_progress_handler(db, 1000, &SqliteDriver::on_progress, this);
    sqlite3_busy_timeout(db, static_cast<int>(std::min<std::chrono::milliseconds::rep>(
                                 limits.lock_timeout.count(), std::numeric_limits<int>::max())));
    // Opening reads nothing; the first read finds a file that is not a
    // database, and a WAL database's missing -wal and -shm. Read now, so that
    // both are told in so many words; any other failure is left to the
    // statement, which meets it again.
    const int probed = in_memory ? SQLITE_OK : sqlite3_exec(db, "SELECT 1 FROM sqlite_schema LIMIT 1", nullptr, nullptr, nullptr);
    if ((probed & 0xff) == SQLITE_NOTADB) {
      sqlite3_close_v2(db);
      return Unavailable{Untrusted(fmt::format("the SQLite file {} is not a database", path_)), UnavailableCause::not_a_database};
    }
    if (read_only && !in_memory && options_.read_only_wal == SqliteReadOnlyWal::existing_files) {
      if ((probed & 0xff) == SQLITE_CANTOPEN && database_file_is_wal(path_)) {
        sqlite3_close_v2(db);
        return refuse(RefusalReason::not_permitted,
                      "This SQLite database is in WAL mode and its -wal and -shm files do not both exist, so no other "
                      "connection has it open. Reading it would create them beside it, and they would outlast the "
                      "call, so the read-only connection does not. An operator can keep a writer connected, set the "
                      "database's sqlite_read_only_wal to \"create_files\" or \"immutable\", or switch the database to "
                      "PRAGMA journal_mode = DELETE.");
      }
    }
    if (!read_only && !in_memory && wal_holder_ == nullptr && database_file_is_wal(path_)) hold_wal(name, flags);
    std::lock_guard lock(db_mutex_);
    db_ = db;
    return std::nullopt;
  }

  /// Closing the last connection to a WAL database checkpoints it and removes
  /// its -wal and -shm, and the next connection makes them again: that made
  /// each write call several times slower. A second connection, which runs
  /// no statement of a caller's, keeps them open for as long as the driver
  /// lives, as the connection kept between calls used to. It holds no lock a
  /// write needs; it does keep another connection from leaving WAL mode.
  void hold_wal(const std::string& name, int flags) noexcept {
    if (sqlite3_open_v2(name.c_str(), &wal_holder_, flags & ~SQLITE_OPEN_CREATE, nullptr) == SQLITE_OK) {
      sqlite3_db_config(wal_holder_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
      sqlite3_db_config(wal_holder_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
      // Reading the header opens the -wal and -shm; the read ends at once.
      if (sqlite3_exec(wal_holder_, "PRAGMA schema_version", nullptr, nullptr, nullptr) == SQLITE_OK) return;
    }
    sqlite3_close_v2(wal_holder_);  // only slower without it
    wal_holder_ = nullptr;
  }

  static int authorize(void* self, int action, const char* arg1, const char* arg2, const char*, const char*) {
    return static_cast<SqliteDriver*>(self)->authorize(action, arg1, arg2);
  }

  int authorize(int action, const char* arg1, const char* arg2) {
    ++actions_;
    const auto deny = [this](DeniedBy why) {
      if (denied_ == DeniedBy::nothing) denied_ = why;
      return SQLITE_DENY;
    };
    switch (action) {
      case SQLITE_ATTACH:
      case SQLITE_DETACH:
        return deny(DeniedBy::policy);
      case SQLITE_FUNCTION:
        return arg2 != nullptr && detail::name_in(arg2, detail::denied_functions) ? deny(DeniedBy::policy) : SQLITE_OK;
      case SQLITE_SELECT:
      case SQLITE_READ:
      case SQLITE_RECURSIVE:
      case SQLITE_TRANSACTION:
      case SQLITE_SAVEPOINT:
        return SQLITE_OK;
      case SQLITE_UPDATE:
        // Opening a pragma's table-valued function (pragma_table_info and the
        // like) asks to update the schema table's columns, and writes nothing.
        // A real write is refused anyway: the connection is read-only and
        // query_only, and sqlite3_stmt_readonly() is checked before running.
        if (arg1 != nullptr && std::string_view(arg1) == "sqlite_master") return SQLITE_OK;
        return read_only_ ? deny(DeniedBy::write) : SQLITE_OK;
      case SQLITE_PRAGMA: {
        // For a pragma, arg1 is its name and arg2 its argument, null when it has none.
        const std::string_view name = arg1 == nullptr ? std::string_view{} : std::string_view(arg1);
        if (arg2 != nullptr && detail::name_in(name, detail::process_wide_pragmas)) return deny(DeniedBy::policy);
        if (!read_only_) {
          // A setting of the connection ends with the call, as on a fresh one.
          if (arg2 != nullptr) reopen_after_call_ = true;
          return SQLITE_OK;
        }
        if (detail::name_in(name, detail::read_only_pragmas) ||
            (arg2 == nullptr && detail::name_in(name, detail::readable_setting_pragmas))) {
          pragma_read_ = true;
          return SQLITE_OK;
        }
        return deny(DeniedBy::write);
      }
      default:
        // Inserts, updates, deletes, every CREATE/DROP/ALTER, REINDEX, ANALYZE.
        return read_only_ ? deny(DeniedBy::write) : SQLITE_OK;
    }
  }

  static int on_progress(void* self) { return static_cast<SqliteDriver*>(self)->on_progress(); }

  int on_progress() noexcept {
    if (cancel_requested_.load()) return 1;
    if (Clock::now() >= deadline_) {
      timed_out_ = true;
      return 1;
    }
    return 0;
  }

  Refusal refusal_for_denial() const {
    if (denied_ == DeniedBy::write) {
      return refuse(RefusalReason::read_only, "The statement would write, and this connection is read-only.");
    }
    return refuse(RefusalReason::not_permitted,
                  "The statement uses something this tool does not permit (ATTACH, DETACH, a denied function, or a "
                  "pragma that changes a setting of the whole process).");
  }

  /// What a call answers when SQLite stopped the statement with `code`: the
  /// caller's cancel, the time limit, or a memory limit, each said in the
  /// tool's words; anything else is the database's Failure.
  Outcome stopped(int code) const {
    if (cancel_requested_.load()) return refuse(RefusalReason::cancelled, "The statement was cancelled.");
    if (timed_out_)
      return refuse(RefusalReason::timeout,
                    Trusted::format("The statement ran past its time limit, statement_timeout_ms={} "
                                    "(limits.statement_timeout_ms), and was stopped.",
                                    timeout_ms_));
    if ((code & 0xff) == SQLITE_TOOBIG) {
      return refuse(RefusalReason::limit,
                    Trusted::format("The statement made or read a value or a row longer than the length limit of {} "
                                "bytes (the larger of limits.max_bytes and 32 MiB), and was stopped.",
                                length_limit_));
    }
    if ((code & 0xff) == SQLITE_NOMEM) {
      if (const std::uint64_t heap = sqlite_heap_limit(); heap > 0) {
        return refuse(RefusalReason::limit,
                      Trusted::format("The statement needed more memory than SQLite may use in this process, the heap "
                                  "limit of {} bytes, and was stopped. Every SQLite connection in the process shares "
                                  "that limit.",
                                  heap));
      }
    }
    return failure();
  }

  Failure failure() const { return detail::sqlite_failure(db_); }

  std::optional<Outcome> bind(sqlite3_stmt* statement, std::span<const Parameter> params) const {
    if (params.size() != static_cast<std::size_t>(sqlite3_bind_parameter_count(statement))) {
      return refuse(RefusalReason::internal, "The number of parameters does not match the statement.");
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      const int index = static_cast<int>(i) + 1;
      const int bound = std::visit(
          [&](const auto& value) -> int {
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<T, std::monostate>) return sqlite3_bind_null(statement, index);
            else if constexpr (std::is_same_v<T, std::int64_t>) return sqlite3_bind_int64(statement, index, value);
            else if constexpr (std::is_same_v<T, double>) return sqlite3_bind_double(statement, index, value);
            else if constexpr (std::is_same_v<T, bool>) return sqlite3_bind_int(statement, index, value ? 1 : 0);
            else return sqlite3_bind_text64(statement, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
          },
          params[i]);
      if (bound != SQLITE_OK) return stopped(bound);
    }
    return std::nullopt;
  }

  static std::string_view storage_class_name(int type) noexcept {
    switch (type) {
      case SQLITE_INTEGER: return "INTEGER";
      case SQLITE_FLOAT: return "REAL";
      case SQLITE_TEXT: return "TEXT";
      case SQLITE_BLOB: return "BLOB";
      default: return "";
    }
  }

  Outcome run(sqlite3_stmt* statement, const Limits& limits) {
    // SQLite has no notices (nothing like NOTICE or WARNING reaches a
    // connection), so the Rows and Failure made here carry none and withhold
    // none; limits.max_notice_bytes has nothing to bound.
    detail::RowBudget budget(limits);
    const int column_count = sqlite3_column_count(statement);
    {
      std::vector<Column> declared(static_cast<std::size_t>(column_count));
      for (int c = 0; c < column_count; ++c) {
        const auto index = static_cast<std::size_t>(c);
        declared[index].name = owned_text(sqlite3_column_name(statement, c));
        declared[index].type_name = owned_text(sqlite3_column_decltype(statement, c));
      }
      budget.set_columns(std::move(declared));
    }
    std::vector<Column>& columns = budget.columns();
    const sqlite3_int64 changes_before = sqlite3_total_changes64(db_);
    // A statement that writes, even if it stops early, may leave what a fresh
    // connection has not: temp objects, a rowid, change counts (see end_call).
    if (sqlite3_stmt_readonly(statement) == 0) reopen_after_call_ = true;

    int stepped = SQLITE_ROW;
    std::uint64_t rows_seen = 0;  // for a failure after some rows: Failure::rows_before_failure
    report_rows_read(0);
    while ((stepped = sqlite3_step(statement)) == SQLITE_ROW) {
      report_rows_read(++rows_seen);
      std::uint64_t row_bytes = 0;
      for (int c = 0; c < column_count; ++c) {
        const int type = sqlite3_column_type(statement, c);
        if (type == SQLITE_BLOB) {
          row_bytes += static_cast<std::uint64_t>(sqlite3_column_bytes(statement, c));
        } else if (type != SQLITE_NULL) {
          // Numbers become text first, so the length is the text's. Null
          // here means SQLite had no memory to make the text.
          if (sqlite3_column_text(statement, c) == nullptr) return stopped(SQLITE_NOMEM);
          row_bytes += static_cast<std::uint64_t>(sqlite3_column_bytes(statement, c));
        }
      }
      if (!budget.offer(row_bytes)) break;  // SQLite can stop without cancelling anything
      std::vector<Cell> row(static_cast<std::size_t>(column_count));
      for (int c = 0; c < column_count; ++c) {
        const auto index = static_cast<std::size_t>(c);
        const int type = sqlite3_column_type(statement, c);
        if (columns[index].type_name.empty() && type != SQLITE_NULL) {
          columns[index].type_name = Untrusted(storage_class_name(type));
        }
        if (type == SQLITE_NULL) continue;
        // A zeroblob's bytes are made only now, so this can run out of memory.
        const void* data = type == SQLITE_BLOB ? sqlite3_column_blob(statement, c)
                                               : static_cast<const void*>(sqlite3_column_text(statement, c));
        const auto size = static_cast<std::size_t>(sqlite3_column_bytes(statement, c));
        if (data == nullptr && size > 0) return stopped(SQLITE_NOMEM);
        row[index] = Untrusted(static_cast<const char*>(data), size);
      }
      budget.keep(std::move(row));
    }
    if (stepped == SQLITE_DONE) budget.reached_end();
    if (stepped != SQLITE_ROW && stepped != SQLITE_DONE) {
      Outcome outcome = stopped(stepped);
      if (auto* failure = std::get_if<Failure>(&outcome)) failure->rows_before_failure = rows_seen;
      return outcome;
    }
    if (column_count == 0) {
      budget.set_rows_affected(static_cast<std::uint64_t>(sqlite3_total_changes64(db_) - changes_before));
    }
    return std::move(budget).take();
  }

  std::string path_;
  AccessMode mode_;
  SqliteOptions options_;
  sqlite3* db_ = nullptr;       ///< written under db_mutex_; read by the executing thread
  std::mutex db_mutex_;         ///< guards db_ against interrupt() and running_ transitions
  std::atomic<bool> running_{false};
  std::atomic<bool> cancel_requested_{false};
  Clock::time_point deadline_ = Clock::time_point::max();
  bool timed_out_ = false;
  std::int64_t timeout_ms_ = 0;  ///< the call's statement_timeout_ms, for the refusal that names it
  bool read_only_ = true;
  std::uint64_t length_limit_ = 0;   ///< the length limit in force for this call
  bool reopen_after_call_ = false;   ///< the statement wrote or changed a setting: the connection is closed after it
  std::string memory_name_;           ///< the memdb URI of a read-write ":memory:" database
  sqlite3* memory_holder_ = nullptr;  ///< keeps that database alive between connections; runs no statement
  sqlite3* wal_holder_ = nullptr;     ///< keeps a read-write WAL database's -wal and -shm open; see hold_wal
  // What the authorizer saw while the statement was prepared.
  DeniedBy denied_ = DeniedBy::nothing;
  int actions_ = 0;                  ///< authorizer calls
  bool pragma_read_ = false;         ///< one of them was a pragma let through as a read
};

}  // namespace

const char* detail::no_create_vfs_name() noexcept {
  static const char* const name = []() -> const char* {
    sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
    if (real == nullptr) return nullptr;
    static sqlite3_vfs vfs = make_no_create_vfs(real);
    return sqlite3_vfs_register(&vfs, 0) == SQLITE_OK ? vfs.zName : nullptr;
  }();
  return name;
}

Failure detail::sqlite_failure(sqlite3* db) {
  Failure failure;
  failure.engine = Engine::sqlite;
  failure.sqlite_code = sqlite3_extended_errcode(db);
  failure.message = owned_text(sqlite3_errmsg(db));
  // SQLite always has a message; an empty one was sent so (RAISE(ABORT, '')).
  if (failure.message.empty()) failure.sent_empty.push_back(FailureField::message);
  const int offset = sqlite3_error_offset(db);
  if (offset >= 0) failure.position = offset;
  return failure;
}

std::string_view sqlite_read_only_wal_name(SqliteReadOnlyWal value) noexcept {
  switch (value) {
    case SqliteReadOnlyWal::existing_files: return "existing_files";
    case SqliteReadOnlyWal::create_files: return "create_files";
    case SqliteReadOnlyWal::immutable: return "immutable";
  }
  return "unknown";
}

void set_sqlite_heap_limit(std::optional<std::uint64_t> bytes) { HeapLimit::instance().take_over(bytes); }

std::uint64_t sqlite_heap_limit() noexcept {
  const sqlite3_int64 limit = sqlite3_hard_heap_limit64(-1);
  return limit < 0 ? 0 : static_cast<std::uint64_t>(limit);
}

std::unique_ptr<Driver> make_sqlite_driver(std::string path, AccessMode mode, SqliteOptions options) {
  return std::make_unique<SqliteDriver>(std::move(path), mode, options);
}

}  // namespace rawtool
