#pragma once

// The rendering invariants, as code: every surface's tests, the corpus walk
// and the fuzzers use these as their oracle. Implemented against the text
// format render/ writes; kept beside it so a format change breaks them loudly.
// Nothing here uses render/'s own code: the escape set is read from the
// Unicode data files, and UTF-8 and the grammar are decoded by code of its own.

#include <rawtool/render/escape.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rawtool::test {

/// What the escape grammar (rawtool/render/escape.hpp) does with a code point.
enum class CodePointRule {
  copied,            ///< copied as it is
  escaped,           ///< Cc Cf Co Cn Cs Zl Zp, Zs other than U+0020, Default_Ignorable_Code_Point,
                     ///< and L*/M*/S* characters whose name ends in BLANK or FILLER
  escaped_at_start,  ///< a combining mark (Mn Mc Me): escaped at the start of a line or cell only
};

/// The rule for `cp` (at most U+10FFFF), derived from the Unicode data files
/// the build names (RAWTOOL_UCD_GENERAL_CATEGORY, RAWTOOL_UCD_CORE_PROPERTIES,
/// RAWTOOL_UCD_UNICODE_DATA),
/// read and parsed by the oracle itself on first use, independently of
/// render's generated table. Throws std::runtime_error when a file cannot be read.
CodePointRule code_point_rule(char32_t cp);

/// The escape grammar written the plain way, one code point at a time,
/// straight from its definition: what append_escaped and append_quoted_lines
/// must write, byte for byte.
std::string reference_escape(std::string_view bytes, render::EscapeContext context, bool ascii_only);
std::string reference_quote(std::string_view bytes, std::string_view prefix, bool ascii_only);

/// Strict decoder of the escape grammar (see rawtool/render/escape.hpp):
/// returns the original bytes, or nullopt when `escaped` is not well formed
/// (unknown escape, bad hex, a code point escape for a surrogate or past
/// U+10FFFF, a raw byte that should have been escaped).
std::optional<std::string> decode_escapes(std::string_view escaped);

/// Every way `text` breaks the text-surface invariants, as readable problem
/// descriptions; empty when it holds them all:
///  - every line begins with bytes the renderer chose (a known prefix);
///  - the text is valid UTF-8;
///  - no raw control (other than LF), no code point code_point_rule escapes,
///    and no combining mark right after a quote prefix;
///  - every quoted line and cell decodes with decode_escapes;
///  - the opening and closing markers carry the same nonce, and it appears nowhere else.
/// With RowsLayout::table, the column and row lines are read as a table:
/// padding after the line prefix and before each separator, names without
/// types, and a cut cell's "..." after its closing quote.
std::vector<std::string> text_surface_problems(std::string_view text,
                                               render::RowsLayout layout = render::RowsLayout::lines);

/// The labelled quoted fields of a failure or prose rendering, in order, each
/// as (label, decoded bytes). Labels are the renderer's, e.g. "message",
/// "detail", "notice 1 message".
std::vector<std::pair<std::string, std::string>> quoted_fields(std::string_view text);

/// The cells of a rows rendering, decoded: one vector per row line, nullopt for NULL.
/// A cut cell (table layout) gives the bytes shown.
std::vector<std::vector<std::optional<std::string>>> row_cells(std::string_view text,
                                                               render::RowsLayout layout = render::RowsLayout::lines);

/// The column names of a rows rendering, decoded.
std::vector<std::string> column_names(std::string_view text, render::RowsLayout layout = render::RowsLayout::lines);

/// The bytes a structured-surface untrusted value carries: a JSON string, or
/// the {"encoding":"base64",...} object. nullopt when the value is neither.
std::optional<std::string> json_bytes(const nlohmann::json& value);

}  // namespace rawtool::test
