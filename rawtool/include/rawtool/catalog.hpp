#pragma once

#include <rawtool/argument_error.hpp>
#include <rawtool/driver.hpp>
#include <rawtool/untrusted.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rawtool {

/// The type of a pinned query's parameter.
enum class ParameterType { integer, number, text, boolean, date, timestamp };

/// "integer", "number", "text", "boolean", "date" or "timestamp".
std::string_view parameter_type_name(ParameterType type) noexcept;

/// One declared parameter of a pinned query.
struct ParameterSpec {
  /// [a-z][a-z0-9_]{0,63}
  std::string name;
  ParameterType type = ParameterType::text;
  /// Catalog prose: shown only through the renderer, as catalog_prose says.
  std::optional<Untrusted> description;
  /// A required parameter must be given and not null; an optional one left out
  /// (or null) is bound as SQL NULL. Default true.
  bool required = true;
  /// integer and number only; inclusive.
  std::optional<double> minimum;
  std::optional<double> maximum;
  /// The allowed values, already converted to the parameter's type.
  std::vector<Parameter> allowed;
  /// text only: the most Unicode code points a value may have.
  std::optional<std::size_t> max_length;
  /// Set: the MCP server over HTTP binds the parameter from this claim of the
  /// caller's validated OAuth token; the agent cannot pass it, and a call
  /// whose token lacks the claim is refused. Such a parameter is required.
  /// The library itself binds it from `params` like any other: an embedder
  /// decides where the value comes from.
  std::optional<std::string> from_claim;
};

/// One pinned query.
///
/// Placeholders: catalog SQL is written in its engine's own positional
/// syntax, and parameters bind in the order they are declared: the first
/// declared parameter is $1 on PostgreSQL and ?1 on SQLite, the second $2 /
/// ?2, and so on. Values are always bound through the driver, never spliced
/// into the SQL text.
struct CatalogQuery {
  /// [a-z][a-z0-9_]{0,63}, unique in the catalog.
  std::string name;
  Untrusted description;
  std::string sql;
  std::vector<ParameterSpec> parameters;
  /// When set, cannot exceed the database's access mode (checked at open).
  std::optional<AccessMode> access;
  /// Label of the database the query runs on; empty means the first one.
  std::string database;
};

/// A loaded, validated catalog.
///
/// The file is a JSON object {"queries": [ ... ]}; each query is an object:
///   name          string, required: [a-z][a-z0-9_]{0,63}, unique
///   description   string, required: prose for the reader (untrusted)
///   sql           string, required, non-empty
///   parameters    array, default []: objects with
///     name        string, required: [a-z][a-z0-9_]{0,63}, unique in the query
///     type        "integer" | "number" | "text" | "boolean" | "date" | "timestamp"
///     description string, optional (untrusted prose)
///     required    boolean, default true
///     minimum     number, integer and number types only
///     maximum     number, integer and number types only, not below minimum
///     enum        non-empty array of values of the type
///     max_length  integer >= 1, text only
///   access        "read_only" | "read_write", optional
///   database      string, optional: a configured database label
/// Any other key is an error.
struct Catalog {
  std::vector<CatalogQuery> queries;
  /// Lower-case hex SHA-256 of the catalog file's bytes ("" for no catalog).
  std::string sha256;

  /// The query called `name`, or nullptr.
  [[nodiscard]] const CatalogQuery* find(std::string_view name) const noexcept;
};

/// Parses a catalog's text. Throws ConfigError whose field names the entry and
/// field, e.g. "catalog: queries[3] (top_customers).parameters[0].type".
Catalog parse_catalog(std::string_view json_text);

/// Reads and parses a catalog file. Throws ConfigError.
Catalog load_catalog(const std::filesystem::path& file);

/// True when `name` is [a-z][a-z0-9_]{0,63}.
[[nodiscard]] bool valid_catalog_name(std::string_view name) noexcept;

/// Why a call's arguments do not fit a query. `error` says it for the caller
/// in rawtool's words: the parameter (a declared name), the rule and what the
/// rule asks; a caller's value or unknown key is never copied into it.
/// `problem` is the same for the operator log ("parameters.n: must be at most
/// 3"), and `unknown_key` carries an undeclared key, as untrusted, for the log.
struct ArgumentProblem {
  std::string problem;
  std::optional<Untrusted> unknown_key;
  ArgumentError error;
};

/// The bound values, in declaration order, or why the arguments do not fit.
using BindResult = std::variant<std::vector<Parameter>, ArgumentProblem>;

/// Checks `arguments` (a JSON object; null means {}) against the query's
/// declared parameters: each value is a JSON value of the declared type, or a
/// string in that type's textual form (integer "-12", number "2.5e3", boolean
/// "true"/"false", date "YYYY-MM-DD", timestamp "YYYY-MM-DD[T ]HH:MM:SS[.f]
/// [Z|+HH:MM|-HH:MM]"); bounds, enumerations and lengths hold; no unknown keys.
BindResult bind_arguments(const CatalogQuery& query, const nlohmann::json& arguments);

}  // namespace rawtool
