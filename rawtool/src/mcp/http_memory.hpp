#pragma once

// The HTTP transport's memory budget (http.max_memory_bytes): one count, for
// the whole process, of the bytes its requests hold — request bodies being
// read and waiting, tool calls running, and answers waiting to be written to
// clients that read slowly or not at all. No socket here: the server takes
// charges and lets them go, and this says whether one fits.
//
// Without it every limit was per call or per connection, and many small
// abuses added up: sixty clients that each asked for a 7 MB answer and never
// read it held 500 MiB until their request timeout. With it, what a call
// needs is taken before it runs; when the budget is spent, the call is
// answered at once with "busy, try again" in rawtool's words, and the memory
// of an answer left unread goes with its connection at request_timeout.

#include <atomic>
#include <cstddef>
#include <optional>

namespace rawtool::mcp::detail {

class MemoryBudget {
public:
  /// Bytes held under a budget, given back when it is destroyed. Move-only;
  /// an empty charge (default) holds nothing.
  class Charge {
  public:
    Charge() = default;
    ~Charge() { release(); }
    Charge(Charge&& other) noexcept;
    Charge& operator=(Charge&& other) noexcept;
    Charge(const Charge&) = delete;
    Charge& operator=(const Charge&) = delete;

    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
    [[nodiscard]] bool empty() const noexcept { return budget_ == nullptr; }
    /// Holds `bytes` from now on, whether it fits or not: what is already in
    /// memory (an answer made) is counted, never refused.
    void resize(std::size_t bytes) noexcept;
    void release() noexcept;

  private:
    friend class MemoryBudget;
    Charge(MemoryBudget& budget, std::size_t bytes) noexcept : budget_(&budget), bytes_(bytes) {}
    MemoryBudget* budget_ = nullptr;
    std::size_t bytes_ = 0;
  };

  explicit MemoryBudget(std::size_t limit) noexcept : limit_(limit) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  /// `bytes` if they fit beside what is held; nothing when they do not.
  std::optional<Charge> try_take(std::size_t bytes) noexcept;
  /// `bytes` counted whether they fit or not (see Charge::resize).
  Charge take(std::size_t bytes) noexcept;

  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
  [[nodiscard]] std::size_t held() const noexcept { return held_.load(); }

private:
  const std::size_t limit_;
  std::atomic<std::size_t> held_{0};
};

}  // namespace rawtool::mcp::detail
