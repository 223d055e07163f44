#pragma once

// certified_tools "per_query": one MCP tool per catalog query, its
// inputSchema made from the query's declared parameters.

#include "mcp/tools.hpp"

#include <rawtool/tool.hpp>

#include <string>
#include <vector>

namespace rawtool::mcp::detail {

/// A tool for each query of `tool`'s catalog on one of `databases` (labels),
/// in catalog order: named as the
/// query; described in rawtool's words with the query's and its parameters'
/// catalog prose as the renderer quotes it (or omits it, as catalog_prose
/// says); an inputSchema with each parameter's JSON type, bounds, enumeration,
/// length and whether it is required, and no other member; and the query's
/// own access mode within its database's.
std::vector<ToolSettings::QueryTool> query_tools(const Tool& tool, const std::vector<std::string>& databases);

}  // namespace rawtool::mcp::detail
