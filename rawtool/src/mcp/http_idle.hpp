#pragma once

// The HTTP transport's connections that wait for a request, oldest first:
// the ones a new connection may close to get in once the server holds
// max_connections. No socket here: a connection enters with the function that
// closes it, and the server asks which one goes.
//
// Without this, idle sockets are enough to lock everyone out: an attacker
// with no token opens max_connections connections, sends nothing, and
// reopens each as it is closed. With it, a new connection closes the oldest
// waiting one instead, first among those that never carried a valid token;
// a connection busy with a request is never closed to make room.

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>

namespace rawtool::mcp::detail {

class IdleConnections {
public:
  using Ticket = std::uint64_t;

  /// A connection now waits for a request (or for the rest of its head).
  /// `authenticated`: one of its requests carried a valid token. `close`
  /// closes it, given the ticket it was taken under (so that a connection
  /// that has since stopped waiting, and perhaps waits again under another
  /// ticket, can tell); called at most once, from any thread, by whoever
  /// takes it.
  Ticket enter(bool authenticated, std::function<void(Ticket)> close);

  /// It no longer waits (its request head is complete, or it is closing).
  /// A ticket already taken or left is ignored.
  void leave(Ticket ticket) noexcept;

  /// Takes the connection to close to admit a new one: the oldest that never
  /// carried a valid token, else the oldest. Its `close` bound to its ticket,
  /// or an empty function when none waits.
  std::function<void()> take_oldest();

  [[nodiscard]] std::size_t size() const;

private:
  struct Entry {
    Ticket ticket;
    bool authenticated;
    std::function<void(Ticket)> close;
  };
  mutable std::mutex mutex_;
  std::list<Entry> waiting_;  // oldest first; guarded by mutex_
  std::unordered_map<Ticket, std::list<Entry>::iterator> by_ticket_;  // guarded by mutex_
  Ticket next_ = 1;                                                   // guarded by mutex_
};

}  // namespace rawtool::mcp::detail
