// The read-only audit against a real server: what a role owns, the SECURITY
// DEFINER functions it can run as someone else, and whether the server logs
// what its statements raise. Each test makes its own roles (named after the
// test) and drops them, and shows the finding is real before it shows the
// audit sees it.
#include "outcome_checks.hpp"
#include "pg_server.hpp"
#include "untrusted_bytes.hpp"

#include <rawtool/driver.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

using rawtool::AccessMode;
using rawtool::DatabaseReport;
using rawtool::Hazard;
using rawtool::HazardKind;
using rawtool::Limits;
using rawtool::Outcome;
using rawtool::RefusalReason;
using rawtool::test::bytes_of;
using rawtool::test::cell;
using rawtool::test::expect;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;
using rawtool::test::refusal_reason;

namespace {

/// `url` (the superuser's) as `user`, on `database` when one is given.
std::string url_as(const std::string& url, std::string_view user, std::string_view database = {}) {
  std::string out = fmt::format("{}{}user={}", url, url.find('?') == std::string::npos ? "?" : "&", user);
  if (!database.empty()) out += fmt::format("&dbname={}", database);
  return out;
}

/// Drops the roles (with what they own and their grants) and databases named.
void drop_all(const std::vector<std::string>& roles, const std::vector<std::string>& databases = {}) {
  for (const std::string& database : databases) pg_admin(fmt::format("DROP DATABASE IF EXISTS {} WITH (FORCE)", database));
  for (const std::string& role : roles) {
    pg_admin(fmt::format("DO $$BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{0}') THEN "
                         "DROP OWNED BY {0} CASCADE; DROP ROLE {0}; END IF; END$$",
                         role));
  }
}

DatabaseReport inspect(rawtool::Driver& driver) {
  auto report = driver.inspect();
  REQUIRE(std::holds_alternative<DatabaseReport>(report));
  return std::get<DatabaseReport>(std::move(report));
}

/// The hazard of `kind` in `report`, or null.
const Hazard* hazard_of(const DatabaseReport& report, HazardKind kind) {
  const auto found = std::find_if(report.hazards.begin(), report.hazards.end(),
                                  [&](const Hazard& hazard) { return hazard.kind == kind; });
  return found == report.hazards.end() ? nullptr : &*found;
}

std::vector<std::string> names_of(const Hazard& hazard) {
  std::vector<std::string> names;
  for (const auto& name : hazard.names) names.push_back(bytes_of(name));
  return names;
}

Outcome run(rawtool::Driver& driver, std::string_view sql, AccessMode mode = AccessMode::read_only) {
  return driver.execute(sql, {}, Limits{}, mode);
}

}  // namespace

TEST_CASE("a role that owns a table, or the database, is refused read-only mode: ANALYZE's statistics outlive the "
          "rollback",
          "[postgres][read_only][audit]") {
  const auto url = pg_url();
  if (!url) return;
  const std::vector<std::string> roles = {"audit_own_login", "audit_own_holder"};
  const std::vector<std::string> databases = {"audit_own_db"};
  drop_all(roles, databases);
  // The owner is reached through a membership, as SET ROLE reaches it.
  pg_admin("CREATE ROLE audit_own_holder NOLOGIN; CREATE ROLE audit_own_login LOGIN;"
           "GRANT audit_own_holder TO audit_own_login; GRANT CONNECT ON DATABASE rawtool_test TO audit_own_login;"
           "DROP TABLE IF EXISTS audit_own_t; CREATE TABLE audit_own_t (x int);"
           // Fewer rows than autovacuum's analyze threshold (50), so nothing but the statement analyzes it.
           "INSERT INTO audit_own_t SELECT generate_series(1, 10); ALTER TABLE audit_own_t OWNER TO audit_own_holder");
  const auto statistics = [] { return pg_admin("SELECT reltuples FROM pg_class WHERE oid = 'audit_own_t'::regclass"); };
  const std::string before = statistics();
  REQUIRE(before == "-1");

  {
    auto driver = rawtool::make_postgres_driver(url_as(*url, "audit_own_login"));
    const Outcome outcome = run(*driver, "ANALYZE audit_own_t");
    CHECK(refusal_reason(outcome) == RefusalReason::not_permitted);
    const std::string& words = expect<rawtool::Refusal>(outcome).explanation;
    CHECK_THAT(words, Catch::Contains("it owns tables, so it can ANALYZE them"));
    CHECK(words.find("audit_own") == std::string::npos);
    CHECK(statistics() == before);
    const DatabaseReport report = inspect(*driver);
    const Hazard* owned = hazard_of(report, HazardKind::table_owner);
    REQUIRE(owned != nullptr);
    CHECK(owned->refused);
    CHECK(names_of(*owned) == std::vector<std::string>{"audit_own_t"});
    CHECK(hazard_of(report, HazardKind::database_owner) == nullptr);
  }
  {
    // Why: trusted, the same call runs, and the statistics stay after rawtool's rollback.
    auto trusted = rawtool::make_postgres_driver(url_as(*url, "audit_own_login"), rawtool::test::trusted_options());
    expect<rawtool::Rows>(run(*trusted, "ANALYZE audit_own_t"));
    CHECK(statistics() == "10");
  }
  pg_admin("DROP TABLE audit_own_t");

  // The owner of the database analyzes every table in it, its own or not.
  pg_admin("CREATE DATABASE audit_own_db OWNER audit_own_holder");
  {
    auto admin = rawtool::make_postgres_driver(url_as(*url, pg_admin("SELECT current_user"), "audit_own_db"),
                                               rawtool::test::trusted_options());
    expect<rawtool::Rows>(run(*admin, "CREATE TABLE audit_own_dt (x int)", AccessMode::read_write));
    expect<rawtool::Rows>(run(*admin, "INSERT INTO audit_own_dt SELECT generate_series(1, 10)", AccessMode::read_write));
    const auto statistics_there = [&] {
      return cell(run(*admin, "SELECT reltuples FROM pg_class WHERE relname = 'audit_own_dt'"));
    };
    REQUIRE(statistics_there() == "-1");
    auto driver = rawtool::make_postgres_driver(url_as(*url, "audit_own_login", "audit_own_db"));
    const Outcome outcome = run(*driver, "ANALYZE");
    CHECK(refusal_reason(outcome) == RefusalReason::not_permitted);
    CHECK_THAT(expect<rawtool::Refusal>(outcome).explanation, Catch::Contains("it owns the database"));
    CHECK(statistics_there() == "-1");
    const DatabaseReport report = inspect(*driver);
    const Hazard* owned = hazard_of(report, HazardKind::database_owner);
    REQUIRE(owned != nullptr);
    CHECK(owned->refused);
    CHECK(names_of(*owned) == std::vector<std::string>{"audit_own_db"});
    // The table is the superuser's: only the database's ownership lets the role analyze it.
    CHECK(hazard_of(report, HazardKind::table_owner) == nullptr);

    auto trusted = rawtool::make_postgres_driver(url_as(*url, "audit_own_login", "audit_own_db"),
                                                 rawtool::test::trusted_options());
    expect<rawtool::Rows>(run(*trusted, "ANALYZE"));
    CHECK(statistics_there() == "10");
  }
  drop_all(roles, databases);
}

TEST_CASE("what the owner of a schema, sequence or function can do in read-only mode ends with the rollback, so "
          "they are reported, not refused",
          "[postgres][read_only][audit]") {
  const auto url = pg_url();
  if (!url) return;
  const std::vector<std::string> roles = {"audit_objs_login"};
  drop_all(roles);
  pg_admin("DROP SCHEMA IF EXISTS audit_objs CASCADE; CREATE ROLE audit_objs_login LOGIN;"
           "GRANT CONNECT ON DATABASE rawtool_test TO audit_objs_login;"
           "CREATE SCHEMA audit_objs AUTHORIZATION audit_objs_login;"
           "CREATE TABLE audit_objs.t (x int); INSERT INTO audit_objs.t SELECT generate_series(1, 10);"
           "GRANT SELECT ON audit_objs.t TO audit_objs_login;"
           "CREATE SEQUENCE audit_objs.seq; ALTER SEQUENCE audit_objs.seq OWNER TO audit_objs_login;"
           "CREATE FUNCTION audit_objs.f() RETURNS int LANGUAGE sql AS 'SELECT 1';"
           "ALTER FUNCTION audit_objs.f() OWNER TO audit_objs_login;"
           // More sequences than a hazard lists: 1 + 23 owned.
           "DO $$BEGIN FOR i IN 1..23 LOOP EXECUTE format('CREATE SEQUENCE audit_objs.more_%s', i); "
           "EXECUTE format('ALTER SEQUENCE audit_objs.more_%s OWNER TO audit_objs_login', i); END LOOP; END$$");
  const auto state = [] {
    return pg_admin(
        "SELECT concat_ws('|', (SELECT reltuples FROM pg_class WHERE oid = 'audit_objs.t'::regclass), "
        "(SELECT last_value || ':' || is_called FROM audit_objs.seq), "
        "(SELECT prosrc || coalesce(array_to_string(proconfig, ','), '') FROM pg_proc WHERE oid = 'audit_objs.f()'::regprocedure), "
        "(SELECT nspname || coalesce(nspacl::text, '') FROM pg_namespace WHERE nspname LIKE 'audit_objs%'), "
        "(SELECT count(*) FROM pg_class WHERE relnamespace = 'audit_objs'::regnamespace), "
        "coalesce(obj_description('audit_objs'::regnamespace, 'pg_namespace'), '-'))");
  };
  const std::string before = state();

  auto driver = rawtool::make_postgres_driver(url_as(*url, "audit_objs_login"));
  const std::vector<std::string> attempts = {
      "ANALYZE audit_objs.t",
      "ANALYZE",
      "DROP TABLE audit_objs.t",
      "ALTER SCHEMA audit_objs RENAME TO audit_objs_renamed",
      "GRANT USAGE ON SCHEMA audit_objs TO PUBLIC",
      "COMMENT ON SCHEMA audit_objs IS 'changed'",
      "CREATE TABLE audit_objs.made (x int)",
      "ALTER SEQUENCE audit_objs.seq RESTART 50",
      "SELECT setval('audit_objs.seq', 50)",
      "SELECT nextval('audit_objs.seq')",
      "ALTER FUNCTION audit_objs.f() SET work_mem = '2MB'",
      "CREATE OR REPLACE FUNCTION audit_objs.f() RETURNS int LANGUAGE sql AS 'SELECT 2'",
      "DO $$BEGIN EXECUTE 'ANALYZE audit_objs.t'; END$$",
  };
  for (const std::string& attempt : attempts) {
    INFO(attempt);
    const Outcome outcome = run(*driver, attempt);
    // Not refused by the audit: the server answers, and nothing lasts.
    CHECK_FALSE(std::holds_alternative<rawtool::Refusal>(outcome));
    CHECK_FALSE(std::holds_alternative<rawtool::Unavailable>(outcome));
    CHECK(state() == before);
  }

  const DatabaseReport report = inspect(*driver);
  for (const auto& [kind, first] : {std::pair{HazardKind::schema_owner, "audit_objs"},
                                    std::pair{HazardKind::function_owner, "audit_objs.f()"}}) {
    INFO(rawtool::hazard_kind_name(kind));
    const Hazard* hazard = hazard_of(report, kind);
    REQUIRE(hazard != nullptr);
    CHECK_FALSE(hazard->refused);
    CHECK(names_of(*hazard) == std::vector<std::string>{first});
    CHECK(hazard->names_left_out == 0);
  }
  const Hazard* sequences = hazard_of(report, HazardKind::sequence_owner);
  REQUIRE(sequences != nullptr);
  CHECK_FALSE(sequences->refused);
  CHECK(sequences->names.size() == 20);
  CHECK(sequences->names_left_out == 4);
  for (const std::string& name : names_of(*sequences)) CHECK(name.starts_with("audit_objs."));
  CHECK(hazard_of(report, HazardKind::table_owner) == nullptr);
  CHECK(hazard_of(report, HazardKind::database_owner) == nullptr);

  driver.reset();
  pg_admin("DROP SCHEMA audit_objs CASCADE");
  drop_all(roles);
}

TEST_CASE("a superuser's SECURITY DEFINER function the role can run is reported, and refused when refuse_hazards "
          "lists security_definer",
          "[postgres][read_only][audit]") {
  const auto url = pg_url();
  if (!url) return;
  const std::vector<std::string> roles = {"audit_definer_login", "audit_definer_other"};
  drop_all(roles);
  const std::string file = fmt::format("/tmp/rawtool-audit-definer-{}", getpid());
  std::filesystem::remove(file);
  pg_admin(fmt::format(
      "DROP FUNCTION IF EXISTS audit_definer_run(); CREATE ROLE audit_definer_login LOGIN;"
      // Another role's, named before the superuser's in the alphabet, listed after it.
      "CREATE ROLE audit_definer_other NOLOGIN;"
      "CREATE FUNCTION a_audit_definer_other() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 1';"
      "ALTER FUNCTION a_audit_definer_other() OWNER TO audit_definer_other;"
      "REVOKE EXECUTE ON FUNCTION a_audit_definer_other() FROM PUBLIC;"
      "GRANT EXECUTE ON FUNCTION a_audit_definer_other() TO audit_definer_login;"
      "GRANT CONNECT ON DATABASE rawtool_test TO audit_definer_login;"
      "CREATE FUNCTION audit_definer_run() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS "
      "$$BEGIN COPY (SELECT 1) TO PROGRAM 'touch {}'; END$$;"
      "REVOKE EXECUTE ON FUNCTION audit_definer_run() FROM PUBLIC;"
      "GRANT EXECUTE ON FUNCTION audit_definer_run() TO audit_definer_login;"
      // One of its own runs as itself: nothing new, not named.
      "CREATE FUNCTION audit_definer_own() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 1';"
      "ALTER FUNCTION audit_definer_own() OWNER TO audit_definer_login",
      file));

  const auto definer_names = [](const DatabaseReport& report) {
    const Hazard* hazard = hazard_of(report, HazardKind::security_definer);
    REQUIRE(hazard != nullptr);
    std::vector<std::string> names = names_of(*hazard);
    CHECK(std::none_of(names.begin(), names.end(),
                       [](const std::string& name) { return name.starts_with("audit_definer_own"); }));
    return std::pair{hazard->refused, names};
  };
  {
    auto driver = rawtool::make_postgres_driver(url_as(*url, "audit_definer_login"));
    const DatabaseReport report = inspect(*driver);
    const auto [refused, names] = definer_names(report);
    CHECK_FALSE(refused);
    // Each named with its owner, the superuser's before another role's.
    const auto superusers = std::find(names.begin(), names.end(),
                                      "audit_definer_run() owned by " + pg_admin("SELECT current_user"));
    const auto others = std::find(names.begin(), names.end(), "a_audit_definer_other() owned by audit_definer_other");
    CHECK(superusers != names.end());
    CHECK(others != names.end());
    CHECK(superusers < others);
    CHECK_THAT(hazard_of(report, HazardKind::security_definer)->explanation.str(),
               Catch::Contains("owned by a superuser"));
    // Reported, not refused: the function runs a program on the server host from read-only mode.
    expect<rawtool::Rows>(run(*driver, "SELECT audit_definer_run()"));
    // Asked of the server: in the container stage it runs on another host.
    CHECK(pg_admin(fmt::format("SELECT (pg_catalog.pg_stat_file('{}', true)).size IS NOT NULL", file)) == "t");
    std::filesystem::remove(file);
  }
  {
    rawtool::PostgresOptions options;
    options.refuse_hazards = {HazardKind::security_definer};
    // Moved, not copied: GCC 14 reports a false -Warray-bounds in the copy of a one-element vector.
    auto driver = rawtool::make_postgres_driver(url_as(*url, "audit_definer_login"), std::move(options));
    const Outcome outcome = run(*driver, "SELECT audit_definer_run()");
    CHECK(refusal_reason(outcome) == RefusalReason::not_permitted);
    const std::string& words = expect<rawtool::Refusal>(outcome).explanation;
    CHECK_THAT(words, Catch::Contains("the configuration's refuse_hazards lists: security_definer"));
    CHECK(words.find("audit_definer") == std::string::npos);
    CHECK_FALSE(std::filesystem::exists(file));
    const DatabaseReport report = inspect(*driver);
    CHECK(definer_names(report).first);
    CHECK_THAT(hazard_of(report, HazardKind::security_definer)->explanation.str(),
               Catch::Contains("The configuration's refuse_hazards lists security_definer"));
  }
  pg_admin("DROP FUNCTION audit_definer_run()");
  drop_all(roles);
  std::filesystem::remove(file);
}

TEST_CASE("a role whose statements the server logs is reported with the ALTER ROLE that stops it, which the role "
          "cannot undo",
          "[postgres][read_only][audit]") {
  const auto url = pg_url();
  if (!url) return;
  const std::vector<std::string> roles = {"audit_log_login"};
  drop_all(roles);
  pg_admin("CREATE ROLE audit_log_login LOGIN; GRANT CONNECT ON DATABASE rawtool_test TO audit_log_login");
  // As the server ships: the role's warnings reach the log.
  REQUIRE(pg_admin("SELECT setting FROM pg_settings WHERE name = 'log_min_messages'") == "warning");

  const auto server_log = [&] {
    auto driver = rawtool::make_postgres_driver(url_as(*url, "audit_log_login"));
    const DatabaseReport report = inspect(*driver);
    const Hazard* hazard = hazard_of(report, HazardKind::server_log);
    if (hazard != nullptr) CHECK_FALSE(hazard->refused);
    // Reported only: read-only calls run.
    CHECK(cell(run(*driver, "SELECT 1")) == "1");
    return hazard == nullptr ? std::vector<std::string>{} : names_of(*hazard);
  };
  const std::vector<std::string> found = server_log();
  REQUIRE(found.size() == 3);
  CHECK(found[0] == "ALTER ROLE audit_log_login SET log_min_messages = fatal");
  CHECK(found[1] == "log_min_messages = warning");
  CHECK(found[2].starts_with("log_min_error_statement = "));

  // The role cannot lower it for itself, not even for its own transaction.
  {
    auto driver = rawtool::make_postgres_driver(url_as(*url, "audit_log_login"));
    for (const char* attempt : {"SELECT set_config('log_min_messages', 'fatal', true)",
                                "SELECT set_config('log_min_messages', 'debug5', true)"}) {
      INFO(attempt);
      CHECK(bytes_of(expect<rawtool::Failure>(run(*driver, attempt)).sqlstate) == "42501");
    }
  }

  // error stops warnings, not RAISE LOG (LOG ranks above ERROR there): still reported.
  pg_admin("ALTER ROLE audit_log_login SET log_min_messages = error");
  CHECK(server_log().size() == 3);
  // The statement the audit named, run as it is, ends the hazard for the next connection.
  pg_admin(found[0]);
  CHECK(server_log().empty());
  drop_all(roles);
}
