#pragma once

#include <rawtool/untrusted.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace rawtool::render {

/// The structured form of an untrusted value: a JSON string when the bytes are
/// valid UTF-8 (exact, nothing replaced), otherwise an object
/// {"encoding":"base64","invalid_utf8":true,"base64":"..."} carrying the bytes
/// losslessly. Never U+FFFD.
nlohmann::json to_json(const Untrusted& value);

/// Serialises structured output for a wire or a terminal: compact, one line,
/// every non-ASCII code point as a \u escape, so that no invisible or
/// reordering character stands raw in the serialised text.
std::string dump(const nlohmann::json& value);

}  // namespace rawtool::render
