#pragma once

// What the MCP server says about its tools: names, descriptions, schemas,
// annotations, the server's instructions, and the shape of a tools/call result.
// Every string here is rawtool's own text, except per-query tools' catalog
// prose, which arrives already rendered (quoted or omitted by the renderer).

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace rawtool::mcp::detail {

/// The facts about the configuration that the tool descriptions show.
struct ToolSettings {
  bool raw_path_enabled = true;
  /// True when any configured database is read-write: the annotations then
  /// warn that a call may change the database.
  bool read_write = false;
  /// The default database's label (validated by the configuration).
  std::string database_label = "default";
  /// Every configured database, the default first: raw_sql offers a choice
  /// among them when there is more than one.
  struct Database {
    std::string label;
    std::string engine;  ///< "postgresql" or "sqlite"
    bool read_write = false;
  };
  std::vector<Database> databases;
  /// The catalog's query names (they follow the catalog-name grammar); none:
  /// no certified_query.
  std::vector<std::string> catalog_names;
  /// structured_content "both": tools declare outputSchema and replies carry
  /// structuredContent; "text" (false): neither.
  bool structured_content = true;
  /// True when any catalog query runs read-write (its own access, within its
  /// database's): certified_query's annotations then warn.
  bool certified_read_write = false;
  /// certified_tools "per_query": one tool per catalog query, listed instead
  /// of certified_query.
  bool per_query = false;
  struct QueryTool {
    std::string name;         ///< the query's name, which follows the MCP tool-name grammar
    std::string description;  ///< rawtool's words, with the catalog prose as the renderer quoted it (or omitted)
    nlohmann::json input_schema;
    bool read_write = false;  ///< the query's access within its database's
  };
  std::vector<QueryTool> query_tools;
};

/// The raw tools and the databases each reaches, so that each tool's
/// annotations hold for every database it reaches: one raw_sql over every
/// database when they share one access mode; otherwise raw_sql over the
/// read-only ones and raw_sql_write over the read-write ones.
struct RawTools {
  std::vector<std::string> raw_sql;        ///< labels, the default first
  std::vector<std::string> raw_sql_write;  ///< empty: no raw_sql_write
  bool raw_sql_read_write = false;         ///< raw_sql reaches read-write databases (all of them)
};
RawTools raw_tools(const ToolSettings& settings);

/// The names of the server's own tools, every one describe_tools can list
/// besides the per-query tools.
inline constexpr std::string_view own_tool_names[] = {"raw_sql", "raw_sql_write", "certified_query", "describe_catalog",
                                                      "describe_schema"};

/// The tools/list "tools" array: raw_sql and raw_sql_write (only when the raw
/// path exists; see RawTools), certified_query (when the catalog has a query
/// on the session's databases), describe_catalog, describe_schema.
nlohmann::json describe_tools(const ToolSettings& settings);

/// The initialize result's `instructions`: names the untrusted-content boundary
/// in plain words.
std::string server_instructions(const ToolSettings& settings);

/// A tools/call result: the text half as the only content block, the structured
/// half as structuredContent unless `with_structured` is false, and isError. A
/// structured half that is not an object is wrapped so structuredContent is
/// always an object.
nlohmann::json call_result(std::string text, nlohmann::json structured, bool is_error, bool with_structured = true);

}  // namespace rawtool::mcp::detail
