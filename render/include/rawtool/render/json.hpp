#pragma once

#include <rawtool/untrusted.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace rawtool::render {

/// The structured form of an untrusted value: a JSON string when the bytes are
/// valid UTF-8 (exact, nothing replaced), otherwise an object
/// {"encoding":"base64","invalid_utf8":true,"base64":"..."} carrying the bytes
/// losslessly. Never U+FFFD.
nlohmann::json to_json(const Untrusted& value);

/// The most characters one untrusted member of an operator log record takes
/// once serialised by dump(), before the members that describe a cut.
inline constexpr std::size_t log_text_bound = 1024;

/// An untrusted value as a member of an operator log record, never longer
/// than `bound` characters of dump() output plus a fixed overhead (at most 200
/// characters). When to_json(value) serialised fits in `bound`: exactly
/// to_json(value). Otherwise a bounded stand-in that says so:
///
///   {"truncated": true, "bytes": <size of the whole value>,
///    "sha256": "<lower-case hex SHA-256 of the whole value>",
///    "kept_bytes": <n>, "prefix": to_json(<the first n bytes>)}
///
/// The prefix is encoded as to_json does (a JSON string when those bytes are
/// UTF-8, the base64 object otherwise), so what is kept is kept exactly; it is
/// the longest that fits in `bound` and never ends inside a well-formed UTF-8
/// sequence. Reads the whole value once for the hash. Thread-safe.
nlohmann::json to_log_json(const Untrusted& value, std::size_t bound = log_text_bound);

/// Serialises structured output for a wire or a terminal: compact, one line,
/// every non-ASCII code point as a \u escape, so that no invisible or
/// reordering character stands raw in the serialised text.
std::string dump(const nlohmann::json& value);

}  // namespace rawtool::render
