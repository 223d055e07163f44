#include "mcp/worker_pool.hpp"

#include <algorithm>
#include <utility>

namespace rawtool::mcp::detail {

WorkerPool::WorkerPool(std::size_t workers, std::size_t max_waiting)
    : workers_(std::max<std::size_t>(workers, 1)), max_waiting_(max_waiting) {
  threads_.reserve(workers_);
  for (std::size_t i = 0; i < workers_; ++i) threads_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() { join(); }

void WorkerPool::join() {
  std::deque<std::shared_ptr<Task>> dropped;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    dropped.swap(waiting_);
  }
  ready_.notify_all();
  dropped.clear();  // released at once, outside the lock, not after the running tasks
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

bool WorkerPool::submit(std::shared_ptr<Task> task) {
  {
    std::lock_guard lock(mutex_);
    // Tasks already waiting take the free workers first; beyond them, at most
    // max_waiting_ may wait.
    const std::size_t free_workers = workers_ - busy_;
    if (stopping_ || waiting_.size() >= free_workers + max_waiting_) return false;
    waiting_.push_back(std::move(task));
  }
  ready_.notify_one();
  return true;
}

bool WorkerPool::withdraw(const Task& task) {
  std::shared_ptr<Task> taken;  // released outside the lock
  std::lock_guard lock(mutex_);
  const auto found =
      std::find_if(waiting_.begin(), waiting_.end(), [&](const std::shared_ptr<Task>& queued) { return queued.get() == &task; });
  if (found == waiting_.end()) return false;
  taken = std::move(*found);
  waiting_.erase(found);
  return true;
}

void WorkerPool::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ready_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
    if (stopping_) return;
    std::shared_ptr<Task> task = std::move(waiting_.front());
    waiting_.pop_front();
    ++busy_;
    lock.unlock();
    task->run();
    task.reset();  // whatever the task holds is released outside the lock
    lock.lock();
    --busy_;
  }
}

}  // namespace rawtool::mcp::detail
