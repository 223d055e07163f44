#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace rawtool::test {

/// A loopback TCP proxy to a server on 127.0.0.1, for faults a real server will not make
/// on request. While frozen it forwards nothing either way and holds new
/// connections unanswered: to the client, the server has hung.
class TcpProxy {
public:
  explicit TcpProxy(std::uint16_t upstream_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  /// The port the proxy listens on (127.0.0.1).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  void freeze() noexcept { frozen_.store(true); }
  void thaw() noexcept { frozen_.store(false); }

private:
  void run();

  std::uint16_t upstream_port_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> frozen_{false};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace rawtool::test
