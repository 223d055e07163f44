// Read-only mode against a real server: every escape attempt leaves the
// database, the filesystem and the next call's session as they were. Each
// runs as the superuser (the worst case: privileges do not help) and as the
// low-privilege role docs/postgresql-role.md recommends.
#include "outcome_checks.hpp"
#include "pg_server.hpp"
#include "untrusted_bytes.hpp"

#include <rawtool/driver.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>
#include <string>
#include <unistd.h>
#include <vector>

using rawtool::AccessMode;
using rawtool::Limits;
using rawtool::Outcome;
using rawtool::Rows;
using rawtool::test::bytes_of;
using rawtool::test::cell;
using rawtool::test::expect;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;

namespace {

/// What the next call's session looks like, read through the driver itself.
struct SessionState {
  std::string settings;
  std::string advisory_locks;
  std::string prepared;
  std::string cursors;
  std::string listening;
  std::string read_only;
  std::string timeouts;
  bool operator==(const SessionState&) const = default;
};

SessionState session_state(rawtool::Driver& driver) {
  const auto ask = [&](std::string_view sql) {
    return cell(driver.execute(sql, {}, Limits{}, AccessMode::read_only));
  };
  return SessionState{
      ask("SELECT string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_settings "
          "WHERE source NOT IN ('default', 'override') AND name NOT IN ('statement_timeout', 'lock_timeout', "
          "'idle_in_transaction_session_timeout', 'transaction_read_only', 'default_transaction_read_only')"),
      ask("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"),
      ask("SELECT count(*) FROM pg_prepared_statements"),
      ask("SELECT count(*) FROM pg_cursors"),
      ask("SELECT count(*) FROM pg_listening_channels()"),
      ask("SHOW default_transaction_read_only"),
      ask("SELECT current_setting('statement_timeout') || ' ' || current_setting('lock_timeout')"),
  };
}

/// The database's state the attempts aim at.
std::string database_state() {
  return pg_admin(
      "SELECT concat_ws('|', (SELECT string_agg(x::text, ',' ORDER BY x) FROM drivers_ro_target), "
      "(SELECT last_value || ':' || is_called FROM drivers_ro_seq), "
      "(SELECT count(*) FROM pg_class WHERE relname LIKE 'drivers_ro_made%'), "
      "(SELECT count(*) FROM pg_largeobject_metadata), "
      // Only this test's own transaction: other tests beside it prepare theirs.
      "(SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'drivers_ro_xact'))");
}

}  // namespace

TEST_CASE("read-only escape attempts leave the database, files and the next session unchanged", "[postgres][read_only]") {
  const auto url = pg_url();
  if (!url) return;
  const auto reader_url = pg_url(true);
  if (!reader_url) return;
  const std::string file = fmt::format("/tmp/rawtool-drivers-ro-{}", getpid());
  std::filesystem::remove(file);
  pg_admin(
      "DROP TABLE IF EXISTS drivers_ro_target; DROP SEQUENCE IF EXISTS drivers_ro_seq;"
      "CREATE TABLE drivers_ro_target (x int); INSERT INTO drivers_ro_target VALUES (1), (2);"
      "CREATE SEQUENCE drivers_ro_seq;"
      "CREATE OR REPLACE PROCEDURE drivers_ro_commit() LANGUAGE plpgsql AS "
      "$$BEGIN COMMIT; DELETE FROM drivers_ro_target; COMMIT; END$$;"
      "GRANT SELECT ON drivers_ro_target, drivers_ro_seq TO rawtool_reader;");
  const std::string before = database_state();

  const std::vector<std::string> attempts = {
      "COMMIT; DELETE FROM drivers_ro_target",
      "ROLLBACK; DELETE FROM drivers_ro_target",
      "END; DELETE FROM drivers_ro_target",
      "SELECT 1; COMMIT; DELETE FROM drivers_ro_target",
      "COMMIT",
      "END",
      "ROLLBACK",
      "COMMIT AND CHAIN",
      "SET TRANSACTION READ WRITE",
      "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
      "SELECT set_config('work_mem', '77MB', false)",
      "SELECT set_config('default_transaction_read_only', 'off', false)",
      "SET work_mem = '78MB'",
      "SET statement_timeout = 0",
      "SELECT set_config('lock_timeout', '0', false)",
      "SET SESSION AUTHORIZATION DEFAULT",
      "RESET ALL",
      "DISCARD ALL",
      "CALL drivers_ro_commit()",
      "SET SESSION search_path = evil",
      "SET ROLE NONE",
      "COPY drivers_ro_target TO '" + file + "'",
      "COPY (SELECT 1) TO PROGRAM 'touch " + file + "'",
      "SELECT lo_import('/etc/hostname')",
      "SELECT lo_create(0)",
      "DO $$BEGIN EXECUTE 'DELETE FROM drivers_ro_target'; END$$",
      "DO $$BEGIN COMMIT; EXECUTE 'DELETE FROM drivers_ro_target'; END$$",
      "DO $$BEGIN PERFORM set_config('work_mem', '79MB', false); END$$",
      "WITH gone AS (DELETE FROM drivers_ro_target RETURNING *) SELECT count(*) FROM gone",
      "SELECT * INTO drivers_ro_made FROM drivers_ro_target",
      "CREATE TABLE drivers_ro_made2 (x int)",
      "CREATE TEMP TABLE drivers_ro_made3 (x int)",
      "SELECT nextval('drivers_ro_seq')",
      "SELECT setval('drivers_ro_seq', 99)",
      "SELECT pg_advisory_lock(4242)",
      "SELECT pg_advisory_lock_shared(4243)",
      "SELECT pg_try_advisory_lock(4244)",
      "PREPARE drivers_ro_plan AS SELECT 1",
      "DECLARE drivers_ro_cursor CURSOR WITH HOLD FOR SELECT 1",
      "LISTEN drivers_ro_channel",
      "EXPLAIN ANALYZE DELETE FROM drivers_ro_target",
      "PREPARE TRANSACTION 'drivers_ro_xact'",
      "VACUUM drivers_ro_target",
      "TRUNCATE drivers_ro_target",
  };

  // A READ ONLY transaction does not stop COPY to a server file or program;
  // only the role does. A privileged role is refused outright by default
  // (checked below), and one trusted explicitly is not asked to do these.
  const auto writes_server_files = [](const std::string& attempt) { return attempt.starts_with("COPY"); };

  for (const bool reader : {false, true}) {
    auto driver = reader ? rawtool::make_postgres_driver(*reader_url)
                         : rawtool::make_postgres_driver(*url, rawtool::test::trusted_options());
    const SessionState clean = session_state(*driver);
    for (const std::string& attempt : attempts) {
      if (!reader && writes_server_files(attempt)) continue;
      INFO((reader ? "as rawtool_reader: " : "as trusted superuser: ") << attempt);
      const Outcome outcome = driver->execute(attempt, {}, Limits{}, AccessMode::read_only);
      CHECK_FALSE(std::holds_alternative<rawtool::Unavailable>(outcome));
      CHECK(database_state() == before);
      CHECK_FALSE(std::filesystem::exists(file));
      CHECK(session_state(*driver) == clean);
      // The next call is read-only again: a write in it fails.
      const Outcome next = driver->execute("DELETE FROM drivers_ro_target", {}, Limits{}, AccessMode::read_only);
      if (const auto* failure = std::get_if<rawtool::Failure>(&next)) {
        CHECK((bytes_of(failure->sqlstate) == "25006" || bytes_of(failure->sqlstate) == "42501"));
      } else {
        FAIL("a write after the attempt did not fail");
      }
    }
  }

  auto refused = rawtool::make_postgres_driver(*url);
  for (const std::string& attempt : attempts) {
    INFO("as superuser, not trusted: " << attempt);
    CHECK(rawtool::test::refusal_reason(refused->execute(attempt, {}, Limits{}, AccessMode::read_only)) ==
          rawtool::RefusalReason::not_permitted);
    CHECK(database_state() == before);
    CHECK_FALSE(std::filesystem::exists(file));
  }
  pg_admin("DROP PROCEDURE drivers_ro_commit(); DROP TABLE drivers_ro_target; DROP SEQUENCE drivers_ro_seq");
}

TEST_CASE("a read-only statement cannot write even when the role could", "[postgres][read_only]") {
  const auto url = pg_url();
  if (!url) return;
  pg_admin("DROP TABLE IF EXISTS drivers_ro_write; CREATE TABLE drivers_ro_write (x int)");
  auto driver = rawtool::make_postgres_driver(*url, rawtool::test::trusted_options());
  const Outcome outcome = driver->execute("INSERT INTO drivers_ro_write VALUES (1)", {}, Limits{}, AccessMode::read_only);
  CHECK(bytes_of(expect<rawtool::Failure>(outcome).sqlstate) == "25006");
  CHECK(pg_admin("SELECT count(*) FROM drivers_ro_write") == "0");
  pg_admin("DROP TABLE drivers_ro_write");
}

TEST_CASE("a statement that prepares its transaction is refused, and the prepared transaction is rolled back",
          "[postgres][read_only]") {
  const auto reader_url = pg_url(true);
  if (!reader_url) return;
  REQUIRE(pg_admin("SHOW max_prepared_transactions") != "0");
  auto driver = rawtool::make_postgres_driver(*reader_url);
  const std::string before = pg_admin("SELECT count(*) FROM pg_prepared_xacts WHERE owner = 'rawtool_reader'");
  for (const char* statement : {"PREPARE TRANSACTION 'drivers_ro_2pc'", "prepare transaction E'drivers''\\n2pc'"}) {
    INFO(statement);
    const Outcome outcome = driver->execute(statement, {}, Limits{}, AccessMode::read_only);
    CHECK(rawtool::test::refusal_reason(outcome) == rawtool::RefusalReason::read_only);
    CHECK_THAT(expect<rawtool::Refusal>(outcome).explanation,
               Catch::Contains("prepared the transaction for two-phase commit; rawtool rolled the prepared transaction back"));
    CHECK(pg_admin("SELECT count(*) FROM pg_prepared_xacts WHERE owner = 'rawtool_reader'") == before);
    CHECK(cell(driver->execute("SELECT 1", {}, Limits{}, AccessMode::read_only)) == "1");
  }
}

TEST_CASE("a statement that catches its cancel is ended from a second connection, on a timeout and on a cancel",
          "[postgres][read_only][limits]") {
  const auto reader_url = pg_url(true);
  if (!reader_url) return;
  // Caught twice over: a cancel that lands between two turns of the inner loop
  // is caught by the outer one. (One that lands in the few instructions
  // between the outer handler and its next turn still stops the statement the
  // ordinary way, which is why the rounds below count, rather than require,
  // the ends from a second connection.)
  const std::string swallow =
      "DO $$BEGIN LOOP BEGIN LOOP BEGIN PERFORM pg_sleep(0.2); EXCEPTION WHEN query_canceled THEN NULL; END; "
      "END LOOP; EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END$$";
  const auto still_running = [&] {
    return pg_admin("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'DO $$BEGIN LOOP BEGIN LOOP BEGIN PERFORM pg_sleep%' "
                    "AND pid <> pg_backend_pid()");
  };
  auto driver = rawtool::make_postgres_driver(*reader_url);
  Limits limits;
  limits.statement_timeout = std::chrono::milliseconds(300);
  int ended_from_outside = 0;
  for (int round = 0; round < 3; ++round) {
    const Outcome outcome = driver->execute(swallow, {}, limits, AccessMode::read_only);
    CHECK(rawtool::test::refusal_reason(outcome) == rawtool::RefusalReason::timeout);
    if (expect<rawtool::Refusal>(outcome).explanation.str().find("rawtool ended its server session") != std::string::npos) {
      ++ended_from_outside;
    }
    CHECK(still_running() == "0");
  }
  CHECK(ended_from_outside >= 2);
  // A cancel from the caller ends it the same way, within a grace of the cancel.
  const std::string pid = cell(driver->execute("SELECT pg_backend_pid()", {}, Limits{}, AccessMode::read_only));
  std::stop_source stop;
  auto running = std::async(std::launch::async,
                            [&] { return driver->execute(swallow, {}, Limits{}, AccessMode::read_only, stop.get_token()); });
  rawtool::test::wait_until_sleeping(pid);
  const auto cancelled_at = std::chrono::steady_clock::now();
  stop.request_stop();
  REQUIRE(running.wait_for(std::chrono::seconds(6)) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - cancelled_at < std::chrono::seconds(5));
  CHECK(rawtool::test::refusal_reason(running.get()) == rawtool::RefusalReason::cancelled);
  CHECK(still_running() == "0");
  CHECK(cell(driver->execute("SELECT 1", {}, Limits{}, AccessMode::read_only)) == "1");
}
