#pragma once

// The operator log's line format, for the library's own use and its tests;
// the writer itself is public (rawtool/log.hpp).

#include <rawtool/log.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace rawtool::detail {

/// The line OperatorLog::write writes, without its newline: {"ts","level",
/// "component","event","pid"} and then `members`; when that passes
/// max_log_line_bytes, a "log_record_too_large" line in its place.
std::string format_log_line(std::chrono::system_clock::time_point when, LogLevel level, std::string_view component,
                            std::string_view event, const nlohmann::json& members);

/// "2025-06-01T12:34:56.123456Z": RFC 3339, UTC, microseconds.
std::string rfc3339_utc(std::chrono::system_clock::time_point when);

}  // namespace rawtool::detail
