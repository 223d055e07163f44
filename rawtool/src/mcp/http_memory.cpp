#include "mcp/http_memory.hpp"

#include <utility>

namespace rawtool::mcp::detail {

MemoryBudget::Charge::Charge(Charge&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

MemoryBudget::Charge& MemoryBudget::Charge::operator=(Charge&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void MemoryBudget::Charge::resize(std::size_t bytes) noexcept {
  if (budget_ == nullptr) return;
  if (bytes > bytes_) {
    budget_->held_ += bytes - bytes_;
  } else {
    budget_->held_ -= bytes_ - bytes;
  }
  bytes_ = bytes;
}

void MemoryBudget::Charge::release() noexcept {
  if (budget_ == nullptr) return;
  budget_->held_ -= bytes_;
  budget_ = nullptr;
  bytes_ = 0;
}

std::optional<MemoryBudget::Charge> MemoryBudget::try_take(std::size_t bytes) noexcept {
  std::size_t held = held_.load();
  do {
    if (bytes > limit_ || held > limit_ - bytes) return std::nullopt;
  } while (!held_.compare_exchange_weak(held, held + bytes));
  return Charge(*this, bytes);
}

MemoryBudget::Charge MemoryBudget::take(std::size_t bytes) noexcept {
  held_ += bytes;
  return Charge(*this, bytes);
}

}  // namespace rawtool::mcp::detail
