#pragma once

// The fault tests' own PostgreSQL cluster (never the shared server): made by
// .ci/pg-start in a ctest fixture, then stopped, started and restarted by the
// tests themselves. Commands run as the postgres user when the tests run as root.

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace rawtool::faults {

class PgCluster {
public:
  /// The cluster the fixture made: RAWTOOL_FAULTS_PG_DIR and RAWTOOL_FAULTS_PG_PORT.
  PgCluster();

  [[nodiscard]] int port() const noexcept { return port_; }
  /// postgresql://<role>@127.0.0.1:<port>/rawtool_test
  [[nodiscard]] std::string url(const std::string& role) const;
  /// The low-privilege role read-only calls run as.
  [[nodiscard]] std::string reader_url() const { return url("rawtool_reader"); }

  [[nodiscard]] bool accepting() const;
  /// Starts the server if it is down and waits until it accepts connections.
  void ensure_up();
  /// Stops the server (mode "fast" or "immediate") and waits until it is down.
  void stop(const char* mode = "fast");
  /// Starts a stopped server and waits until it accepts connections.
  void start();
  /// pg_ctl restart in `mode`: every backend ends, the server comes back.
  void restart(const char* mode = "fast");

  /// Runs `sql` as the superuser on a fresh connection; the first cell or "".
  /// Throws std::runtime_error when it fails.
  std::string admin(const std::string& sql) const;

private:
  void pg_ctl(const std::string& arguments) const;
  std::string dir_;
  int port_ = 0;
};

/// A superuser session held open across calls (to hold a lock, or to watch).
class AdminSession {
public:
  explicit AdminSession(const std::string& url);
  ~AdminSession();
  AdminSession(const AdminSession&) = delete;
  AdminSession& operator=(const AdminSession&) = delete;
  /// Runs `sql`; the first cell or "". Throws when it fails.
  std::string run(const std::string& sql);

private:
  PGconn* connection_ = nullptr;
};

}  // namespace rawtool::faults
