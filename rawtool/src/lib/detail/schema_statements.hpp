#pragma once

// rawtool's own pinned statements for describe_schema, one set per engine.
// They run read-only through the driver like any certified query, with every
// name the caller gives bound as a parameter, never spliced.

#include <rawtool/outcome.hpp>
#include <rawtool/render/schema.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace rawtool::detail {

/// One statement and the section its rows fill.
struct SchemaStatement {
  Literal section;
  std::vector<render::SchemaColumn> columns;
  std::string_view sql;
};

/// The statements of one engine.
///   schemas  (?1/$1 schema or NULL)
///   objects  (schema or NULL, LIKE pattern or NULL, limit, offset)
///   table, columns, constraints, indexes  (schema or NULL, table)
/// A table is named by its name alone, or (with no schema given) as
/// "schema.name"; among several matches the one in the search path comes
/// first (PostgreSQL), then the one whose schema sorts first.
struct SchemaStatements {
  SchemaStatement schemas;
  SchemaStatement objects;
  std::vector<SchemaStatement> table;  ///< "table" first
};

const SchemaStatements& schema_statements(Engine engine);

/// Lower-case hex SHA-256 of the engine's statements: what a schema reply's
/// certified provenance names, as a catalog's hash names its file.
const std::string& schema_statements_sha256(Engine engine);

}  // namespace rawtool::detail
