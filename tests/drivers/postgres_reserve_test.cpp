// A statement that turns the server's client check off and swallows its
// cancel never outlives its call, whatever connection room its role has: the
// driver ends it from the connection it keeps in reserve, or starts nothing
// while it holds none; a role whose CONNECTION LIMIT leaves no room for the
// pool and the reserve is reported and refused. Against the real server,
// with a role of each test's own, watched from pg_stat_activity.

#include "pg_server.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;

/// The hostile statement: no client check for its transaction, every cancel caught.
constexpr std::string_view swallowing_block =
    "DO $$ BEGIN PERFORM set_config('client_connection_check_interval','0',true); "
    "LOOP BEGIN PERFORM pg_sleep(0.2); EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END $$";

/// A LOGIN role made for one test, with a CONNECTION LIMIT, dropped (its
/// sessions ended first) when the test ends.
struct LimitedRole {
  std::string name;
  std::string url;

  LimitedRole(const std::string& admin_url, int connection_limit) {
    std::mt19937_64 random{std::random_device{}()};
    name = fmt::format("rawtool_reserve_{}", random() % 1000000000);
    pg_admin(fmt::format("CREATE ROLE {} LOGIN CONNECTION LIMIT {}", name, connection_limit));
    // The admin URL with this role as its user.
    const auto scheme = admin_url.find("://");
    const auto at = admin_url.find('@', scheme);
    REQUIRE((scheme != std::string::npos && at != std::string::npos));
    url = admin_url.substr(0, scheme + 3) + name + admin_url.substr(at);
  }
  ~LimitedRole() {
    pg_admin(fmt::format("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{}'", name));
    for (int i = 0; i < 500 && pg_admin(fmt::format("SELECT count(*) FROM pg_stat_activity WHERE usename = '{}'", name)) != "0"; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    pg_admin("DROP ROLE " + name);
  }
  LimitedRole(const LimitedRole&) = delete;
  LimitedRole& operator=(const LimitedRole&) = delete;

  /// Backends of this role running the swallowing block.
  [[nodiscard]] std::string swallowing_backends() const {
    return pg_admin(
        fmt::format("SELECT count(*) FROM pg_stat_activity WHERE usename = '{}' AND query LIKE '%query_canceled%'", name));
  }
  /// True once no backend of this role runs the block, waiting up to `patience`.
  [[nodiscard]] bool no_swallowing_backend_within(std::chrono::milliseconds patience) const {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (swallowing_backends() != "0") {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }
};

using Connection = std::unique_ptr<PGconn, decltype(&PQfinish)>;

Connection connect_as(const std::string& url) { return Connection(PQconnectdb(url.c_str()), &PQfinish); }

rawtool::Limits short_limits() {
  rawtool::Limits limits;
  limits.statement_timeout = 500ms;
  return limits;
}

rawtool::PostgresOptions pool_of(std::size_t size) {
  rawtool::PostgresOptions options;
  options.pool_size = size;
  return options;
}

/// The connection-limit hazard `driver` reports when inspected; the test
/// stops when it reports none.
rawtool::Hazard connection_limit_hazard(rawtool::Driver& driver) {
  auto inspected = driver.inspect();
  REQUIRE(std::holds_alternative<rawtool::DatabaseReport>(inspected));
  const auto& hazards = std::get<rawtool::DatabaseReport>(inspected).hazards;
  const auto found = std::find_if(hazards.begin(), hazards.end(),
                                  [](const rawtool::Hazard& h) { return h.kind == rawtool::HazardKind::connection_limit; });
  REQUIRE(found != hazards.end());
  return *found;
}

}  // namespace

TEST_CASE("a statement that swallows its cancel is ended within its grace when the role has no room for another connection",
          "[postgres][reserve]") {
  const auto admin = pg_url();
  if (!admin) return;
  // Room for the pool of one and its reserve, and no more.
  LimitedRole role(*admin, 2);
  auto driver = rawtool::make_postgres_driver(role.url, pool_of(1));
  REQUIRE(std::holds_alternative<rawtool::Rows>(driver->execute("SELECT 1", {}, short_limits(), rawtool::AccessMode::read_only)));
  // Other sessions of the role take whatever room is left: no further
  // connection of the role can be made now.
  std::vector<Connection> others;
  for (Connection other = connect_as(role.url); PQstatus(other.get()) == CONNECTION_OK && others.size() < 4;
       other = connect_as(role.url)) {
    others.push_back(std::move(other));
  }
  REQUIRE(PQstatus(connect_as(role.url).get()) == CONNECTION_BAD);

  const auto mode = GENERATE(rawtool::AccessMode::read_only, rawtool::AccessMode::read_write);
  INFO("mode " << rawtool::access_mode_name(mode));
  const auto started = std::chrono::steady_clock::now();
  const rawtool::Outcome outcome = driver->execute(swallowing_block, {}, short_limits(), mode);
  const auto returned = std::chrono::steady_clock::now();
  const auto* refusal = std::get_if<rawtool::Refusal>(&outcome);
  REQUIRE(refusal != nullptr);
  CHECK(refusal->reason == rawtool::RefusalReason::timeout);
  CHECK(refusal->explanation.str().find("rawtool ended its server session") != std::string::npos);
  // The deadline (500 ms), a grace to cancel, a grace to give up, then the end.
  CHECK(returned - started < 500ms + 3 * 2000ms);
  CHECK(role.no_swallowing_backend_within(2000ms));
  for (const Connection& other : others) {
    CHECK(PQresultStatus(std::unique_ptr<PGresult, decltype(&PQclear)>(PQexec(other.get(), "SELECT 1"), &PQclear).get()) ==
          PGRES_TUPLES_OK);
  }
  others.clear();
  // The next call has its pool connection and its reserve again.
  CHECK(std::holds_alternative<rawtool::Rows>(driver->execute("SELECT 1", {}, short_limits(), mode)));
}

TEST_CASE("read-only mode reports and refuses a role whose connection limit leaves no room beside the pool",
          "[postgres][reserve]") {
  const auto admin = pg_url();
  if (!admin) return;
  struct Room {
    int limit;
    std::size_t pool;
  };
  const Room room = GENERATE(Room{1, 1}, Room{2, 2}, Room{3, 5});
  INFO("CONNECTION LIMIT " << room.limit << ", pool_size " << room.pool);
  LimitedRole role(*admin, room.limit);
  auto driver = rawtool::make_postgres_driver(role.url, pool_of(room.pool));

  const rawtool::Hazard found = connection_limit_hazard(*driver);
  CHECK(found.refused);
  CHECK(found.explanation.str().find(fmt::format("CONNECTION LIMIT is {}", room.limit)) != std::string::npos);

  const rawtool::Outcome outcome = driver->execute(swallowing_block, {}, short_limits(), rawtool::AccessMode::read_only);
  const auto* refusal = std::get_if<rawtool::Refusal>(&outcome);
  REQUIRE(refusal != nullptr);
  CHECK(refusal->reason == rawtool::RefusalReason::not_permitted);
  CHECK(refusal->explanation.str().find("CONNECTION LIMIT") != std::string::npos);
  // Refused before it started: nothing of the role runs the block, now or later.
  CHECK(role.swallowing_backends() == "0");
}

TEST_CASE("a limit with room for the pool and its reserve is reported with the room there is, not refused",
          "[postgres][reserve]") {
  const auto admin = pg_url();
  if (!admin) return;
  LimitedRole role(*admin, 9);
  auto driver = rawtool::make_postgres_driver(role.url, pool_of(2));
  const rawtool::Hazard found = connection_limit_hazard(*driver);
  CHECK_FALSE(found.refused);
  // 9 connections hold three processes of a pool of two and its reserve.
  CHECK(found.explanation.str().find("room for 3 rawtool processes") != std::string::npos);
  CHECK(std::holds_alternative<rawtool::Rows>(driver->execute("SELECT 1", {}, short_limits(), rawtool::AccessMode::read_only)));
}

TEST_CASE("a call starts nothing while the reserve connection cannot be opened, and runs once it can",
          "[postgres][reserve]") {
  const auto admin = pg_url();
  if (!admin) return;
  // Room for the pool of one and its reserve; another session takes one place first.
  LimitedRole role(*admin, 2);
  Connection bystander = connect_as(role.url);
  REQUIRE(PQstatus(bystander.get()) == CONNECTION_OK);
  auto driver = rawtool::make_postgres_driver(role.url, pool_of(1));

  const auto mode = GENERATE(rawtool::AccessMode::read_only, rawtool::AccessMode::read_write);
  INFO("mode " << rawtool::access_mode_name(mode));
  const rawtool::Outcome outcome = driver->execute(swallowing_block, {}, short_limits(), mode);
  const auto* refusal = std::get_if<rawtool::Refusal>(&outcome);
  REQUIRE(refusal != nullptr);
  CHECK(refusal->reason == rawtool::RefusalReason::limit);
  CHECK(refusal->explanation.str().find("did not start the statement") != std::string::npos);
  CHECK(role.swallowing_backends() == "0");
  // The bystander is untouched.
  CHECK(PQresultStatus(std::unique_ptr<PGresult, decltype(&PQclear)>(PQexec(bystander.get(), "SELECT 1"), &PQclear).get()) ==
        PGRES_TUPLES_OK);

  bystander.reset();
  for (int i = 0; i < 500 && pg_admin(fmt::format("SELECT count(*) FROM pg_stat_activity WHERE usename = '{}'", role.name)) != "1"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(std::holds_alternative<rawtool::Rows>(driver->execute("SELECT 1", {}, short_limits(), mode)));
}
