#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rawtool::test {

/// A PgBouncer process of the test's own in front of the test server
/// (RAWTOOL_TEST_PG_URL), in transaction pooling mode, on the loopback port
/// RAWTOOL_TEST_PGBOUNCER_PORT, with a pool of `pool_size` server connections
/// a database and role, used in turn (server_round_robin). Stopped, and its
/// folder removed, when destroyed. It lets in the roles of RAWTOOL_TEST_PG_URL
/// and RAWTOOL_TEST_PG_READER_URL, and `more_roles` (a test's own).
class PgBouncer {
public:
  /// Starts it and waits until it accepts connections. std::nullopt, after a
  /// loud warning, when PgBouncer is not installed or the server is not
  /// configured; with RAWTOOL_REQUIRE_PG=1 the test fails instead.
  static std::optional<PgBouncer> start(int pool_size, const std::vector<std::string>& more_roles = {});

  /// `url` (a postgresql:// URL of the test server) with PgBouncer's address.
  [[nodiscard]] std::string url_for(const std::string& url) const;

  PgBouncer(PgBouncer&& other) noexcept;
  PgBouncer& operator=(PgBouncer&&) = delete;
  PgBouncer(const PgBouncer&) = delete;
  PgBouncer& operator=(const PgBouncer&) = delete;
  ~PgBouncer();

private:
  PgBouncer(std::filesystem::path folder, pid_t pid) : folder_(std::move(folder)), pid_(pid) {}
  std::filesystem::path folder_;
  pid_t pid_ = -1;
};

}  // namespace rawtool::test
