// The suite is written against Catch2 2's single header (Debian 12 ships
// 2.13). Debian 13 ships Catch2 3, which has no single header and keeps the
// string matchers in Catch::Matchers, the one for substrings renamed
// ContainsSubstring. tests/CMakeLists.txt puts this folder on the include path
// only when it finds Catch2 3, so that the tests build unchanged on both.
#pragma once

// What the suite uses, not catch_all.hpp, which brings every part of Catch2
// (benchmarking included) into each of the suite's files.
#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>

namespace Catch {

using Matchers::EndsWith;
using Matchers::StartsWith;

/// Catch2 2's Catch::Contains for strings.
inline Matchers::StringContainsMatcher Contains(const std::string& text,
                                                CaseSensitive sensitivity = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(text, sensitivity);
}

}  // namespace Catch
