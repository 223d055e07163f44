#pragma once

// A fixed set of threads that run tool calls first in first out, with a
// bounded line of calls waiting for one. One pool serves every client session
// of a server, so max_concurrent_calls bounds the server, not each client.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rawtool::mcp::detail {

/// Work for a WorkerPool.
class Task {
public:
  virtual ~Task() = default;
  Task() = default;
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  /// Called at most once, on a worker thread.
  virtual void run() noexcept = 0;
};

/// Thread-safe. Threads: `workers` threads, started by the constructor and
/// joined by the destructor; a task runs on one of them, never on the thread
/// that submits it.
class WorkerPool {
public:
  /// `workers` is at least 1 (0 counts as 1).
  WorkerPool(std::size_t workers, std::size_t max_waiting);
  /// join().
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Runs `task` on the next free worker, after the tasks already waiting.
  /// False, and the task is not kept, when every worker is busy and
  /// max_waiting tasks wait already.
  bool submit(std::shared_ptr<Task> task);

  /// Takes `task` out of the waiting line, so it never runs. False when it is
  /// not waiting: a worker has taken it, it has run, or it was never submitted.
  bool withdraw(const Task& task);

  /// Refuses every task from now on, releases the tasks still waiting
  /// without running them, then waits for the running ones to return and
  /// joins the workers. Idempotent; not from a worker.
  void join();

  /// As constructed: the tasks that run at once, and how many may wait.
  [[nodiscard]] std::size_t workers() const noexcept { return workers_; }
  [[nodiscard]] std::size_t max_waiting() const noexcept { return max_waiting_; }

private:
  void work();

  const std::size_t workers_;
  const std::size_t max_waiting_;
  std::mutex mutex_;
  std::condition_variable ready_;               // a task waits, or the pool stops
  std::deque<std::shared_ptr<Task>> waiting_;   // guarded by mutex_
  std::size_t busy_ = 0;                        // workers that took a task, guarded by mutex_
  bool stopping_ = false;                       // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace rawtool::mcp::detail
