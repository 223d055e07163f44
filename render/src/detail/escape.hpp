#pragma once

// The escape grammar over plain byte views, for the renderer's own use, and
// the bulk scan its fast path is built on.

#include <rawtool/render/escape.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rawtool::render::detail {

/// Appends the escaped form of `bytes` (see rawtool/render/escape.hpp). The
/// first code point of `bytes` counts as the start of a line or cell.
void escape_bytes(std::string& out, std::string_view bytes, EscapeContext context, bool ascii_only);

/// Appends `bytes` split on LF, each line as `prefix` + escaped line + LF.
void quote_lines(std::string& out, std::string_view bytes, std::string_view prefix, bool ascii_only);

/// True for the ASCII bytes the grammar copies as they are: 0x20..0x7E but
/// backslash, and but '"' in a cell.
constexpr bool is_plain_ascii(unsigned char b, bool cell) noexcept {
  return b >= 0x20 && b < 0x7F && b != '\\' && !(cell && b == '"');
}

/// How many of the 16 bytes at `p` (all of them readable) are plain ASCII,
/// counted from the first: 0 to 16. Two 8-byte words at a time, portable.
template <bool Cell>
inline unsigned plain_ascii_run16_words(const unsigned char* p) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101ull;
  constexpr std::uint64_t highs = 0x8080808080808080ull;
  // The high bit of each byte that is zero; a borrow can only mark bytes
  // above a marked one, so the lowest mark is always exact.
  auto zero_bytes = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
  for (unsigned half = 0; half < 2; ++half) {
    std::uint64_t w;
    std::memcpy(&w, p + 8 * half, sizeof w);
    // Below 0x20; 0x7F or from 0x80 up; backslash; '"' in a cell.
    std::uint64_t bad = ((w - ones * 0x20) & ~w & highs) | ((w | (w + ones)) & highs) | zero_bytes(w ^ (ones * '\\'));
    if constexpr (Cell) bad |= zero_bytes(w ^ (ones * '"'));
    if (bad != 0) {
      // The lowest marked byte is the first in memory on a little-endian
      // machine; elsewhere, count it out byte by byte.
      if constexpr (std::endian::native == std::endian::little) return 8 * half + static_cast<unsigned>(__builtin_ctzll(bad)) / 8;
      unsigned k = 0;
      while (is_plain_ascii(p[8 * half + k], Cell)) ++k;
      return 8 * half + k;
    }
  }
  return 16;
}

#if defined(__SSE2__)
/// The same count with one 16-byte SSE2 compare.
template <bool Cell>
inline unsigned plain_ascii_run16_sse2(const unsigned char* p) noexcept {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  // Signed compare: bytes from 0x80 up are negative, so they fail it too.
  const __m128i printable = _mm_cmpgt_epi8(v, _mm_set1_epi8(0x1F));
  __m128i special = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F)), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
  if constexpr (Cell) special = _mm_or_si128(special, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
  const auto plain = static_cast<unsigned>(_mm_movemask_epi8(_mm_andnot_si128(special, printable)));
  // Bit 16 up of ~plain is set, so the count stops at 16.
  return static_cast<unsigned>(__builtin_ctz(~plain));
}
#endif

/// True when all 64 bytes at `p` (all of them readable) are plain ASCII: four
/// blocks tested together, with one branch.
template <bool Cell>
inline bool all_plain_ascii64(const unsigned char* p) noexcept {
#if defined(__SSE2__)
  __m128i all = _mm_set1_epi8(-1);
  for (unsigned k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i printable = _mm_cmpgt_epi8(v, _mm_set1_epi8(0x1F));
    __m128i special = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F)), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    if constexpr (Cell) special = _mm_or_si128(special, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
    all = _mm_and_si128(all, _mm_andnot_si128(special, printable));
  }
  return _mm_movemask_epi8(all) == 0xFFFF;
#else
  for (unsigned k = 0; k < 4; ++k)
    if (plain_ascii_run16_words<Cell>(p + 16 * k) != 16) return false;
  return true;
#endif
}

/// Of the 16 bytes at `p` (all of them readable): bit k of `plain` is set
/// when byte k is plain ASCII in the line context, bit k of `lf` when it is LF.
struct LineBlock {
  unsigned plain;
  unsigned lf;
};

inline LineBlock line_block(const unsigned char* p) noexcept {
#if defined(__SSE2__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i printable = _mm_cmpgt_epi8(v, _mm_set1_epi8(0x1F));
  const __m128i special = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F)), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
  return {static_cast<unsigned>(_mm_movemask_epi8(_mm_andnot_si128(special, printable))),
          static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))))};
#else
  LineBlock b{0, 0};
  for (unsigned k = 0; k < 16; ++k) {
    b.plain |= (is_plain_ascii(p[k], false) ? 1u : 0u) << k;
    b.lf |= (p[k] == '\n' ? 1u : 0u) << k;
  }
  return b;
#endif
}

/// Of the 64 bytes at `p` (all of them readable): whether every one is plain
/// ASCII in the line context or LF, and bit k of `lf` set when byte k is LF.
struct LineWindow {
  bool plain_or_lf;
  std::uint64_t lf;
};

inline LineWindow line_window64(const unsigned char* p) noexcept {
#if defined(__SSE2__)
  __m128i all = _mm_set1_epi8(-1);
  std::uint64_t lf = 0;
  for (unsigned k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i printable = _mm_cmpgt_epi8(v, _mm_set1_epi8(0x1F));
    const __m128i special = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F)), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    const __m128i is_lf = _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'));
    all = _mm_and_si128(all, _mm_or_si128(_mm_andnot_si128(special, printable), is_lf));
    lf |= std::uint64_t{static_cast<unsigned>(_mm_movemask_epi8(is_lf))} << (16 * k);
  }
  return {_mm_movemask_epi8(all) == 0xFFFF, lf};
#else
  LineWindow w{true, 0};
  for (unsigned k = 0; k < 64; ++k) {
    const bool is_lf = p[k] == '\n';
    w.plain_or_lf = w.plain_or_lf && (is_lf || is_plain_ascii(p[k], false));
    w.lf |= std::uint64_t{is_lf ? 1u : 0u} << k;
  }
  return w;
#endif
}

/// The count the escape loop uses.
template <bool Cell>
inline unsigned plain_ascii_run16(const unsigned char* p) noexcept {
#if defined(__SSE2__)
  return plain_ascii_run16_sse2<Cell>(p);
#else
  return plain_ascii_run16_words<Cell>(p);
#endif
}

}  // namespace rawtool::render::detail
