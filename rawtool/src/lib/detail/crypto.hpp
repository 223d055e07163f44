#pragma once

#include <string>
#include <string_view>

namespace rawtool::detail {

/// Lower-case hex SHA-256 of `bytes` (rawtool::crypto).
std::string sha256_hex(std::string_view bytes);

/// A fresh random log reference: "ref-" and 32 lower-case hex digits (128 bits
/// from the CSPRNG). Throws std::runtime_error if the CSPRNG fails.
std::string new_log_reference();

}  // namespace rawtool::detail
