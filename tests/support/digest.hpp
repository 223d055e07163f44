#pragma once

// A SHA-256 computed in the tests with OpenSSL directly, to check the digests
// rawtool writes against one it did not compute.

#include <string>
#include <string_view>

namespace rawtool::test {

/// Lower-case hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace rawtool::test
