#include <rawtool/render/escape.hpp>

#include "detail/escape.hpp"
#include "detail/tables.hpp"
#include "detail/untrusted_access.hpp"
#include "detail/utf8.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rawtool::render::detail {
namespace {

constexpr char hex_digits[] = "0123456789ABCDEF";

// Whether the grammar copies byte `b` as it is: printable ASCII but
// backslash, and but '"' in a cell.
constexpr bool is_plain_ascii(unsigned char b, bool cell) noexcept {
  return b >= 0x20 && b < 0x7F && b != '\\' && !(cell && b == '"');
}

// Of the 16 bytes at `p`: bit k of `special` is set when byte k is not plain
// ASCII, bit k of `lf` when it is LF.
struct Marks {
  unsigned special;
  unsigned lf;
};

Marks marks16(const unsigned char* p, bool cell) noexcept {
  Marks m{0, 0};
#if defined(__SSE2__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i printable = _mm_cmpgt_epi8(v, _mm_set1_epi8(0x1F));  // signed: 0x80 and up fail it too
  __m128i special = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F)), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
  if (cell) special = _mm_or_si128(special, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
  m.special = ~static_cast<unsigned>(_mm_movemask_epi8(_mm_andnot_si128(special, printable))) & 0xFFFFu;
  m.lf = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))));
#else
  for (unsigned k = 0; k < 16; ++k) {
    m.special |= (is_plain_ascii(p[k], cell) ? 0u : 1u) << k;
    m.lf |= (p[k] == '\n' ? 1u : 0u) << k;
  }
#endif
  return m;
}

// How many bytes at the start of p[0, n) are plain ASCII. Clean text spends
// its time here, so it tests 16 bytes at a time.
std::size_t plain_ascii_run(const unsigned char* p, std::size_t n, bool cell) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const unsigned special = marks16(p + i, cell).special;
    if (special != 0) return i + static_cast<std::size_t>(std::countr_zero(special));
  }
  while (i < n && is_plain_ascii(p[i], cell)) ++i;
  return i;
}

// Output on its way to the string, gathered in a buffer on the stack:
// escapes and line breaks are a few bytes each, and appending each one to the
// string costs more than escaping it. A write that starts at next() may store
// up to `slack` bytes, past what it keeps, so that it can store in pieces of
// a fixed size.
class Sink {
public:
  static constexpr std::size_t slack = 96;

  explicit Sink(std::string& out) : out_(out) {}
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  /// Where the next write starts.
  char* next() {
    if (at_ >= limit()) flush();
    return at_;
  }
  /// From here on, next() flushes first.
  char* limit() { return buffer_ + capacity; }
  /// Keeps what was written before `end`.
  void advance_to(char* end) { at_ = end; }

  void write(const void* p, std::size_t n) {
    if (n > static_cast<std::size_t>(buffer_ + sizeof buffer_ - at_)) {
      flush();
      if (n > capacity) {
        out_.append(static_cast<const char*>(p), n);
        return;
      }
    }
    std::memcpy(at_, p, n);
    at_ += n;
  }

  void flush() {
    out_.append(buffer_, static_cast<std::size_t>(at_ - buffer_));
    at_ = buffer_;
  }

private:
  static constexpr std::size_t capacity = 4096;
  std::string& out_;
  char buffer_[capacity + slack];
  char* at_ = buffer_;
};

// The escape of each byte value, for a byte that is not copied: the short
// escapes, else \xHH. A table rather than a switch: in hostile text which
// byte comes next is random, so a branch on it would be mispredicted.
struct ByteEscape {
  char text[4];
  std::size_t size;
};

constexpr std::array<ByteEscape, 256> make_byte_escapes() {
  std::array<ByteEscape, 256> table{};
  for (unsigned b = 0; b < 256; ++b) table[b] = {{'\\', 'x', hex_digits[b >> 4], hex_digits[b & 0xF]}, 4};
  table['\\'] = {{'\\', '\\'}, 2};
  table['\t'] = {{'\\', 't'}, 2};
  table['\r'] = {{'\\', 'r'}, 2};
  table['\n'] = {{'\\', 'n'}, 2};
  table['"'] = {{'\\', '"'}, 2};
  return table;
}
constexpr auto byte_escapes = make_byte_escapes();

void write_byte_escape(Sink& sink, unsigned char b) {
  char* at = sink.next();
  std::memcpy(at, byte_escapes[b].text, 4);
  sink.advance_to(at + byte_escapes[b].size);
}

void write_code_point_escape(Sink& sink, char32_t cp) {
  const unsigned digits = cp > 0xFFFFF ? 6 : cp > 0xFFFF ? 5 : 4;
  char* at = sink.next();
  std::memcpy(at, "\\u{", 3);
  for (unsigned k = 0; k < digits; ++k) at[3 + k] = hex_digits[(cp >> (4 * (digits - 1 - k))) & 0xF];
  at[3 + digits] = '}';
  sink.advance_to(at + 4 + digits);
}

// What quoting writes after each LF: the prefix of the next line.
struct LinePrefix {
  std::string_view text;
  char padded[16];  // `text` and zeros, when it is shorter: read as one 16-byte piece
};

// Quoting prose: writes windows of 32 bytes from p[i] on while each holds
// plain ASCII and at most one LF, and p[i, i + 64) is readable; returns where
// it stopped. A window is written with no branch on where its LF falls: the
// window, then from just past the LF the prefix, then what follows the LF
// again, each as one store of a fixed size.
std::size_t write_line_windows(Sink& sink, const unsigned char* p, std::size_t i, std::size_t n, const LinePrefix& prefix) {
  constexpr std::size_t window = 32;
  static_assert(window + sizeof prefix.padded + window <= Sink::slack);
  if (prefix.text.size() >= sizeof prefix.padded) return i;
  // The write position stays in a local variable: one in the sink would be
  // reloaded after every store.
  char* at = sink.next();
  for (; i + 2 * window <= n; i += window) {
    const Marks low = marks16(p + i, false);
    const Marks high = marks16(p + i + 16, false);
    const std::uint32_t special = low.special | (high.special << 16);
    const std::uint32_t lf = low.lf | (high.lf << 16);
    if ((special & ~lf) != 0 || (lf & (lf - 1)) != 0) break;
    const auto rest = static_cast<std::size_t>(std::countr_zero(lf | 0x80000000u)) + 1;  // up to and with the LF, else the whole window
    const std::size_t prefix_size = lf != 0 ? prefix.text.size() : 0;
    std::memcpy(at, p + i, window);
    std::memcpy(at + rest, prefix.padded, sizeof prefix.padded);
    std::memcpy(at + rest + prefix_size, p + i + rest, window);
    at += window + prefix_size;
    if (at >= sink.limit()) {
      sink.advance_to(at);
      at = sink.next();
    }
  }
  sink.advance_to(at);
  return i;
}

// Writes `bytes` escaped in `context`. When quoting (`prefix` is not null),
// an LF is not escaped but ends the line: LF and the prefix are written.
// Text copied as it is, non-ASCII included, is written a run at a time.
void escape(Sink& sink, std::string_view bytes, EscapeContext context, bool ascii_only, const LinePrefix* prefix) {
  const bool cell = context == EscapeContext::cell;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  if (prefix != nullptr) i = write_line_windows(sink, p, i, n, *prefix);
  std::size_t copied = i;  // p[0, copied) is written
  for (;;) {
    i += plain_ascii_run(p + i, n - i, cell);
    if (i == n) break;
    if (p[i] == '\n' && prefix != nullptr) {
      sink.write(p + copied, i - copied);
      sink.write("\n", 1);
      sink.write(prefix->text.data(), prefix->text.size());
      i = copied = write_line_windows(sink, p, i + 1, n, *prefix);
      continue;
    }
    char32_t cp = 0;
    const std::size_t length = decode_utf8(p + i, n - i, cp);  // 0: p[i] does not begin valid UTF-8
    if (length > 1 && !ascii_only) {
      const CodePointClass cls = code_point_class_of_scalar(cp);
      // Only quoting starts a line after an LF: elsewhere an LF is escaped.
      const bool line_start = i == 0 || (prefix != nullptr && p[i - 1] == '\n');
      if (cls == CodePointClass::plain || (cls == CodePointClass::combining && !line_start)) {
        i += length;
        continue;
      }
    }
    if (i != copied) sink.write(p + copied, i - copied);
    if (length > 1) write_code_point_escape(sink, cp);
    else write_byte_escape(sink, p[i]);
    i += std::max<std::size_t>(length, 1);
    copied = i;
  }
  sink.write(p + copied, n - copied);
}

}  // namespace

void escape_bytes(std::string& out, std::string_view bytes, EscapeContext context, bool ascii_only) {
  out.reserve(out.size() + bytes.size());
  Sink sink(out);
  escape(sink, bytes, context, ascii_only, nullptr);
  sink.flush();
}

void quote_lines(std::string& out, std::string_view bytes, std::string_view prefix, bool ascii_only) {
  LinePrefix line_prefix{prefix, {}};
  if (prefix.size() < sizeof line_prefix.padded) std::memcpy(line_prefix.padded, prefix.data(), prefix.size());
  out.reserve(out.size() + prefix.size() + bytes.size() + 1);
  Sink sink(out);
  sink.write(prefix.data(), prefix.size());
  escape(sink, bytes, EscapeContext::line, ascii_only, &line_prefix);
  sink.write("\n", 1);
  sink.flush();
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
