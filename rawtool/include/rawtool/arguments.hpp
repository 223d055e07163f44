#pragma once

// Reading a tool call's arguments, the same way on every surface: the MCP
// server's protocol layer and the library read them with these, so an
// argument that does not fit is named, with its rule, in the same words.

#include <rawtool/argument_error.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace rawtool {

/// What describe_schema is asked for. Every name is the caller's and is bound
/// as a parameter of rawtool's pinned statements, never spliced into SQL.
struct SchemaRequest {
  /// Only this schema (PostgreSQL; "main" on SQLite). Empty: every schema.
  std::string schema;
  /// One table's (or view's) details; empty lists the objects instead. Its
  /// name, or "schema.name" when `schema` is empty.
  std::string table;
  /// Objects whose name matches this LIKE pattern (% any run, _ one
  /// character; case-insensitive). Empty: every name.
  std::string pattern;
  /// Objects to skip, for paging: the next_offset of the previous reply.
  std::uint64_t offset = 0;
  /// Objects per page.
  std::uint64_t limit = 50;

  static constexpr std::uint64_t limit_max = 200;
  static constexpr std::uint64_t offset_max = 1000000000;
  /// The most characters `schema`, `table` and `pattern` may have.
  static constexpr std::size_t name_max_length = 256;
};

/// A SchemaRequest from a tool call's JSON arguments {"schema", "table",
/// "pattern", "offset", "limit"} (each optional; "database" is read too and
/// returned in `database`), or the first argument that does not fit, in
/// rawtool's words. Unknown members are an unknown_parameter error.
struct SchemaArguments {
  SchemaRequest request;
  std::string database;
};
std::variant<SchemaArguments, ArgumentError> schema_arguments_from_json(const nlohmann::json& arguments);

/// An ArgumentError with no value echoed.
ArgumentError argument_error(Label argument, ArgumentRule rule, Trusted explanation);

/// The first field of `request` out of its bounds: a name that is not UTF-8
/// text without NUL or is longer than name_max_length, a limit outside 1 to
/// limit_max, an offset past offset_max. The database is checked by the Tool.
std::optional<ArgumentError> check_schema_request(const SchemaRequest& request);

/// "must be <expected>, not <what `value` is>" (e.g. "must be a string, not an
/// integer") for `argument`, rule type: the value itself is not repeated.
ArgumentError argument_type_error(const Label& argument, Literal expected, const nlohmann::json& value);

}  // namespace rawtool
