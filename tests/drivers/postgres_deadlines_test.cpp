// Nothing the PostgreSQL driver sends waits without a bound: a server that
// stops answering (a network partition, here a TcpProxy that holds the bytes
// of one step's query) at any step of a call — the queries a connection runs
// as it opens, the audit, describe, the cleanup after a statement, the
// recovery of a prepared transaction — is answered within the step's
// deadline, and the next call, once the server answers again, runs on a
// fresh connection. And the cancel requests that a hung server never takes
// run on a bounded number of threads.
#include "outcome_checks.hpp"
#include "pg_server.hpp"
#include "tcp_proxy.hpp"

#include <rawtool/driver.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <variant>
#include <vector>

using namespace std::chrono_literals;
using rawtool::AccessMode;
using rawtool::Limits;
using rawtool::Outcome;
using rawtool::Refusal;
using rawtool::RefusalReason;
using rawtool::Rows;
using rawtool::Unavailable;
using rawtool::test::expect;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;
using rawtool::test::TcpProxy;

namespace {

/// The connect timeout the proxied URLs set: it bounds a connection's own
/// queries (connect-time, cleanup, recovery) as well as its connect.
constexpr auto connect_timeout = 2s;
/// What the checks allow past a step's deadline: generous, for a loaded
/// machine under sanitizers. The code before this change never answers, so
/// any bound tells the two apart.
constexpr auto slack = 8s;

/// A proxy in front of the test server and a trusted driver through it.
struct Proxied {
  explicit Proxied(const std::string& url)
      : target(rawtool::test::proxy_target(url)),
        proxy(target.host, target.port),
        driver(rawtool::test::superuser_driver(
            target.url_through(proxy.port(), "connect_timeout=" + std::to_string(connect_timeout.count())))) {}

  rawtool::test::ProxyTarget target;
  TcpProxy proxy;
  std::unique_ptr<rawtool::Driver> driver;
};

/// The answer of `call`, run on a thread of its own, when it came within
/// `bound`; std::nullopt when it did not. Either way the proxy is thawed
/// before this returns (a call that hangs then comes back, so that the test
/// fails instead of hanging); `frozen` says whether the step's query was
/// reached and held.
template <class T>
std::optional<T> answered_within(TcpProxy& proxy, std::chrono::steady_clock::duration bound,
                                 const std::function<T()>& call, bool& frozen) {
  std::future<T> running = std::async(std::launch::async, call);
  const bool in_time = running.wait_for(bound) == std::future_status::ready;
  frozen = proxy.frozen();
  proxy.thaw();
  T answer = running.get();
  if (!in_time) return std::nullopt;
  return answer;
}

Outcome run(rawtool::Driver& driver, std::string_view sql, AccessMode mode, const Limits& limits = {},
            std::stop_token stop = {}) {
  return driver.execute(sql, {}, limits, mode, std::move(stop));
}

/// Threads of this process, as the kernel lists them.
std::size_t thread_count() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++count;
  return count;
}

}  // namespace

TEST_CASE("a partition during the connect-time queries is answered as a lost connection within the connect timeout",
          "[postgres][deadline]") {
  const auto url = pg_url();
  if (!url) return;
  Proxied proxied(*url);
  proxied.proxy.freeze_on("SELECT pg_catalog.pg_backend_pid(), (SELECT (extract(epoch FROM a.backend_start)");
  bool frozen = false;
  const std::optional<Outcome> answer = answered_within<Outcome>(
      proxied.proxy, connect_timeout + slack,
      [&] { return run(*proxied.driver, "SELECT 1", AccessMode::read_write); }, frozen);
  REQUIRE(frozen);
  REQUIRE(answer.has_value());
  expect<Unavailable>(*answer);
  CHECK(expect<Rows>(run(*proxied.driver, "SELECT 1", AccessMode::read_write)).rows.size() == 1);
}

TEST_CASE("a partition during the role's audit is answered as a lost connection within the call's deadline",
          "[postgres][deadline]") {
  const auto url = pg_url();
  if (!url) return;
  Proxied proxied(*url);
  proxied.proxy.freeze_on("('server_state_function', 'pg_catalog.pg_switch_wal()')");
  Limits limits;
  limits.statement_timeout = 1s;
  bool frozen = false;
  // The call's deadline: its statement_timeout and a grace of 2 s.
  const std::optional<Outcome> answer = answered_within<Outcome>(
      proxied.proxy, limits.statement_timeout + 2s + slack,
      [&] { return run(*proxied.driver, "SELECT 1", AccessMode::read_only, limits); }, frozen);
  REQUIRE(frozen);
  REQUIRE(answer.has_value());
  expect<Unavailable>(*answer);
  CHECK(expect<Rows>(run(*proxied.driver, "SELECT 1", AccessMode::read_only, limits)).rows.size() == 1);
}

TEST_CASE("a partition during the cleanup after a statement gives the connection up and keeps the statement's answer",
          "[postgres][deadline]") {
  const auto url = pg_url();
  if (!url) return;
  Proxied proxied(*url);
  // BEGIN leaves its transaction open, so the cleanup that follows the call's
  // pipeline (ROLLBACK, DISCARD ALL) runs.
  const Outcome unfrozen = run(*proxied.driver, "BEGIN", AccessMode::read_write);
  REQUIRE(std::holds_alternative<Rows>(unfrozen));
  const std::string pid = rawtool::test::cell(run(*proxied.driver, "SELECT pg_backend_pid()", AccessMode::read_write));
  proxied.proxy.freeze_on("ROLLBACK");
  bool frozen = false;
  const std::optional<Outcome> answer = answered_within<Outcome>(
      proxied.proxy, connect_timeout + slack, [&] { return run(*proxied.driver, "BEGIN", AccessMode::read_write); },
      frozen);
  REQUIRE(frozen);
  REQUIRE(answer.has_value());
  CHECK(std::holds_alternative<Rows>(*answer));
  // The connection given up mid-cleanup is not used again: the next call
  // runs on a fresh session.
  CHECK(rawtool::test::cell(run(*proxied.driver, "SELECT pg_backend_pid()", AccessMode::read_write)) != pid);
}

TEST_CASE("a partition while the columns' types are named keeps the statement's rows and gives the connection up",
          "[postgres][deadline]") {
  const auto url = pg_url();
  if (!url) return;
  Proxied proxied(*url);
  proxied.proxy.freeze_on("format_type(oid, NULL) FROM pg_catalog.pg_type");
  bool frozen = false;
  const std::optional<Outcome> answer = answered_within<Outcome>(
      proxied.proxy, connect_timeout + slack,
      [&] { return run(*proxied.driver, "SELECT 7::int4 AS n", AccessMode::read_write); }, frozen);
  REQUIRE(frozen);
  REQUIRE(answer.has_value());
  CHECK(rawtool::test::cell(*answer) == "7");
  const Rows next = expect<Rows>(run(*proxied.driver, "SELECT 8::int4 AS n", AccessMode::read_write));
  REQUIRE(next.columns.size() == 1);
  CHECK(next.columns[0].type_name.size() > 0);
}

TEST_CASE("a partition during inspect is answered as a lost connection within the connect timeout",
          "[postgres][deadline]") {
  const auto url = pg_url();
  if (!url) return;
  Proxied proxied(*url);
  proxied.proxy.freeze_on("pg_catalog.pg_postmaster_start_time()");
  using Inspected = std::variant<rawtool::DatabaseReport, Unavailable>;
  bool frozen = false;
  const std::optional<Inspected> answer = answered_within<Inspected>(
      proxied.proxy, connect_timeout + slack, [&] { return proxied.driver->inspect(); }, frozen);
  REQUIRE(frozen);
  REQUIRE(answer.has_value());
  CHECK(std::holds_alternative<Unavailable>(*answer));
  CHECK(std::holds_alternative<rawtool::DatabaseReport>(proxied.driver->inspect()));
}

TEST_CASE("a partition during describe is answered as a lost connection within describe's deadline",
          "[postgres][deadline]") {
  const auto url = pg_url();
  if (!url) return;
  Proxied proxied(*url);
  proxied.proxy.freeze_on("EXPLAIN (FORMAT JSON) SELECT 1");
  using Described = std::variant<rawtool::StatementShape, rawtool::Failure, Refusal, Unavailable>;
  bool frozen = false;
  // Describe plans under a statement_timeout of 10 s and waits a grace of 2 s more.
  const std::optional<Described> answer = answered_within<Described>(
      proxied.proxy, 12s + slack, [&] { return proxied.driver->describe("SELECT 1", {}, AccessMode::read_only); },
      frozen);
  REQUIRE(frozen);
  REQUIRE(answer.has_value());
  CHECK(std::holds_alternative<Unavailable>(*answer));
  CHECK(std::holds_alternative<rawtool::StatementShape>(proxied.driver->describe("SELECT 1", {}, AccessMode::read_only)));
}

TEST_CASE("a partition while a prepared transaction is looked for is answered within the connect timeout",
          "[postgres][deadline]") {
  const auto url = pg_url();
  if (!url) return;
  if (pg_admin("SELECT current_setting('max_prepared_transactions')") == "0") {
    FAIL("the test server allows no prepared transactions (max_prepared_transactions = 0)");
  }
  const std::string gid = "drivers_deadline_2pc";
  const auto roll_back_left_over = [&] {
    if (pg_admin("SELECT count(*) FROM pg_prepared_xacts WHERE gid = '" + gid + "'") != "0") {
      pg_admin("ROLLBACK PREPARED '" + gid + "'");
    }
  };
  roll_back_left_over();
  Proxied proxied(*url);
  proxied.proxy.freeze_on("FROM pg_catalog.pg_prepared_xacts p");
  bool frozen = false;
  const std::optional<Outcome> answer = answered_within<Outcome>(
      proxied.proxy, connect_timeout + slack,
      [&] { return run(*proxied.driver, "PREPARE TRANSACTION '" + gid + "'", AccessMode::read_only); }, frozen);
  roll_back_left_over();
  REQUIRE(frozen);
  REQUIRE(answer.has_value());
  CHECK(expect<Refusal>(*answer).reason == RefusalReason::read_only);
  CHECK(expect<Rows>(run(*proxied.driver, "SELECT 1", AccessMode::read_only)).rows.size() == 1);
}

TEST_CASE("a statement larger than the socket takes, sent to a server that stopped reading, ends at its deadline",
          "[postgres][deadline]") {
  const auto url = pg_url();
  if (!url) return;
  Proxied proxied(*url);
  CHECK(expect<Rows>(run(*proxied.driver, "SELECT 1", AccessMode::read_write)).rows.size() == 1);
  // Far more than the kernel buffers on both sides of the proxy hold.
  const std::string statement = "SELECT 1 -- " + std::string(48u << 20, 'x');
  Limits limits;
  limits.statement_timeout = 1s;
  limits.max_statement_bytes = statement.size();
  proxied.proxy.freeze();
  bool frozen = false;
  // The deadline: the timeout, a grace before the cancel, a grace before the
  // connection is given up, and at most 2 s ending the backend from the
  // reserve connection (which the frozen proxy holds too).
  const std::optional<Outcome> answer = answered_within<Outcome>(
      proxied.proxy, limits.statement_timeout + 6s + slack,
      [&] { return run(*proxied.driver, statement, AccessMode::read_write, limits); }, frozen);
  REQUIRE(answer.has_value());
  CHECK(rawtool::test::refusal_reason(*answer) == RefusalReason::timeout);
  CHECK(expect<Rows>(run(*proxied.driver, "SELECT 1", AccessMode::read_write)).rows.size() == 1);
}

TEST_CASE("cancel requests a hung server never takes run on at most two threads", "[postgres][deadline][cancel]") {
  const auto url = pg_url();
  if (!url) return;
  const rawtool::test::ProxyTarget target = rawtool::test::proxy_target(*url);
  TcpProxy proxy(target.host, target.port);
  constexpr std::size_t calls = 6;
  std::vector<std::unique_ptr<rawtool::Driver>> drivers;
  std::vector<std::string> pids;
  for (std::size_t i = 0; i < calls; ++i) {
    drivers.push_back(rawtool::test::superuser_driver(target.url_through(proxy.port())));
    pids.push_back(rawtool::test::cell(run(*drivers.back(), "SELECT pg_backend_pid()", AccessMode::read_write)));
  }
  Limits limits;
  limits.statement_timeout = 60s;
  std::vector<std::future<Outcome>> running;
  std::vector<std::stop_source> stops(calls);
  for (std::size_t i = 0; i < calls; ++i) {
    running.push_back(std::async(std::launch::async, [&driver = drivers[i], &limits, stop = stops[i].get_token()] {
      return run(*driver, "SELECT pg_sleep(120)", AccessMode::read_write, limits, stop);
    }));
  }
  for (const std::string& pid : pids) rawtool::test::wait_until_sleeping(pid);

  // Every cancel request now reaches the proxy and waits there for an answer
  // that does not come while it is frozen.
  proxy.freeze();
  const std::size_t before = thread_count();
  for (auto& stop : stops) stop.request_stop();
  const std::size_t after = thread_count();
  CHECK(after <= before + 2);

  // Each call still ends: given up a grace after its cancel.
  for (auto& call : running) {
    REQUIRE(call.wait_for(2s + 2s * calls + slack) == std::future_status::ready);
    CHECK(rawtool::test::refusal_reason(call.get()) == RefusalReason::cancelled);
  }
  proxy.thaw();
  for (const std::string& pid : pids) pg_admin("SELECT pg_terminate_backend(" + pid + ")");
}
