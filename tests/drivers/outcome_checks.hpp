#pragma once

#include "untrusted_bytes.hpp"

#include <rawtool/outcome.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <stop_token>
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

/// Runs `call` (a function of a std::stop_token returning the Outcome of one
/// driver call made with that token) on a thread of its own and stops it
/// while its statement runs: a stop that landed before the statement was sent
/// (its refusal says so) is tried again on a new call. Fails the test after
/// `patience`. The outcome.
template <class Call>
Outcome stop_while_running(const Call& call, std::chrono::milliseconds patience = std::chrono::milliseconds(10000)) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    std::stop_source stop;
    auto running = std::async(std::launch::async, [&call, token = stop.get_token()] { return call(token); });
    running.wait_for(std::chrono::milliseconds(20));  // pacing only: the refusal's words say where the stop landed
    stop.request_stop();
    REQUIRE(running.wait_until(deadline) == std::future_status::ready);
    Outcome outcome = running.get();
    const auto* refusal = std::get_if<Refusal>(&outcome);
    if (refusal == nullptr || refusal->explanation.str().find("before its statement was sent") == std::string::npos) {
      return outcome;
    }
    REQUIRE(std::chrono::steady_clock::now() < deadline);
  }
}

}  // namespace rawtool::test
