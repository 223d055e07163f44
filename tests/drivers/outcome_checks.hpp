#pragma once

#include <rawtool/outcome.hpp>

#include <catch2/catch.hpp>

#include <variant>

namespace rawtool::test {

/// The alternative an outcome must hold; fails the test (naming what it held
/// instead) when it holds another.
template <class T>
const T& expect(const Outcome& outcome) {
  static constexpr const char* names[] = {"Rows", "Failure", "Refusal", "Unavailable"};
  INFO("the outcome holds " << names[outcome.index()]);
  if (const auto* refusal = std::get_if<Refusal>(&outcome)) {
    INFO("refusal: " << refusal_reason_name(refusal->reason) << ": " << refusal->explanation);
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

inline RefusalReason refusal_reason(const Outcome& outcome) { return expect<Refusal>(outcome).reason; }

}  // namespace rawtool::test
