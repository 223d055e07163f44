// A rawtool killed with SIGKILL while its statement runs (a statement that
// turned the client check off and swallows its cancel, so its backend runs
// on) has that backend ended by the next rawtool started with the same
// configuration, before it runs anything; the sessions of a second live
// rawtool with that configuration and of anyone else are untouched. Through
// the real binary, against the real server, watched from pg_stat_activity.

#include "fixture.hpp"
#include "pg_server.hpp"
#include "process.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include <signal.h>

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;
using rawtool::test::RunningRawtool;
using rawtool::test::RunOptions;
using rawtool::test::ScratchFolder;
using rawtool::test::write_file;

constexpr std::string_view swallowing_block =
    "DO $$ BEGIN PERFORM set_config('client_connection_check_interval','0',true); "
    "LOOP BEGIN PERFORM pg_sleep(0.2); EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END $$";

/// A LOGIN role of this test's own, dropped (its sessions ended first) at the end.
struct TestRole {
  std::string name;
  std::string url;
  explicit TestRole(const std::string& admin_url) {
    std::mt19937_64 random{std::random_device{}()};
    name = fmt::format("rawtool_orphans_{}", random() % 1000000000);
    pg_admin("CREATE ROLE " + name + " LOGIN");
    const auto scheme = admin_url.find("://");
    const auto at = admin_url.find('@', scheme);
    REQUIRE((scheme != std::string::npos && at != std::string::npos));
    url = admin_url.substr(0, scheme + 3) + name + admin_url.substr(at);
  }
  ~TestRole() {
    pg_admin(fmt::format("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{}'", name));
    for (int i = 0; i < 500 && pg_admin(fmt::format("SELECT count(*) FROM pg_stat_activity WHERE usename = '{}'", name)) != "0"; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    pg_admin("DROP ROLE " + name);
  }
  TestRole(const TestRole&) = delete;
  TestRole& operator=(const TestRole&) = delete;
};

/// A backend as a record names it: pid and start, both.
struct Backend {
  std::string pid;
  std::string start;
};

/// Whether the backend `b` is still there (same pid, same start).
bool present(const Backend& b) {
  return pg_admin(fmt::format("SELECT count(*) FROM pg_stat_activity WHERE pid = {} AND backend_start::text = '{}'", b.pid,
                              b.start)) == "1";
}

/// Waits (up to 20 s, then fails) for the role's backend with `application_name`
/// that is active and meets `condition` (SQL over pg_stat_activity): one that
/// marks the caller's statement, not the connect-time queries, which run
/// before rawtool has recorded its backend.
Backend running_backend(const TestRole& role, const std::string& application_name, const std::string& condition) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    const std::string where = fmt::format("usename = '{}' AND application_name = '{}' AND state = 'active' AND {}",
                                          role.name, application_name, condition);
    const std::string pid = pg_admin("SELECT coalesce(max(pid)::text, '') FROM pg_stat_activity WHERE " + where);
    if (!pid.empty()) return {pid, pg_admin("SELECT backend_start::text FROM pg_stat_activity WHERE pid = " + pid)};
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
}

RunOptions env_for(const ScratchFolder& folder, const std::filesystem::path& runtime, const std::string& application_name) {
  RunOptions options = rawtool::test::isolated_env(folder.path());
  options.env.emplace_back("RAWTOOL_RUNTIME_DIR", runtime.string());
  // Told apart by the environment, not by the configuration, which all share.
  options.env.emplace_back("PGAPPNAME", application_name);
  return options;
}

/// A runtime folder in `folder` that only its owner may enter.
std::filesystem::path private_runtime(const ScratchFolder& folder) {
  const std::filesystem::path runtime = folder.path() / "run";
  std::filesystem::create_directory(runtime);
  std::filesystem::permissions(runtime, std::filesystem::perms::owner_all);
  return runtime;
}

/// Writes a configuration of one read-only PostgreSQL database, reached as
/// `role`, into `folder`; its path.
std::string write_config(const ScratchFolder& folder, const TestRole& role) {
  write_file(folder.path() / "config.json",
             json{{"databases", json::array({json{{"label", "pg"},
                                                  {"url", role.url},
                                                  {"access", "read_only"},
                                                  {"limits", {{"statement_timeout_ms", 120000}}}}})},
                  {"log", {{"path", "operator.log"}}}}
                 .dump());
  return (folder.path() / "config.json").string();
}

}  // namespace

TEST_CASE("the next rawtool with the same configuration ends what a SIGKILLed one left running, and nothing else",
          "[cli][orphans][postgres]") {
  const auto admin = pg_url();
  if (!admin) return;
  TestRole role(*admin);
  ScratchFolder folder;
  const std::filesystem::path runtime = private_runtime(folder);
  const std::string config = write_config(folder, role);
  const std::string tag = role.name;  // makes the application names this test's own

  // A session of the same role that no rawtool started.
  std::unique_ptr<PGconn, decltype(&PQfinish)> bystander(PQconnectdb(role.url.c_str()), &PQfinish);
  REQUIRE(PQstatus(bystander.get()) == CONNECTION_OK);
  const Backend bystander_backend{std::to_string(PQbackendPID(bystander.get())),
                                  pg_admin(fmt::format("SELECT backend_start::text FROM pg_stat_activity WHERE pid = {}",
                                                       PQbackendPID(bystander.get())))};

  // A second live rawtool with the same configuration, in the middle of a call.
  RunningRawtool live({"query", "--config", config, "SELECT pg_sleep(120) AS live_rawtool"},
                      env_for(folder, runtime, tag + "_live"));
  const Backend live_backend = running_backend(role, tag + "_live", "wait_event = 'PgSleep'");

  // The rawtool that is killed while its hostile statement runs.
  RunningRawtool killed({"query", "--config", config, std::string(swallowing_block)}, env_for(folder, runtime, tag + "_killed"));
  // Its sleep, not only its text: read-only, rawtool first offers the block to
  // DECLARE CURSOR, which refuses a DO; a rawtool killed in that moment leaves
  // an idle backend, which ends on its own.
  const Backend orphan = running_backend(role, tag + "_killed", "wait_event = 'PgSleep' AND query LIKE '%query_canceled%'");
  killed.signal(SIGKILL);
  const auto killed_result = killed.finish(30s);
  REQUIRE(killed_result.term_signal == SIGKILL);
  // Nothing of rawtool's own ends it: the statement ignores the closed connection.
  REQUIRE(present(orphan));

  const auto next = rawtool::test::run_rawtool({"query", "--config", config, "SELECT 1 AS next_rawtool"},
                                               env_for(folder, runtime, tag + "_next"));
  INFO(next.out << next.err);
  CHECK(next.exit_status == 0);
  CHECK_FALSE(present(orphan));

  // Untouched: the session no rawtool started, and the live rawtool's.
  CHECK(present(bystander_backend));
  CHECK(PQresultStatus(std::unique_ptr<PGresult, decltype(&PQclear)>(PQexec(bystander.get(), "SELECT 1"), &PQclear).get()) ==
        PGRES_TUPLES_OK);
  CHECK(present(live_backend));
  CHECK(live.so_far().exit_status == -1);
  live.signal(SIGTERM);
  live.finish(30s);
}

TEST_CASE("a backend whose pid matches a record but whose start does not is not ended", "[cli][orphans][postgres]") {
  // A pid recorded by a dead process may since belong to someone else's
  // session: only pid and backend_start together name the recorded one.
  const auto admin = pg_url();
  if (!admin) return;
  TestRole role(*admin);
  ScratchFolder folder;
  const std::filesystem::path runtime = private_runtime(folder);
  const std::string config = write_config(folder, role);

  // A session no rawtool started, whose pid a dead rawtool's record names
  // with another start (one microsecond off).
  std::unique_ptr<PGconn, decltype(&PQfinish)> bystander(PQconnectdb(role.url.c_str()), &PQfinish);
  REQUIRE(PQstatus(bystander.get()) == CONNECTION_OK);
  const std::string pid = std::to_string(PQbackendPID(bystander.get()));
  const std::string start_us =
      pg_admin("SELECT (extract(epoch FROM backend_start) * 1000000)::bigint FROM pg_stat_activity WHERE pid = " + pid);

  // The record a rawtool killed mid-call leaves, with its line changed to name the bystander.
  RunningRawtool killed({"query", "--config", config, "SELECT pg_sleep(120) AS keyed"}, env_for(folder, runtime, role.name + "_key"));
  const Backend sleeping = running_backend(role, role.name + "_key", "wait_event = 'PgSleep'");
  killed.signal(SIGKILL);
  killed.finish(30s);
  pg_admin("SELECT pg_terminate_backend(" + sleeping.pid + ")");
  std::filesystem::path record;
  for (const auto& entry : std::filesystem::directory_iterator(runtime)) record = entry.path();
  REQUIRE_FALSE(record.empty());
  std::string key;
  {
    std::ifstream in(record);
    std::string header;
    std::getline(in, header);
    in >> key;
  }
  REQUIRE(key.size() == 64);
  write_file(record, fmt::format("rawtool backends 1\n{} {} {}\n", key, pid, std::stoll(start_us) + 1));

  const auto next = rawtool::test::run_rawtool({"query", "--config", config, "SELECT 1"},
                                               env_for(folder, runtime, role.name + "_next"));
  INFO(next.out << next.err);
  CHECK(next.exit_status == 0);
  CHECK(PQresultStatus(std::unique_ptr<PGresult, decltype(&PQclear)>(PQexec(bystander.get(), "SELECT 1"), &PQclear).get()) ==
        PGRES_TUPLES_OK);
  // The record was read and dealt with: nothing in it is left to end.
  CHECK_FALSE(std::filesystem::exists(record));
}

TEST_CASE("check-config --connect refuses a role whose connection limit leaves no room beside the configured pool",
          "[cli][orphans][postgres]") {
  // pool_size comes from the configuration file: a limit of 3 holds a pool
  // of 2 and its reserve, not a pool of 3.
  const auto admin = pg_url();
  if (!admin) return;
  TestRole role(*admin);
  pg_admin("ALTER ROLE " + role.name + " CONNECTION LIMIT 3");
  ScratchFolder folder;
  const auto check_with_pool = [&](int pool_size) {
    write_file(folder.path() / "config.json",
               json{{"databases", json::array({json{{"label", "pg"},
                                                    {"url", role.url},
                                                    {"access", "read_only"},
                                                    {"pool_size", pool_size}}})},
                    {"log", {{"path", "operator.log"}}}}
                   .dump());
    RunOptions options = rawtool::test::isolated_env(folder.path());
    options.env.emplace_back("RAWTOOL_RUNTIME_DIR", (folder.path() / "run").string());
    return rawtool::test::run_rawtool({"check-config", "--config", (folder.path() / "config.json").string(), "--connect"},
                                      options);
  };
  const auto full = check_with_pool(3);
  INFO(full.out << full.err);
  CHECK(full.exit_status != 0);
  CHECK((full.out + full.err).find("hazard connection_limit (refused in read-only mode): the role's CONNECTION LIMIT is 3") !=
        std::string::npos);

  const auto room = check_with_pool(2);
  INFO(room.out << room.err);
  CHECK((room.out + room.err).find("hazard connection_limit (reported, not refused)") != std::string::npos);
  CHECK((room.out + room.err).find("room for 1 rawtool process ") != std::string::npos);
}
