#pragma once

#include "untrusted_bytes.hpp"

#include <rawtool/outcome.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <string>
#include <variant>

namespace rawtool::test {

/// The alternative an outcome must hold; fails the test (naming what it held
/// instead) when it holds another.
template <class T>
const T& expect(const Outcome& outcome) {
  static constexpr const char* names[] = {"Rows", "Failure", "Refusal", "Unavailable"};
  INFO("the outcome holds " << names[outcome.index()]);
  if (const auto* refusal = std::get_if<Refusal>(&outcome)) {
    INFO("refusal: " << refusal_reason_name(refusal->reason) << ": " << refusal->explanation.str());
    REQUIRE(std::holds_alternative<T>(outcome));
  }
  REQUIRE(std::holds_alternative<T>(outcome));
  return std::get<T>(outcome);
}

/// The same for an outcome that is a temporary: the value is moved out, so a
/// reference bound to the result lives as long as the reference.
template <class T>
T expect(Outcome&& outcome) {
  expect<T>(static_cast<const Outcome&>(outcome));
  return std::get<T>(std::move(outcome));
}

/// The one cell a one-row, one-column answer holds, "NULL" for a null.
inline std::string cell(const Outcome& outcome) {
  const Rows& rows = expect<Rows>(outcome);
  REQUIRE(rows.rows.size() == 1);
  REQUIRE(rows.rows[0].size() == 1);
  return rows.rows[0][0] ? bytes_of(*rows.rows[0][0]) : std::string("NULL");
}

inline RefusalReason refusal_reason(const Outcome& outcome) { return expect<Refusal>(outcome).reason; }

/// Cancels the call `running` makes on `driver` until it returns (a cancel
/// that lands before the call has started its statement is kept for it only
/// when the call was armed, which a direct driver call is not); fails the
/// test after `patience`. Then arms the driver, as the library does for each
/// call, so a cancel that landed after the call ended does not reach the
/// next one. The outcome.
template <class Driver>
Outcome cancel_until_done(Driver& driver, std::future<Outcome>& running,
                          std::chrono::milliseconds patience = std::chrono::milliseconds(10000)) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (running.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    driver.cancel();
  }
  Outcome outcome = running.get();
  driver.arm();
  return outcome;
}

}  // namespace rawtool::test
