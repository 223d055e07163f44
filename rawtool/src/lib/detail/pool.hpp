#pragma once

#include <rawtool/driver.hpp>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <vector>

namespace rawtool::detail {

/// A bounded set of drivers for one database. Drivers are made lazily, at
/// most `capacity` exist at once, and a caller beyond them waits. Thread-safe.
///
/// One pool serves every caller of its database, whatever the token: a
/// driver hands its connection back as a fresh one would be, or closes it
/// after the call (each driver's cleanup says how; SQLite closes the
/// connection after any call that wrote or changed a setting). Pools per
/// token would multiply connections by the number of tokens, against one
/// server's or file's limits, and would still leave one call's state to the
/// same token's next call, which the agent need not expect either; a
/// connection made fresh isolates every caller at once.
class ConnectionPool {
public:
  using Factory = std::function<std::unique_ptr<Driver>()>;

  /// A driver borrowed from the pool; going out of scope gives it back.
  class Lease {
  public:
    Lease() = default;
    Lease(ConnectionPool* pool, std::unique_ptr<Driver> driver) : pool_(pool), driver_(std::move(driver)) {}
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    [[nodiscard]] Driver* get() const noexcept { return driver_.get(); }
    [[nodiscard]] explicit operator bool() const noexcept { return driver_ != nullptr; }

  private:
    void give_back() noexcept;
    ConnectionPool* pool_ = nullptr;
    std::unique_ptr<Driver> driver_;
  };

  ConnectionPool(std::size_t capacity, Factory factory);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  /// Waits until a driver is idle or one more may be made, or until `stop`
  /// is requested, which wakes the wait at once. Returns an empty lease when
  /// stopped. Propagates the factory's exceptions (the slot is freed).
  Lease acquire(std::stop_token stop = {});

  /// Drivers made and not destroyed (idle or leased).
  [[nodiscard]] std::size_t size() const;

  struct Figures {
    std::size_t made = 0;       ///< idle or leased
    std::size_t idle = 0;
    std::uint64_t waits = 0;    ///< acquires that found every driver leased and the pool full, so far
  };
  [[nodiscard]] Figures figures() const;

private:
  void release(std::unique_ptr<Driver> driver) noexcept;

  const std::size_t capacity_;
  Factory factory_;
  mutable std::mutex mutex_;
  std::condition_variable_any available_;  ///< _any: its wait takes the caller's stop token
  std::vector<std::unique_ptr<Driver>> idle_;  // REQUIRES: mutex_ held
  std::size_t made_ = 0;                       // REQUIRES: mutex_ held
  std::uint64_t waits_ = 0;                    // REQUIRES: mutex_ held
};

}  // namespace rawtool::detail
