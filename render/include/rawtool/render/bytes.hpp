#pragma once

// Byte-level checks and encodings shared by every reader of outside input
// (the MCP request reader, `rawtool render`'s input) and by the structured
// surface, so that one definition of "valid UTF-8" and of base64 holds
// throughout. These read plain bytes a caller already holds, not Untrusted.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace rawtool::render {

/// Offset of the first byte that is not part of well-formed UTF-8 (RFC 3629:
/// no overlong forms, no surrogates, nothing past U+10FFFF), if any.
std::optional<std::size_t> first_invalid_utf8(std::string_view bytes) noexcept;

/// True when every byte of `bytes` belongs to a well-formed UTF-8 sequence.
bool is_valid_utf8(std::string_view bytes) noexcept;

/// The number of code points in `bytes`, or std::nullopt when it is not
/// well-formed UTF-8 (the same definition as above).
std::optional<std::size_t> code_point_count(std::string_view bytes) noexcept;

/// Standard base64 (RFC 4648 alphabet, padded).
std::string encode_base64(std::string_view bytes);

/// Strict base64: padded, no whitespace, canonical (unused bits zero), so one
/// byte string has exactly one spelling. nullopt for anything else.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace rawtool::render
