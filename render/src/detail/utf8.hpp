#pragma once

// Strict UTF-8 decoding (RFC 3629): no overlong forms, no surrogates, nothing
// past U+10FFFF. Private to render/ and test support.

#include <cstddef>
#include <string_view>

namespace rawtool::render::detail {

/// Decodes one code point from the start of `p[0..n)`, n >= 1. Returns its
/// length in bytes (1 to 4) and sets `cp`, or returns 0 when the bytes at `p`
/// do not begin a valid sequence (then p[0] alone is the offending byte).
inline std::size_t decode_utf8(const unsigned char* p, std::size_t n, char32_t& cp) noexcept {
  const unsigned b0 = p[0];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  auto cont = [&](std::size_t i, unsigned lo, unsigned hi) { return i < n && p[i] >= lo && p[i] <= hi; };
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (!cont(1, 0x80, 0xBF)) return 0;
    cp = static_cast<char32_t>(((b0 & 0x1Fu) << 6) | (p[1] & 0x3Fu));
    return 2;
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = b0 == 0xED ? 0x9F : 0xBF;
    if (!cont(1, lo, hi) || !cont(2, 0x80, 0xBF)) return 0;
    cp = static_cast<char32_t>(((b0 & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu));
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;
    if (!cont(1, lo, hi) || !cont(2, 0x80, 0xBF) || !cont(3, 0x80, 0xBF)) return 0;
    cp = static_cast<char32_t>(((b0 & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu));
    return 4;
  }
  return 0;
}

/// Offset of the first byte that does not belong to a valid sequence, or
/// std::string_view::npos when every byte does.
inline std::size_t invalid_utf8_offset(std::string_view bytes) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  char32_t cp = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = decode_utf8(p + i, n - i, cp);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

/// True when every byte of `bytes` belongs to a valid sequence.
inline bool is_valid_utf8(std::string_view bytes) noexcept {
  return invalid_utf8_offset(bytes) == std::string_view::npos;
}

}  // namespace rawtool::render::detail
