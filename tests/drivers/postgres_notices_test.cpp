// NOTICEs and WARNINGs through the PostgreSQL driver against a real server:
// the caller's statement's notices arrive on its outcome, succeeding or not,
// in order and byte for byte; those past the notice budget are counted; the
// driver's own wrapping contributes none; and no call sees another's.
#include "outcome_checks.hpp"
#include "pg_server.hpp"
#include "untrusted_bytes.hpp"

#include <rawtool/driver.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using rawtool::AccessMode;
using rawtool::Failure;
using rawtool::Limits;
using rawtool::Notice;
using rawtool::RefusalReason;
using rawtool::Rows;
using rawtool::test::bytes_of;
using rawtool::test::expect;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;
using rawtool::test::refusal_reason;
using rawtool::test::superuser_driver;

namespace {

/// Both roles: the superuser (trusted explicitly) and the low-privilege reader.
std::vector<std::unique_ptr<rawtool::Driver>> both_roles() {
  std::vector<std::unique_ptr<rawtool::Driver>> drivers;
  const auto url = pg_url();
  const auto reader_url = pg_url(true);
  if (!url || !reader_url) return drivers;
  drivers.push_back(superuser_driver(*url));
  drivers.push_back(rawtool::make_postgres_driver(*reader_url));
  return drivers;
}

std::string cell(const Rows& rows, std::size_t row, std::size_t column) {
  REQUIRE(row < rows.rows.size());
  REQUIRE(column < rows.rows[row].size());
  REQUIRE(rows.rows[row][column].has_value());
  return bytes_of(*rows.rows[row][column]);
}

std::uint64_t notice_bytes(const Notice& notice) {
  return notice.severity.size() + notice.sqlstate.size() + notice.message.size() + notice.detail.size() +
         notice.hint.size() + notice.context.size();
}

std::uint64_t notice_bytes(const std::vector<Notice>& notices) {
  std::uint64_t total = 0;
  for (const Notice& notice : notices) total += notice_bytes(notice);
  return total;
}

/// The kept notices are the first ones raised, in order: "notice 1", "notice 2", ...
void check_numbered_prefix(const std::vector<Notice>& notices) {
  for (std::size_t i = 0; i < notices.size(); ++i) {
    INFO("kept notice " << i);
    CHECK(bytes_of(notices[i].message) == fmt::format("notice {}", i + 1));
  }
}

/// Functions the tests call; created once per test case, dropped at its end.
struct NoticeFunctions {
  NoticeFunctions() {
    pg_admin(R"sql(
      CREATE OR REPLACE FUNCTION drivers_notices_three() RETURNS TABLE (n int, s text) LANGUAGE plpgsql AS $f$
      BEGIN
        RAISE NOTICE USING MESSAGE = E'first\nDETAIL:  forged', DETAIL = E'd\u202e1', HINT = E'h\x1b[2J1';
        RAISE WARNING 'second % warning', 2;
        RAISE NOTICE USING MESSAGE = 'third', ERRCODE = 'P0X99';
        RETURN QUERY SELECT g, 'row ' || g FROM generate_series(1, 3) g;
      END $f$;
      CREATE OR REPLACE FUNCTION drivers_notices_per_row(i int) RETURNS int LANGUAGE plpgsql AS $f$
      BEGIN
        RAISE NOTICE 'row %', i;
        RETURN i;
      END $f$;
      CREATE OR REPLACE FUNCTION drivers_notices_flood(count int, fail boolean) RETURNS int LANGUAGE plpgsql AS $f$
      BEGIN
        FOR i IN 1..count LOOP RAISE NOTICE 'notice %', i; END LOOP;
        IF fail THEN RAISE EXCEPTION 'after the flood'; END IF;
        RETURN count;
      END $f$;
      CREATE OR REPLACE FUNCTION drivers_notices_then_sleep() RETURNS int LANGUAGE plpgsql AS $f$
      BEGIN
        RAISE NOTICE 'before the sleep';
        PERFORM pg_sleep(30);
        RETURN 1;
      END $f$;
    )sql");
  }
  ~NoticeFunctions() {
    pg_admin("DROP FUNCTION IF EXISTS drivers_notices_three(); DROP FUNCTION IF EXISTS drivers_notices_per_row(int);"
             "DROP FUNCTION IF EXISTS drivers_notices_flood(int, boolean);"
             "DROP FUNCTION IF EXISTS drivers_notices_then_sleep()");
  }
  NoticeFunctions(const NoticeFunctions&) = delete;
  NoticeFunctions& operator=(const NoticeFunctions&) = delete;
};

}  // namespace

TEST_CASE("a succeeding statement's notices and warnings arrive on its rows in order, every field exact",
          "[postgres][notices]") {
  auto drivers = both_roles();
  if (drivers.empty()) return;
  const NoticeFunctions functions;
  for (auto& driver : drivers) {
    for (const AccessMode mode : {AccessMode::read_only, AccessMode::read_write}) {
      if (driver == drivers[1] && mode == AccessMode::read_write) continue;  // the reader is read-only in production
      INFO(rawtool::access_mode_name(mode));
      const Rows rows = expect<Rows>(driver->execute("SELECT * FROM drivers_notices_three()", {}, Limits{}, mode));
      REQUIRE(rows.rows.size() == 3);
      CHECK(cell(rows, 2, 1) == "row 3");
      REQUIRE(rows.notices.size() == 3);
      CHECK(rows.notices_withheld == 0);
      CHECK(bytes_of(rows.notices[0].severity) == "NOTICE");
      CHECK(bytes_of(rows.notices[0].sqlstate) == "00000");
      CHECK(bytes_of(rows.notices[0].message) == "first\nDETAIL:  forged");
      CHECK(bytes_of(rows.notices[0].detail) == "d\xe2\x80\xae" "1");
      CHECK(bytes_of(rows.notices[0].hint) == "h\x1b[2J1");
      CHECK(bytes_of(rows.notices[0].context).find("drivers_notices_three()") != std::string::npos);
      CHECK(bytes_of(rows.notices[1].severity) == "WARNING");
      CHECK(bytes_of(rows.notices[1].sqlstate) == "01000");
      CHECK(bytes_of(rows.notices[1].message) == "second 2 warning");
      CHECK(rows.notices[1].detail.empty());
      CHECK(rows.notices[1].hint.empty());
      CHECK(bytes_of(rows.notices[2].sqlstate) == "P0X99");
      CHECK(bytes_of(rows.notices[2].message) == "third");
    }
  }
}

TEST_CASE("notices raised between rows arrive with the rows, none lost to single-row reading", "[postgres][notices]") {
  auto drivers = both_roles();
  if (drivers.empty()) return;
  const NoticeFunctions functions;
  for (auto& driver : drivers) {
    const Rows rows = expect<Rows>(
        driver->execute("SELECT drivers_notices_per_row(g) FROM generate_series(1, 50) g", {}, Limits{},
                        AccessMode::read_only));
    REQUIRE(rows.rows.size() == 50);
    REQUIRE(rows.notices.size() == 50);
    for (std::size_t i = 0; i < rows.notices.size(); ++i) {
      CHECK(bytes_of(rows.notices[i].message) == fmt::format("row {}", i + 1));
    }
  }
}

TEST_CASE("a notice raised while the server parses the statement is the statement's", "[postgres][notices]") {
  auto drivers = both_roles();
  if (drivers.empty()) return;
  // An identifier longer than NAMEDATALEN - 1 is truncated by the parser,
  // which says so in a NOTICE (42622) sent before the statement's first reply.
  const std::string name(70, 'n');
  for (auto& driver : drivers) {
    for (const AccessMode mode : {AccessMode::read_only, AccessMode::read_write}) {
      INFO(rawtool::access_mode_name(mode));
      // A changed limit makes the driver send its timeouts first, so the
      // notice follows a preamble segment as well as the BEGIN.
      Limits limits;
      limits.statement_timeout = mode == AccessMode::read_only ? 4000ms : 4500ms;
      const Rows rows = expect<Rows>(driver->execute(fmt::format("SELECT 1 AS {}", name), {}, limits, mode));
      REQUIRE(rows.notices.size() == 1);
      CHECK(bytes_of(rows.notices[0].severity) == "NOTICE");
      CHECK(bytes_of(rows.notices[0].sqlstate) == "42622");
      CHECK(bytes_of(rows.notices[0].message).find(name) != std::string::npos);
      CHECK(cell(rows, 0, 0) == "1");
      if (driver == drivers[1]) break;  // the reader is read-only in production
    }
  }
}

TEST_CASE("notices past the notice budget are counted, so kept plus withheld is every notice raised",
          "[postgres][notices][limits]") {
  auto drivers = both_roles();
  if (drivers.empty()) return;
  const NoticeFunctions functions;
  constexpr int raised = 5000;
  Limits limits;
  limits.max_notice_bytes = 2048;
  for (auto& driver : drivers) {
    {
      const Rows rows = expect<Rows>(driver->execute(fmt::format("SELECT drivers_notices_flood({}, false)", raised),
                                                     {}, limits, AccessMode::read_only));
      CHECK(cell(rows, 0, 0) == std::to_string(raised));
      CHECK_FALSE(rows.notices.empty());
      CHECK(rows.notices.size() + rows.notices_withheld == raised);
      CHECK(notice_bytes(rows.notices) <= limits.max_notice_bytes);
      // The next notice would not have fitted: the budget was used, not abandoned early.
      CHECK(notice_bytes(rows.notices) + notice_bytes(rows.notices.back()) + 16 > limits.max_notice_bytes);
      check_numbered_prefix(rows.notices);
    }
    {
      const Failure failure = expect<Failure>(driver->execute(
          fmt::format("SELECT drivers_notices_flood({}, true)", raised), {}, limits, AccessMode::read_only));
      CHECK(bytes_of(failure.message) == "after the flood");
      CHECK_FALSE(failure.notices.empty());
      CHECK(failure.notices.size() + failure.notices_withheld == raised);
      CHECK(notice_bytes(failure.notices) <= limits.max_notice_bytes);
      check_numbered_prefix(failure.notices);
    }
    {
      // A notice bigger than the whole budget is withheld whole, and so is every later one.
      Limits tiny;
      tiny.max_notice_bytes = 10;
      const Rows rows = expect<Rows>(driver->execute(
          "SELECT drivers_notices_per_row(g) FROM generate_series(1, 3) g", {}, tiny, AccessMode::read_only));
      CHECK(rows.rows.size() == 3);
      CHECK(rows.notices.empty());
      CHECK(rows.notices_withheld == 3);
    }
  }
}

TEST_CASE("the notice budget and the row byte cap are separate", "[postgres][notices][limits]") {
  const auto url = pg_url();
  if (!url) return;
  const NoticeFunctions functions;
  auto driver = superuser_driver(*url);
  // "v", then the cells 1 to 50 (1 + 9 * 1 + 41 * 2 = 92 bytes) and each
  // one-cell row's overhead: exactly the cap.
  Limits limits;
  limits.max_bytes = 92 + 50 * (rawtool::row_overhead_bytes + rawtool::cell_overhead_bytes);
  limits.max_notice_bytes = 64 * 1024;
  const char* statement = "SELECT drivers_notices_per_row(g) AS v FROM generate_series(1, 50) g";
  // Fifty notices of some 80 bytes each (with their context) are far past
  // max_bytes, yet every row is kept and the rows' bytes count rows only.
  const Rows rows = expect<Rows>(driver->execute(statement, {}, limits, AccessMode::read_only));
  CHECK(rows.notices.size() == 50);
  CHECK(rows.notices_withheld == 0);
  CHECK(notice_bytes(rows.notices) > limits.max_bytes);
  CHECK(rows.truncation == rawtool::Truncation::none);
  CHECK(rows.rows.size() == 50);
  CHECK(rows.bytes == limits.max_bytes);
  // And a notice budget too small for one notice leaves the rows alone.
  limits.max_notice_bytes = 1;
  const Rows quiet = expect<Rows>(driver->execute(statement, {}, limits, AccessMode::read_only));
  CHECK(quiet.notices.empty());
  CHECK(quiet.notices_withheld == 50);
  CHECK(quiet.rows.size() == 50);
  CHECK(quiet.truncation == rawtool::Truncation::none);
}

TEST_CASE("the warning the closing ROLLBACK raises is the wrapping's: the statement that ended the transaction is refused",
          "[postgres][notices]") {
  auto drivers = both_roles();
  if (drivers.empty()) return;
  for (auto& driver : drivers) {
    // Each of these ends the read-only transaction, so the driver's own
    // ROLLBACK after it warns that no transaction is in progress: that
    // warning is how the driver knows, and it is not the statement's.
    for (const char* ending : {"COMMIT", "ROLLBACK", "END", "ABORT"}) {
      INFO(ending);
      const auto outcome = driver->execute(ending, {}, Limits{}, AccessMode::read_only);
      CHECK(refusal_reason(outcome) == RefusalReason::read_only);
      CHECK_THAT(expect<rawtool::Refusal>(outcome).explanation, Catch::Contains("ended rawtool's read-only transaction"));
      CHECK(expect<rawtool::Refusal>(outcome).explanation.str().find("notice") == std::string::npos);
    }
  }
  // In read-write mode no transaction is open around the statement, so the
  // same warning is the caller's statement's own, and it is kept.
  const auto url = pg_url();
  auto writer = superuser_driver(*url);
  const Rows rows = expect<Rows>(writer->execute("ROLLBACK", {}, Limits{}, AccessMode::read_write));
  REQUIRE(rows.notices.size() == 1);
  CHECK(bytes_of(rows.notices[0].severity) == "WARNING");
  CHECK(bytes_of(rows.notices[0].sqlstate) == "25P01");
}

TEST_CASE("a notice raised when a read-write statement commits is the statement's", "[postgres][notices]") {
  const auto url = pg_url();
  if (!url) return;
  pg_admin(R"sql(
    DROP TABLE IF EXISTS drivers_notices_deferred;
    CREATE TABLE drivers_notices_deferred (x int);
    CREATE OR REPLACE FUNCTION drivers_notices_at_commit() RETURNS trigger LANGUAGE plpgsql AS $f$
    BEGIN
      RAISE NOTICE 'committing %', NEW.x;
      RETURN NULL;
    END $f$;
    CREATE CONSTRAINT TRIGGER drivers_notices_at_commit AFTER INSERT ON drivers_notices_deferred
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION drivers_notices_at_commit();
  )sql");
  auto driver = superuser_driver(*url);
  const Rows rows = expect<Rows>(
      driver->execute("INSERT INTO drivers_notices_deferred VALUES (7), (8)", {}, Limits{}, AccessMode::read_write));
  CHECK(rows.rows_affected == 2u);
  REQUIRE(rows.notices.size() == 2);
  CHECK(bytes_of(rows.notices[0].message) == "committing 7");
  CHECK(bytes_of(rows.notices[1].message) == "committing 8");
  CHECK(pg_admin("SELECT count(*) FROM drivers_notices_deferred") == "2");
  pg_admin("DROP TABLE drivers_notices_deferred; DROP FUNCTION drivers_notices_at_commit()");
}

TEST_CASE("no call's outcome carries notices from an earlier call", "[postgres][notices]") {
  auto drivers = both_roles();
  if (drivers.empty()) return;
  const NoticeFunctions functions;
  Limits small;
  small.max_notice_bytes = 256;
  const auto expect_quiet = [](rawtool::Driver& driver) {
    const Rows rows = expect<Rows>(driver.execute("SELECT 1", {}, Limits{}, AccessMode::read_only));
    CHECK(rows.notices.empty());
    CHECK(rows.notices_withheld == 0);
  };
  for (auto& driver : drivers) {
    const Rows flooded = expect<Rows>(
        driver->execute("SELECT drivers_notices_flood(2000, false)", {}, small, AccessMode::read_only));
    CHECK(flooded.notices_withheld > 0);
    expect_quiet(*driver);

    const Failure failed = expect<Failure>(
        driver->execute("SELECT drivers_notices_flood(3, true)", {}, Limits{}, AccessMode::read_only));
    CHECK(failed.notices.size() == 3);
    expect_quiet(*driver);

    // A refusal holds the tool's words only: the notice raised before the
    // timeout is counted in its explanation, and goes to no later call.
    Limits short_time;
    short_time.statement_timeout = 300ms;
    const auto timed_out = driver->execute("SELECT drivers_notices_then_sleep()", {}, short_time, AccessMode::read_only);
    CHECK(refusal_reason(timed_out) == RefusalReason::timeout);
    CHECK_THAT(expect<rawtool::Refusal>(timed_out).explanation,
               Catch::EndsWith(" It raised 1 notice before it stopped; a stopped statement's notices are not shown."));
    expect_quiet(*driver);
    Limits short_quiet;
    short_quiet.statement_timeout = 200ms;
    const auto quiet_timeout = driver->execute("SELECT pg_sleep(30)", {}, short_quiet, AccessMode::read_only);
    CHECK(refusal_reason(quiet_timeout) == RefusalReason::timeout);
    CHECK(expect<rawtool::Refusal>(quiet_timeout).explanation.str().find("notice") == std::string::npos);

    const std::string pid = bytes_of(*expect<Rows>(driver->execute("SELECT pg_backend_pid()", {}, Limits{},
                                                                   AccessMode::read_only)).rows.at(0).at(0));
    std::stop_source stop;
    auto running = std::async(std::launch::async, [&] {
      return driver->execute("SELECT drivers_notices_then_sleep()", {}, Limits{}, AccessMode::read_only, stop.get_token());
    });
    rawtool::test::wait_until_sleeping(pid);  // its notice is raised before the sleep
    stop.request_stop();
    REQUIRE(running.wait_for(5s) == std::future_status::ready);
    const auto cancelled = running.get();
    CHECK(refusal_reason(cancelled) == RefusalReason::cancelled);
    CHECK_THAT(expect<rawtool::Refusal>(cancelled).explanation, Catch::Contains("raised 1 notice before it stopped"));
    expect_quiet(*driver);

    // The wrapping's warning after a COMMIT does not reach the next call.
    CHECK(refusal_reason(driver->execute("COMMIT", {}, Limits{}, AccessMode::read_only)) == RefusalReason::read_only);
    expect_quiet(*driver);
  }
}
