#pragma once

#include "pg_url.hpp"

#include <rawtool/driver.hpp>

#include <memory>
#include <optional>
#include <string>

namespace rawtool::test {

/// Runs administrative SQL on the superuser connection, outside any driver
/// (setup, cleanup, inspection); fails the test if it fails. Returns the
/// first column of the first row, or "" when there is none.
std::string pg_admin(const std::string& sql);

/// Waits (up to 10 s, then fails the test) until the backend `pid` is inside
/// pg_sleep: a statement that sleeps has then begun, and everything it does
/// before its sleep is done. A wait on the condition, not a fixed sleep.
void wait_until_sleeping(const std::string& pid);

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
