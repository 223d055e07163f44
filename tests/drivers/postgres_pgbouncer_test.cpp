// The PostgreSQL driver through PgBouncer in transaction pooling mode, which
// hands each transaction to any server connection of its pool: read-only
// enforcement, timeouts, cancellation, notices and the session cleanup hold
// whichever server connection a call gets, and nothing a call does reaches
// another client of the pool. Each test starts its own PgBouncer in front of
// the test server (pgbouncer.hpp); the checks of what is left behind are made
// on the server directly (pg_admin) and through PgBouncer on every server
// connection of the pool.
#include "oracle.hpp"
#include "outcome_checks.hpp"
#include "pg_server.hpp"
#include "pgbouncer.hpp"
#include "temp_dir.hpp"
#include "untrusted_bytes.hpp"

#include <rawtool/config.hpp>
#include <rawtool/driver.hpp>
#include <rawtool/tool.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using rawtool::AccessMode;
using rawtool::Limits;
using rawtool::Outcome;
using rawtool::RefusalReason;
using rawtool::Rows;
using rawtool::test::bytes_of;
using rawtool::test::expect;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;
using rawtool::test::PgBouncer;
using rawtool::test::refusal_reason;

namespace {

Outcome run(rawtool::Driver& driver, std::string_view sql, const Limits& limits = {},
            AccessMode mode = AccessMode::read_only, std::stop_token stop = {}) {
  return driver.execute(sql, {}, limits, mode, std::move(stop));
}

std::string cell(const Rows& rows, std::size_t column = 0) {
  REQUIRE(rows.rows.size() == 1);
  REQUIRE(column < rows.rows[0].size());
  return rows.rows[0][column] ? bytes_of(*rows.rows[0][column]) : std::string("NULL");
}

/// What `expression` is on the server connections a run of calls lands on:
/// each distinct value, and how many server processes answered. PgBouncer
/// hands the pool's connections out in turn, so the calls reach every one.
struct Seen {
  std::set<std::string> values;
  std::set<std::string> servers;
};

constexpr int calls_per_look = 8;

Seen through_driver(rawtool::Driver& driver, const std::string& expression, const Limits& limits = {}) {
  Seen seen;
  for (int i = 0; i < calls_per_look; ++i) {
    const Rows rows = expect<Rows>(run(driver, fmt::format("SELECT pg_backend_pid()::text, ({})::text", expression), limits));
    seen.servers.insert(cell(rows, 0));
    seen.values.insert(cell(rows, 1));
  }
  return seen;
}

using Connection = std::unique_ptr<PGconn, decltype(&PQfinish)>;
using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

Connection connect(const std::string& url) {
  Connection connection(PQconnectdb(url.c_str()), &PQfinish);
  INFO(PQerrorMessage(connection.get()));
  REQUIRE(PQstatus(connection.get()) == CONNECTION_OK);
  PQsetNoticeProcessor(connection.get(), [](void*, const char*) {}, nullptr);
  return connection;
}

std::string ask(PGconn* connection, const std::string& sql) {
  Result result(PQexec(connection, sql.c_str()), &PQclear);
  INFO(sql << "\n" << PQresultErrorMessage(result.get()));
  REQUIRE(PQresultStatus(result.get()) == PGRES_TUPLES_OK);
  REQUIRE(PQntuples(result.get()) == 1);
  return PQgetvalue(result.get(), 0, 0);
}

// Another client of the same role, in a transaction on a server connection
// of the same pool: the process an unguided pg_terminate_backend could hit.
class Bystander {
public:
  explicit Bystander(const std::string& url) : connection_(connect(url)) {
    Result begun(PQexec(connection_.get(), "BEGIN"), &PQclear);
    REQUIRE(PQresultStatus(begun.get()) == PGRES_COMMAND_OK);
    pid_ = ask(connection_.get(), "SELECT pg_backend_pid()");
  }
  [[nodiscard]] const std::string& pid() const noexcept { return pid_; }
  /// Its process lives, and its transaction is still open on it.
  void check_untouched() {
    CHECK(pg_admin("SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid_) == "1");
    CHECK(ask(connection_.get(), "SELECT pg_backend_pid()") == pid_);
  }

private:
  Connection connection_;
  std::string pid_;
};

// A DO block that catches its cancel at two levels and sleeps forever,
// marked so pg_stat_activity finds it.
std::string swallowing_block(std::string_view mark) {
  return "DO $$BEGIN LOOP BEGIN LOOP BEGIN PERFORM pg_sleep(0.2); EXCEPTION WHEN query_canceled THEN NULL; END; "
         "END LOOP; EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END$$ /* " + std::string(mark) + " */";
}

/// The same through another client of PgBouncer, outside rawtool, one
/// autocommitted statement at a time.
Seen through_other_client(const std::string& url, const std::string& expression) {
  Connection connection = connect(url);
  Seen seen;
  const std::string sql = fmt::format("SELECT pg_backend_pid()::text, ({})::text", expression);
  for (int i = 0; i < calls_per_look; ++i) {
    Result result(PQexec(connection.get(), sql.c_str()), &PQclear);
    INFO(sql << "\n" << PQresultErrorMessage(result.get()));
    REQUIRE(PQresultStatus(result.get()) == PGRES_TUPLES_OK);
    REQUIRE(PQntuples(result.get()) == 1);
    seen.servers.insert(PQgetvalue(result.get(), 0, 0));
    seen.values.insert(PQgetvalue(result.get(), 0, 1));
  }
  return seen;
}

/// What a call can change in a session and a later one could see.
constexpr const char* session_marks =
    "concat_ws(' ', current_setting('work_mem'), current_setting('search_path'), "
    "current_setting('default_transaction_read_only'), current_user, "
    "(SELECT count(*) FROM pg_prepared_statements), (SELECT count(*) FROM pg_listening_channels()), "
    "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()))";

constexpr const char* timeout_settings =
    "concat_ws(' ', current_setting('statement_timeout'), current_setting('lock_timeout'), "
    "current_setting('idle_in_transaction_session_timeout'), current_setting('client_connection_check_interval'))";

/// Waits (up to 10 s, then fails) until a server process sleeps while
/// serving the client that named itself `application` (PgBouncer passes the
/// name on to the server connection it lends); its process ID.
std::string sleeping_backend(const std::string& application) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    const std::string pid = pg_admin(fmt::format(
        "SELECT pid FROM pg_stat_activity WHERE application_name = '{}' AND wait_event = 'PgSleep'", application));
    if (!pid.empty()) return pid;
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(10ms);
  }
}

}  // namespace

TEST_CASE("through PgBouncer, read-only writes are refused, leave nothing behind, and no session change reaches a "
          "later call on any server connection",
          "[postgres][pgbouncer][read_only]") {
  const auto bouncer = PgBouncer::start(2);
  if (!bouncer) return;
  const auto url = pg_url();
  pg_admin("DROP TABLE IF EXISTS drivers_pgb_target; DROP TABLE IF EXISTS drivers_pgb_made; "
           "CREATE TABLE drivers_pgb_target (x int); INSERT INTO drivers_pgb_target VALUES (1)");
  const auto database_state = [] {
    return pg_admin(
        "SELECT concat_ws('|', (SELECT string_agg(x::text, ',' ORDER BY x) FROM drivers_pgb_target), "
        "(SELECT count(*) FROM pg_class WHERE relname = 'drivers_pgb_made'), "
        "(SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'drivers_pgb%'), "
        "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid IN (4301, 4302)))");
  };
  const std::string before = database_state();
  // A fresh session on the server itself: what every connection of the pool must still look like.
  const std::string fresh_session = pg_admin(fmt::format("SELECT {}", session_marks));
  const std::string fresh_timeouts = pg_admin(fmt::format("SELECT {}", timeout_settings));

  // The superuser: privileges do not help.
  auto driver = rawtool::test::superuser_driver(bouncer->url_for(*url));
  // The pool really is shared out per transaction: one driver's calls reach both server connections.
  REQUIRE(through_driver(*driver, "1").servers.size() == 2);

  for (const char* write : {"INSERT INTO drivers_pgb_target VALUES (2)", "UPDATE drivers_pgb_target SET x = 3",
                            "CREATE TABLE drivers_pgb_made (x int)",
                            "WITH gone AS (DELETE FROM drivers_pgb_target RETURNING x) SELECT count(*) FROM gone",
                            "SELECT set_config('default_transaction_read_only', 'off', false)",
                            "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
                            "SET SESSION statement_timeout = 0", "SELECT set_config('lock_timeout', '0', false)",
                            "SET work_mem = '77MB'", "SET search_path = drivers_pgb_elsewhere",
                            "SET ROLE rawtool_reader", "SELECT pg_advisory_lock(4301)",
                            "DO $$BEGIN PERFORM pg_advisory_lock(4302); RAISE EXCEPTION 'after the lock'; END$$",
                            "LISTEN drivers_pgb_channel", "PREPARE drivers_pgb_plan AS SELECT 1",
                            "PREPARE TRANSACTION 'drivers_pgb_2pc'", "COMMIT"}) {
    INFO(write);
    const Outcome outcome = run(*driver, write);
    REQUIRE_FALSE(std::holds_alternative<rawtool::Unavailable>(outcome));
    CHECK(database_state() == before);
    // Read on every connection of the pool, by this driver and by another client.
    const Seen mine = through_driver(*driver, session_marks);
    CHECK(mine.servers.size() == 2);
    CHECK(mine.values == std::set<std::string>{fresh_session});
    const Seen others = through_other_client(bouncer->url_for(*url), std::string(session_marks) + " || ' ' || " + timeout_settings);
    CHECK(others.servers.size() == 2);
    CHECK(others.values == std::set<std::string>{fresh_session + " " + fresh_timeouts});
    // The next write is still refused by the server.
    CHECK(bytes_of(expect<rawtool::Failure>(run(*driver, "INSERT INTO drivers_pgb_target VALUES (4)")).sqlstate) ==
          "25006");
  }
  // The prepared transaction was found and rolled back although the lookup ran after the pooler released the connection.
  const Outcome prepared = run(*driver, "PREPARE TRANSACTION 'drivers_pgb_2pc_again'");
  CHECK_THAT(expect<rawtool::Refusal>(prepared).explanation.str(), Catch::Contains("rawtool rolled the prepared transaction back"));
  CHECK(database_state() == before);
  pg_admin("DROP TABLE drivers_pgb_target");
}

TEST_CASE("through PgBouncer, the statement timeout stops a statement, and rawtool's timeouts reach no other client",
          "[postgres][pgbouncer][limits]") {
  const auto bouncer = PgBouncer::start(2);
  if (!bouncer) return;
  const auto url = pg_url();
  const std::string fresh_timeouts = pg_admin(fmt::format("SELECT {}", timeout_settings));
  auto driver = rawtool::test::superuser_driver(bouncer->url_for(*url));
  Limits limits;
  limits.statement_timeout = 300ms;
  limits.lock_timeout = 200ms;
  for (int round = 0; round < 3; ++round) {
    const auto started = std::chrono::steady_clock::now();
    CHECK(refusal_reason(run(*driver, "SELECT pg_sleep(30)", limits)) == RefusalReason::timeout);
    const auto elapsed = std::chrono::steady_clock::now() - started;
    CHECK(elapsed >= 300ms);
    // The server's own timeout, not the client's deadline (limit plus two seconds of grace), ended it.
    CHECK(elapsed < 1500ms);
  }
  // Every call runs under its own limits, whichever server connection it gets...
  const Seen mine = through_driver(*driver, "current_setting('statement_timeout') || ' ' || current_setting('lock_timeout')", limits);
  CHECK(mine.servers.size() == 2);
  CHECK(mine.values == std::set<std::string>{"300ms 200ms"});
  // ...and another client of the pool sees the server's own settings on every one.
  const Seen others = through_other_client(bouncer->url_for(*url), timeout_settings);
  CHECK(others.servers.size() == 2);
  CHECK(others.values == std::set<std::string>{fresh_timeouts});
}

TEST_CASE("through PgBouncer, a cancel ends the running statement on the server promptly", "[postgres][pgbouncer][limits]") {
  const auto bouncer = PgBouncer::start(2);
  if (!bouncer) return;
  const auto url = pg_url();
  auto driver = rawtool::test::superuser_driver(bouncer->url_for(*url) + "?application_name=drivers_pgb_cancel");
  // A query (run through a cursor) and a statement run as it is.
  for (const char* sleep : {"SELECT pg_sleep(20)", "DO $$BEGIN PERFORM pg_sleep(20); END$$"}) {
    INFO(sleep);
    std::stop_source stop;
    auto running = std::async(std::launch::async, [&] { return run(*driver, sleep, {}, AccessMode::read_only, stop.get_token()); });
    const std::string backend = sleeping_backend("drivers_pgb_cancel");
    const auto started = std::chrono::steady_clock::now();
    stop.request_stop();
    REQUIRE(running.wait_for(5s) == std::future_status::ready);
    CHECK(std::chrono::steady_clock::now() - started < 1s);
    CHECK(refusal_reason(running.get()) == RefusalReason::cancelled);
    // The server process is no longer running it, and lives on for the pool's next client.
    CHECK(pg_admin("SELECT count(*) FROM pg_stat_activity WHERE pid = " + backend + " AND state = 'active'") == "0");
    CHECK(pg_admin("SELECT count(*) FROM pg_stat_activity WHERE pid = " + backend) == "1");
    CHECK(cell(expect<Rows>(run(*driver, "SELECT 1"))) == "1");
  }
}

TEST_CASE("through PgBouncer, a statement that catches its cancel is ended on its own server process and no other",
          "[postgres][pgbouncer][read_only][limits]") {
  // Three server connections: the statement's, the bystander's, and the one
  // rawtool's second connection uses to end the statement.
  const auto bouncer = PgBouncer::start(3);
  if (!bouncer) return;
  const auto reader_url = pg_url(true);
  const std::string through = bouncer->url_for(*reader_url);
  Bystander bystander(through);
  const std::string swallow = swallowing_block("drivers_pgb_swallow");
  const auto still_running = [] {
    return pg_admin("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%drivers_pgb_swallow%' AND pid <> pg_backend_pid()");
  };
  auto driver = rawtool::make_postgres_driver(through + "?application_name=drivers_pgb_swallow");
  Limits limits;
  limits.statement_timeout = 300ms;
  int ended_from_outside = 0;
  for (int round = 0; round < 3; ++round) {
    const Outcome outcome = run(*driver, swallow, limits);
    CHECK(refusal_reason(outcome) == RefusalReason::timeout);
    // (A cancel can land between the two handlers and stop it the ordinary
    // way; see postgres_read_only_test. Most rounds need the second connection.)
    if (expect<rawtool::Refusal>(outcome).explanation.str().find("rawtool ended its server session") != std::string::npos) {
      ++ended_from_outside;
    }
    CHECK(still_running() == "0");
    bystander.check_untouched();
  }
  CHECK(ended_from_outside >= 2);
  // A cancel from the caller ends it the same way.
  std::stop_source stop;
  auto running = std::async(std::launch::async, [&] { return run(*driver, swallow, {}, AccessMode::read_only, stop.get_token()); });
  const std::string backend = sleeping_backend("drivers_pgb_swallow");
  CHECK(backend != bystander.pid());
  stop.request_stop();
  REQUIRE(running.wait_for(6s) == std::future_status::ready);
  CHECK(refusal_reason(running.get()) == RefusalReason::cancelled);
  CHECK(still_running() == "0");
  bystander.check_untouched();
  CHECK(cell(expect<Rows>(run(*driver, "SELECT 1"))) == "1");
}

TEST_CASE("through PgBouncer, a read-write call that cannot be cancelled ends no server process by the pooler's key",
          "[postgres][pgbouncer][limits]") {
  // Read-write mode through a transaction pool is not supported (its
  // timeouts are session settings), but it must not hurt anyone else: with no
  // read-only call before it there is no audit, and the number PQbackendPID
  // gives is PgBouncer's key, which may be any process's ID.
  const auto bouncer = PgBouncer::start(3);
  if (!bouncer) return;
  const auto reader_url = pg_url(true);
  const std::string through = bouncer->url_for(*reader_url);
  Bystander bystander(through);
  const std::string swallow = swallowing_block("drivers_pgb_rw_swallow");
  auto driver = rawtool::make_postgres_driver(through + "?application_name=drivers_pgb_rw_swallow");
  std::stop_source stop;
  auto running = std::async(std::launch::async, [&] { return run(*driver, swallow, {}, AccessMode::read_write, stop.get_token()); });
  const std::string backend = sleeping_backend("drivers_pgb_rw_swallow");
  CHECK(backend != bystander.pid());
  stop.request_stop();
  REQUIRE(running.wait_for(10s) == std::future_status::ready);
  CHECK(refusal_reason(running.get()) == RefusalReason::cancelled);
  bystander.check_untouched();
  // What rawtool could not end is ended here, so the pool is clean for the next test.
  pg_admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%drivers_pgb_rw_swallow%' AND pid <> pg_backend_pid()");
}

TEST_CASE("through PgBouncer, a statement's notices reach its outcome", "[postgres][pgbouncer][notices]") {
  const auto bouncer = PgBouncer::start(2);
  if (!bouncer) return;
  const auto url = pg_url(true);
  auto driver = rawtool::make_postgres_driver(bouncer->url_for(*url));
  const Rows rows = expect<Rows>(run(*driver, "DO $$BEGIN RAISE NOTICE 'drivers_pgb % notice', 1; RAISE WARNING 'then a warning'; END$$"));
  REQUIRE(rows.notices.size() == 2);
  CHECK(bytes_of(rows.notices[0].severity) == "NOTICE");
  CHECK(bytes_of(rows.notices[0].message) == "drivers_pgb 1 notice");
  CHECK(bytes_of(rows.notices[1].severity) == "WARNING");
  CHECK(bytes_of(rows.notices[1].message) == "then a warning");
  const auto failure = expect<rawtool::Failure>(
      run(*driver, "DO $$BEGIN RAISE NOTICE 'before the failure'; RAISE EXCEPTION 'the failure'; END$$"));
  CHECK(bytes_of(failure.message) == "the failure");
  REQUIRE(failure.notices.size() == 1);
  CHECK(bytes_of(failure.notices[0].message) == "before the failure");
}

TEST_CASE("through PgBouncer, describe leaves no prepared statement on any server connection",
          "[postgres][pgbouncer]") {
  const auto bouncer = PgBouncer::start(2);
  if (!bouncer) return;
  const auto url = pg_url(true);
  auto driver = rawtool::make_postgres_driver(bouncer->url_for(*url));
  for (int round = 0; round < 6; ++round) {
    const rawtool::Parameter parameter = std::int64_t{1};
    const auto shape = driver->describe("SELECT $1::int AS drivers_pgb_described", std::span(&parameter, 1),
                                        AccessMode::read_only);
    INFO("round " << round << ", holding alternative " << shape.index());
    CHECK(std::holds_alternative<rawtool::StatementShape>(shape));
  }
  const Seen seen = through_other_client(bouncer->url_for(*url), "(SELECT count(*) FROM pg_prepared_statements)");
  CHECK(seen.servers.size() == 2);
  CHECK(seen.values == std::set<std::string>{"0"});
}

TEST_CASE("through PgBouncer, a configured rawtool's reply carries the statement's notices, its time limit and its "
          "refused writes",
          "[postgres][pgbouncer][tool]") {
  const auto bouncer = PgBouncer::start(2);
  if (!bouncer) return;
  const auto url = pg_url(true);
  rawtool::test::TempDir dir;
  const nlohmann::json config = {
      {"databases",
       {{{"url", bouncer->url_for(*url)}, {"pool_size", 1}, {"limits", {{"statement_timeout_ms", 300}}}}}}};
  dir.write("rawtool.json", config.dump());
  auto tool = rawtool::Tool::open(rawtool::load_config(dir.path() / "rawtool.json"), rawtool::ToolOptions{});

  const rawtool::Reply noisy = tool->raw("DO $$BEGIN RAISE NOTICE 'drivers_pgb % from the tool', 2; END$$");
  INFO(noisy.text());
  REQUIRE_FALSE(noisy.is_error());
  const auto fields = rawtool::test::quoted_fields(noisy.text());
  REQUIRE_FALSE(fields.empty());
  CHECK(fields[0] == std::pair<std::string, std::string>{"notice 1 message", "drivers_pgb 2 from the tool"});
  REQUIRE(noisy.structured()["notices"].size() == 1);
  CHECK(noisy.structured()["notices"][0]["message"] == "drivers_pgb 2 from the tool");

  const auto started = std::chrono::steady_clock::now();
  const rawtool::Reply slow = tool->raw("SELECT pg_sleep(30)");
  CHECK(std::chrono::steady_clock::now() - started < 1500ms);
  CHECK(slow.is_error());
  CHECK(slow.structured()["reason"] == "timeout");

  const rawtool::Reply write = tool->raw("CREATE TABLE drivers_pgb_tool_made (x int)");
  CHECK(write.is_error());
  CHECK(pg_admin("SELECT count(*) FROM pg_class WHERE relname = 'drivers_pgb_tool_made'") == "0");
  // The pool's server connections carry nothing of these calls.
  const Seen others = through_other_client(bouncer->url_for(*url), timeout_settings);
  CHECK(others.values == std::set<std::string>{pg_admin(fmt::format("SELECT {}", timeout_settings))});
}
