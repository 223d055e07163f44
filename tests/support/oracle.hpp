#pragma once

// The rendering invariants, as code: every surface's tests, the corpus walk
// and the fuzzers use these as their oracle. Implemented against the text
// format render/ writes; kept beside it so a format change breaks them loudly.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rawtool::test {

/// Strict decoder of the escape grammar (see rawtool/render/escape.hpp):
/// returns the original bytes, or nullopt when `escaped` is not well formed
/// (unknown escape, bad hex, a code point escape for a surrogate or past
/// U+10FFFF, a raw byte that should have been escaped).
std::optional<std::string> decode_escapes(std::string_view escaped);

/// Every way `text` breaks the text-surface invariants, as readable problem
/// descriptions; empty when it holds them all:
///  - every line begins with bytes the renderer chose (a known prefix);
///  - the text is valid UTF-8;
///  - no raw control (other than LF), no code point of the escape set
///    (Cc Cf Co Cn Zl Zp, Zs other than U+0020, Default_Ignorable), and no
///    combining mark right after a quote prefix;
///  - every quoted line and cell decodes with decode_escapes;
///  - the opening and closing markers carry the same nonce, and it appears nowhere else.
std::vector<std::string> text_surface_problems(std::string_view text);

/// The labelled quoted fields of a failure or prose rendering, in order, each
/// as (label, decoded bytes). Labels are the renderer's, e.g. "message",
/// "detail", "notice 1 message".
std::vector<std::pair<std::string, std::string>> quoted_fields(std::string_view text);

/// The cells of a rows rendering, decoded: one vector per row line, nullopt for NULL.
std::vector<std::vector<std::optional<std::string>>> row_cells(std::string_view text);

/// The column names of a rows rendering, decoded.
std::vector<std::string> column_names(std::string_view text);

/// The bytes a structured-surface untrusted value carries: a JSON string, or
/// the {"encoding":"base64",...} object. nullopt when the value is neither.
std::optional<std::string> json_bytes(const nlohmann::json& value);

}  // namespace rawtool::test
