#pragma once

#include "pg_url.hpp"

#include <rawtool/driver.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rawtool::test {

/// Runs administrative SQL on the superuser connection, outside any driver
/// (setup, cleanup, inspection); fails the test if it fails. Returns the
/// first column of the first row, or "" when there is none.
std::string pg_admin(const std::string& sql);

/// Waits (up to 10 s, then fails the test) until the backend `pid` is inside
/// pg_sleep: a statement that sleeps has then begun, and everything it does
/// before its sleep is done. A wait on the condition, not a fixed sleep.
void wait_until_sleeping(const std::string& pid);

/// The server a URL names by TCP, for a TcpProxy to stand in front of.
struct ProxyTarget {
  std::string host;  ///< hostaddr when the URL gives one, else host
  std::uint16_t port = 5432;
  std::string user = "postgres";
  std::string database;
  /// The URL of the same server and role through a proxy on 127.0.0.1:`proxy_port`,
  /// with `options` (key=value&...) as its query string.
  [[nodiscard]] std::string url_through(std::uint16_t proxy_port, std::string_view options = {}) const;
};

/// Where `url` points; fails the test unless it names one server by TCP host
/// (another container in docker/compose.test.yaml, or a local address).
ProxyTarget proxy_target(const std::string& url);

/// A driver on the superuser connection, told that it is trusted: the tests
/// that use it are about other properties than the refusal of privileged
/// roles in read-only mode (pinned in postgres_read_only_test).
inline PostgresOptions trusted_options() {
  PostgresOptions options;
  options.allow_privileged_read_only = true;
  return options;
}

inline std::unique_ptr<Driver> superuser_driver(const std::string& url) {
  return make_postgres_driver(url, trusted_options());
}

}  // namespace rawtool::test
