// The HTTP transport's waiting connections on their own, with no socket:
// which one a new connection closes at max_connections, and that a
// connection that stopped waiting is never taken.

#include "mcp/http_idle.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {

using rawtool::mcp::detail::IdleConnections;

/// Enters a connection named `name` that, when closed, appends its name to `closed`.
IdleConnections::Ticket enter(IdleConnections& idle, bool authenticated, const std::string& name,
                              std::vector<std::string>& closed) {
  return idle.enter(authenticated, [&closed, name](IdleConnections::Ticket) { closed.push_back(name); });
}

/// Takes the next connection to close and closes it; "" when none waits.
std::string take(IdleConnections& idle, std::vector<std::string>& closed) {
  const auto close = idle.take_oldest();
  if (!close) return "";
  close();
  return closed.back();
}

}  // namespace

TEST_CASE("a new connection closes the oldest waiting one that never carried a token, then the oldest with one",
          "[mcp][http][idle]") {
  IdleConnections idle;
  std::vector<std::string> closed;
  enter(idle, true, "token holder, oldest", closed);
  enter(idle, false, "no token, older", closed);
  enter(idle, true, "token holder, newer", closed);
  enter(idle, false, "no token, newest", closed);
  CHECK(idle.size() == 4);
  CHECK(take(idle, closed) == "no token, older");
  CHECK(take(idle, closed) == "no token, newest");
  CHECK(take(idle, closed) == "token holder, oldest");
  CHECK(take(idle, closed) == "token holder, newer");
  CHECK(take(idle, closed).empty());
  CHECK(idle.size() == 0);
}

TEST_CASE("a connection that stopped waiting is never closed to make room, and leaving twice is harmless",
          "[mcp][http][idle]") {
  IdleConnections idle;
  std::vector<std::string> closed;
  const auto busy = enter(idle, false, "its request came", closed);
  enter(idle, true, "still waiting", closed);
  idle.leave(busy);
  idle.leave(busy);
  CHECK(idle.size() == 1);
  CHECK(take(idle, closed) == "still waiting");
  CHECK(take(idle, closed).empty());
  CHECK(closed == std::vector<std::string>{"still waiting"});
  // A ticket taken (its connection is being closed) and then left, as its
  // connection does on its way out, changes nothing.
  const auto taken = enter(idle, false, "taken", closed);
  CHECK(take(idle, closed) == "taken");
  idle.leave(taken);
  CHECK(idle.size() == 0);
}

TEST_CASE("a connection taken to make room is told the ticket it was taken under", "[mcp][http][idle]") {
  IdleConnections idle;
  std::vector<IdleConnections::Ticket> told;
  const auto remember = [&told](IdleConnections::Ticket ticket) { told.push_back(ticket); };
  const auto first = idle.enter(false, remember);
  const auto second = idle.enter(false, remember);
  CHECK(first != second);
  idle.take_oldest()();
  idle.take_oldest()();
  CHECK(told == std::vector<IdleConnections::Ticket>{first, second});
}

TEST_CASE("connections entering, leaving and taken from many threads at once are each closed at most once",
          "[mcp][http][idle]") {
  IdleConnections idle;
  std::atomic<int> closes{0};
  std::atomic<int> taken{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&idle, &closes, &taken, t] {
      for (int i = 0; i < 2000; ++i) {
        const auto ticket = idle.enter(((t + i) % 2) == 0, [&closes](IdleConnections::Ticket) { ++closes; });
        if (i % 3 == 0) idle.leave(ticket);
        if (auto close = idle.take_oldest()) {
          close();
          ++taken;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  int rest = 0;
  while (auto close = idle.take_oldest()) {
    close();
    ++rest;
  }
  CHECK(closes == taken + rest);
  CHECK(closes <= 4 * 2000);
  CHECK(idle.size() == 0);
}
