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
  std::uint16_t second_ok;      // bit k set: a second byte from 16k to 16k + 15 may follow; zero for a byte that does not lead
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
    if (b >= 0xC2 && b <= 0xDF) table[b] = {0x0F00, 0, 0x1F, 12, 2, 0xFF};
    else if (b >= 0xE0 && b <= 0xEF) table[b] = {static_cast<std::uint16_t>(b == 0xE0 ? 0x0C00 : b == 0xED ? 0x0300 : 0x0F00), 0x00C0, 0x0F, 6, 3, 0xFF};
    else if (b >= 0xF0 && b <= 0xF4) table[b] = {static_cast<std::uint16_t>(b == 0xF0 ? 0x0E00 : b == 0xF4 ? 0x0100 : 0x0F00), 0xC0C0, 0x07, 0, 4, 0xFF};
    else table[b] = {0, 0, 0, 0, 1, 0};
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

// The class values escape_unit tests as bits.
static_assert(static_cast<unsigned>(CodePointClass::plain) == 0 && static_cast<unsigned>(CodePointClass::escape) == 1 &&
              static_cast<unsigned>(CodePointClass::combining) == 2);

/// The classes escaped where a unit stands: `escape`, and `combining` too at
/// the start of a line or cell.
constexpr std::uint32_t escaped_classes(bool at_line_start) { return at_line_start ? 3u : 1u; }

// Writes at `at` the escape of the unit at `p`, which is not plain ASCII nor
// a line-splitting LF: a byte that is not part of valid UTF-8, or one code
// point. `p` has 4 readable bytes and `at` is below the sink's limit.
// `escaped` says which classes of code point are escaped (escaped_classes);
// AsciiOnly escapes every code point. Returns the unit's length in bytes;
// adds the length written to `at`.
//
// Hostile input mixes kinds of unit at random, so every branch on the kind
// would be a misprediction: each choice below is made with masks (all ones or
// zero) and arithmetic rather than conditions, but for one that ordinary
// text and hostile input each predict well.
template <bool AsciiOnly>
inline std::size_t escape_unit(const unsigned char* p, std::uint32_t escaped, char*& at) {
  const std::uint32_t word = p[0] | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
  const Lead& lead = leads[p[0]];
  // Not zero when the second byte may not follow the lead or a later one of
  // the sequence is not a continuation byte.
  const std::uint32_t malformed = ((word ^ 0x80808080u) & (std::uint32_t{lead.continuations} << 16)) | ((~std::uint32_t{lead.second_ok} >> ((word >> 12) & 0xFu)) & 1u);
  // All ones for a well-formed sequence; zero for a byte escape (ASCII that
  // is not plain, a byte that never leads, a sequence that is not well formed).
  // (Arithmetic rather than a comparison, which the compiler may turn into a
  // branch: the top bit of m | -m is set exactly when m is not zero.)
  const std::uint32_t well_formed = ((malformed | (0u - malformed)) >> 31) - 1u;
  // A lead byte whose sequence is not well formed is rare even in hostile
  // input, so it takes a branch of its own: past it, the unit's length is
  // the lead's, known from the first byte alone, and the next unit's position
  // does not wait for the checks above.
  if ((~well_formed & lead.multi) != 0) [[unlikely]] {
    const Head& byte = heads[p[0]];
    std::memcpy(at, byte.text, 4);
    at += byte.length;
    return 1;
  }
  // Zero unless well formed, so the lookup only sees code points up to U+10FFFF.
  const std::uint32_t cp =
      ((((word & lead.payload_mask) << 18) | ((word & 0x3F00u) << 4) | ((word >> 10) & 0xFC0u) | ((word >> 24) & 0x3Fu)) >> lead.shift) & well_formed;
  if constexpr (!AsciiOnly) {
    const auto cls = static_cast<std::uint32_t>(code_point_class_of_scalar(static_cast<char32_t>(cp)));
    if (((cls & escaped) | ~well_formed) == 0) {
      // A code point copied as it is: ordinary text has mostly these, hostile
      // input mostly escapes, so either predicts this branch.
      std::memcpy(at, p, 4);
      at += lead.length;
      return lead.length;
    }
  }

  // From here the unit is a byte escape or, when well formed, a code point
  // escape. \u{HHHH}, \u{HHHHH} or \u{HHHHHH} (see Shape). Written for every
  // unit; a byte escape's head covers the start and its length keeps fewer.
  const Shape& shape = shapes[static_cast<unsigned>(std::bit_width(cp | 0x8000u)) - 1];
  const std::uint32_t top_aligned = cp << shape.shift;
  const std::uint32_t code_point_head = shape.head + (top_aligned >> 20);
  const Head& head = heads[p[0] ^ ((p[0] ^ code_point_head) & well_formed)];
  std::memcpy(at, head.text, 4);
  std::memcpy(at + 4, hex_pairs[(top_aligned >> 12) & 0xFF].data(), 2);
  std::memcpy(at + 6, hex_pairs[(top_aligned >> 4) & 0xFF].data(), 2);
  at[8] = hex_digits[top_aligned & 0xF];
  at[shape.brace] = '}';
  at += head.length;
  return lead.length;
}

// Escapes bytes in the context Cell says; with Lines, each LF instead ends a
// quoted line and writes LF and `prefix`.
//
// Plain ASCII goes in runs found 16 bytes at a time. Every other byte starts
// a unit (escape_unit). Each step reads up to `reach` bytes past its
// position, so the input is walked in place up to `reach` bytes from its end
// and the rest from a zero-padded copy (a zero is never a continuation byte,
// so a sequence cut by the end of the input still fails to decode).
template <bool Cell, bool Lines, bool AsciiOnly>
class Escaper {
public:
  Escaper(std::string& out, std::string_view prefix) : sink_(out), at_(sink_.start()), prefix_(prefix) {
    if (Lines && prefix.size() < block) {
      line_break_[0] = '\n';
      std::memcpy(line_break_ + 1, prefix.data(), prefix.size());
    }
  }
  ~Escaper() { sink_.drain(at_); }
  Escaper(const Escaper&) = delete;
  Escaper& operator=(const Escaper&) = delete;

  void write(std::string_view text) { at_ = sink_.copy(at_, text.data(), text.size()); }

  /// Escapes `bytes`; its first code point counts as the start of a line.
  void escape(std::string_view bytes) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::size_t n = bytes.size();
    std::uint32_t escaped = escaped_classes(true);
    const std::size_t i = n > reach ? walk(p, 0, n - reach, n, escaped) : 0;
    unsigned char tail[2 * reach + 8] = {};
    std::memcpy(tail, p + i, n - i);
    walk(tail, 0, n - i, n - i, escaped);
  }

private:
  // The size of the fixed-size loads and stores.
  static constexpr std::size_t block = 16;
  // How far past its position one step may read: a block, then a unit of up
  // to 4 bytes starting at most 15 bytes on; when quoting lines, two windows
  // of four blocks.
  static constexpr std::size_t window = 2 * block;
  static constexpr std::size_t wide_window = 4 * block;
  static constexpr std::size_t reach = Lines ? 2 * wide_window : 2 * block;

  // Escapes from `i` while it is below `stop`, where p[0 .. stop + reach) is
  // readable and the input's own bytes end at `n`. Returns where it stopped.
  // `escaped_ref` is escaped_classes(whether the position is the start of a
  // line), on entry and on return (a combining mark there would combine with
  // the prefix).
  std::size_t walk(const unsigned char* p, std::size_t i, std::size_t stop, std::size_t n, std::uint32_t& escaped_ref) {
    char* at = at_;
    char* const limit = sink_.limit();
    std::uint32_t escaped = escaped_ref;
    while (i < stop) {
      if (at >= limit) at = sink_.drain(at);
      if (is_plain_ascii(p[i], Cell)) {
        // A run: its end is found 16 bytes at a time (the test of each block
        // is a predicted branch, not a dependency of the next load), then it
        // is copied at once. A byte that needs escaping does not pay for this.
        unsigned run = plain_ascii_run16<Cell>(p + i);
        if constexpr (Lines) {
          // Prose: a whole block of it, or a line end within the block, is
          // worth trying whole windows for; a short run between other
          // characters is not.
          if (prefix_.size() < block && (run == block || p[i + run] == '\n')) {
            i = copy_line_blocks(p, i, stop, at, escaped);
            if (i >= stop) continue;
            run = plain_ascii_run16<Cell>(p + i);
          }
        }
        std::size_t j = i;
        if (run == block) {
          // A long run: four blocks at a time while they lie in what a step
          // may read, then block by block to its end.
          // (The reach bound keeps j below `stop`.) The loop below goes on
          // from the block after the last one known to be plain.
          j += block;
          while (j + 4 * block <= stop + reach && all_plain_ascii64<Cell>(p + j)) j += 4 * block;
          j -= block;
        }
        while (run == block) {
          j += block;
          if (j >= stop) break;
          run = plain_ascii_run16<Cell>(p + j);
        }
        if (run < block) j += run;
        const std::size_t length = j - i;
        if (length <= block) {
          std::memcpy(at, p + i, block);
          at += length;
        } else if (length <= Sink::long_copy) {
          // In the blocks just scanned, so every block read is readable, and
          // the last one ends less than a block past the run's end.
          if (at + length >= limit) at = sink_.drain(at);
          for (std::size_t k = 0; k < length; k += block) std::memcpy(at + k, p + i + k, block);
          at += length;
        } else {
          at = sink_.copy(at, p + i, length);
        }
        i = j;
        if (length != 0) escaped = escaped_classes(false);
        if (run == block || i >= n) continue;  // a run up to `stop`, or the end of the input
        if (at >= limit) at = sink_.drain(at);
      }
      if constexpr (Lines) {
        if (p[i] == '\n') {
          if (prefix_.size() < block) {
            std::memcpy(at, line_break_, block);
            at += prefix_.size() + 1;
          } else {
            *at++ = '\n';
            at = sink_.copy(at, prefix_.data(), prefix_.size());
          }
          ++i;
          escaped = escaped_classes(true);
          continue;
        }
      }
      i += escape_unit<AsciiOnly>(p + i, escaped, at);
      escaped = escaped_classes(false);
    }
    at_ = at;
    escaped_ref = escaped;
    return i;
  }

  // Quoting ordinary prose: copies windows of four blocks, or failing that
  // two or one, of plain text holding at most one LF, each with three
  // fixed-size stores (the text up to and with the LF, the prefix, the rest),
  // so that where a line ends costs no branch. Stops at the first block that
  // is none of these; returns where. REQUIRES: the prefix is shorter than a block.
  std::size_t copy_line_blocks(const unsigned char* p, std::size_t i, std::size_t stop, char*& at, std::uint32_t& escaped) {
    const char* const limit = sink_.limit();
    const std::size_t begin = i;
    const std::size_t prefix_size = prefix_.size();
    while (i < stop) {
      if (at >= limit) at = sink_.drain(at);
      const LineWindow w = line_window64(p + i);
      if (w.plain_or_lf && (w.lf & (w.lf - 1)) == 0) {
        // With no LF, `rest` is the whole window and has_lf keeps the
        // prefix and the second copy out. (All arithmetic: a branch on
        // where the LF falls would mispredict once a line.)
        const auto has_lf = static_cast<std::size_t>(0) - static_cast<std::size_t>((w.lf | (0 - w.lf)) >> 63);
        const auto rest = static_cast<std::size_t>(__builtin_ctzll(w.lf | (std::uint64_t{1} << 63))) + 1;
        std::memcpy(at, p + i, wide_window);
        at += rest;
        std::memcpy(at, line_break_ + 1, block);
        at += prefix_size & has_lf;
        std::memcpy(at, p + i + rest, wide_window);
        at += (wide_window - rest) & has_lf;
        i += wide_window;
        continue;
      }
      const LineBlock b = line_block(p + i);
      if ((b.plain | b.lf) != 0xFFFFu || (b.lf & (b.lf - 1)) != 0) break;
      const LineBlock next = line_block(p + i + block);
      const std::uint32_t plain = b.plain | (next.plain << block);
      const std::uint32_t lf = b.lf | (next.lf << block);
      if ((plain | lf) == 0xFFFFFFFFu && (lf & (lf - 1)) == 0) {
        const auto lf_at = static_cast<std::size_t>(std::countr_zero(std::uint64_t{lf} | (std::uint64_t{1} << window)));  // 32 when there is none
        const std::size_t has_lf = 0 - (lf_at >> 5 ^ 1);
        const std::size_t rest = lf_at + 1 - (lf_at >> 5);
        std::memcpy(at, p + i, window);
        at += rest;
        std::memcpy(at, line_break_ + 1, block);
        at += prefix_size & has_lf;
        std::memcpy(at, p + i + rest, window);
        at += (window - rest) & has_lf;
        i += window;
        continue;
      }
      const auto lf_at = static_cast<std::size_t>(__builtin_ctz(b.lf | 0x10000u));  // 16 when there is none
      const std::size_t has_lf = 0 - (lf_at >> 4 ^ 1);                               // all ones when there is one
      const std::size_t rest = lf_at + 1 - (lf_at >> 4);                             // bytes up to and with the LF, or 16
      std::memcpy(at, p + i, block);
      at += rest;
      std::memcpy(at, line_break_ + 1, block);
      at += prefix_size & has_lf;
      std::memcpy(at, p + i + rest, block);
      at += (block - rest) & has_lf;
      i += block;
    }
    if (i > begin) escaped = escaped_classes(p[i - 1] == '\n');
    return i;
  }

  Sink sink_;
  char* at_;
  std::string_view prefix_;
  // LF and the prefix, when they fit one block; read as a block from either
  // its start or the prefix's.
  char line_break_[block + 1] = {};
};

}  // namespace

void escape_bytes(std::string& out, std::string_view bytes, EscapeContext context, bool ascii_only) {
  out.reserve(out.size() + bytes.size() + 8);
  const bool cell = context == EscapeContext::cell;
  if (cell && ascii_only) Escaper<true, false, true>(out, {}).escape(bytes);
  else if (cell) Escaper<true, false, false>(out, {}).escape(bytes);
  else if (ascii_only) Escaper<false, false, true>(out, {}).escape(bytes);
  else Escaper<false, false, false>(out, {}).escape(bytes);
}

namespace {

template <bool AsciiOnly>
void quote_lines_as(std::string& out, std::string_view bytes, std::string_view prefix) {
  Escaper<false, true, AsciiOnly> escaper(out, prefix);
  escaper.write(prefix);
  escaper.escape(bytes);
  escaper.write("\n");
}

}  // namespace

void quote_lines(std::string& out, std::string_view bytes, std::string_view prefix, bool ascii_only) {
  out.reserve(out.size() + bytes.size() + bytes.size() / 16 + prefix.size() + 8);
  if (ascii_only) quote_lines_as<true>(out, bytes, prefix);
  else quote_lines_as<false>(out, bytes, prefix);
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
