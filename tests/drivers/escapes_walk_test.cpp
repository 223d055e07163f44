// The READ_ONLY corpus (corpus/escapes.jsonl) through the real drivers. On
// PostgreSQL each statement runs in read-only mode as a fresh login role with
// ordinary write grants, after the entry's setup, and afterwards nothing that
// lasts has changed: the data, the sequences, prepared transactions,
// replication slots, statistics, roles, large objects, files, and no backend
// of the role is still at work. On SQLite each runs on a fresh database file
// through a read-only driver, and afterwards every file in its folder is as
// it was, byte for byte, and no file was added.
#include "outcome_checks.hpp"
#include "pg_server.hpp"
#include "untrusted_bytes.hpp"

#include <rawtool/corpus.hpp>
#include <rawtool/driver.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

using rawtool::AccessMode;
using rawtool::Limits;
using rawtool::Outcome;
using rawtool::corpus::EscapeCase;
using rawtool::corpus::EscapeExpect;
using rawtool::corpus::EscapeOutcome;
using rawtool::test::expect;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;

namespace {

constexpr const char* role = "walk_agent";

std::string substitute(std::string text, const std::string& file) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"{role}", role}, {"{file}", file}}) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

/// What the attempts aim at, read with full rights. Other tests run beside
/// this one on the same server, so only what the walk's roles own or name is
/// looked at, never server-wide counts.
std::string lasting_state() {
  return pg_admin(
      "SELECT concat_ws(' | ', (SELECT string_agg(x::text, ',' ORDER BY x) FROM walk_target), "
      "(SELECT last_value || ':' || is_called FROM walk_seq), "
      "(SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE r.rolname LIKE 'walk%'), "
      // What ANALYZE writes in place, outside the transaction; the walk's
      // tables stay under autovacuum's analyze threshold (50 rows).
      "(SELECT string_agg(relname || ':' || reltuples || ':' || relpages, ',' ORDER BY relname) FROM pg_class "
      " WHERE relname LIKE 'walk%' AND relkind = 'r'), "
      "(SELECT string_agg(coalesce(last_value::text, '-'), ',') FROM pg_sequences WHERE sequencename LIKE 'walk_owned%'), "
      "(SELECT count(*) FROM pg_largeobject_metadata m JOIN pg_roles r ON r.oid = m.lomowner WHERE r.rolname LIKE 'walk%'), "
      "(SELECT coalesce(string_agg(gid, ',' ORDER BY gid), '-') FROM pg_prepared_xacts "
      " WHERE gid LIKE 'walk%' OR owner LIKE 'walk%'), "
      "(SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'walk%'), "
      "(SELECT coalesce(stats_reset::text, '-') FROM pg_stat_database WHERE datname = current_database()), "
      "(SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles WHERE rolname LIKE 'walk%'))");
}

void drop_walk_objects() {
  pg_admin(
      "DO $$DECLARE r record; BEGIN "
      "FOR r IN SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'walk%' LOOP "
      "EXECUTE format('ROLLBACK PREPARED %L', r.gid); END LOOP; "
      "FOR r IN SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'walk%' LOOP "
      "PERFORM pg_drop_replication_slot(r.slot_name); END LOOP; END$$");
  pg_admin("DROP EXTENSION IF EXISTS dblink; DROP SCHEMA IF EXISTS walk_ext CASCADE; "
           "DROP PROCEDURE IF EXISTS walk_commit(); DROP FUNCTION IF EXISTS walk_swallow()");
  pg_admin(
      "DO $$DECLARE r record; BEGIN "
      "FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'walk%' ORDER BY rolname LOOP "
      "EXECUTE format('DROP OWNED BY %I', r.rolname); EXECUTE format('DROP ROLE %I', r.rolname); END LOOP; END$$");
}

std::string url_as(const std::string& url, const std::string& user) {
  char* complaint = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &complaint);
  REQUIRE(options != nullptr);
  std::string conninfo;
  for (PQconninfoOption* option = options; option->keyword != nullptr; ++option) {
    if (option->val == nullptr || std::string_view(option->keyword) == "user") continue;
    conninfo += fmt::format("{}='{}' ", option->keyword, option->val);
  }
  PQconninfoFree(options);
  return conninfo + "user=" + user;
}

}  // namespace

TEST_CASE("no READ_ONLY corpus attempt leaves anything behind on PostgreSQL, or takes more than its limits",
          "[postgres][read_only][corpus]") {
  const auto url = pg_url();
  if (!url) return;
  REQUIRE(pg_admin("SHOW wal_level") == "logical");  // as .ci/pg-start makes it: the logical-message cases need it
  REQUIRE(pg_admin("SHOW max_prepared_transactions") != "0");
  drop_walk_objects();
  pg_admin("DROP TABLE IF EXISTS walk_target; DROP SEQUENCE IF EXISTS walk_seq; "
           "CREATE TABLE walk_target (x int); INSERT INTO walk_target VALUES (1), (2); CREATE SEQUENCE walk_seq");
  const std::string file = fmt::format("/tmp/rawtool-escapes-walk-{}", getpid());

  std::size_t walked = 0;
  for (const EscapeCase& c : rawtool::corpus::load_escapes()) {
    if (c.engine != rawtool::Engine::postgresql) continue;
    INFO(c.source << " " << c.name << ": " << c.sql);
    std::filesystem::remove(file);
    pg_admin(fmt::format("CREATE ROLE {} LOGIN; GRANT CONNECT ON DATABASE {} TO {}; "
                         "GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON walk_target TO {}; "
                         "GRANT USAGE, SELECT, UPDATE ON walk_seq TO {}; GRANT CREATE ON SCHEMA public TO {}",
                         role, pg_admin("SELECT current_database()"), role, role, role, role));
    for (const std::string& step : c.setup) pg_admin(substitute(step, file));
    const std::string before = lasting_state();

    Limits limits;
    if (c.statement_timeout_ms) limits.statement_timeout = std::chrono::milliseconds(*c.statement_timeout_ms);
    {
      auto driver = rawtool::make_postgres_driver(url_as(*url, role));
      const Outcome outcome = driver->execute(substitute(c.sql, file), {}, limits, AccessMode::read_only);
      CHECK_FALSE(std::holds_alternative<rawtool::Unavailable>(outcome));
      if (c.expect == EscapeExpect::refused) {
        const auto& refusal = expect<rawtool::Refusal>(outcome);
        if (c.reason) CHECK(refusal.reason == *c.reason);
        // rawtool's own words: no role, function or identifier the database named.
        CHECK(refusal.explanation.str().find("walk") == std::string::npos);
      } else if (c.outcome == EscapeOutcome::rows) {
        expect<rawtool::Rows>(outcome);
      } else if (c.outcome == EscapeOutcome::failure) {
        expect<rawtool::Failure>(outcome);
      } else if (c.outcome == EscapeOutcome::refusal) {
        expect<rawtool::Refusal>(outcome);
      }

      CHECK(lasting_state() == before);
      CHECK_FALSE(std::filesystem::exists(file));
      CHECK(pg_admin(fmt::format("SELECT count(*) FROM pg_stat_activity WHERE usename = '{}' AND state <> 'idle'", role)) ==
            "0");
      // The next call on the same driver is an ordinary read-only call again.
      const Outcome next = driver->execute("DELETE FROM walk_target", {}, Limits{}, AccessMode::read_only);
      if (const auto* failure = std::get_if<rawtool::Failure>(&next)) {
        CHECK(rawtool::test::bytes_of(failure->sqlstate) == "25006");
      } else {
        CHECK(rawtool::test::refusal_reason(next) == rawtool::RefusalReason::not_permitted);
      }
    }
    for (const std::string& step : c.teardown) pg_admin(substitute(step, file));
    pg_admin(fmt::format("DROP OWNED BY {}; DROP ROLE {}", role, role));
    ++walked;
  }
  CHECK(walked >= 40);
  std::filesystem::remove(file);
  drop_walk_objects();
  pg_admin("DROP TABLE walk_target; DROP SEQUENCE walk_seq");
}

namespace {

/// Every file in `folder` and its bytes.
std::map<std::string, std::string> files_in(const std::filesystem::path& folder) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    files[entry.path().filename().string()] = std::move(bytes).str();
  }
  return files;
}

void sqlite_run(const std::filesystem::path& database, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(database.c_str(), &db) == SQLITE_OK);
  char* complaint = nullptr;
  const int ran = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &complaint);
  INFO(sql << ": " << (complaint == nullptr ? "" : complaint));
  sqlite3_free(complaint);
  sqlite3_close(db);
  REQUIRE(ran == SQLITE_OK);
}

}  // namespace

TEST_CASE("no READ_ONLY corpus attempt leaves anything behind on SQLite, or takes more than its limits",
          "[sqlite][read_only][corpus]") {
  const auto folder = std::filesystem::temp_directory_path() / fmt::format("rawtool-escapes-walk-{}", getpid());
  std::size_t walked = 0;
  for (const EscapeCase& c : rawtool::corpus::load_escapes()) {
    if (c.engine != rawtool::Engine::sqlite) continue;
    INFO(c.source << " " << c.name << ": " << c.sql);
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    const auto database = folder / "walk.db";
    const std::string file = (folder / "walk-made.db").string();
    sqlite_run(database, "CREATE TABLE walk_target (x INTEGER, y TEXT); CREATE INDEX walk_target_x ON walk_target (x); "
                         "INSERT INTO walk_target (x) VALUES (1), (2)");
    for (const std::string& step : c.setup) sqlite_run(database, substitute(step, file));
    const auto before = files_in(folder);

    Limits limits;
    if (c.statement_timeout_ms) limits.statement_timeout = std::chrono::milliseconds(*c.statement_timeout_ms);
    {
      auto driver = rawtool::make_sqlite_driver(database.string(), AccessMode::read_only);
      const Outcome outcome = driver->execute(substitute(c.sql, file), {}, limits, AccessMode::read_only);
      CHECK_FALSE(std::holds_alternative<rawtool::Unavailable>(outcome));
      if (c.expect == EscapeExpect::refused) {
        const auto& refusal = expect<rawtool::Refusal>(outcome);
        if (c.reason) CHECK(refusal.reason == *c.reason);
        CHECK(refusal.explanation.str().find("walk") == std::string::npos);
      } else if (c.outcome == EscapeOutcome::rows) {
        expect<rawtool::Rows>(outcome);
      } else if (c.outcome == EscapeOutcome::failure) {
        expect<rawtool::Failure>(outcome);
      } else if (c.outcome == EscapeOutcome::refusal) {
        expect<rawtool::Refusal>(outcome);
      }
      // The next call on the same driver is an ordinary read-only call.
      CHECK(rawtool::test::refusal_reason(driver->execute("DELETE FROM walk_target", {}, Limits{}, AccessMode::read_only)) ==
            rawtool::RefusalReason::read_only);
      CHECK(std::holds_alternative<rawtool::Rows>(driver->execute("SELECT x FROM walk_target", {}, Limits{}, AccessMode::read_only)));
    }
    CHECK(files_in(folder) == before);
    CHECK_FALSE(std::filesystem::exists(file));
    ++walked;
  }
  CHECK(walked >= 25);
  std::filesystem::remove_all(folder);
}
