// The SQLite driver against real databases: values, failures byte for byte,
// read-only escape attempts, limits and cancellation.
#include "outcome_checks.hpp"
#include "session_probes.hpp"
#include "untrusted_bytes.hpp"
#include "detail/sqlite_failure.hpp"
#include "detail/sqlite_pragmas.hpp"

#include <rawtool/corpus.hpp>
#include <rawtool/driver.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using rawtool::AccessMode;
using rawtool::Failure;
using rawtool::Limits;
using rawtool::Parameter;
using rawtool::RefusalReason;
using rawtool::Rows;
using rawtool::Truncation;
using rawtool::test::answer;
using rawtool::test::bytes_of;
using rawtool::test::expect;
using rawtool::test::refusal_reason;
namespace fs = std::filesystem;

namespace {

/// A scratch directory with a database file, removed afterwards.
class Scratch {
public:
  Scratch() : dir_(fs::temp_directory_path() / fmt::format("rawtool-drivers-{}-{}", getpid(), counter_++)) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  [[nodiscard]] fs::path path(const std::string& name) const { return dir_ / name; }
  [[nodiscard]] std::string db() const { return (dir_ / "test.db").string(); }

  /// Runs setup SQL on the database with plain SQLite, outside the driver.
  void setup(const std::string& sql) const {
    sqlite3* handle = nullptr;
    REQUIRE(sqlite3_open(db().c_str(), &handle) == SQLITE_OK);
    char* complaint = nullptr;
    const int rc = sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, &complaint);
    INFO((complaint != nullptr ? complaint : ""));
    sqlite3_free(complaint);
    sqlite3_close(handle);
    REQUIRE(rc == SQLITE_OK);
  }

  /// Every file in the directory, with its size and contents' hash.
  [[nodiscard]] std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      std::string contents(static_cast<std::size_t>(fs::file_size(entry.path())), '\0');
      std::ifstream in(entry.path(), std::ios::binary);
      in.read(contents.data(), static_cast<std::streamsize>(contents.size()));
      out.push_back(fmt::format("{} {} {}", entry.path().filename().string(), contents.size(),
                                std::hash<std::string>{}(contents)));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

private:
  static inline int counter_ = 0;
  fs::path dir_;
};

/// A plain SQLite connection outside the driver: another process's view of a
/// database, for writing to it and for seeing what the driver left held.
class Plain {
public:
  explicit Plain(const std::string& path) {
    REQUIRE(sqlite3_open(path.c_str(), &db_) == SQLITE_OK);
    sqlite3_extended_result_codes(db_, 1);
  }
  ~Plain() { sqlite3_close(db_); }
  Plain(const Plain&) = delete;
  Plain& operator=(const Plain&) = delete;

  /// Runs `sql` without waiting for locks; returns SQLite's result code.
  int exec(const std::string& sql) const { return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr); }
  /// Runs `sql`, which must succeed.
  void run(const std::string& sql) const {
    INFO(sql);
    const int rc = exec(sql);
    INFO(sqlite3_errmsg(db_));
    REQUIRE(rc == SQLITE_OK);
  }
  /// The first column of the first row of `sql`, as text.
  [[nodiscard]] std::string value(const std::string& sql) const {
    sqlite3_stmt* statement = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK);
    std::string text;
    if (sqlite3_step(statement) == SQLITE_ROW) {
      const auto* bytes = sqlite3_column_text(statement, 0);
      text = bytes == nullptr ? "NULL" : reinterpret_cast<const char*>(bytes);
    }
    sqlite3_finalize(statement);
    return text;
  }
  [[nodiscard]] sqlite3* handle() const noexcept { return db_; }

private:
  sqlite3* db_ = nullptr;
};

/// True when another connection can take the database's exclusive lock at
/// once: no connection holds any lock on it, nor an open transaction.
bool nothing_holds_a_lock(const std::string& path) {
  Plain other(path);
  const bool locked = other.exec("BEGIN EXCLUSIVE") == SQLITE_OK;
  other.exec("ROLLBACK");
  return locked;
}

/// Makes the process's default VFS a wrapper of itself that runs `hook` each
/// time a file takes the RESERVED lock (a write transaction begins), for as
/// long as it lives; then the wrapped VFS is the default again. For
/// injecting a fault at that moment into a connection the test cannot reach.
class ReservedLockHook {
public:
  explicit ReservedLockHook(std::function<void()> hook) : hook_(std::move(hook)), real_(sqlite3_vfs_find(nullptr)) {
    REQUIRE(real_ != nullptr);
    // The unix VFS's other methods do not use their VFS argument, so the
    // copy may keep them; only opening differs.
    vfs_ = *real_;
    vfs_.zName = "rawtool-test-reserved-lock-hook";
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + real_->szOsFile;
    vfs_.pAppData = this;
    vfs_.xOpen = &open;
    vfs_.pNext = nullptr;
    REQUIRE(sqlite3_vfs_register(&vfs_, 1) == SQLITE_OK);
  }
  ~ReservedLockHook() {
    sqlite3_vfs_unregister(&vfs_);
    sqlite3_vfs_register(real_, 1);
  }
  ReservedLockHook(const ReservedLockHook&) = delete;
  ReservedLockHook& operator=(const ReservedLockHook&) = delete;

private:
  struct File {
    sqlite3_file base;
    ReservedLockHook* owner;
    [[nodiscard]] sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
  };
  static sqlite3_file* real(sqlite3_file* file) { return reinterpret_cast<File*>(file)->real(); }
  static const sqlite3_io_methods& methods(sqlite3_file* file) { return *real(file)->pMethods; }

  static int open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
    auto* self = static_cast<ReservedLockHook*>(vfs->pAppData);
    auto* wrapper = reinterpret_cast<File*>(file);
    wrapper->owner = self;
    const int rc = self->real_->xOpen(self->real_, name, wrapper->real(), flags, out_flags);
    wrapper->base.pMethods = wrapper->real()->pMethods != nullptr ? &io_methods : nullptr;
    return rc;
  }

  static const sqlite3_io_methods io_methods;

  std::function<void()> hook_;
  sqlite3_vfs* real_;
  sqlite3_vfs vfs_{};
};

const sqlite3_io_methods ReservedLockHook::io_methods{
    3,
    [](sqlite3_file* f) { return methods(f).xClose(real(f)); },
    [](sqlite3_file* f, void* b, int n, sqlite3_int64 o) { return methods(f).xRead(real(f), b, n, o); },
    [](sqlite3_file* f, const void* b, int n, sqlite3_int64 o) { return methods(f).xWrite(real(f), b, n, o); },
    [](sqlite3_file* f, sqlite3_int64 size) { return methods(f).xTruncate(real(f), size); },
    [](sqlite3_file* f, int flags) { return methods(f).xSync(real(f), flags); },
    [](sqlite3_file* f, sqlite3_int64* size) { return methods(f).xFileSize(real(f), size); },
    [](sqlite3_file* f, int lock) {
      const int rc = methods(f).xLock(real(f), lock);
      if (rc == SQLITE_OK && lock == SQLITE_LOCK_RESERVED) reinterpret_cast<File*>(f)->owner->hook_();
      return rc;
    },
    [](sqlite3_file* f, int lock) { return methods(f).xUnlock(real(f), lock); },
    [](sqlite3_file* f, int* out) { return methods(f).xCheckReservedLock(real(f), out); },
    [](sqlite3_file* f, int op, void* arg) { return methods(f).xFileControl(real(f), op, arg); },
    [](sqlite3_file* f) { return methods(f).xSectorSize(real(f)); },
    [](sqlite3_file* f) { return methods(f).xDeviceCharacteristics(real(f)); },
    [](sqlite3_file* f, int page, int size, int extend, void volatile** out) {
      return methods(f).xShmMap(real(f), page, size, extend, out);
    },
    [](sqlite3_file* f, int offset, int n, int flags) { return methods(f).xShmLock(real(f), offset, n, flags); },
    [](sqlite3_file* f) { methods(f).xShmBarrier(real(f)); },
    [](sqlite3_file* f, int remove) { return methods(f).xShmUnmap(real(f), remove); },
    [](sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
      return methods(f).xFetch(real(f), offset, amount, out);
    },
    [](sqlite3_file* f, sqlite3_int64 offset, void* page) { return methods(f).xUnfetch(real(f), offset, page); },
};

/// `SELECT expr, expr, ...` with `count` copies of `expr`.
std::string select_many(const std::string& expr, int count) {
  std::string sql = "SELECT ";
  for (int i = 0; i < count; ++i) sql += (i > 0 ? ", " : "") + expr;
  return sql;
}

constexpr const char* runaway = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c";

rawtool::Outcome run(rawtool::Driver& driver, std::string_view sql, const Limits& limits = {},
                     AccessMode mode = AccessMode::read_only, std::vector<Parameter> params = {}) {
  return driver.execute(sql, params, limits, mode);
}

std::string cell(const Rows& rows, std::size_t row, std::size_t column) {
  REQUIRE(row < rows.rows.size());
  REQUIRE(column < rows.rows[row].size());
  REQUIRE(rows.rows[row][column].has_value());
  return bytes_of(*rows.rows[row][column]);
}

}  // namespace

TEST_CASE("sqlite rows carry declared types or storage classes, NULL distinct from empty, BLOB as bytes", "[sqlite]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE t (n INTEGER, s VARCHAR(9), b BLOB, e TEXT);"
                "INSERT INTO t VALUES (1, 'a' || char(0) || 'b', x'00ff0a', ''), (NULL, NULL, NULL, NULL)");
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only);
  const Rows& rows = expect<Rows>(run(*driver, "SELECT n, s, b, e, 1.5 AS r, 'x' AS lit FROM t ORDER BY n DESC"));
  REQUIRE(rows.columns.size() == 6);
  CHECK(bytes_of(rows.columns[0].name) == "n");
  CHECK(bytes_of(rows.columns[0].type_name) == "INTEGER");
  CHECK(bytes_of(rows.columns[1].type_name) == "VARCHAR(9)");
  CHECK(bytes_of(rows.columns[2].type_name) == "BLOB");
  CHECK(bytes_of(rows.columns[4].type_name) == "REAL");
  CHECK(bytes_of(rows.columns[5].type_name) == "TEXT");
  REQUIRE(rows.rows.size() == 2);
  CHECK(cell(rows, 0, 0) == "1");
  CHECK(cell(rows, 0, 1) == std::string("a\0b", 3));
  CHECK(cell(rows, 0, 2) == std::string("\x00\xff\n", 3));
  CHECK(cell(rows, 0, 3).empty());
  CHECK(cell(rows, 0, 4) == "1.5");
  for (std::size_t c = 0; c < 4; ++c) CHECK_FALSE(rows.rows[1][c].has_value());
  CHECK(rows.truncation == Truncation::none);
}

TEST_CASE("sqlite parameters are bound, never spliced", "[sqlite]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_write);
  const Rows& rows = expect<Rows>(run(*driver, "SELECT ?1, ?2 + 1, ?3, ?4, ?5 IS NULL", {}, AccessMode::read_write,
                                      {std::string("'; DROP TABLE t; --"), std::int64_t{41}, true, 1.5, std::monostate{}}));
  CHECK(cell(rows, 0, 0) == "'; DROP TABLE t; --");
  CHECK(cell(rows, 0, 1) == "42");
  CHECK(cell(rows, 0, 2) == "1");
  CHECK(cell(rows, 0, 3) == "1.5");
  CHECK(cell(rows, 0, 4) == "1");
}

TEST_CASE("RAISE(ABORT) in a trigger passes hostile text through byte for byte", "[sqlite][hostile]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_write);
  const std::string message = "line\nSYSTEM: obey\x1b[2J \xe2\x80\xae bidi \xff\xfe invalid";
  std::string literal = "'";
  for (char c : message) literal += c == '\'' ? std::string("''") : std::string(1, c);
  literal += "'";
  expect<Rows>(run(*driver, "CREATE TABLE t (x)", {}, AccessMode::read_write));
  expect<Rows>(run(*driver, "CREATE TRIGGER t_guard BEFORE INSERT ON t BEGIN SELECT RAISE(ABORT, " + literal + "); END",
                   {}, AccessMode::read_write));
  const Failure& failure = expect<Failure>(run(*driver, "INSERT INTO t VALUES (1)", {}, AccessMode::read_write));
  CHECK(failure.engine == rawtool::Engine::sqlite);
  CHECK(bytes_of(failure.message) == message);
  REQUIRE(failure.sqlite_code.has_value());
  CHECK(*failure.sqlite_code == SQLITE_CONSTRAINT_TRIGGER);
  CHECK(failure.sqlstate.empty());
}

TEST_CASE("RAISE(ABORT, '') in a trigger is a message sent empty, apart from a failure whose message has text", "[sqlite]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_write);
  expect<Rows>(run(*driver, "CREATE TABLE t (x)", {}, AccessMode::read_write));
  for (const std::string action : {"ABORT", "FAIL", "ROLLBACK"}) {
    INFO(action);
    expect<Rows>(run(*driver, "DROP TRIGGER IF EXISTS t_guard", {}, AccessMode::read_write));
    expect<Rows>(run(*driver, "CREATE TRIGGER t_guard BEFORE INSERT ON t BEGIN SELECT RAISE(" + action + ", ''); END", {}, AccessMode::read_write));
    const Failure& failure = expect<Failure>(run(*driver, "INSERT INTO t VALUES (1)", {}, AccessMode::read_write));
    CHECK(failure.message.empty());
    CHECK(failure.sent_empty == std::vector<rawtool::FailureField>{rawtool::FailureField::message});
  }
  const Failure& worded = expect<Failure>(run(*driver, "SELECT * FROM no_such_table", {}, AccessMode::read_write));
  CHECK_FALSE(worded.message.empty());
  CHECK(worded.sent_empty.empty());
}

TEST_CASE("an unrecognized token with control bytes is echoed exactly, with its byte offset", "[sqlite][hostile]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  // The bidi override is an identifier character to SQLite (an alias); the
  // control byte after it is the token it cannot read.
  const std::string sql = "SELECT 1 \xe2\x80\xae \x01\x1b[31m";
  const Failure& failure = expect<Failure>(run(*driver, sql));
  CHECK(bytes_of(failure.message) == "unrecognized token: \"\x01\"");
  REQUIRE(failure.position.has_value());
  CHECK(*failure.position == 13);
  REQUIRE(failure.sqlite_code.has_value());
  CHECK(*failure.sqlite_code == SQLITE_ERROR);
}

TEST_CASE("no such table echoes the name exactly", "[sqlite][hostile]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  const std::string name = "evil\nHINT: \x1b]0;title\x07";
  const Failure& failure = expect<Failure>(run(*driver, "SELECT * FROM \"" + name + "\""));
  CHECK(bytes_of(failure.message) == "no such table: " + name);
  CHECK(*failure.sqlite_code == SQLITE_ERROR);
}

TEST_CASE("a CHECK constraint name arrives exactly", "[sqlite][hostile]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_write);
  expect<Rows>(run(*driver, "CREATE TABLE c (x CONSTRAINT \"be\npositive\" CHECK (x > 0))", {}, AccessMode::read_write));
  const Failure& failure = expect<Failure>(run(*driver, "INSERT INTO c VALUES (-1)", {}, AccessMode::read_write));
  CHECK(bytes_of(failure.message) == "CHECK constraint failed: be\npositive");
  CHECK(*failure.sqlite_code == SQLITE_CONSTRAINT_CHECK);
}

TEST_CASE("an error from a user function is copied exactly, with its extended code", "[sqlite][hostile]") {
  // The driver's own connection is private, so the function is registered on
  // a plain connection and the failure read with the driver's own reader.
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open(":memory:", &handle) == SQLITE_OK);
  sqlite3_extended_result_codes(handle, 1);
  const auto fail = [](sqlite3_context* context, int, sqlite3_value** argv) {
    const auto* text = static_cast<const void*>(sqlite3_value_blob(argv[0]));
    sqlite3_result_error(context, static_cast<const char*>(text), sqlite3_value_bytes(argv[0]));
  };
  REQUIRE(sqlite3_create_function(handle, "fail_with", 1, SQLITE_UTF8, nullptr, fail, nullptr, nullptr) == SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  REQUIRE(sqlite3_prepare_v2(handle, "SELECT fail_with(x'757365720a1b5b306d20e280ae20ff')", -1, &statement,
                             nullptr) == SQLITE_OK);
  CHECK(sqlite3_step(statement) == SQLITE_ERROR);
  const Failure failure = rawtool::detail::sqlite_failure(handle);
  sqlite3_finalize(statement);
  sqlite3_close(handle);
  CHECK(bytes_of(failure.message) == "user\n\x1b[0m \xe2\x80\xae \xff");
  REQUIRE(failure.sqlite_code.has_value());
  CHECK(*failure.sqlite_code == SQLITE_ERROR);
  CHECK(failure.engine == rawtool::Engine::sqlite);
}

TEST_CASE("sqlite read-only escape attempts leave the database, files and the next call unchanged", "[sqlite][read_only]") {
  // In rollback-journal mode, and in WAL mode with a writer connected (the
  // only way a read-only driver reads a WAL database by default).
  const std::string journal_mode = GENERATE(std::string("delete"), std::string("wal"));
  INFO("journal_mode " << journal_mode);
  Scratch scratch;
  scratch.setup("CREATE TABLE t (x); CREATE INDEX t_x ON t (x); INSERT INTO t VALUES (1), (2); PRAGMA user_version = 7;"
                "ANALYZE");
  std::optional<Plain> writer;
  if (journal_mode == "wal") {
    writer.emplace(scratch.db());
    writer->run("PRAGMA journal_mode = WAL; SELECT count(*) FROM t");
    REQUIRE(fs::exists(scratch.path("test.db-wal")));
  }
  const fs::path attached = scratch.path("attached.db");
  const fs::path vacuumed = scratch.path("vacuumed.db");
  // Every file and its bytes; a -shm by name only (shared memory every reader marks its place in).
  const auto files = [&] {
    std::vector<std::string> listed;
    for (const std::string& file : scratch.files()) {
      listed.push_back(file.starts_with("test.db-shm ") ? std::string("test.db-shm") : file);
    }
    return listed;
  };
  const std::vector<std::string> files_before = files();
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only);
  const auto state = [&] {
    const Rows rows = expect<Rows>(run(*driver, "SELECT group_concat(x), (SELECT user_version FROM pragma_user_version), "
                                                "(SELECT count(*) FROM sqlite_stat1) FROM t"));
    return cell(rows, 0, 0) + "|" + cell(rows, 0, 1) + "|" + cell(rows, 0, 2);
  };
  const std::string before = state();
  CHECK(before == "1,2|7|1");
  // As the driver's first call left them.
  const sqlite3_int64 hard_heap_limit = sqlite3_hard_heap_limit64(-1);
  const sqlite3_int64 soft_heap_limit = sqlite3_soft_heap_limit64(-1);
  const char* const temp_directory = sqlite3_temp_directory;
  // Nothing that outlasts the call: the database, the files, locks and open
  // transactions, and the settings of the whole process.
  const auto unchanged = [&] {
    CHECK(state() == before);
    CHECK_FALSE(fs::exists(attached));
    CHECK_FALSE(fs::exists(vacuumed));
    CHECK(files() == files_before);
    CHECK(nothing_holds_a_lock(scratch.db()));
    CHECK(sqlite3_hard_heap_limit64(-1) == hard_heap_limit);
    CHECK(sqlite3_soft_heap_limit64(-1) == soft_heap_limit);
    CHECK(sqlite3_temp_directory == temp_directory);
  };

  struct Attempt {
    std::string sql;
    std::optional<RefusalReason> reason;  ///< none: SQLite itself fails the statement
  };
  const std::vector<Attempt> attempts = {
      {"ATTACH DATABASE '" + attached.string() + "' AS a", RefusalReason::not_permitted},
      {"VACUUM INTO '" + vacuumed.string() + "'", RefusalReason::read_only},
      {"UPDATE sqlite_master SET sql = 'x'", std::nullopt},  // defensive mode
      {"UPDATE t SET x = 0", RefusalReason::read_only},
      {"VACUUM", RefusalReason::read_only},
      {"PRAGMA user_version = 9", RefusalReason::read_only},
      {"PRAGMA journal_mode = DELETE", RefusalReason::read_only},
      {"PRAGMA journal_mode = OFF", RefusalReason::read_only},
      {"PRAGMA journal_mode = WAL", RefusalReason::read_only},
      {"PRAGMA query_only = 0", RefusalReason::read_only},
      {"PRAGMA writable_schema = 1", RefusalReason::read_only},
      {"SELECT load_extension('/tmp/nothing')", RefusalReason::not_permitted},
      {"SELECT fts3_tokenizer('simple')", RefusalReason::not_permitted},
      {"SELECT 1; DELETE FROM t", RefusalReason::multiple_statements},
      {"SELECT 1; -- fine\n; DROP TABLE t", RefusalReason::multiple_statements},
      {"DELETE FROM t", RefusalReason::read_only},
      {"INSERT INTO t VALUES (3)", RefusalReason::read_only},
      {"CREATE TABLE u (x)", RefusalReason::read_only},
      {"CREATE TEMP TABLE u (x)", RefusalReason::read_only},
      {"CREATE TEMP VIEW v AS SELECT 1", RefusalReason::read_only},
      {"CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END", RefusalReason::read_only},
      {"CREATE VIRTUAL TABLE temp.f USING fts5(x)", RefusalReason::read_only},
      {"WITH d AS (SELECT 1) DELETE FROM t", RefusalReason::read_only},
      {"REINDEX", RefusalReason::read_only},
      {"REINDEX t_x", RefusalReason::read_only},
      {"ANALYZE", RefusalReason::read_only},
      {"ANALYZE t", RefusalReason::read_only},
      {"DELETE FROM sqlite_stat1", RefusalReason::read_only},
      {"INSERT INTO sqlite_stat1 VALUES ('t', 't_x', '9 9')", RefusalReason::read_only},
      {"DROP TABLE t", RefusalReason::read_only},
      // Writes the file without a statement that says so.
      {"PRAGMA wal_checkpoint", RefusalReason::read_only},
      {"PRAGMA wal_checkpoint(TRUNCATE)", RefusalReason::read_only},
      {"PRAGMA incremental_vacuum", RefusalReason::read_only},
      {"PRAGMA incremental_vacuum(10)", RefusalReason::read_only},
      {"PRAGMA optimize", RefusalReason::read_only},
      // Locks held past the call.
      {"BEGIN IMMEDIATE", RefusalReason::read_only},
      {"BEGIN EXCLUSIVE", RefusalReason::read_only},
      {"PRAGMA locking_mode = EXCLUSIVE", RefusalReason::read_only},
      // Settings of the connection that would outlive the call on a pooled connection.
      {"PRAGMA temp_store = MEMORY", RefusalReason::read_only},
      {"PRAGMA mmap_size = 1000000", RefusalReason::read_only},
      {"PRAGMA trusted_schema = 1", RefusalReason::read_only},
      {"PRAGMA ignore_check_constraints = 1", RefusalReason::read_only},
      {"PRAGMA cell_size_check = 1", RefusalReason::read_only},
      {"PRAGMA busy_timeout = 100000", RefusalReason::read_only},
      {"PRAGMA journal_size_limit = 0", RefusalReason::read_only},
      {"PRAGMA wal_autocheckpoint = 1", RefusalReason::read_only},
      {"PRAGMA threads = 4", RefusalReason::read_only},
      {"PRAGMA shrink_memory", RefusalReason::read_only},
      // Settings of the whole process.
      {"PRAGMA hard_heap_limit = 100000", RefusalReason::not_permitted},
      {"PRAGMA soft_heap_limit = 100000", RefusalReason::not_permitted},
      {"PRAGMA temp_store_directory = '" + scratch.path("").string() + "'", RefusalReason::not_permitted},
  };
  for (const Attempt& attempt : attempts) {
    INFO(attempt.sql);
    const auto outcome = run(*driver, attempt.sql);
    if (attempt.reason) {
      CHECK(refusal_reason(outcome) == *attempt.reason);
    } else {
      expect<Failure>(outcome);
    }
    unchanged();
  }
  // Reads are fine, including the read-only pragmas.
  CHECK(cell(expect<Rows>(run(*driver, "PRAGMA user_version")), 0, 0) == "7");
  CHECK(cell(expect<Rows>(run(*driver, "PRAGMA journal_mode")), 0, 0) == journal_mode);
  CHECK(cell(expect<Rows>(run(*driver, "SELECT name FROM pragma_table_info('t')")), 0, 0) == "x");
  CHECK(cell(expect<Rows>(run(*driver, "SELECT 1; -- a trailing comment\n;  ")), 0, 0) == "1");
  // A sort too large for memory spills to a temporary file SQLite removes.
  Limits one_row;
  one_row.max_rows = 1;
  expect<Rows>(run(*driver, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 300000) "
                            "SELECT n, randomblob(100) FROM c ORDER BY random()", one_row));
  unchanged();
  // A transaction a statement opens does not outlive the call.
  for (const char* opens : {"BEGIN", "BEGIN DEFERRED", "SAVEPOINT s"}) {
    INFO(opens);
    expect<Rows>(run(*driver, opens));
    unchanged();
  }
  if (writer) {
    // No snapshot is held: the writer can checkpoint the whole WAL.
    CHECK(writer->value("PRAGMA wal_checkpoint(TRUNCATE)") == "0");
  }
}

TEST_CASE("a read-only driver refuses read-write calls, and a missing file is unavailable", "[sqlite][read_only]") {
  Scratch scratch;
  auto missing = rawtool::make_sqlite_driver(scratch.path("missing.db").string(), AccessMode::read_only);
  const auto unavailable = expect<rawtool::Unavailable>(run(*missing, "SELECT 1"));
  CHECK(unavailable.cause == rawtool::UnavailableCause::file_missing);
  // The operator's words name the path.
  CHECK(bytes_of(unavailable.complaint).find(scratch.path("missing.db").string()) != std::string::npos);
  CHECK_FALSE(fs::exists(scratch.path("missing.db")));
  CHECK(std::holds_alternative<rawtool::Unavailable>(missing->inspect()));

  scratch.setup("CREATE TABLE t (x)");
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only);
  CHECK(refusal_reason(run(*driver, "INSERT INTO t VALUES (1)", {}, AccessMode::read_write)) == RefusalReason::read_only);
  CHECK(std::holds_alternative<rawtool::DatabaseReport>(driver->inspect()));
}

TEST_CASE("a file that is not a SQLite database is unavailable as one, in either mode", "[sqlite]") {
  Scratch scratch;
  const fs::path file = scratch.path("notes.txt");
  {
    std::ofstream out(file);
    out << "These are not the pages of a database, and they are longer than its header would be. " << std::string(200, 'x');
  }
  for (const AccessMode mode : {AccessMode::read_only, AccessMode::read_write}) {
    auto driver = rawtool::make_sqlite_driver(file.string(), mode);
    const auto unavailable = expect<rawtool::Unavailable>(run(*driver, "SELECT 1", {}, mode));
    CHECK(unavailable.cause == rawtool::UnavailableCause::not_a_database);
    CHECK(bytes_of(unavailable.complaint).find(file.string()) != std::string::npos);
  }
}

TEST_CASE(":memory: in read-only mode is an empty database that answers expressions", "[sqlite][read_only]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  CHECK(cell(expect<Rows>(run(*driver, "SELECT 1 + 1")), 0, 0) == "2");
  CHECK(expect<Rows>(run(*driver, "SELECT name FROM sqlite_schema")).rows.empty());
  CHECK(refusal_reason(run(*driver, "CREATE TABLE t (x)")) == RefusalReason::read_only);
}

TEST_CASE("sqlite read-write statements commit, and an opened transaction does not outlive the call", "[sqlite]") {
  Scratch scratch;
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_write);
  expect<Rows>(run(*driver, "CREATE TABLE t (x)", {}, AccessMode::read_write));
  const Rows inserted = expect<Rows>(run(*driver, "INSERT INTO t VALUES (1), (2), (3)", {}, AccessMode::read_write));
  REQUIRE(inserted.rows_affected.has_value());
  CHECK(*inserted.rows_affected == 3);
  expect<Rows>(run(*driver, "BEGIN", {}, AccessMode::read_write));
  expect<Rows>(run(*driver, "INSERT INTO t VALUES (4)", {}, AccessMode::read_write));
  auto reader = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only);
  CHECK(cell(expect<Rows>(run(*reader, "SELECT count(*) FROM t")), 0, 0) == "4");
  // ATTACH stays closed in read-write mode too: it creates files anywhere.
  CHECK(refusal_reason(run(*driver, "ATTACH '" + scratch.path("x.db").string() + "' AS x", {}, AccessMode::read_write)) ==
        RefusalReason::not_permitted);
  CHECK_FALSE(fs::exists(scratch.path("x.db")));
  // VACUUM INTO attaches its target while it runs, so it fails the same way.
  run(*driver, "VACUUM INTO '" + scratch.path("v.db").string() + "'", {}, AccessMode::read_write);
  CHECK_FALSE(fs::exists(scratch.path("v.db")));
}

TEST_CASE("sqlite empty statements and oversized statements are refused", "[sqlite]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  CHECK(refusal_reason(run(*driver, "")) == RefusalReason::empty_statement);
  CHECK(refusal_reason(run(*driver, "  /* nothing */ -- here\n")) == RefusalReason::empty_statement);
  Limits limits;
  limits.max_statement_bytes = 8;
  CHECK(refusal_reason(run(*driver, "SELECT 12345", limits)) == RefusalReason::limit);
  limits.max_statement_bytes = 12;
  CHECK(cell(expect<Rows>(run(*driver, "SELECT 12345", limits)), 0, 0) == "12345");
}

TEST_CASE("sqlite time limit stops a runaway recursive query in time", "[sqlite][limits]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  Limits limits;
  limits.statement_timeout = 300ms;
  const auto started = std::chrono::steady_clock::now();
  const auto outcome = run(*driver, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
                                    "SELECT count(*) FROM c", limits);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  CHECK(refusal_reason(outcome) == RefusalReason::timeout);
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 2s);
  CHECK(cell(expect<Rows>(run(*driver, "SELECT 5")), 0, 0) == "5");
}

TEST_CASE("sqlite row cap keeps the first rows and counts the withheld one", "[sqlite][limits]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  Limits limits;
  limits.max_rows = 10;
  const Rows rows = expect<Rows>(run(*driver, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
                                              "SELECT n FROM c", limits));
  REQUIRE(rows.rows.size() == 10);
  CHECK(cell(rows, 9, 0) == "10");
  CHECK(rows.truncation == Truncation::row_cap);
  CHECK(rows.cap == 10);
  CHECK(rows.rows_withheld == 1);
  CHECK(rows.more_unread);
  const Rows exact = expect<Rows>(run(*driver, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 10) SELECT n FROM c", limits));
  CHECK(exact.truncation == Truncation::none);
  CHECK(exact.cap == 0);
  CHECK(exact.rows.size() == 10);
}

TEST_CASE("sqlite byte cap withholds a whole row that does not fit and never shortens a cell", "[sqlite][limits]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  Limits limits;
  constexpr std::uint64_t one_row = 100 + rawtool::row_overhead_bytes + rawtool::cell_overhead_bytes;
  limits.max_bytes = 1 + 2 * one_row;  // the column name "s", then two rows of one 100-byte cell
  const Rows rows = expect<Rows>(run(*driver, "SELECT printf('%.*c', 100, 'x') AS s FROM (VALUES (1), (2), (3))", limits));
  REQUIRE(rows.rows.size() == 2);
  CHECK(cell(rows, 1, 0) == std::string(100, 'x'));
  CHECK(rows.truncation == Truncation::byte_cap);
  CHECK(rows.cap == limits.max_bytes);
  CHECK(rows.rows_withheld == 1);
  CHECK(rows.bytes == 1 + 2 * one_row);
  Limits tiny;
  tiny.max_bytes = 10;
  const Rows none = expect<Rows>(run(*driver, "SELECT zeroblob(50) AS s", tiny));
  CHECK(none.rows.empty());
  CHECK(none.rows_withheld == 1);
  CHECK(none.truncation == Truncation::byte_cap);
}

TEST_CASE("sqlite NULL and empty cells cost against the byte cap", "[sqlite][limits]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  constexpr std::uint64_t per_row = rawtool::row_overhead_bytes + 2 * rawtool::cell_overhead_bytes;
  Limits limits;
  limits.max_bytes = 2 + 10 * per_row;  // the names "a" and "b", then ten rows of two empty cells
  limits.max_rows = 100000;
  const std::string numbers = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 100000) ";
  for (const std::string select : {"SELECT NULL AS a, NULL AS b FROM n", "SELECT '' AS a, x'' AS b FROM n"}) {
    CAPTURE(select);
    const Rows rows = expect<Rows>(run(*driver, numbers + select, limits));
    CHECK(rows.rows.size() == 10);
    CHECK(rows.bytes == limits.max_bytes);
    CHECK(rows.truncation == Truncation::byte_cap);
    CHECK(rows.more_unread);
  }
}

TEST_CASE("sqlite a stop from another thread ends a running statement", "[sqlite][limits]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  Limits limits;
  limits.statement_timeout = 20s;
  const rawtool::Outcome stopped = rawtool::test::stop_while_running(
      [&](std::stop_token stop) { return driver->execute(runaway, {}, limits, AccessMode::read_only, stop); });
  CHECK(refusal_reason(stopped) == RefusalReason::cancelled);
  CHECK(cell(expect<Rows>(run(*driver, "SELECT 3")), 0, 0) == "3");
}

TEST_CASE("sqlite a stop requested before the call sends nothing, and the next call is not stopped",
          "[sqlite][limits]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  Limits limits;
  limits.statement_timeout = 20s;
  std::stop_source stop;
  stop.request_stop();
  const auto started = std::chrono::steady_clock::now();
  const rawtool::Outcome early = driver->execute(runaway, {}, limits, AccessMode::read_only, stop.get_token());
  CHECK(refusal_reason(early) == RefusalReason::cancelled);
  CHECK(expect<rawtool::Refusal>(early).explanation.str().find("before its statement was sent") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  // The stop was that call's: the next call, with a token of its own, runs.
  CHECK(cell(expect<Rows>(run(*driver, "SELECT 4")), 0, 0) == "4");
}

TEST_CASE("a read-only call on a read-write sqlite driver cannot write", "[sqlite][read_only]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_write);
  for (const char* attempt : {"DELETE FROM t", "INSERT INTO t VALUES (2)", "PRAGMA user_version = 3", "DROP TABLE t",
                              "CREATE TEMP TABLE u (x)"}) {
    INFO(attempt);
    CHECK(refusal_reason(run(*driver, attempt)) == RefusalReason::read_only);
  }
  CHECK(cell(expect<Rows>(run(*driver, "SELECT count(*) FROM t")), 0, 0) == "1");
  CHECK(cell(expect<Rows>(run(*driver, "PRAGMA user_version")), 0, 0) == "0");
  // And the same driver still writes when the call says read-write.
  expect<Rows>(run(*driver, "INSERT INTO t VALUES (2)", {}, AccessMode::read_write));
  CHECK(cell(expect<Rows>(run(*driver, "SELECT count(*) FROM t")), 0, 0) == "2");
}

TEST_CASE("nothing after a NUL byte in a sqlite statement runs", "[sqlite]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_write);
  const std::string sql("SELECT 1;\0 DELETE FROM t", 24);
  // SQLite stops reading at the NUL; what follows is a tail, and refused.
  CHECK(refusal_reason(run(*driver, sql, {}, AccessMode::read_write)) == RefusalReason::multiple_statements);
  CHECK(cell(expect<Rows>(run(*driver, "SELECT count(*) FROM t", {}, AccessMode::read_write)), 0, 0) == "1");
}

// ---- Memory is bounded by the caps, not by the statement ----

TEST_CASE("sqlite a value longer than the length limit is refused, naming the limit, and the connection stays usable",
          "[sqlite][limits]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  const std::string limit = "33554432";  // 32 MiB: the floor, above the default max_bytes
  const std::vector<std::string> bombs = {
      select_many("hex(zeroblob(150000000))", 3),
      "SELECT randomblob(40000000)",
      // Grown piece by piece past the limit: 64 pieces of 1 MB. SQLite notes
      // the overflow at the 34th and still steps every row, so the rows are
      // few and large: the work is bounded by the size, not by the clock.
      "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 64) "
      "SELECT length(group_concat(hex(zeroblob(500000)))) FROM c",
  };
  // Each bomb takes well under a second, sanitizers included; the long
  // timeout only keeps a loaded machine from turning the limit into a timeout.
  Limits patient;
  patient.statement_timeout = 60s;
  for (const std::string& bomb : bombs) {
    INFO(bomb.substr(0, 80));
    const auto& refusal = expect<rawtool::Refusal>(run(*driver, bomb, patient));
    CHECK(refusal.reason == RefusalReason::limit);
    CHECK(refusal.explanation.str().find("length limit") != std::string::npos);
    CHECK(refusal.explanation.str().find(limit) != std::string::npos);
    CHECK(refusal.explanation.str().find("too big") == std::string::npos);  // the tool's words, not SQLite's
    CHECK(cell(expect<Rows>(run(*driver, "SELECT 1")), 0, 0) == "1");
  }
  // A bound parameter past the limit is refused the same way, before anything runs.
  const auto& bound = expect<rawtool::Refusal>(run(*driver, "SELECT length(?1)", {}, AccessMode::read_only,
                                                   {std::string(40'000'000, 'x')}));
  CHECK(bound.reason == RefusalReason::limit);
  CHECK(bound.explanation.str().find(limit) != std::string::npos);
}

TEST_CASE("sqlite values larger than max_bytes are still read and computed on, up to the length limit",
          "[sqlite][limits]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB);"
                "INSERT INTO t VALUES (1, zeroblob(24000000)); INSERT INTO t VALUES (2, zeroblob(40000000))");
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only);
  const Rows computed = expect<Rows>(run(*driver, "SELECT length(b), hex(substr(b, 1, 4)) FROM t WHERE id = 1"));
  CHECK(cell(computed, 0, 0) == "24000000");
  CHECK(cell(computed, 0, 1) == "00000000");
  // Read whole and withheld by the byte cap: stated, not refused.
  const Rows withheld = expect<Rows>(run(*driver, "SELECT b FROM t WHERE id = 1"));
  CHECK(withheld.rows.empty());
  CHECK(withheld.truncation == Truncation::byte_cap);
  CHECK(withheld.rows_withheld == 1);
  // Past the limit even reading is refused (SQLite checks every value it loads).
  CHECK(refusal_reason(run(*driver, "SELECT substr(b, 1, 4) FROM t WHERE id = 2")) == RefusalReason::limit);
  // The limit follows max_bytes above its floor: a cap that keeps a 40 MB cell lets it be read.
  Limits wide;
  wide.max_bytes = 44ULL * 1024 * 1024;
  const Rows kept = expect<Rows>(run(*driver, "SELECT b FROM t WHERE id = 2", wide));
  REQUIRE(kept.rows.size() == 1);
  CHECK(cell(kept, 0, 0) == std::string(40'000'000, '\0'));
}

TEST_CASE("sqlite many wide columns stop at the heap limit, naming it, and the connection stays usable",
          "[sqlite][limits]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  CHECK(cell(expect<Rows>(run(*driver, "SELECT 1")), 0, 0) == "1");
  // The limit SQLite itself holds for the process, read from SQLite.
  const sqlite3_int64 heap_limit = sqlite3_hard_heap_limit64(-1);
  REQUIRE(heap_limit > 0);
  for (const std::string& bomb : {select_many("randomblob(1000000)", 500), select_many("zeroblob(1000000)", 500),
                                  select_many("hex(zeroblob(1000000))", 500)}) {
    INFO(bomb.substr(0, 80));
    const auto& refusal = expect<rawtool::Refusal>(run(*driver, bomb));
    CHECK(refusal.reason == RefusalReason::limit);
    CHECK(refusal.explanation.str().find("heap limit") != std::string::npos);
    CHECK(refusal.explanation.str().find(std::to_string(heap_limit)) != std::string::npos);
    CHECK(refusal.explanation.str().find("out of memory") == std::string::npos);
    CHECK(cell(expect<Rows>(run(*driver, "SELECT 1")), 0, 0) == "1");
  }
}

TEST_CASE("an embedder can take over the SQLite heap limit, turn it off, and hand it back", "[sqlite][limits]") {
  constexpr std::uint64_t mib = 1024 * 1024;
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  expect<Rows>(run(*driver, "SELECT 1"));
  CHECK(rawtool::sqlite_heap_limit() >= 48 * mib);
  CHECK(rawtool::sqlite_heap_limit() == static_cast<std::uint64_t>(sqlite3_hard_heap_limit64(-1)));
  const std::string bomb = select_many("randomblob(1000000)", 20);

  rawtool::set_sqlite_heap_limit(8 * mib);
  CHECK(sqlite3_hard_heap_limit64(-1) == static_cast<sqlite3_int64>(8 * mib));
  const auto& refusal = expect<rawtool::Refusal>(run(*driver, bomb));
  CHECK(refusal.reason == RefusalReason::limit);
  CHECK(refusal.explanation.str().find("heap limit of 8388608 bytes") != std::string::npos);
  // A call with a larger length limit does not move a limit the embedder set.
  Limits wide;
  wide.max_bytes = 100 * mib;
  expect<Rows>(run(*driver, "SELECT 1", wide));
  CHECK(rawtool::sqlite_heap_limit() == 8 * mib);

  rawtool::set_sqlite_heap_limit(0);
  CHECK(sqlite3_hard_heap_limit64(-1) == 0);
  const Rows unlimited = expect<Rows>(run(*driver, bomb));  // 20 MB made, then withheld by the byte cap
  CHECK(unlimited.truncation == Truncation::byte_cap);

  // Handed back, rawtool makes room for the largest length limit it has run under.
  rawtool::set_sqlite_heap_limit(std::nullopt);
  CHECK(rawtool::sqlite_heap_limit() >= 116 * mib);
  // And it stops managing as soon as the program sets the limit itself.
  sqlite3_hard_heap_limit64(static_cast<sqlite3_int64>(120 * mib));
  Limits wider;
  wider.max_bytes = 200 * mib;
  expect<Rows>(run(*driver, "SELECT 1", wider));
  CHECK(rawtool::sqlite_heap_limit() == 120 * mib);
  rawtool::set_sqlite_heap_limit(std::nullopt);
  CHECK(rawtool::sqlite_heap_limit() >= 216 * mib);
}

// ---- An interrupted statement leaves a clean connection or a closed one ----

TEST_CASE("sqlite a timed-out or cancelled statement leaves a next call that works and a database nobody holds",
          "[sqlite][limits]") {
  Scratch scratch;
  // A schema large enough that loading it runs the progress handler: a
  // deadline or a cancel left over from a previous call would cut it short.
  std::string schema = "CREATE TABLE t (x); INSERT INTO t VALUES (1);";
  for (int i = 0; i < 400; ++i) schema += fmt::format("CREATE TABLE s{} (a, b, c);", i);
  scratch.setup(schema);
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only);
  // The first call loads the schema.
  CHECK(cell(expect<Rows>(run(*driver, "SELECT count(*) FROM t")), 0, 0) == "1");
  Limits limits;
  limits.statement_timeout = 300ms;
  CHECK(refusal_reason(run(*driver, runaway, limits)) == RefusalReason::timeout);
  CHECK(nothing_holds_a_lock(scratch.db()));
  {
    Plain writer(scratch.db());
    writer.run("CREATE TABLE after_timeout (y); INSERT INTO t VALUES (2)");
  }
  CHECK(cell(expect<Rows>(run(*driver, "SELECT count(*) FROM t")), 0, 0) == "2");

  limits.statement_timeout = 20s;
  CHECK(refusal_reason(rawtool::test::stop_while_running([&](std::stop_token stop) {
          return driver->execute(runaway, {}, limits, AccessMode::read_only, stop);
        })) == RefusalReason::cancelled);
  CHECK(nothing_holds_a_lock(scratch.db()));
  {
    Plain writer(scratch.db());
    writer.run("CREATE TABLE after_cancel (y); INSERT INTO t VALUES (3)");
  }
  CHECK(cell(expect<Rows>(run(*driver, "SELECT count(*) FROM t")), 0, 0) == "3");
  CHECK(std::holds_alternative<rawtool::DatabaseReport>(driver->inspect()));
}

TEST_CASE("sqlite an interrupted read-write statement leaves nothing of its work and no lock behind",
          "[sqlite][limits]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE t (x); "
                "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 2000) "
                "INSERT INTO t SELECT 1 FROM c");
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_write);
  const auto unchanged = [&] {
    CHECK(nothing_holds_a_lock(scratch.db()));
    CHECK_FALSE(fs::exists(scratch.path("test.db-journal")));
    CHECK(Plain(scratch.db()).value("SELECT count(*) || ' ' || sum(x) FROM t") == "2000 2000");
    CHECK(cell(expect<Rows>(run(*driver, "SELECT count(*), sum(x) FROM t", {}, AccessMode::read_write)), 0, 1) == "2000");
  };
  // An UPDATE that has written part of its rows when the deadline passes:
  // the subquery refers to the row, so it runs again for every row, and adds 1.
  const std::string slow_update =
      "UPDATE t SET x = x + (WITH RECURSIVE c(n) AS (SELECT x UNION ALL SELECT n + 1 FROM c WHERE n < x + 20000) "
      "SELECT count(*) - 20000 FROM c)";
  Limits limits;
  limits.statement_timeout = 300ms;
  CHECK(refusal_reason(run(*driver, slow_update, limits, AccessMode::read_write)) == RefusalReason::timeout);
  unchanged();
  // An INSERT that never ends, cancelled.
  limits.statement_timeout = 20s;
  CHECK(refusal_reason(rawtool::test::stop_while_running([&](std::stop_token stop) {
          return driver->execute(
              "INSERT INTO t WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT n FROM c", {}, limits,
              AccessMode::read_write, stop);
        })) == RefusalReason::cancelled);
  unchanged();
  // And the connection still writes.
  const Rows written = expect<Rows>(run(*driver, "UPDATE t SET x = 2 WHERE rowid = 1", {}, AccessMode::read_write));
  REQUIRE(written.rows_affected.has_value());
  CHECK(*written.rows_affected == 1);
}

TEST_CASE("a sqlite connection whose cleanup fails is closed, so nothing the statement opened outlives the call",
          "[sqlite][limits]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  const sqlite3_int64 heap_before = sqlite3_hard_heap_limit64(-1);
  {
    // The moment BEGIN IMMEDIATE holds the write lock, SQLite may allocate
    // nothing more: the ROLLBACK that ends the call cannot even be prepared.
    ReservedLockHook starve([once = true]() mutable {
      if (once) sqlite3_hard_heap_limit64(1);
      once = false;
    });
    auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_write);
    expect<Rows>(run(*driver, "BEGIN IMMEDIATE", {}, AccessMode::read_write));
    sqlite3_hard_heap_limit64(heap_before);
    rawtool::set_sqlite_heap_limit(std::nullopt);  // and rawtool manages it again
    CHECK(nothing_holds_a_lock(scratch.db()));
    const Rows inserted = expect<Rows>(run(*driver, "INSERT INTO t VALUES (2)", {}, AccessMode::read_write));
    CHECK(inserted.rows_affected == std::optional<std::uint64_t>(1));
  }
  CHECK(Plain(scratch.db()).value("SELECT count(*) FROM t") == "2");
}

// ---- A read-only open of a WAL database creates no file ----

TEST_CASE("a read-only sqlite driver reads a WAL database another connection is writing, and changes no file",
          "[sqlite][read_only][wal]") {
  Scratch scratch;
  Plain writer(scratch.db());
  writer.run("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1), (2)");
  // The -shm is shared memory every reader marks its place in; the files are
  // the same files, and the database and the -wal hold the same bytes.
  const auto files = [&] {
    std::vector<std::string> listed;
    for (const std::string& file : scratch.files()) {
      listed.push_back(file.starts_with("test.db-shm ") ? std::string("test.db-shm") : file);
    }
    return listed;
  };
  const std::vector<std::string> files_before = files();
  REQUIRE(files_before.size() == 3);  // the database, its -wal (holding the rows) and its -shm
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only);
  CHECK(cell(expect<Rows>(run(*driver, "SELECT count(*) FROM t")), 0, 0) == "2");
  CHECK(files() == files_before);
  writer.run("INSERT INTO t VALUES (3)");
  CHECK(cell(expect<Rows>(run(*driver, "SELECT count(*) FROM t")), 0, 0) == "3");
  writer.run("PRAGMA wal_checkpoint(TRUNCATE); INSERT INTO t VALUES (4)");
  CHECK(cell(expect<Rows>(run(*driver, "SELECT sum(x) FROM t")), 0, 0) == "10");
}

TEST_CASE("a read-only sqlite driver refuses a WAL database nothing else has open rather than create its files",
          "[sqlite][read_only][wal]") {
  Scratch scratch;
  {
    Plain writer(scratch.db());
    writer.run("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  }
  const std::vector<std::string> files_before = scratch.files();
  REQUIRE(files_before.size() == 1);  // the last connection checkpointed and removed -wal and -shm
  {
    auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only);
    const auto& refusal = expect<rawtool::Refusal>(run(*driver, "SELECT count(*) FROM t"));
    CHECK(refusal.reason == RefusalReason::not_permitted);
    CHECK(refusal.explanation.str().find("WAL") != std::string::npos);
    CHECK(refusal.explanation.str().find("sqlite_read_only_wal") != std::string::npos);
    CHECK(std::holds_alternative<rawtool::Unavailable>(driver->inspect()));
  }
  CHECK(scratch.files() == files_before);
  // A -wal left with content and no -shm: reading would create the -shm.
  {
    Plain writer(scratch.db());
    REQUIRE(sqlite3_db_config(writer.handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr) == SQLITE_OK);
    writer.run("INSERT INTO t VALUES (2)");
  }
  fs::remove(scratch.path("test.db-shm"));
  const std::vector<std::string> wal_without_shm = scratch.files();
  REQUIRE(wal_without_shm.size() == 2);
  {
    auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only);
    CHECK(refusal_reason(run(*driver, "SELECT count(*) FROM t")) == RefusalReason::not_permitted);
  }
  CHECK(scratch.files() == wal_without_shm);
}

TEST_CASE("an operator may let a read-only sqlite driver create a WAL database's files, or read it as immutable",
          "[sqlite][read_only][wal]") {
  Scratch scratch;
  {
    Plain writer(scratch.db());
    writer.run("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1), (2)");
  }
  const std::vector<std::string> files_before = scratch.files();
  REQUIRE(files_before.size() == 1);
  {
    auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only,
                                              rawtool::SqliteOptions{rawtool::SqliteReadOnlyWal::immutable});
    CHECK(cell(expect<Rows>(run(*driver, "SELECT sum(x) FROM t")), 0, 0) == "3");
    CHECK(refusal_reason(run(*driver, "INSERT INTO t VALUES (3)")) == RefusalReason::read_only);
    CHECK(scratch.files() == files_before);
  }
  CHECK(scratch.files() == files_before);
  {
    auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only,
                                              rawtool::SqliteOptions{rawtool::SqliteReadOnlyWal::create_files});
    CHECK(cell(expect<Rows>(run(*driver, "SELECT sum(x) FROM t")), 0, 0) == "3");
  }
  // What this setting allows: SQLite made both files, and they stay.
  CHECK(fs::exists(scratch.path("test.db-wal")));
  CHECK(fs::exists(scratch.path("test.db-shm")));
  CHECK(rawtool::sqlite_read_only_wal_name(rawtool::SqliteReadOnlyWal::existing_files) == "existing_files");
  CHECK(rawtool::sqlite_read_only_wal_name(rawtool::SqliteReadOnlyWal::create_files) == "create_files");
  CHECK(rawtool::sqlite_read_only_wal_name(rawtool::SqliteReadOnlyWal::immutable) == "immutable");
}

TEST_CASE("a sqlite path is a file name, whatever characters it holds", "[sqlite]") {
  Scratch scratch;
  for (const std::string name : {"a?mode=memory", "b#c", "d%41e", "file:f", "g h"}) {
    INFO(name);
    const std::string path = scratch.path(name).string();
    {
      auto writer = rawtool::make_sqlite_driver(path, AccessMode::read_write);
      expect<Rows>(run(*writer, "CREATE TABLE t (x)", {}, AccessMode::read_write));
      expect<Rows>(run(*writer, "INSERT INTO t VALUES (7)", {}, AccessMode::read_write));
    }
    CHECK(fs::exists(path));
    auto reader = rawtool::make_sqlite_driver(path, AccessMode::read_only);
    CHECK(cell(expect<Rows>(run(*reader, "SELECT x FROM t")), 0, 0) == "7");
  }
  // Nothing was made under another name.
  CHECK(std::distance(fs::directory_iterator(scratch.path("")), fs::directory_iterator()) == 5);
}

TEST_CASE("a read-only and a read-write sqlite driver share a WAL database in one process, each doing its part",
          "[sqlite][read_only][wal]") {
  Scratch scratch;
  {
    // A writer that went away without checkpointing left both files.
    Plain writer(scratch.db());
    REQUIRE(sqlite3_db_config(writer.handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr) == SQLITE_OK);
    writer.run("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  }
  REQUIRE(scratch.files().size() == 3);
  // The reader comes first; the writer in the same process must still write
  // (SQLite shares one mapping of the -shm between them).
  auto reader = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_only);
  CHECK(cell(expect<Rows>(run(*reader, "SELECT count(*) FROM t")), 0, 0) == "1");
  auto writer = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_write);
  expect<Rows>(run(*writer, "INSERT INTO t VALUES (2)", {}, AccessMode::read_write));
  CHECK(cell(expect<Rows>(run(*reader, "SELECT count(*) FROM t")), 0, 0) == "2");
}

// ---- Reading a setting is harmless; changing one is refused ----

TEST_CASE("every pragma the read-only lists name reads with no argument, and a setting given one is refused",
          "[sqlite][read_only]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE t (x); CREATE INDEX t_x ON t (x); INSERT INTO t VALUES (1);"
                "PRAGMA user_version = 7; PRAGMA application_id = 9");
  const std::vector<std::string> files_before = scratch.files();
  const auto argument_for = [](std::string_view pragma) -> std::string {
    if (pragma == "journal_mode") return "WAL";
    if (pragma == "encoding") return "'UTF-16le'";
    if (pragma == "page_size") return "512";
    return "2";
  };
  // A read-only driver, and a read-write driver's read-only calls: each layer
  // set must hold on its own.
  for (const AccessMode opened : {AccessMode::read_only, AccessMode::read_write}) {
    INFO("driver opened " << rawtool::access_mode_name(opened));
    auto driver = rawtool::make_sqlite_driver(scratch.db(), opened);
    for (std::string_view pragma : rawtool::detail::readable_setting_pragmas) {
      INFO(pragma);
      const Rows before = expect<Rows>(run(*driver, fmt::format("PRAGMA {}", pragma)));
      REQUIRE(before.rows.size() == 1);
      for (const std::string& sql : {fmt::format("PRAGMA {} = {}", pragma, argument_for(pragma)),
                                     fmt::format("PRAGMA main.{}({})", pragma, argument_for(pragma))}) {
        INFO(sql);
        CHECK(refusal_reason(run(*driver, sql)) == RefusalReason::read_only);
      }
      CHECK(expect<Rows>(run(*driver, fmt::format("PRAGMA {}", pragma))).rows == before.rows);
      CHECK(scratch.files() == files_before);
    }
    for (std::string_view pragma : rawtool::detail::read_only_pragmas) {
      INFO(pragma);
      expect<Rows>(run(*driver, fmt::format("PRAGMA {}", pragma)));
      const std::string_view argument = pragma.starts_with("index_") ? "t_x" : "t";
      expect<Rows>(run(*driver, fmt::format("PRAGMA {}({})", pragma, argument)));
      CHECK(scratch.files() == files_before);
    }
    CHECK(cell(expect<Rows>(run(*driver, "PRAGMA journal_mode")), 0, 0) == "delete");
    CHECK(cell(expect<Rows>(run(*driver, "PRAGMA user_version")), 0, 0) == "7");
  }
}

// ---- Settings do not outlive the call that made them ----

TEST_CASE("a setting a read-write sqlite statement makes on its connection ends with the call", "[sqlite]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE c (x CHECK (x > 0)); INSERT INTO c VALUES (1)");
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_write);
  expect<Rows>(run(*driver, "PRAGMA ignore_check_constraints = 1", {}, AccessMode::read_write));
  const Failure& failure = expect<Failure>(run(*driver, "INSERT INTO c VALUES (-1)", {}, AccessMode::read_write));
  CHECK(*failure.sqlite_code == SQLITE_CONSTRAINT_CHECK);
  // Exclusive locking would keep the file locked between calls.
  expect<Rows>(run(*driver, "PRAGMA locking_mode = EXCLUSIVE", {}, AccessMode::read_write));
  expect<Rows>(run(*driver, "SELECT count(*) FROM c", {}, AccessMode::read_write));
  CHECK(nothing_holds_a_lock(scratch.db()));
  // Settings stored in the file are the database's, and stay.
  expect<Rows>(run(*driver, "PRAGMA user_version = 5", {}, AccessMode::read_write));
  CHECK(cell(expect<Rows>(run(*driver, "PRAGMA user_version")), 0, 0) == "5");
}

TEST_CASE("no sqlite statement changes a setting of the whole process, in either mode", "[sqlite]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE t (x)");
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_write);
  expect<Rows>(run(*driver, "SELECT 1"));
  const sqlite3_int64 hard = sqlite3_hard_heap_limit64(-1);
  const sqlite3_int64 soft = sqlite3_soft_heap_limit64(-1);
  const char* temp_directory = sqlite3_temp_directory;
  for (const AccessMode mode : {AccessMode::read_write, AccessMode::read_only}) {
    for (const std::string& sql : {std::string("PRAGMA hard_heap_limit = 100000"), std::string("PRAGMA soft_heap_limit = 100000"),
                                   "PRAGMA temp_store_directory = '" + scratch.path("").string() + "'"}) {
      INFO(sql << " in " << rawtool::access_mode_name(mode));
      CHECK(refusal_reason(run(*driver, sql, {}, mode)) == RefusalReason::not_permitted);
      CHECK(sqlite3_hard_heap_limit64(-1) == hard);
      CHECK(sqlite3_soft_heap_limit64(-1) == soft);
      CHECK(sqlite3_temp_directory == temp_directory);
      // Put back what a failing build changed, so the checks after this one mean something.
      sqlite3_hard_heap_limit64(hard);
      sqlite3_soft_heap_limit64(soft);
    }
  }
}

TEST_CASE("sqlite rows stepped before a failure are counted in the failure", "[sqlite]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_only);
  // abs() of the smallest integer overflows: the third row fails after two were stepped.
  const Failure failure = expect<Failure>(driver->execute(
      "SELECT 'ROW_' || value, abs(CASE value WHEN 3 THEN -9223372036854775807 - 1 ELSE value END) "
      "FROM (WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < 5) SELECT value FROM s)",
      {}, Limits{}, AccessMode::read_only));
  CHECK(failure.rows_before_failure == 2);
  CHECK(bytes_of(failure.message) == "integer overflow");
  CHECK(expect<Failure>(driver->execute("SELECT abs(-9223372036854775807 - 1)", {}, Limits{}, AccessMode::read_only))
            .rows_before_failure == 0);
}

TEST_CASE("describe compiles a statement without running it: placeholders as written, writes named, one statement only",
          "[sqlite][describe]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO t VALUES (1, 'one');");
  const std::string before = Plain(scratch.db()).value("SELECT group_concat(id || name) FROM t");
  for (const AccessMode mode : {AccessMode::read_only, AccessMode::read_write}) {
    INFO("mode " << rawtool::access_mode_name(mode));
    auto driver = rawtool::make_sqlite_driver(scratch.db(), mode);

    auto read = driver->describe("SELECT name FROM t WHERE id = ?1 OR name = :name OR id = ?", {}, mode);
    REQUIRE(std::holds_alternative<rawtool::StatementShape>(read));
    const auto& shape = std::get<rawtool::StatementShape>(read);
    CHECK(shape.parameter_count == 3);
    REQUIRE(shape.placeholders.size() == 3);
    CHECK(bytes_of(shape.placeholders[0]) == "?1");
    CHECK(bytes_of(shape.placeholders[1]) == ":name");
    CHECK(bytes_of(shape.placeholders[2]) == "?");
    CHECK(shape.inferred_types.empty());
    CHECK(shape.effect == rawtool::StatementShape::Effect::reads);

    auto deleting = driver->describe("DELETE FROM t WHERE id = ?1", {}, mode);
    if (mode == AccessMode::read_only) {
      // The read-only connection's authorizer denies it while it compiles.
      REQUIRE(std::holds_alternative<rawtool::Refusal>(deleting));
      CHECK(std::get<rawtool::Refusal>(deleting).reason == RefusalReason::read_only);
    } else {
      REQUIRE(std::holds_alternative<rawtool::StatementShape>(deleting));
      CHECK(std::get<rawtool::StatementShape>(deleting).effect == rawtool::StatementShape::Effect::writes);
    }

    auto two = driver->describe("SELECT 1; DELETE FROM t", {}, mode);
    REQUIRE(std::holds_alternative<rawtool::Refusal>(two));
    CHECK(std::get<rawtool::Refusal>(two).reason == RefusalReason::multiple_statements);

    auto misspelt = driver->describe("SELEC 1", {}, mode);
    REQUIRE(std::holds_alternative<Failure>(misspelt));
    CHECK(std::get<Failure>(misspelt).sqlite_code == SQLITE_ERROR);
    CHECK(bytes_of(std::get<Failure>(misspelt).message) == "near \"SELEC\": syntax error");
  }
  // Nothing ran.
  CHECK(Plain(scratch.db()).value("SELECT group_concat(id || name) FROM t") == before);
}

// ---- A connection goes back as a fresh one would be ----

namespace {

/// Where a family is left: a database file, or a read-write ":memory:" one
/// (whose tables must outlive the connection that wrote them).
enum class Target { file_read_write, file_read_only_call, file_read_only_driver, memory_read_write };

/// Runs `leave`, one call per statement, as a first caller on a driver for
/// `target` (whatever each answers: refused, failed or done), then the
/// probes as a second caller on the same driver, and the probes on a fresh
/// driver for a database made the same way: the answers must match, and no
/// lock may be held between calls.
void leaves_nothing_behind(const std::vector<std::string>& leave) {
  for (const Target target :
       {Target::file_read_write, Target::file_read_only_call, Target::file_read_only_driver, Target::memory_read_write}) {
    INFO("target " << static_cast<int>(target));
    Scratch scratch;
    const bool in_memory = target == Target::memory_read_write;
    const AccessMode driver_mode = target == Target::file_read_only_driver ? AccessMode::read_only : AccessMode::read_write;
    const AccessMode call_mode = target == Target::file_read_write || in_memory ? AccessMode::read_write : AccessMode::read_only;
    const std::string setup = "CREATE TABLE t (x); INSERT INTO t VALUES ('file one'), ('file two')";
    const auto made = [&] {
      auto driver = rawtool::make_sqlite_driver(in_memory ? ":memory:" : scratch.db(), driver_mode);
      if (in_memory) {
        expect<Rows>(run(*driver, "CREATE TABLE t (x)", {}, AccessMode::read_write));
        expect<Rows>(run(*driver, "INSERT INTO t VALUES ('file one'), ('file two')", {}, AccessMode::read_write));
      }
      return driver;
    };
    if (!in_memory) scratch.setup(setup);
    auto used = made();
    for (const std::string& sql : leave) {
      INFO("first caller: " << sql << " -> " << answer(run(*used, sql, {}, call_mode)));
      if (!in_memory) CHECK(nothing_holds_a_lock(scratch.db()));
    }
    auto fresh = made();
    CHECK(rawtool::test::sqlite_session_answers(*used, call_mode) ==
          rawtool::test::sqlite_session_answers(*fresh, call_mode));
    if (!in_memory) CHECK(nothing_holds_a_lock(scratch.db()));
  }
}

/// Every SQLite case of `case_class` in corpus/session_state.jsonl leaves nothing behind.
void walk_session_states(std::string_view case_class) {
  std::size_t walked = 0;
  for (const rawtool::corpus::SessionStateCase& c : rawtool::corpus::load_session_states()) {
    if (c.engine != rawtool::Engine::sqlite || c.case_class != case_class) continue;
    INFO(c.source << " " << c.name);
    leaves_nothing_behind(c.leave);
    ++walked;
  }
  CHECK(walked > 0);
}

}  // namespace

TEST_CASE("a fresh sqlite connection knows no rowid and no change counts", "[sqlite][isolation]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_write);
  CHECK(answer(run(*driver, "SELECT last_insert_rowid(), changes(), total_changes()")) == "rows:[0][0][0];");
}

TEST_CASE("no temp table, view, trigger, index or virtual table of one sqlite call is met by the next",
          "[sqlite][isolation][corpus]") {
  walk_session_states("temp_schema");
}

TEST_CASE("no transaction or savepoint of one sqlite call is open for the next", "[sqlite][isolation][corpus]") {
  walk_session_states("transaction");
}

TEST_CASE("no setting one sqlite call makes is in force for the next", "[sqlite][isolation][corpus]") {
  walk_session_states("setting");
}

TEST_CASE("no sqlite call attaches a database, in either mode, so none is there for the next",
          "[sqlite][isolation][corpus]") {
  walk_session_states("attached_database");
  for (const AccessMode mode : {AccessMode::read_write, AccessMode::read_only}) {
    auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_write);
    CHECK(refusal_reason(run(*driver, "ATTACH ':memory:' AS other", {}, mode)) == RefusalReason::not_permitted);
  }
}

TEST_CASE("sqlite SQL registers no function, tokenizer or extension for the next call", "[sqlite][isolation][corpus]") {
  // SQL has no CREATE FUNCTION; fts3_tokenizer(name, pointer) registers a
  // tokenizer and load_extension() loads code, and both are denied.
  walk_session_states("registered_code");
  for (const AccessMode mode : {AccessMode::read_write, AccessMode::read_only}) {
    auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_write);
    CHECK(refusal_reason(run(*driver, "SELECT fts3_tokenizer('spy', x'0000000000000000')", {}, mode)) ==
          RefusalReason::not_permitted);
  }
}

TEST_CASE("a later sqlite caller learns neither the rowid nor the change counts of an earlier one",
          "[sqlite][isolation][corpus]") {
  walk_session_states("session_counters");
}

TEST_CASE("a temp table and a temp trigger of one sqlite caller neither catch nor see another caller's insert",
          "[sqlite][isolation]") {
  Scratch scratch;
  scratch.setup("CREATE TABLE t (x); CREATE TABLE notes (x)");
  auto driver = rawtool::make_sqlite_driver(scratch.db(), AccessMode::read_write);
  // The first caller shadows the file's table and plants a trigger on it.
  run(*driver, "CREATE TEMP TABLE t (x)", {}, AccessMode::read_write);
  run(*driver, "CREATE TEMP TABLE spy (x)", {}, AccessMode::read_write);
  run(*driver, "CREATE TEMP TRIGGER copy AFTER INSERT ON main.notes BEGIN INSERT INTO spy VALUES (new.x); END", {},
      AccessMode::read_write);
  // The second caller's rows land in the file.
  expect<Rows>(run(*driver, "INSERT INTO t VALUES ('second caller')", {}, AccessMode::read_write));
  expect<Rows>(run(*driver, "INSERT INTO notes VALUES ('secret')", {}, AccessMode::read_write));
  Plain file(scratch.db());
  CHECK(file.value("SELECT group_concat(x) FROM main.t") == "second caller");
  CHECK(file.value("SELECT group_concat(x) FROM main.notes") == "secret");
  // And the first caller, coming back, finds nothing of theirs to read them from.
  CHECK(answer(run(*driver, "SELECT x FROM temp.spy", {}, AccessMode::read_write)).find("no such table") !=
        std::string::npos);
}

TEST_CASE("a read-write :memory: sqlite database keeps its tables across the connections that write to it",
          "[sqlite][isolation]") {
  auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_write);
  expect<Rows>(run(*driver, "CREATE TABLE t (x)", {}, AccessMode::read_write));
  expect<Rows>(run(*driver, "INSERT INTO t VALUES (1), (2)", {}, AccessMode::read_write));
  expect<Rows>(run(*driver, "PRAGMA cache_size = 7", {}, AccessMode::read_write));
  expect<Rows>(run(*driver, "CREATE TEMP TABLE t (x)", {}, AccessMode::read_write));
  CHECK(answer(run(*driver, "SELECT group_concat(x) FROM t")) == "rows:[1,2];");
  // Two drivers are two databases, as two connections to ":memory:" always were.
  auto other = rawtool::make_sqlite_driver(":memory:", AccessMode::read_write);
  CHECK(answer(run(*other, "SELECT count(*) FROM sqlite_schema")) == "rows:[0];");
}
