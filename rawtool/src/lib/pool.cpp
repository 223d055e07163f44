#include "lib/detail/pool.hpp"

#include <stdexcept>

// One pool per database, shared by every caller that reaches the database
// (HTTP tokens, OAuth subjects, stdio sessions): connections are not kept per
// token. Each call leaves its connection as a fresh one would be: the
// driver resets what the call left, or gives up a connection it cannot
// reset (the PostgreSQL driver's file comment lists what it does). Pools
// per token would multiply the server connections by the number of tokens,
// against a role's connection limit and the server's max_connections, for
// no isolation gained: one token's own calls come from different sessions
// and agents, which need that same reset between them anyway.

namespace rawtool::detail {

ConnectionPool::Lease& ConnectionPool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    give_back();
    pool_ = other.pool_;
    driver_ = std::move(other.driver_);
  }
  return *this;
}

ConnectionPool::Lease::~Lease() { give_back(); }

void ConnectionPool::Lease::give_back() noexcept {
  if (pool_ != nullptr && driver_) pool_->release(std::move(driver_));
  driver_.reset();
}

ConnectionPool::ConnectionPool(std::size_t capacity, Factory factory)
    : capacity_(capacity == 0 ? 1 : capacity), factory_(std::move(factory)) {
  idle_.reserve(capacity_);  // release() then never allocates
}

ConnectionPool::Lease ConnectionPool::acquire(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  if (idle_.empty() && made_ >= capacity_) ++waits_;
  if (!available_.wait(lock, stop, [&] { return !idle_.empty() || made_ < capacity_; }) || stop.stop_requested()) {
    return {};
  }
  if (!idle_.empty()) {
    std::unique_ptr<Driver> driver = std::move(idle_.back());
    idle_.pop_back();
    return Lease(this, std::move(driver));
  }
  ++made_;
  lock.unlock();
  // Made outside the lock: a factory may be slow, and other callers may take
  // idle drivers meanwhile.
  std::unique_ptr<Driver> driver;
  try {
    driver = factory_();
  } catch (...) {
    lock.lock();
    --made_;
    lock.unlock();
    available_.notify_one();
    throw;
  }
  if (!driver) {
    lock.lock();
    --made_;
    lock.unlock();
    available_.notify_one();
    throw std::runtime_error("the driver factory made no driver");
  }
  return Lease(this, std::move(driver));
}

void ConnectionPool::release(std::unique_ptr<Driver> driver) noexcept {
  {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(driver));
  }
  available_.notify_one();
}

std::size_t ConnectionPool::size() const {
  std::lock_guard lock(mutex_);
  return made_;
}

ConnectionPool::Figures ConnectionPool::figures() const {
  std::lock_guard lock(mutex_);
  return {made_, idle_.size(), waits_};
}

}  // namespace rawtool::detail
