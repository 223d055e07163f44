#pragma once

// GET /readyz: whether every configured database can be used now, for load
// balancers. The check runs off the I/O threads, at most once per `fresh`,
// and its answer is cached: a /readyz costs nothing but a lock.

#include <rawtool/log.hpp>
#include <rawtool/tool.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace rawtool::mcp::detail {

/// Thread-safe. `probe` returns the labels of the databases it cannot use;
/// it is given a Cancellation that stop() cancels. `log` outlives it.
class Readiness {
public:
  using Probe = std::function<std::vector<std::string>(Cancellation&)>;
  using Clock = std::chrono::steady_clock;

  Readiness(Probe probe, const rawtool::OperatorLog& log, std::chrono::milliseconds fresh = std::chrono::seconds(2),
            std::function<Clock::time_point()> now = Clock::now);
  /// stop().
  ~Readiness();
  Readiness(const Readiness&) = delete;
  Readiness& operator=(const Readiness&) = delete;

  /// The last check's answer, nullopt before the first has ended. Starts a
  /// check when none runs and the answer is older than `fresh` (or missing).
  std::optional<bool> ready();
  /// Cancels a check under way and waits for it; none starts afterwards.
  void stop() noexcept;

private:
  void check() noexcept;

  Probe probe_;
  const rawtool::OperatorLog& log_;
  const std::chrono::milliseconds fresh_;
  std::function<Clock::time_point()> now_;
  Cancellation cancellation_;
  std::mutex mutex_;
  std::optional<std::vector<std::string>> unusable_;  // guarded by mutex_
  Clock::time_point checked_{};                       // guarded by mutex_
  bool checking_ = false;                             // guarded by mutex_
  bool stopped_ = false;                              // guarded by mutex_
  std::thread thread_;                                // guarded by mutex_
};

}  // namespace rawtool::mcp::detail
