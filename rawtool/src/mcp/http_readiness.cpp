#include "mcp/http_readiness.hpp"

#include <nlohmann/json.hpp>

#include <utility>

namespace rawtool::mcp::detail {

Readiness::Readiness(Probe probe, const rawtool::OperatorLog& log, std::chrono::milliseconds fresh,
                     std::function<Clock::time_point()> now)
    : probe_(std::move(probe)), log_(log), fresh_(fresh), now_(std::move(now)) {}

Readiness::~Readiness() { stop(); }

std::optional<bool> Readiness::ready() {
  std::lock_guard lock(mutex_);
  const bool stale = !unusable_ || now_() - checked_ >= fresh_;
  if (stale && !checking_ && !stopped_) {
    checking_ = true;
    // The thread before is done (checking_ was false): joined here, so at
    // most one is ever left to join.
    if (thread_.joinable()) thread_.join();
    thread_ = std::thread([this] { check(); });
  }
  if (!unusable_) return std::nullopt;
  return unusable_->empty();
}

// A thread's top: a probe that throws counts every database as unusable.
void Readiness::check() noexcept {
  std::optional<std::vector<std::string>> found;
  try {
    found = probe_(cancellation_);
  } catch (...) {
    found.reset();
  }
  std::lock_guard lock(mutex_);
  const bool was_ready = unusable_ && unusable_->empty();
  const bool first = !unusable_;
  unusable_ = found ? std::move(*found) : std::vector<std::string>{"(the check failed)"};
  checked_ = now_();
  checking_ = false;
  const bool is_ready = unusable_->empty();
  if (first || was_ready != is_ready) {
    try {
      if (is_ready && log_.enabled(LogLevel::info)) {
        log_.write(LogLevel::info, "http", "readiness", nlohmann::json{{"ready", true}, {"detail", "every database answers"}});
      } else if (!is_ready && log_.enabled(LogLevel::warn)) {
        log_.write(LogLevel::warn, "http", "readiness",
                   nlohmann::json{{"ready", false},
                                  {"detail", "a database cannot be used: /readyz answers 503 until it can"},
                                  {"databases", *unusable_}});
      }
    } catch (...) {  // NOLINT(bugprone-empty-catch): the answer stands without its log line
    }
  }
}

void Readiness::stop() noexcept {
  std::thread thread;
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    thread = std::move(thread_);
  }
  cancellation_.cancel();
  if (thread.joinable()) thread.join();
}

}  // namespace rawtool::mcp::detail
