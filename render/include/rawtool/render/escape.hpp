#pragma once

#include <rawtool/render/options.hpp>
#include <rawtool/untrusted.hpp>

#include <string>

namespace rawtool::render {

/// Where an escaped value will stand; decides which characters must be escaped.
enum class EscapeContext {
  line,  ///< one line of quoted prose (LF never reaches it: quote_lines splits on LF)
  cell,  ///< a value inside double quotes on a row line: LF and '"' are escaped too
};

/// The escape grammar, one for every surface, lossless and reversible:
///   \\  backslash      \t  tab      \r  carriage return
///   \n  line feed (cell context)    \"  double quote (cell context)
///   \xHH       a byte that is not part of valid UTF-8, or an ASCII control / DEL
///   \u{HHHH}   a code point that is not plainly visible text (4 to 6 upper-case hex digits)
/// Code points escaped: general categories Cc, Cf, Co, Cn, Zl, Zp, Zs other
/// than U+0020; Default_Ignorable_Code_Point; a combining mark at the start of
/// a line or cell; with ascii_only, everything from U+0080 up. The set comes
/// from the Unicode Character Database at build time. Everything else,
/// non-ASCII text included, is copied as it is.
///
/// Appends the escaped form of `value` to `out`. Thread-safe; no allocation
/// beyond growing `out`.
void append_escaped(std::string& out, const Untrusted& value, EscapeContext context, const RenderOptions& options);

/// Appends `value` split on LF only, each line as `prefix` followed by the
/// escaped line and LF. An empty value is one empty quoted line.
void append_quoted_lines(std::string& out, const Untrusted& value, std::string_view prefix, const RenderOptions& options);

}  // namespace rawtool::render
