#include <rawtool/render/escape.hpp>

#include "detail/escape.hpp"
#include "detail/tables.hpp"
#include "detail/untrusted_access.hpp"

#include <array>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rawtool::render::detail {
namespace {

constexpr char hex_digits[] = "0123456789ABCDEF";

// Which ASCII bytes are copied as they are, per context.
constexpr std::array<bool, 128> plain_ascii(bool cell) {
  std::array<bool, 128> table{};
  for (unsigned b = 0x20; b < 0x7F; ++b) table[b] = true;
  table['\\'] = false;
  if (cell) table['"'] = false;
  return table;
}

struct ByteEscape {
  char text[4];
  std::uint8_t length;
};

// The escape of each byte when it is not copied: the short escapes for
// backslash, tab, CR, LF and '"', \xHH for every other.
constexpr std::array<ByteEscape, 256> make_byte_escapes() {
  std::array<ByteEscape, 256> table{};
  for (unsigned b = 0; b < 256; ++b) table[b] = ByteEscape{{'\\', 'x', hex_digits[b >> 4], hex_digits[b & 0xF]}, 4};
  table['\\'] = ByteEscape{{'\\', '\\', 0, 0}, 2};
  table['\t'] = ByteEscape{{'\\', 't', 0, 0}, 2};
  table['\r'] = ByteEscape{{'\\', 'r', 0, 0}, 2};
  table['\n'] = ByteEscape{{'\\', 'n', 0, 0}, 2};
  table['"'] = ByteEscape{{'\\', '"', 0, 0}, 2};
  return table;
}
constexpr auto byte_escapes = make_byte_escapes();

// How many of the bytes at p[0..n) from the start are plain printable ASCII
// needing no escape, looking at most at the bytes it can check in bulk: the
// bulk path for clean text (16 bytes per step with SSE2, else 8).
template <bool Cell>
inline std::size_t plain_ascii_prefix(const unsigned char* p, std::size_t n) {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i space_minus_one = _mm_set1_epi8(0x1F);
  const __m128i del = _mm_set1_epi8(0x7F);
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i quote = _mm_set1_epi8('"');
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    // Signed compare: bytes from 0x80 up are negative, so they fail it too.
    const __m128i printable = _mm_cmpgt_epi8(v, space_minus_one);
    __m128i special = _mm_or_si128(_mm_cmpeq_epi8(v, del), _mm_cmpeq_epi8(v, backslash));
    if constexpr (Cell) special = _mm_or_si128(special, _mm_cmpeq_epi8(v, quote));
    const auto plain = static_cast<unsigned>(_mm_movemask_epi8(_mm_andnot_si128(special, printable)));
    if (plain != 0xFFFFu) return i + static_cast<std::size_t>(__builtin_ctz(~plain));
  }
#else
  constexpr std::uint64_t ones = 0x0101010101010101ull;
  constexpr std::uint64_t highs = 0x8080808080808080ull;
  auto has_zero_byte = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, sizeof w);
    std::uint64_t bad = ((w - ones * 0x20) & ~w & highs) | ((w | (w + ones)) & highs) | has_zero_byte(w ^ (ones * '\\'));
    if constexpr (Cell) bad |= has_zero_byte(w ^ (ones * '"'));
    if (bad != 0) return i;
  }
#endif
  // The tail, shorter than one bulk step, byte by byte.
  static constexpr auto plain = plain_ascii(Cell);
  while (i < n && p[i] < 0x80 && plain[p[i]]) ++i;
  return i;
}

// Collects escapes in a small buffer, so that dense escaping costs a store per
// byte rather than a call into std::string per escape.
class EscapeWriter {
public:
  explicit EscapeWriter(std::string& out) : out_(out) {}
  ~EscapeWriter() { drain(); }
  EscapeWriter(const EscapeWriter&) = delete;
  EscapeWriter& operator=(const EscapeWriter&) = delete;

  /// Copies bytes that need no escape: short runs through the buffer, long
  /// ones straight into the output.
  void copy(const char* p, std::size_t n) {
    if (n <= small_copy) {
      if (used_ + n > sizeof buffer_) drain();
      std::memcpy(buffer_ + used_, p, n);
      used_ += n;
      return;
    }
    drain();
    out_.append(p, n);
  }
  void copy(std::string_view bytes) { copy(bytes.data(), bytes.size()); }
  /// The escape of an ASCII byte that is not plain, or of a byte that is not
  /// part of valid UTF-8: one table load and one fixed-size store.
  void byte_escape(unsigned char b) {
    const ByteEscape& e = byte_escapes[b];
    std::memcpy(room(), e.text, 4);
    used_ += e.length;
  }
  void code_point_escape(char32_t cp) {
    // \u{HHHH}, \u{HHHHH} or \u{HHHHHH}: six digits are always written and
    // the count only moves the closing brace, so the length costs no branch.
    char* e = room();
    const unsigned digits = 4u + (cp > 0xFFFF ? 1u : 0u) + (cp > 0xFFFFF ? 1u : 0u);
    const std::uint32_t top_aligned = static_cast<std::uint32_t>(cp) << (4 * (6 - digits));
    e[0] = '\\';
    e[1] = 'u';
    e[2] = '{';
    for (unsigned k = 0; k < 6; ++k) e[3 + k] = hex_digits[(top_aligned >> (20 - 4 * k)) & 0xF];
    e[3 + digits] = '}';
    used_ += 4 + digits;
  }

private:
  static constexpr std::size_t small_copy = 128;
  static constexpr std::size_t longest_escape = 10;  // room for \u{ + six digits + }
  char* room() {
    if (used_ > sizeof buffer_ - longest_escape) drain();
    return buffer_ + used_;
  }
  void drain() {
    if (used_ != 0) out_.append(buffer_, used_);
    used_ = 0;
  }
  std::string& out_;
  char buffer_[512];
  std::size_t used_ = 0;
};

// What a byte means at the start of a sequence, and for a multi-byte lead the
// range its second byte must fall in (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF; later bytes are always 80..BF).
enum class Lead : std::uint8_t {
  plain = 0,   // printable ASCII copied as it is
  escape = 1,  // an ASCII byte that is escaped, or a byte that never starts valid UTF-8
  two = 2,
  three = 3,
  four = 4,
  newline = 5,  // LF when quoting lines: ends one quoted line and starts the next
};
struct LeadInfo {
  Lead kind;
  std::uint8_t second_lo;
  std::uint8_t second_hi;
};

constexpr std::array<LeadInfo, 256> make_leads(bool cell, bool lines) {
  std::array<LeadInfo, 256> table{};
  const auto plain = plain_ascii(cell);
  for (unsigned b = 0; b < 256; ++b) {
    if (b < 0x80) table[b] = {plain[b] ? Lead::plain : Lead::escape, 0, 0};
    else if (b >= 0xC2 && b <= 0xDF) table[b] = {Lead::two, 0x80, 0xBF};
    else if (b >= 0xE0 && b <= 0xEF) table[b] = {Lead::three, static_cast<std::uint8_t>(b == 0xE0 ? 0xA0 : 0x80), static_cast<std::uint8_t>(b == 0xED ? 0x9F : 0xBF)};
    else if (b >= 0xF0 && b <= 0xF4) table[b] = {Lead::four, static_cast<std::uint8_t>(b == 0xF0 ? 0x90 : 0x80), static_cast<std::uint8_t>(b == 0xF4 ? 0x8F : 0xBF)};
    else table[b] = {Lead::escape, 0, 0};
  }
  if (lines) table['\n'] = {Lead::newline, 0, 0};
  return table;
}

// 1 or 0, so that the tests of one sequence combine with '&' into one branch.
inline unsigned continuation(unsigned char b) { return (b & 0xC0u) == 0x80u ? 1u : 0u; }
inline unsigned second_in_range(unsigned char b, const LeadInfo& lead) {
  return static_cast<unsigned>(b - lead.second_lo) <= static_cast<unsigned>(lead.second_hi - lead.second_lo) ? 1u : 0u;
}

// Escapes `bytes`; the first code point counts as the start of a line or
// cell. With Lines, each LF instead ends the quoted line and writes LF and
// `prefix` (the caller writes the first prefix and the last LF).
//
// One table load classifies each lead byte, and the validity of a multi-byte
// sequence is one combined test: hostile input mixes byte kinds at random, so
// every data-dependent branch saved is a misprediction saved.
template <bool Cell, bool Lines>
void escape_into(EscapeWriter& w, std::string_view bytes, bool ascii_only, std::string_view prefix) {
  static constexpr auto leads = make_leads(Cell, Lines);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t run = 0;  // start of the bytes not yet copied: they need no escape
  std::size_t i = 0;
  std::size_t line_start = 0;  // a combining mark here would combine with the prefix
  auto flush = [&] {
    if (i > run) w.copy(bytes.data() + run, i - run);
  };
  auto escape_byte = [&](unsigned char b) {
    flush();
    w.byte_escape(b);
    run = ++i;
  };
  // A valid code point: copied, or escaped when its class (or ascii_only) says so.
  auto code_point = [&](char32_t cp, std::size_t len) {
    const CodePointClass cls = code_point_class(cp);
    if (!ascii_only && (cls == CodePointClass::plain || (cls == CodePointClass::combining && i != line_start))) {
      i += len;
      return;
    }
    flush();
    w.code_point_escape(cp);
    i += len;
    run = i;
  };
  while (i < n) {
    const unsigned char b = p[i];
    const LeadInfo lead = leads[b];
    const std::size_t left = n - i;
    switch (lead.kind) {
      case Lead::plain:
        // A plain byte often starts a run: scan ahead in bulk. Bytes that need
        // escaping do not pay for the scan.
        ++i;
        i += plain_ascii_prefix<Cell>(p + i, n - i);
        break;
      case Lead::escape: escape_byte(b); break;
      case Lead::two:
        if (left >= 2 && continuation(p[i + 1]) != 0) code_point(static_cast<char32_t>(((b & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu)), 2);
        else escape_byte(b);
        break;
      case Lead::three:
        if (left >= 3 && (second_in_range(p[i + 1], lead) & continuation(p[i + 2])) != 0)
          code_point(static_cast<char32_t>(((b & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu)), 3);
        else escape_byte(b);
        break;
      case Lead::four:
        if (left >= 4 && (second_in_range(p[i + 1], lead) & continuation(p[i + 2]) & continuation(p[i + 3])) != 0)
          code_point(static_cast<char32_t>(((b & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) | ((p[i + 2] & 0x3Fu) << 6) | (p[i + 3] & 0x3Fu)), 4);
        else escape_byte(b);
        break;
      case Lead::newline:
        flush();
        w.copy("\n", 1);
        w.copy(prefix);
        line_start = run = ++i;
        break;
    }
  }
  flush();
}

}  // namespace

void escape_bytes(std::string& out, std::string_view bytes, EscapeContext context, bool ascii_only) {
  out.reserve(out.size() + bytes.size() + 8);
  EscapeWriter w(out);
  if (context == EscapeContext::cell) escape_into<true, false>(w, bytes, ascii_only, {});
  else escape_into<false, false>(w, bytes, ascii_only, {});
}

void quote_lines(std::string& out, std::string_view bytes, std::string_view prefix, bool ascii_only) {
  out.reserve(out.size() + bytes.size() + bytes.size() / 16 + prefix.size() + 8);
  EscapeWriter w(out);
  w.copy(prefix);
  escape_into<false, true>(w, bytes, ascii_only, prefix);
  w.copy("\n", 1);
}

}  // namespace rawtool::render::detail

namespace rawtool::render {

void append_escaped(std::string& out, const Untrusted& value, EscapeContext context, const RenderOptions& options) {
  detail::escape_bytes(out, detail::UntrustedAccess::bytes(value), context, options.ascii_only);
}

void append_quoted_lines(std::string& out, const Untrusted& value, std::string_view prefix, const RenderOptions& options) {
  detail::quote_lines(out, detail::UntrustedAccess::bytes(value), prefix, options.ascii_only);
}

}  // namespace rawtool::render
