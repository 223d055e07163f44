#include <rawtool/render/escape.hpp>

#include "detail/escape.hpp"
#include "detail/tables.hpp"
#include "detail/untrusted_access.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

namespace rawtool::render::detail {
namespace {

constexpr char hex_digits[] = "0123456789ABCDEF";

// The first bytes of each escape and its length, in one table so that
// choosing between a byte escape and a code point escape is choosing an index:
// [0, 256) the escape of a byte when it is not copied (the short escapes for
// backslash, tab, CR, LF and '"', \xHH for every other); from 256 + 16 * (d - 4)
// on, the head of a code point escape of d = 4, 5 or 6 digits: "\u{" and its
// first digit, one entry per digit.
struct Head {
  char text[4];
  std::uint32_t length;
};
constexpr std::uint32_t code_point_heads = 256;

constexpr std::array<Head, 256 + 3 * 16> make_heads() {
  std::array<Head, 256 + 3 * 16> table{};
  for (unsigned b = 0; b < 256; ++b) table[b] = Head{{'\\', 'x', hex_digits[b >> 4], hex_digits[b & 0xF]}, 4};
  table['\\'] = Head{{'\\', '\\', 0, 0}, 2};
  table['\t'] = Head{{'\\', 't', 0, 0}, 2};
  table['\r'] = Head{{'\\', 'r', 0, 0}, 2};
  table['\n'] = Head{{'\\', 'n', 0, 0}, 2};
  table['"'] = Head{{'\\', '"', 0, 0}, 2};
  for (unsigned digits = 4; digits <= 6; ++digits)
    for (unsigned d = 0; d < 16; ++d) table[code_point_heads + 16 * (digits - 4) + d] = Head{{'\\', 'u', '{', hex_digits[d]}, 4 + digits};
  return table;
}
constexpr auto heads = make_heads();

// Two hex digits per byte value, so a code point's digits take three loads.
constexpr std::array<std::array<char, 2>, 256> make_hex_pairs() {
  std::array<std::array<char, 2>, 256> table{};
  for (unsigned b = 0; b < 256; ++b) table[b] = {hex_digits[b >> 4], hex_digits[b & 0xF]};
  return table;
}
constexpr auto hex_pairs = make_hex_pairs();

// What a byte says about the sequence it starts (RFC 3629: no overlong
// forms, no surrogates, nothing past U+10FFFF), in the terms of the four
// bytes from it read as one little-endian word.
// Eight bytes, so that finding a byte's entry is one scaled index.
struct Lead {
  std::uint16_t second_bad;     // bit k clear: a second byte from 16k to 16k + 15 may follow; all set for a byte that does not lead
  std::uint16_t continuations;  // the high two bits of the third and fourth bytes the sequence holds (each must be 10), as the word's top half
  std::uint8_t payload_mask;    // the lead's bits of the code point
  std::uint8_t shift;           // how far a four-byte assembly of the payloads is too long
  std::uint8_t length;          // 1 for ASCII and for a byte that never starts valid UTF-8
  std::uint8_t multi;           // 0xFF when length is over 1, else 0
};
static_assert(sizeof(Lead) == 8);

// The allowed second bytes fall on 16-byte boundaries: 80..BF in general,
// A0..BF after E0 (no overlong forms), 80..9F after ED (no surrogates),
// 90..BF after F0 (no overlong forms), 80..8F after F4 (nothing past U+10FFFF).
constexpr std::array<Lead, 256> make_leads() {
  std::array<Lead, 256> table{};
  for (unsigned b = 0; b < 256; ++b) {
    if (b >= 0xC2 && b <= 0xDF) table[b] = {0xF0FF, 0, 0x1F, 12, 2, 0xFF};
    else if (b >= 0xE0 && b <= 0xEF) table[b] = {static_cast<std::uint16_t>(b == 0xE0 ? 0xF3FF : b == 0xED ? 0xFCFF : 0xF0FF), 0x00C0, 0x0F, 6, 3, 0xFF};
    else if (b >= 0xF0 && b <= 0xF4) table[b] = {static_cast<std::uint16_t>(b == 0xF0 ? 0xF1FF : b == 0xF4 ? 0xFEFF : 0xF0FF), 0xC0C0, 0x07, 0, 4, 0xFF};
    else table[b] = {0xFFFF, 0, 0, 0, 1, 0};
  }
  return table;
}
constexpr auto leads = make_leads();

// How a code point escape is laid out, by the index of the code point's
// highest set bit once bit 15 is set (15 to 20): the digits are written
// top-aligned in six places, so the code point is shifted up by `shift`; the
// head is heads[head + the first digit]; the closing brace goes at `brace`.
struct Shape {
  std::uint16_t head;
  std::uint8_t shift;
  std::uint8_t brace;
};

constexpr std::array<Shape, 21> make_shapes() {
  std::array<Shape, 21> table{};
  for (unsigned top_bit = 15; top_bit <= 20; ++top_bit) {
    const unsigned digits = (top_bit + 4) / 4;  // 4 to 6
    table[top_bit] = Shape{static_cast<std::uint16_t>(code_point_heads + 16 * (digits - 4)), static_cast<std::uint8_t>(4 * (6 - digits)),
                           static_cast<std::uint8_t>(3 + digits)};
  }
  return table;
}
constexpr auto shapes = make_shapes();

// Output on its way to the std::string: a buffer with `slack` bytes of room
// past its limit, so that each escape is written with stores
// of a fixed size and its length only moves the write position. The escape
// loop keeps that position in a local variable: a pointer held in an object
// would have to be reloaded after every byte stored, since a char store may
// alias anything.
class Sink {
public:
  /// How many bytes a write starting below limit() may store.
  static constexpr std::size_t slack = 256;
  static constexpr std::size_t capacity = 1024;
  static constexpr std::size_t long_copy = capacity / 4;

  explicit Sink(std::string& out) : out_(out) {}
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  char* start() { return buffer_; }
  /// A write may start anywhere below this and store `slack` bytes.
  char* limit() { return buffer_ + capacity; }
  /// Moves [start(), at) into the output; returns the new write position.
  char* drain(char* at) {
    out_.append(buffer_, static_cast<std::size_t>(at - buffer_));
    return buffer_;
  }
  /// Copies `n` bytes of any length at `at`; returns the new write position.
  /// Copies up to `long_copy` go through the buffer, longer ones straight
  /// into the output.
  char* copy(char* at, const void* p, std::size_t n) {
    if (n > long_copy) {
      out_.append(buffer_, static_cast<std::size_t>(at - buffer_));
      out_.append(static_cast<const char*>(p), n);
      return buffer_;
    }
    if (at + n >= limit()) at = drain(at);
    std::memcpy(at, p, n);
    return at + n;
  }

private:
  std::string& out_;
  char buffer_[capacity + slack];
};

// What the escape loop does at each byte: escape a unit from it, copy a run
// of plain ASCII, or (when quoting lines) end a line. One load and one
// predicted branch per unit, where testing the byte took five instructions.
enum : std::uint8_t { starts_unit = 0, starts_plain = 1, starts_line_end = 2 };

template <bool Cell, bool Lines>
constexpr std::array<std::uint8_t, 256> make_walk_starts() {
  std::array<std::uint8_t, 256> table{};
  for (unsigned b = 0; b < 256; ++b) {
    if (is_plain_ascii(static_cast<unsigned char>(b), Cell)) table[b] = starts_plain;
    else if (Lines && b == '\n') table[b] = starts_line_end;
    else table[b] = starts_unit;
  }
  return table;
}
template <bool Cell, bool Lines>
constexpr auto walk_starts = make_walk_starts<Cell, Lines>();

// The class values escape_unit tests as bits.
static_assert(static_cast<unsigned>(CodePointClass::plain) == 0 && static_cast<unsigned>(CodePointClass::escape) == 1 &&
              static_cast<unsigned>(CodePointClass::combining) == 2);

/// The classes escaped where a unit stands: `escape`, and `combining` too at
/// the start of a line or cell.
constexpr std::uint32_t escaped_classes(bool at_line_start) { return at_line_start ? 3u : 1u; }

}  // namespace

namespace {
#include "escape_kernel.inc"
}  // namespace

void escape_bytes(std::string& out, std::string_view bytes, EscapeContext context, bool ascii_only) {
  out.reserve(out.size() + bytes.size() + 8);
  escape_bytes_portable(out, bytes, context, ascii_only);
}

void quote_lines(std::string& out, std::string_view bytes, std::string_view prefix, bool ascii_only) {
  out.reserve(out.size() + bytes.size() + bytes.size() / 16 + prefix.size() + 8);
  quote_lines_portable(out, bytes, prefix, ascii_only);
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
