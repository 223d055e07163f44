// The worker pool on its own: how many tasks run at once, in which order the
// waiting ones start, the bound on waiting, withdrawal, and shutdown.

#include "mcp/worker_pool.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace {

using rawtool::mcp::detail::Task;
using rawtool::mcp::detail::WorkerPool;
using namespace std::chrono_literals;

// What the tasks of one test did, and a gate that holds them until opened.
class Board {
public:
  void enter(int number) {
    std::unique_lock lock(mutex_);
    started_.push_back(number);
    ++running_;
    peak_ = std::max(peak_, running_);
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    --running_;
    ++finished_;
    changed_.notify_all();
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  bool wait_started(std::size_t count) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 5s, [&] { return started_.size() >= count; });
  }
  bool wait_finished(int count) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 5s, [&] { return finished_ >= count; });
  }
  std::vector<int> started() {
    std::lock_guard lock(mutex_);
    return started_;
  }
  int peak() {
    std::lock_guard lock(mutex_);
    return peak_;
  }
  int finished() {
    std::lock_guard lock(mutex_);
    return finished_;
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> started_;
  int running_ = 0;
  int peak_ = 0;
  int finished_ = 0;
  bool open_ = false;
};

class Numbered final : public Task {
public:
  Numbered(Board& board, int number) : board_(board), number_(number) {}
  void run() noexcept override { board_.enter(number_); }

private:
  Board& board_;
  int number_;
};

// A task that opens the board's gate when it is released, whether it ran or not.
class OpensWhenDropped final : public Task {
public:
  OpensWhenDropped(Board& board, int number) : board_(board), number_(number) {}
  ~OpensWhenDropped() override { board_.open(); }
  OpensWhenDropped(const OpensWhenDropped&) = delete;
  OpensWhenDropped& operator=(const OpensWhenDropped&) = delete;
  void run() noexcept override { board_.enter(number_); }

private:
  Board& board_;
  int number_;
};

}  // namespace

TEST_CASE("at most `workers` tasks run at once, and every task submitted runs", "[mcp][pool]") {
  Board board;
  WorkerPool pool(2, 10);
  for (int number = 1; number <= 6; ++number) REQUIRE(pool.submit(std::make_shared<Numbered>(board, number)));
  REQUIRE(board.wait_started(2));
  board.open();
  REQUIRE(board.wait_finished(6));
  REQUIRE(board.peak() == 2);
  auto started = board.started();
  std::sort(started.begin(), started.end());
  REQUIRE(started == std::vector<int>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("waiting tasks start in the order they came", "[mcp][pool]") {
  Board board;
  WorkerPool pool(1, 10);  // one worker, so the order they start in is the order they were taken
  for (int number = 1; number <= 5; ++number) REQUIRE(pool.submit(std::make_shared<Numbered>(board, number)));
  REQUIRE(board.wait_started(1));
  board.open();
  REQUIRE(board.wait_finished(5));
  REQUIRE(board.started() == std::vector<int>{1, 2, 3, 4, 5});
}

TEST_CASE("with every worker busy and the waiting line full, a task is refused, a freed place takes one again",
          "[mcp][pool]") {
  Board board;
  Board later_board;
  WorkerPool pool(1, 2);
  REQUIRE(pool.submit(std::make_shared<Numbered>(board, 1)));
  REQUIRE(board.wait_started(1));
  REQUIRE(pool.submit(std::make_shared<Numbered>(board, 2)));
  auto third = std::make_shared<Numbered>(board, 3);
  REQUIRE(pool.submit(third));
  REQUIRE_FALSE(pool.submit(std::make_shared<Numbered>(board, 4)));
  REQUIRE(pool.withdraw(*third));
  REQUIRE(pool.submit(std::make_shared<Numbered>(board, 5)));
  board.open();
  REQUIRE(board.wait_finished(3));
  REQUIRE(board.started() == std::vector<int>{1, 2, 5});
}

TEST_CASE("a withdrawn task never runs, a running or finished one cannot be withdrawn", "[mcp][pool]") {
  Board board;
  WorkerPool pool(1, 4);
  auto first = std::make_shared<Numbered>(board, 1);
  auto second = std::make_shared<Numbered>(board, 2);
  auto third = std::make_shared<Numbered>(board, 3);
  REQUIRE(pool.submit(first));
  REQUIRE(board.wait_started(1));
  REQUIRE(pool.submit(second));
  REQUIRE(pool.submit(third));
  REQUIRE_FALSE(pool.withdraw(*first));  // running
  REQUIRE(pool.withdraw(*second));
  REQUIRE_FALSE(pool.withdraw(*second));  // already out
  board.open();
  REQUIRE(board.wait_finished(2));
  REQUIRE_FALSE(pool.withdraw(*third));  // finished
  REQUIRE(board.started() == std::vector<int>{1, 3});
}

TEST_CASE("destroying the pool drops the waiting tasks unrun, then waits for the running ones", "[mcp][pool]") {
  Board board;
  {
    WorkerPool pool(1, 4);
    REQUIRE(pool.submit(std::make_shared<Numbered>(board, 1)));
    REQUIRE(board.wait_started(1));
    // Held by the pool alone: the running task can end only once the pool lets this one go unrun.
    REQUIRE(pool.submit(std::make_shared<OpensWhenDropped>(board, 2)));
  }
  REQUIRE(board.started() == std::vector<int>{1});
  REQUIRE(board.finished() == 1);
}
