#include <rawtool/render/escape.hpp>

#include "detail/escape.hpp"
#include "detail/tables.hpp"
#include "detail/untrusted_access.hpp"
#include "detail/utf8.hpp"

#include <array>
#include <cstdint>
#include <cstring>

namespace rawtool::render::detail {
namespace {

constexpr char hex_digits[] = "0123456789ABCDEF";

// Which ASCII bytes are copied as they are, per context.
constexpr std::array<bool, 128> plain_ascii(EscapeContext context) {
  std::array<bool, 128> table{};
  for (unsigned b = 0x20; b < 0x7F; ++b) table[b] = true;
  table['\\'] = false;
  if (context == EscapeContext::cell) table['"'] = false;
  return table;
}
constexpr auto plain_in_line = plain_ascii(EscapeContext::line);
constexpr auto plain_in_cell = plain_ascii(EscapeContext::cell);

constexpr std::uint64_t ones = 0x0101010101010101ull;
constexpr std::uint64_t highs = 0x8080808080808080ull;

constexpr std::uint64_t has_zero_byte(std::uint64_t v) { return (v - ones) & ~v & highs; }

// True when all eight bytes at `p` are printable ASCII needing no escape:
// the bulk path for clean text, eight bytes per step.
inline bool plain_word(const unsigned char* p, bool cell) {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  const std::uint64_t below_space = (w - ones * 0x20) & ~w & highs;
  const std::uint64_t del_or_high = (w | (w + ones)) & highs;
  std::uint64_t special = has_zero_byte(w ^ (ones * '\\'));
  if (cell) special |= has_zero_byte(w ^ (ones * '"'));
  return (below_space | del_or_high | special) == 0;
}

inline void append_byte_escape(std::string& out, unsigned char b) {
  const char e[4] = {'\\', 'x', hex_digits[b >> 4], hex_digits[b & 0xF]};
  out.append(e, 4);
}

inline void append_ascii_escape(std::string& out, unsigned char b) {
  switch (b) {
    case '\\': out.append("\\\\", 2); return;
    case '\t': out.append("\\t", 2); return;
    case '\r': out.append("\\r", 2); return;
    case '\n': out.append("\\n", 2); return;
    case '"': out.append("\\\"", 2); return;
    default: append_byte_escape(out, b); return;
  }
}

inline void append_code_point_escape(std::string& out, char32_t cp) {
  char e[10] = {'\\', 'u', '{'};
  std::size_t n = 3;
  int digits = cp > 0xFFFFF ? 6 : cp > 0xFFFF ? 5 : 4;
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) e[n++] = hex_digits[(cp >> shift) & 0xF];
  e[n++] = '}';
  out.append(e, n);
}

}  // namespace

void escape_bytes(std::string& out, std::string_view bytes, EscapeContext context, bool ascii_only) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  const bool cell = context == EscapeContext::cell;
  const auto& plain = cell ? plain_in_cell : plain_in_line;
  out.reserve(out.size() + n + 8);
  std::size_t run = 0;  // start of the bytes not yet copied: they need no escape
  std::size_t i = 0;
  auto flush = [&] {
    if (i > run) out.append(bytes.data() + run, i - run);
  };
  while (i < n) {
    while (i + 8 <= n && plain_word(p + i, cell)) i += 8;
    if (i >= n) break;
    const unsigned char b = p[i];
    if (b < 0x80) {
      if (plain[b]) {
        ++i;
        continue;
      }
      flush();
      append_ascii_escape(out, b);
      run = ++i;
      continue;
    }
    char32_t cp = 0;
    const std::size_t len = decode_utf8(p + i, n - i, cp);
    if (len == 0) {
      flush();
      append_byte_escape(out, b);
      run = ++i;
      continue;
    }
    const CodePointClass cls = code_point_class(cp);
    if (!ascii_only && (cls == CodePointClass::plain || (cls == CodePointClass::combining && i != 0))) {
      i += len;
      continue;
    }
    flush();
    append_code_point_escape(out, cp);
    i += len;
    run = i;
  }
  flush();
}

void quote_lines(std::string& out, std::string_view bytes, std::string_view prefix, bool ascii_only) {
  std::size_t start = 0;
  for (;;) {
    const std::size_t lf = bytes.find('\n', start);
    const std::size_t end = lf == std::string_view::npos ? bytes.size() : lf;
    out.append(prefix);
    escape_bytes(out, bytes.substr(start, end - start), EscapeContext::line, ascii_only);
    out.push_back('\n');
    if (lf == std::string_view::npos) return;
    start = lf + 1;
  }
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
