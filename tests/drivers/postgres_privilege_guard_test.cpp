// A privilege granted to the role after its connection was audited is seen
// before the next read-only statement runs, directly and through PgBouncer:
// the call is refused with the audit's own words and its statement has no
// effect. Revoked again, the next call runs. Each family of role the audit
// refuses is granted in turn to a connected, audited, low-privilege role.
#include "outcome_checks.hpp"
#include "pg_server.hpp"
#include "pgbouncer.hpp"
#include "untrusted_bytes.hpp"

#include <rawtool/driver.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <libpq-fe.h>

#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using rawtool::AccessMode;
using rawtool::Limits;
using rawtool::Outcome;
using rawtool::RefusalReason;
using rawtool::Rows;
using rawtool::test::bytes_of;
using rawtool::test::cell;
using rawtool::test::expect;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;

namespace {

constexpr const char* login_role = "guard_login";

Outcome run(rawtool::Driver& driver, const std::string& sql) {
  return driver.execute(sql, {}, Limits{}, AccessMode::read_only);
}

/// The test's roles: the login role the driver connects as, a superuser
/// reached through a NOINHERIT role in between, a REPLICATION role, and a
/// bystander of another role. Made afresh, dropped at the end.
struct Roles {
  static constexpr const char* drop =
      "DO $$DECLARE r text; BEGIN FOREACH r IN ARRAY ARRAY['guard_login', 'guard_mid', 'guard_super', "
      "'guard_replicator', 'guard_bystander'] LOOP IF EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN "
      "EXECUTE format('DROP OWNED BY %I', r); EXECUTE format('DROP ROLE %I', r); END IF; END LOOP; "
      "IF EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = 'guard_slot') THEN "
      "PERFORM pg_drop_replication_slot('guard_slot'); END IF; END$$";
  Roles() {
    pg_admin(drop);
    pg_admin(fmt::format(
        "CREATE ROLE guard_login LOGIN; CREATE ROLE guard_bystander LOGIN; CREATE ROLE guard_super SUPERUSER NOLOGIN;"
        "CREATE ROLE guard_mid NOINHERIT NOLOGIN; GRANT guard_super TO guard_mid;"
        "CREATE ROLE guard_replicator REPLICATION NOLOGIN;"
        "GRANT CONNECT ON DATABASE {0} TO guard_login, guard_bystander",
        pg_admin("SELECT quote_ident(current_database())")));
  }
  ~Roles() { pg_admin(drop); }
  Roles(const Roles&) = delete;
  Roles& operator=(const Roles&) = delete;
};

/// Another session on the server, as `role`: what a statement can end.
class Bystander {
public:
  Bystander(const std::string& url, const std::string& role)
      : connection_(PQconnectdb((url + "?user=" + role).c_str()), &PQfinish) {
    REQUIRE(PQstatus(connection_.get()) == CONNECTION_OK);
    pid_ = std::to_string(PQbackendPID(connection_.get()));
  }
  [[nodiscard]] const std::string& pid() const noexcept { return pid_; }
  [[nodiscard]] bool alive() const {
    return pg_admin("SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid_) == "1";
  }

private:
  std::unique_ptr<PGconn, decltype(&PQfinish)> connection_;
  std::string pid_;
};

/// Whether the server sees `file` (asked of the server, wherever it runs).
bool server_has_file(const std::string& file) {
  return pg_admin(fmt::format("SELECT (pg_stat_file('{}', true)).size IS NOT NULL", file)) == "t";
}

/// One family: what is granted and revoked, a statement that uses it (or, for
/// a role whose power a read-only transaction stops on its own, any statement
/// with an effect a rollback does not undo), whether that effect happened,
/// and the words of the audit's refusal.
struct Family {
  std::string name;
  std::string grant;
  std::string revoke;
  std::string statement;
  std::function<bool()> took_effect;
  std::string refusal_words;
};

/// Connects `driver` as the login role, audited with nothing to refuse, then
/// grants each family, checks the very next call, and revokes.
void check_every_family(rawtool::Driver& driver, const std::string& url) {
  const std::string tag = fmt::format("{}", getpid());
  const std::string program_file = "/tmp/rawtool-guard-program-" + tag;
  const std::string written_file = "/tmp/rawtool-guard-written-" + tag;
  const std::string super_file = "/tmp/rawtool-guard-super-" + tag;
  const auto remove_files = [&] {
    pg_admin(fmt::format("COPY (SELECT 1) TO PROGRAM 'rm -f {} {} {}'", program_file, written_file, super_file));
  };
  remove_files();
  Bystander other_role(url, "guard_bystander");
  Bystander same_role(url, login_role);

  const std::vector<Family> families = {
      {"pg_execute_server_program", "GRANT pg_execute_server_program TO guard_login",
       "REVOKE pg_execute_server_program FROM guard_login",
       fmt::format("COPY (SELECT 1) TO PROGRAM 'touch {}'", program_file), [&] { return server_has_file(program_file); },
       "it can become a role that runs programs on the server"},
      {"pg_write_server_files", "GRANT pg_write_server_files TO guard_login",
       "REVOKE pg_write_server_files FROM guard_login", fmt::format("COPY (SELECT 1) TO '{}'", written_file),
       [&] { return server_has_file(written_file); }, "it can become a role that reads or writes server files"},
      {"a superuser, through a NOINHERIT role", "GRANT guard_mid TO guard_login", "REVOKE guard_mid FROM guard_login",
       fmt::format("DO $$BEGIN SET ROLE guard_super; EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch {}'''; END$$", super_file),
       [&] { return server_has_file(super_file); }, "it can become a superuser role"},
      {"a REPLICATION role", "GRANT guard_replicator TO guard_login", "REVOKE guard_replicator FROM guard_login",
       "DO $$BEGIN SET ROLE guard_replicator; PERFORM pg_create_physical_replication_slot('guard_slot'); END$$",
       [] { return pg_admin("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'guard_slot'") != "0"; },
       "it can become a REPLICATION role"},
      {"pg_signal_backend", "GRANT pg_signal_backend TO guard_login", "REVOKE pg_signal_backend FROM guard_login",
       fmt::format("SELECT pg_terminate_backend({}, 5000)", other_role.pid()), [&] { return !other_role.alive(); },
       "it can become pg_signal_backend"},
      // Reading server files needs COPY FROM into a table, which a read-only
      // transaction refuses: the statement ends a session of its own role instead.
      {"pg_read_server_files", "GRANT pg_read_server_files TO guard_login",
       "REVOKE pg_read_server_files FROM guard_login", fmt::format("SELECT pg_terminate_backend({}, 5000)", same_role.pid()),
       [&] { return !same_role.alive(); }, "it can become a role that reads or writes server files"},
  };

  // Connected and audited before anything is granted.
  const std::string backend = cell(run(driver, "SELECT pg_backend_pid()"));
  for (const Family& family : families) {
    INFO("granted: " << family.name);
    pg_admin(family.grant);
    const Outcome outcome = run(driver, family.statement);
    CHECK_FALSE(family.took_effect());
    const auto* refusal = std::get_if<rawtool::Refusal>(&outcome);
    CHECK(refusal != nullptr);
    if (refusal != nullptr) {
      // The audit's refusal, in rawtool's words; not the guard's own failure.
      CHECK(refusal->reason == RefusalReason::not_permitted);
      CHECK_THAT(refusal->explanation.str(), Catch::StartsWith("Read-only mode refuses to run on this connection"));
      CHECK_THAT(refusal->explanation.str(), Catch::Contains(family.refusal_words));
      CHECK_THAT(refusal->explanation.str(), !Catch::Contains("division"));
    }
    // Refused as long as it holds.
    const Outcome again = run(driver, "SELECT 1");
    CHECK(std::holds_alternative<rawtool::Refusal>(again));
    pg_admin(family.revoke);
    CHECK(cell(run(driver, "SELECT 1")) == "1");
  }
  remove_files();
}

/// What a session holds after a call, as the next call sees it: its
/// transaction's access mode, the prepared statements its SQL made, and its
/// advisory locks.
std::string session_left(rawtool::Driver& driver) {
  const Outcome outcome = run(driver,
                              "SELECT current_setting('transaction_read_only') || ' ' || (SELECT count(*) FROM "
                              "pg_prepared_statements WHERE from_sql) || ' ' || (SELECT count(*) FROM pg_locks WHERE "
                              "locktype = 'advisory' AND pid = pg_backend_pid())");
  return cell(outcome);
}

/// Grants pg_signal_backend and expects the very next call refused, then revokes.
void check_guard_trips(rawtool::Driver& driver) {
  pg_admin("GRANT pg_signal_backend TO guard_login");
  const Outcome outcome = run(driver, "SELECT 1");
  const auto* refusal = std::get_if<rawtool::Refusal>(&outcome);
  CHECK(refusal != nullptr);
  if (refusal != nullptr) CHECK_THAT(refusal->explanation.str(), Catch::Contains("it can become pg_signal_backend"));
  pg_admin("REVOKE pg_signal_backend FROM guard_login");
  CHECK(cell(run(driver, "SELECT 1")) == "1");
}

}  // namespace

TEST_CASE("a read-only statement that prepares statements under the wrapping's names gains nothing from it",
          "[postgres][read_only]") {
  // The guard stays prepared between calls, as the one statement SQL cannot
  // name (the unnamed one); every other statement of the wrapping is parsed
  // afresh under a name in each call. A statement's SQL can PREPARE and
  // DEALLOCATE any name (here through a function that runs what it is given),
  // while its query runs: between the wrapping's statements. Whatever it
  // does, the next call still runs read-only, guarded, with no statement the
  // SQL prepared and no advisory lock left.
  const auto url = pg_url();
  if (!url) return;
  const Roles roles;
  pg_admin(
      "DROP FUNCTION IF EXISTS guard_exec(text[]); CREATE FUNCTION guard_exec(VARIADIC commands text[]) RETURNS int "
      "LANGUAGE plpgsql AS $$DECLARE c text; BEGIN FOREACH c IN ARRAY commands LOOP EXECUTE c; END LOOP; "
      "RETURN 1; END$$; GRANT EXECUTE ON FUNCTION guard_exec(text[]) TO guard_login");
  auto driver = rawtool::make_postgres_driver(*url + "?user=" + login_role);
  REQUIRE(cell(run(*driver, "SELECT 1")) == "1");
  const std::string backend = cell(run(*driver, "SELECT pg_backend_pid()"));

  const std::vector<std::string> wrapping = {"rawtool_begin", "rawtool_statement", "rawtool_fetch", "rawtool_rollback",
                                             "rawtool_deallocate"};
  std::vector<std::string> statements;
  for (const std::string& name : wrapping) {
    // Put in place of the wrapping's own (dropped first if there), or made
    // before the wrapping parses it; each with an advisory lock to keep.
    statements.push_back(fmt::format(
        "SELECT guard_exec('SELECT pg_advisory_lock(4711)', 'DEALLOCATE ALL', 'PREPARE {} AS SELECT 1')", name));
    statements.push_back(fmt::format(
        "SELECT guard_exec('SELECT pg_advisory_lock(4711)', 'PREPARE {} AS SELECT pg_advisory_lock(4712)')", name));
  }
  statements.emplace_back("SELECT guard_exec('DEALLOCATE ALL')");
  // A statement a cursor cannot hold runs unnamed, after the cursor's try.
  statements.emplace_back(
      "EXPLAIN SELECT guard_exec('SELECT pg_advisory_lock(4711)', 'PREPARE rawtool_begin AS SELECT 1')");
  for (const std::string& statement : statements) {
    INFO(statement);
    run(*driver, statement);
    // Seen from another session: nothing held once the call has returned.
    CHECK(pg_admin("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = " + backend) == "0");
    CHECK(session_left(*driver) == "on 0 0");
  }
  check_guard_trips(*driver);
  pg_admin("DROP FUNCTION guard_exec(text[])");
}

TEST_CASE("the guard kept between calls is prepared again after anything else used the connection",
          "[postgres][read_only]") {
  // Whatever else runs on the connection (describe, a type looked up by
  // name, changed time limits, a failure, a statement a cursor cannot hold)
  // replaces the unnamed statement: the next call parses the guard again,
  // runs, and is still guarded.
  const auto url = pg_url();
  if (!url) return;
  const Roles roles;
  auto driver = rawtool::make_postgres_driver(*url + "?user=" + login_role);
  // The first call looks its column's type up by name; the second keeps the guard.
  REQUIRE(cell(run(*driver, "SELECT 1")) == "1");
  REQUIRE(cell(run(*driver, "SELECT 1")) == "1");
  const std::vector<std::function<void()>> others = {
      [&] { CHECK(std::holds_alternative<rawtool::StatementShape>(driver->describe("SELECT 1", {}, AccessMode::read_only))); },
      [&] { CHECK(cell(run(*driver, "SELECT 1::numeric(3, 1)")) == "1.0"); },
      [&] { CHECK(cell(run(*driver, "SELECT '2020-01-02'::date")) == "2020-01-02"); },
      [&] {
        Limits limits;
        limits.statement_timeout = std::chrono::milliseconds(4321);
        CHECK(cell(driver->execute("SHOW statement_timeout", {}, limits, AccessMode::read_only)) == "4321ms");
      },
      [&] { CHECK(std::holds_alternative<rawtool::Failure>(run(*driver, "SELECT 1 / 0"))); },
      [&] { CHECK(std::holds_alternative<rawtool::Rows>(run(*driver, "SHOW search_path"))); },
      [&] { CHECK(std::holds_alternative<rawtool::DatabaseReport>(driver->inspect())); },
  };
  for (std::size_t i = 0; i < others.size(); ++i) {
    INFO("other use " << i);
    others[i]();
    CHECK(cell(run(*driver, "SELECT 2")) == "2");
    CHECK(cell(run(*driver, "SELECT 3")) == "3");
  }
  check_guard_trips(*driver);
}

TEST_CASE("a role granted since the audit is refused before its next read-only statement runs, until it is revoked",
          "[postgres][read_only]") {
  const auto url = pg_url();
  if (!url) return;
  const Roles roles;
  auto driver = rawtool::make_postgres_driver(*url + "?user=" + login_role);
  check_every_family(*driver, *url);
}

TEST_CASE("through PgBouncer, a role granted since the audit is refused before its next read-only statement runs",
          "[postgres][pgbouncer][read_only]") {
  const auto url = pg_url();
  if (!url) return;
  const Roles roles;
  const auto bouncer = rawtool::test::PgBouncer::start(2, {login_role});
  if (!bouncer) return;
  auto driver = rawtool::make_postgres_driver(bouncer->url_for(*url + "?user=" + login_role));
  check_every_family(*driver, *url);
}
