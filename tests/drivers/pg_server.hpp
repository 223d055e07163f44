#pragma once

#include <rawtool/driver.hpp>

#include <memory>
#include <optional>
#include <string>

namespace rawtool::test {

/// The URL of the test server from RAWTOOL_TEST_PG_URL (superuser) or, with
/// `reader`, RAWTOOL_TEST_PG_READER_URL (the low-privilege role). When it is
/// unset the test warns loudly and the caller returns; with RAWTOOL_REQUIRE_PG=1
/// (as in CI) the test fails instead.
std::optional<std::string> pg_url(bool reader = false);

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
