#pragma once

#include <rawtool/tool.hpp>

#include <cstddef>

namespace rawtool::mcp {

struct ServerOptions {
  /// Longest request line accepted; a longer line is answered with a JSON-RPC
  /// error and skipped, and the server keeps serving.
  std::size_t max_line_bytes = 4 * 1024 * 1024;
  /// tools/call requests served at once; 0 means the tool's configured
  /// max_concurrent_calls.
  std::size_t max_concurrent_calls = 0;
};

/// Serves the Model Context Protocol (newline-delimited JSON-RPC 2.0) for
/// `tool`, reading requests from `in_fd` and writing only protocol messages to
/// `out_fd`, until end of input. Logs go to stderr. Returns the process exit
/// status. Blocks the calling thread; uses worker threads for tool calls.
int serve(Tool& tool, int in_fd, int out_fd, const ServerOptions& options = {});

}  // namespace rawtool::mcp
