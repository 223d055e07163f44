// /readyz's cache without sockets: the first answer waits for the first
// check, a fresh answer is served without asking the databases again, a stale
// one starts one check (never two at once), a change is logged once, and
// stop() cancels a check that hangs.

#include "scripted_backend.hpp"

#include "mcp/http_readiness.hpp"

#include <rawtool/log.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace {

using rawtool::mcp::detail::Readiness;
using namespace std::chrono_literals;

/// Polls `readiness` until it has an answer (at most 5 s).
std::optional<bool> answer(Readiness& readiness) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  for (;;) {
    if (auto ready = readiness.ready()) return ready;
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(1ms);
  }
}

}  // namespace

TEST_CASE("readiness is checked off the caller's thread, cached while fresh, and checked again once stale",
          "[mcp][http][readiness]") {
  rawtool::mcp::test::CapturedLines lines;
  auto log = rawtool::OperatorLog::open(rawtool::LogConfig{}, lines.sink());
  std::atomic<int> probes{0};
  std::atomic<bool> down{false};
  std::atomic<Readiness::Clock::rep> now{0};
  Readiness readiness(
      [&](rawtool::Cancellation&) {
        ++probes;
        return down ? std::vector<std::string>{"orders"} : std::vector<std::string>{};
      },
      *log, 2s, [&] { return Readiness::Clock::time_point(Readiness::Clock::duration(now.load())); });

  CHECK(answer(readiness) == true);
  CHECK(probes == 1);
  // Fresh: answered from the cache, whatever the databases do meanwhile.
  down = true;
  for (int i = 0; i < 100; ++i) CHECK(readiness.ready() == true);
  CHECK(probes == 1);
  // Stale: one check starts; its answer replaces the cached one.
  now += std::chrono::duration_cast<Readiness::Clock::duration>(3s).count();
  CHECK(readiness.ready() == true);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (readiness.ready() != false && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  CHECK(readiness.ready() == false);
  CHECK(probes == 2);
  // Logged once when it became ready, once when it stopped being: the database named.
  const auto records = lines.records();
  REQUIRE(records.size() == 2);
  CHECK(records[0].at("ready") == true);
  CHECK(records[1].at("ready") == false);
  CHECK(records[1].at("databases") == nlohmann::json::array({"orders"}));
}

TEST_CASE("readiness starts no second check while one runs, and stop() cancels one that hangs", "[mcp][http][readiness]") {
  rawtool::mcp::test::CapturedLines lines;
  auto log = rawtool::OperatorLog::open(rawtool::LogConfig{}, lines.sink());
  std::atomic<int> probes{0};
  std::atomic<bool> cancelled_seen{false};
  Readiness readiness(
      [&](rawtool::Cancellation& cancellation) {
        ++probes;
        // A database that never answers: only the cancellation ends the wait.
        while (!cancellation.cancelled()) std::this_thread::sleep_for(1ms);
        cancelled_seen = true;
        return std::vector<std::string>{"hung"};
      },
      *log, 0ms);
  CHECK_FALSE(readiness.ready().has_value());
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (probes == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  // The check hangs: asking again (with no freshness at all) starts no other.
  for (int i = 0; i < 50; ++i) CHECK_FALSE(readiness.ready().has_value());
  CHECK(probes == 1);
  const auto started = std::chrono::steady_clock::now();
  readiness.stop();
  CHECK(cancelled_seen);
  CHECK(std::chrono::steady_clock::now() - started < 5s);
  // None starts after the stop.
  (void)readiness.ready();
  std::this_thread::sleep_for(20ms);
  CHECK(probes == 1);
}

TEST_CASE("a readiness probe that throws counts as not ready", "[mcp][http][readiness]") {
  rawtool::mcp::test::CapturedLines lines;
  auto log = rawtool::OperatorLog::open(rawtool::LogConfig{}, lines.sink());
  Readiness readiness([](rawtool::Cancellation&) -> std::vector<std::string> { throw std::runtime_error("boom"); }, *log);
  CHECK(answer(readiness) == false);
}
