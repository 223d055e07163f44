#pragma once

#include <rawtool/render/options.hpp>
#include <rawtool/untrusted.hpp>

#include <string>

namespace rawtool::render {

/// Where an escaped value will stand; decides which characters must be escaped.
enum class EscapeContext {
  line,  ///< one line of quoted prose (append_quoted_lines splits on LF; any LF left is \n)
  cell,  ///< a value inside double quotes on a row line: LF and '"' are escaped too
};

/// The escape grammar, one for every surface, lossless and reversible:
///   \\  backslash      \t  tab      \r  carriage return
///   \n  line feed (a cell, or a value escaped on its own; append_quoted_lines splits on it instead)
///   \"  double quote (cell context only; in a line it is ordinary text)
///   \xHH       a byte that is not part of valid UTF-8, or an ASCII control / DEL
///               other than the ones above (two upper-case hex digits)
///   \u{HHHH}   a code point that is not plainly visible text (4 to 6 upper-case
///               hex digits, no more leading zeros than needed to make 4)
/// UTF-8 is decoded strictly (RFC 3629): an overlong form, a surrogate, a
/// truncated sequence, a stray continuation byte, or one of the bytes C0, C1,
/// F5..FF makes its
/// first byte a \xHH, and decoding resumes at the next byte, so every
/// offending byte is escaped on its own. NUL is a byte like any other.
/// Code points escaped: general categories Cc, Cf, Co, Cn, Zl, Zp, Zs other
/// than U+0020 (and Cs, which strict decoding never yields);
/// Default_Ignorable_Code_Point (variation selectors, the Tags
/// block, emoji tag sequences included, U+3164 ...); the letters, marks and
/// symbols that render as blank, named "... BLANK" or "... FILLER" in
/// UnicodeData.txt (U+2800 BRAILLE PATTERN BLANK, the Hangul fillers, U+13441
/// EGYPTIAN HIEROGLYPH FULL BLANK ...); a combining mark (Mn, Mc,
/// Me) at the start of a line or cell; with ascii_only, everything from
/// U+0080 up. The set is generated at build time from the Unicode Character
/// Database. Everything else, non-ASCII text included, is copied as it is.
///
/// Appends the escaped form of `value` to `out`; the result holds no LF and,
/// in the cell context, no '"' outside an escape. Thread-safe; no allocation
/// beyond growing `out`.
void append_escaped(std::string& out, const Untrusted& value, EscapeContext context, const RenderOptions& options);

/// Appends `value` split on LF only (CR, NEL, U+2028 and the rest are escaped,
/// never line breaks), each line as `prefix` followed by the line escaped in
/// the line context and LF. An empty value is one empty quoted line; a value
/// ending in LF ends with an empty quoted line. Joining the decoded lines with
/// LF gives back the exact bytes.
void append_quoted_lines(std::string& out, const Untrusted& value, std::string_view prefix, const RenderOptions& options);

}  // namespace rawtool::render
