// The shared hostile corpus walked through the real engines: every FAILURE
// payload an engine can carry is made to come back in a real failure, and
// must arrive byte for byte in the fields the driver reads.
#include "outcome_checks.hpp"
#include "pg_server.hpp"
#include "untrusted_bytes.hpp"

#include <rawtool/corpus.hpp>
#include <rawtool/driver.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

using rawtool::AccessMode;
using rawtool::Failure;
using rawtool::Limits;
using rawtool::Parameter;
using rawtool::test::bytes_of;
using rawtool::test::expect;

namespace {

/// Payloads at most this long are walked: a statement holds them (SQLite) or
/// a message repeats them, and the limits are not what this test is about.
constexpr std::size_t walk_limit = 64 * 1024;

bool has_nul(const std::string& bytes) { return bytes.find('\0') != std::string::npos; }

/// Stores every FAILURE payload PostgreSQL can hold in `table` (id int, s text),
/// one row per case with its index as id, and hands each to `check` with a
/// driver connected as the low-privilege reader; fails unless most were walked.
void walk_stored_corpus(const std::string& url, const std::string& reader_url, const std::string& table,
                        const std::function<void(const rawtool::corpus::FailureCase&, std::size_t id, rawtool::Driver& reader)>& check) {
  const auto cases = rawtool::corpus::load_failures();
  auto writer = rawtool::test::superuser_driver(url);
  auto reader = rawtool::make_postgres_driver(reader_url);
  std::size_t walked = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    // A UTF8 database stores neither NUL nor invalid UTF-8.
    if (!c.valid_utf8 || has_nul(c.bytes) || c.bytes.size() > walk_limit) continue;
    INFO(c.source << " " << c.name);
    const std::vector<Parameter> row{static_cast<std::int64_t>(i), c.bytes};
    expect<rawtool::Rows>(writer->execute("INSERT INTO " + table + " VALUES ($1, $2)", row, Limits{}, AccessMode::read_write));
    check(c, i, *reader);
    ++walked;
  }
  CHECK(walked > cases.size() / 2);
}

}  // namespace

TEST_CASE("every corpus failure payload comes back byte for byte from PostgreSQL", "[postgres][corpus]") {
  const auto url = rawtool::test::pg_url();
  if (!url) return;
  const auto reader_url = rawtool::test::pg_url(true);
  if (!reader_url) return;
  rawtool::test::pg_admin(R"sql(
    DROP TABLE IF EXISTS drivers_corpus;
    CREATE TABLE drivers_corpus (id int PRIMARY KEY, s text);
    CREATE OR REPLACE FUNCTION drivers_corpus_raise(p text) RETURNS int LANGUAGE plpgsql AS $f$
    BEGIN
      RAISE NOTICE USING MESSAGE = p;
      RAISE EXCEPTION USING MESSAGE = p, DETAIL = p, HINT = p, TABLE = p, COLUMN = p, CONSTRAINT = p;
    END $f$;
  )sql");
  Limits limits;
  limits.max_notice_bytes = 1024 * 1024;  // the notice budget is not what this walk is about
  walk_stored_corpus(*url, *reader_url, "drivers_corpus", [&](const auto& c, std::size_t i, rawtool::Driver& reader) {
    const auto cast = reader.execute(fmt::format("SELECT s::int FROM drivers_corpus WHERE id = {}", i), {}, Limits{},
                                      AccessMode::read_only);
    CHECK(bytes_of(expect<Failure>(cast).message) == "invalid input syntax for type integer: \"" + c.bytes + "\"");

    const auto raised = reader.execute(
        fmt::format("SELECT drivers_corpus_raise(s) FROM drivers_corpus WHERE id = {}", i), {}, limits,
        AccessMode::read_only);
    const Failure& failure = expect<Failure>(raised);
    CHECK(bytes_of(failure.message) == c.bytes);
    CHECK(bytes_of(failure.detail) == c.bytes);
    CHECK(bytes_of(failure.hint) == c.bytes);
    CHECK(bytes_of(failure.table) == c.bytes);
    CHECK(bytes_of(failure.column) == c.bytes);
    CHECK(bytes_of(failure.constraint) == c.bytes);
    CHECK(failure.notices_withheld == 0);
    REQUIRE(failure.notices.size() == 1);
    CHECK(bytes_of(failure.notices[0].message) == c.bytes);
  });
  rawtool::test::pg_admin("DROP FUNCTION drivers_corpus_raise(text); DROP TABLE drivers_corpus");
}

TEST_CASE("every corpus payload raised as a notice by a succeeding statement comes back byte for byte on its rows",
          "[postgres][corpus][notices]") {
  const auto url = rawtool::test::pg_url();
  if (!url) return;
  const auto reader_url = rawtool::test::pg_url(true);
  if (!reader_url) return;
  rawtool::test::pg_admin(R"sql(
    DROP TABLE IF EXISTS drivers_corpus_notices;
    CREATE TABLE drivers_corpus_notices (id int PRIMARY KEY, s text);
    GRANT SELECT ON drivers_corpus_notices TO PUBLIC;
    CREATE OR REPLACE FUNCTION drivers_corpus_notice(p text) RETURNS TABLE (n int, tail text) LANGUAGE plpgsql AS $f$
    BEGIN
      RAISE NOTICE USING MESSAGE = p, DETAIL = p, HINT = p;
      RAISE WARNING USING MESSAGE = p;
      RETURN QUERY VALUES (octet_length(p), 'after ' || p);
    END $f$;
  )sql");
  Limits limits;
  limits.max_notice_bytes = 1024 * 1024;  // every walked payload fits four times over with its context
  walk_stored_corpus(*url, *reader_url, "drivers_corpus_notices", [&](const auto& c, std::size_t i, rawtool::Driver& reader) {
    const auto outcome = reader.execute(
        fmt::format("SELECT r.* FROM drivers_corpus_notices, drivers_corpus_notice(s) r WHERE id = {}", i), {},
        limits, AccessMode::read_only);
    const rawtool::Rows& rows = expect<rawtool::Rows>(outcome);
    REQUIRE(rows.rows.size() == 1);
    REQUIRE(rows.rows[0].size() == 2);
    REQUIRE(rows.rows[0][1].has_value());
    CHECK(bytes_of(*rows.rows[0][1]) == "after " + c.bytes);
    CHECK(rows.notices_withheld == 0);
    REQUIRE(rows.notices.size() == 2);
    CHECK(bytes_of(rows.notices[0].severity) == "NOTICE");
    CHECK(bytes_of(rows.notices[0].message) == c.bytes);
    CHECK(bytes_of(rows.notices[0].detail) == c.bytes);
    CHECK(bytes_of(rows.notices[0].hint) == c.bytes);
    CHECK(bytes_of(rows.notices[1].severity) == "WARNING");
    CHECK(bytes_of(rows.notices[1].message) == c.bytes);
  });
  rawtool::test::pg_admin("DROP FUNCTION drivers_corpus_notice(text); DROP TABLE drivers_corpus_notices");
}

TEST_CASE("every corpus failure payload comes back byte for byte from SQLite", "[sqlite][corpus]") {
  const auto cases = rawtool::corpus::load_failures();
  std::size_t walked = 0;
  for (const auto& c : cases) {
    // A statement's text cannot hold NUL: SQLite reads it as the end.
    if (has_nul(c.bytes) || c.bytes.size() > walk_limit) continue;
    INFO(c.source << " " << c.name);
    std::string literal = "'";
    for (const char ch : c.bytes) literal += ch == '\'' ? std::string("''") : std::string(1, ch);
    literal += "'";
    auto driver = rawtool::make_sqlite_driver(":memory:", AccessMode::read_write);
    expect<rawtool::Rows>(driver->execute("CREATE TABLE t (x)", {}, Limits{}, AccessMode::read_write));
    expect<rawtool::Rows>(driver->execute(
        "CREATE TRIGGER t_raise BEFORE INSERT ON t BEGIN SELECT RAISE(ABORT, " + literal + "); END", {}, Limits{},
        AccessMode::read_write));
    const auto raised = driver->execute("INSERT INTO t VALUES (1)", {}, Limits{}, AccessMode::read_write);
    CHECK(bytes_of(expect<Failure>(raised).message) == c.bytes);
    ++walked;
  }
  CHECK(walked > cases.size() / 2);
}
