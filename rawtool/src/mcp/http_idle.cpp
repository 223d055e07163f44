#include "mcp/http_idle.hpp"

#include <algorithm>
#include <utility>

namespace rawtool::mcp::detail {

IdleConnections::Ticket IdleConnections::enter(bool authenticated, std::function<void(Ticket)> close) {
  std::lock_guard lock(mutex_);
  const Ticket ticket = next_++;
  waiting_.push_back({ticket, authenticated, std::move(close)});
  by_ticket_.emplace(ticket, std::prev(waiting_.end()));
  return ticket;
}

void IdleConnections::leave(Ticket ticket) noexcept {
  std::lock_guard lock(mutex_);
  const auto found = by_ticket_.find(ticket);
  if (found == by_ticket_.end()) return;
  waiting_.erase(found->second);
  by_ticket_.erase(found);
}

std::function<void()> IdleConnections::take_oldest() {
  std::lock_guard lock(mutex_);
  if (waiting_.empty()) return {};
  auto chosen = std::find_if(waiting_.begin(), waiting_.end(), [](const Entry& entry) { return !entry.authenticated; });
  if (chosen == waiting_.end()) chosen = waiting_.begin();
  std::function<void()> close = [close = std::move(chosen->close), ticket = chosen->ticket] { close(ticket); };
  by_ticket_.erase(chosen->ticket);
  waiting_.erase(chosen);
  return close;
}

std::size_t IdleConnections::size() const {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

}  // namespace rawtool::mcp::detail
