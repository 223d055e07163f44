#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rawtool::test {

/// What a test prints when it could not run: ctest reports a test whose
/// output holds it as skipped (SKIP_REGULAR_EXPRESSION, tests/CMakeLists.txt),
/// and CI fails on any skipped test.
inline constexpr std::string_view not_run = "did NOT run";

/// The URL of the test server from RAWTOOL_TEST_PG_URL (superuser) or, with
/// `reader`, RAWTOOL_TEST_PG_READER_URL (the low-privilege role). When it is
/// unset the test fails if RAWTOOL_REQUIRE_PG=1 (as in CI); otherwise it says
/// it did not run (see not_run) and the caller returns. The one rule every
/// PostgreSQL test follows.
std::optional<std::string> pg_url(bool reader = false);

}  // namespace rawtool::test
