#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace rawtool::test {

/// A TCP proxy on 127.0.0.1 to a server at a given host and port (the host of
/// the configured test URL, which may be another machine or container), for
/// faults a real server will not make on request. While frozen it forwards
/// nothing either way and holds new connections unanswered: to the client, the
/// server has hung.
class TcpProxy {
public:
  /// Resolves `upstream_host` (a name or an address) once, here; throws
  /// std::runtime_error when it cannot be resolved or the proxy cannot listen.
  TcpProxy(const std::string& upstream_host, std::uint16_t upstream_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  /// The port the proxy listens on (127.0.0.1).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  void freeze() noexcept { frozen_.store(true); }
  /// Forwards again, first what freeze_on held.
  void thaw() noexcept { frozen_.store(false); }
  /// Freezes as soon as a client sends bytes holding `pattern` (a query's
  /// text): those bytes are held, not forwarded, so the server never sees the
  /// query until thaw(). A partition at exactly that step, set off by the
  /// step itself rather than by a clock.
  void freeze_on(std::string pattern);
  /// True while frozen (by freeze(), or by freeze_on once its pattern passed).
  [[nodiscard]] bool frozen() const noexcept { return frozen_.load(); }

private:
  void run();

  sockaddr_storage upstream_{};
  socklen_t upstream_length_ = 0;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> frozen_{false};
  std::mutex pattern_mutex_;
  std::string pattern_;  ///< guarded by pattern_mutex_; empty: none
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace rawtool::test
