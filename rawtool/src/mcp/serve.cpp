// rawtool::mcp::serve: the MCP server over rawtool::Tool, on stdio.

#include <rawtool/mcp.hpp>

#include "mcp/server.hpp"
#include "mcp/startup_check.hpp"
#include "mcp/tool_backend.hpp"

#include <rawtool/log.hpp>

namespace rawtool::mcp {

int serve(Tool& tool, int in_fd, int out_fd, const ServerOptions& options) {
  detail::ServerLimits limits;
  limits.max_line_bytes = options.max_line_bytes;
  limits.max_concurrent_calls =
      options.max_concurrent_calls != 0 ? options.max_concurrent_calls : tool.config().max_concurrent_calls;

  detail::ToolBackend backend(tool, options.metrics != nullptr ? &options.metrics->recorder() : nullptr);
  const detail::StartupCheck check(tool);
  return detail::run_server(backend, detail::describe_server(tool), in_fd, out_fd, limits,
                            tool.log());
}

}  // namespace rawtool::mcp
