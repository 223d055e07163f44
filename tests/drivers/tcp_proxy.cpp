#include "tcp_proxy.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rawtool::test {
namespace {

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

}  // namespace

TcpProxy::TcpProxy(const std::string& upstream_host, std::uint16_t upstream_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(upstream_port);
  if (getaddrinfo(upstream_host.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr) {
    throw std::runtime_error("the test proxy cannot resolve " + upstream_host);
  }
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, &freeaddrinfo);
  std::memcpy(&upstream_, found->ai_addr, found->ai_addrlen);
  upstream_length_ = found->ai_addrlen;

  listener_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = loopback(0);
  if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(listener_, 16) != 0) {
    throw std::runtime_error("the test proxy cannot listen");
  }
  socklen_t length = sizeof address;
  getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
  stopping_.store(true);
  thread_.join();
  close(listener_);
}

void TcpProxy::freeze_on(std::string pattern) {
  std::lock_guard lock(pattern_mutex_);
  pattern_ = std::move(pattern);
}

void TcpProxy::run() {
  struct Pair {
    int client;
    int server;  // -1 until connected upstream
    bool open = true;
    std::string tail{};  // the client's last bytes, for a pattern cut across two reads
    std::string held{};  // the client's bytes freeze_on held, forwarded at thaw
  };
  const auto send_all = [](int to, const char* data, std::size_t size) {
    for (std::size_t sent = 0; sent < size;) {
      // MSG_NOSIGNAL: a side that has closed (a driver that gave its
      // connection up) ends the pair; a write to it must not end the test
      // process with SIGPIPE.
      const ssize_t wrote = send(to, data + sent, size - sent, MSG_NOSIGNAL);
      if (wrote <= 0) return false;
      sent += static_cast<std::size_t>(wrote);
    }
    return true;
  };
  std::vector<Pair> pairs;
  std::array<char, 65536> buffer{};
  while (!stopping_.load()) {
    const bool frozen = frozen_.load();
    std::vector<pollfd> fds{{listener_, POLLIN, 0}};
    std::vector<std::pair<std::size_t, bool>> owners{{0, false}};  // (pair, from client) per fds entry
    if (!frozen) {
      for (std::size_t p = 0; p < pairs.size(); ++p) {
        if (!pairs[p].open || pairs[p].server < 0) continue;
        fds.push_back({pairs[p].client, POLLIN, 0});
        owners.emplace_back(p, true);
        fds.push_back({pairs[p].server, POLLIN, 0});
        owners.emplace_back(p, false);
      }
    }
    const int ready = poll(fds.data(), fds.size(), 20);
    if (ready > 0 && (fds[0].revents & POLLIN) != 0) {
      const int client = accept(listener_, nullptr, nullptr);
      if (client >= 0) pairs.push_back({client, -1});
    }
    if (frozen) continue;
    for (Pair& pair : pairs) {
      if (!pair.open || pair.held.empty()) continue;
      if (!send_all(pair.server, pair.held.data(), pair.held.size())) {
        close(pair.client);
        close(pair.server);
        pair.open = false;
      }
      pair.held.clear();
    }
    for (Pair& pair : pairs) {
      if (!pair.open || pair.server >= 0) continue;
      pair.server = socket(upstream_.ss_family, SOCK_STREAM, 0);
      if (connect(pair.server, reinterpret_cast<const sockaddr*>(&upstream_), upstream_length_) != 0) {
        close(pair.server);
        close(pair.client);
        pair.server = -1;
        pair.open = false;
      }
    }
    if (ready <= 0) continue;
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Pair& pair = pairs[owners[i].first];
      if (!pair.open) continue;
      const int from = owners[i].second ? pair.client : pair.server;
      const int to = owners[i].second ? pair.server : pair.client;
      const ssize_t got = read(from, buffer.data(), buffer.size());
      if (got > 0 && owners[i].second) {
        std::lock_guard lock(pattern_mutex_);
        if (!pattern_.empty()) {
          const std::string seen = pair.tail + std::string(buffer.data(), static_cast<std::size_t>(got));
          pair.tail = seen.substr(seen.size() - std::min(seen.size(), pattern_.size()));
          if (seen.find(pattern_) != std::string::npos) {
            pattern_.clear();
            frozen_.store(true);
            pair.held.assign(buffer.data(), static_cast<std::size_t>(got));
            break;  // nothing more is forwarded while frozen
          }
        }
      }
      const bool failed = got <= 0 || !send_all(to, buffer.data(), static_cast<std::size_t>(got));
      if (failed) {
        close(pair.client);
        close(pair.server);
        pair.open = false;
      }
    }
  }
  for (const Pair& pair : pairs) {
    if (!pair.open) continue;
    close(pair.client);
    if (pair.server >= 0) close(pair.server);
  }
}

}  // namespace rawtool::test
