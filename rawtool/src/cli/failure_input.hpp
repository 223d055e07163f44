#pragma once

// The input format of `rawtool render`: one database failure as a JSON object,
// for gateways written in other languages. Strict: anything not in the format
// is an error naming what is wrong, never a guess.
//
//   {"engine": "postgresql" | "sqlite",            (or "driver"; required)
//    "sqlstate": TEXT, "code": INTEGER,            (SQLSTATE; SQLite extended result code)
//    "severity": TEXT, "message": TEXT, "detail": TEXT, "hint": TEXT, "context": TEXT,
//    "position": INTEGER, "statement": TEXT,
//    "internal_query": TEXT, "internal_position": INTEGER,
//    "schema": TEXT, "table": TEXT, "column": TEXT, "datatype": TEXT, "constraint": TEXT,
//    "notices": [{"severity", "sqlstate", "message", "detail", "hint", "context": TEXT}, ...]}
//
// TEXT is a JSON string, or {"base64": "..."} for bytes that are not UTF-8
// (the structured surface's {"encoding": "base64", "invalid_utf8": ..., "base64": ...}
// is accepted too). null stands for a member left out. Every member but the
// engine is optional; a member given twice is an error.

#include <rawtool/outcome.hpp>

#include <cstddef>
#include <stdexcept>
#include <string_view>

namespace rawtool::cli {

/// Largest input accepted on stdin, in bytes.
inline constexpr std::size_t max_failure_input_bytes = 4 * 1024 * 1024;

/// Input that is not a failure in the format above. what() is rawtool's own
/// text: it names the member by its known name, and escapes any name it does
/// not know.
class InputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Parses one failure. Throws InputError.
Failure parse_failure_input(std::string_view input);

}  // namespace rawtool::cli
