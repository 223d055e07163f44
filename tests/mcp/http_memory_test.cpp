// The HTTP transport's memory budget on its own, with no socket: what fits,
// what a charge gives back, and that concurrent takers never pass the limit.

#include "mcp/http_memory.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

using rawtool::mcp::detail::MemoryBudget;

TEST_CASE("a charge fits beside what is held or is refused, and gives its bytes back when it goes",
          "[mcp][http][memory]") {
  MemoryBudget budget(100);
  auto first = budget.try_take(60);
  REQUIRE(first);
  CHECK(budget.held() == 60);
  CHECK_FALSE(budget.try_take(41));
  CHECK(budget.held() == 60);  // a refusal holds nothing
  auto second = budget.try_take(40);
  REQUIRE(second);
  CHECK(budget.held() == 100);
  CHECK_FALSE(budget.try_take(1));
  second->release();
  second->release();  // twice is once
  CHECK(budget.held() == 60);
  { const auto scoped = budget.try_take(40); }
  CHECK(budget.held() == 60);
  CHECK_FALSE(budget.try_take(101));  // more than the whole budget never fits
  first.reset();
  CHECK(budget.held() == 0);
}

TEST_CASE("a charge moves with its bytes, resizes to what is really held, and a forced charge counts past the limit",
          "[mcp][http][memory]") {
  MemoryBudget budget(100);
  MemoryBudget::Charge held;
  CHECK(held.empty());
  held = std::move(*budget.try_take(80));
  CHECK(budget.held() == 80);
  MemoryBudget::Charge moved(std::move(held));
  CHECK(held.empty());  // NOLINT(bugprone-use-after-move): the moved-from charge holds nothing
  CHECK(moved.bytes() == 80);
  moved.resize(10);  // a reservation that became a small answer
  CHECK(budget.held() == 10);
  auto forced = budget.take(150);  // an answer already in memory is counted, never refused
  CHECK(budget.held() == 160);
  CHECK_FALSE(budget.try_take(1));
  moved = std::move(forced);  // the old bytes go, the new ones stay
  CHECK(budget.held() == 150);
  moved.release();
  CHECK(budget.held() == 0);
}

TEST_CASE("many threads taking at once never hold more than the limit", "[mcp][http][memory]") {
  MemoryBudget budget(1000);
  std::atomic<std::size_t> over{0};
  std::atomic<std::size_t> taken{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        auto charge = budget.try_take(300);
        if (!charge) continue;
        ++taken;
        if (budget.held() > budget.limit()) ++over;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(over == 0);
  CHECK(taken > 0);
  CHECK(budget.held() == 0);
}
