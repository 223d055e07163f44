#pragma once

#include <rawtool/tool.hpp>

#include <cstddef>

namespace rawtool::mcp {

struct ServerOptions {
  /// Longest request line accepted; a longer line is answered with a JSON-RPC
  /// error (-32600, without an id) and skipped, and the server keeps serving.
  /// The reader holds at most this many bytes of one line plus a 64 KiB chunk.
  std::size_t max_line_bytes = 4 * 1024 * 1024;
  /// tools/call requests served at once; 0 means the tool's configured
  /// max_concurrent_calls.
  std::size_t max_concurrent_calls = 0;
};

/// Serves the Model Context Protocol (newline-delimited JSON-RPC 2.0) for
/// `tool`, reading requests from `in_fd` and writing only protocol messages to
/// `out_fd`, until end of input. The server's own events (serving, stopped,
/// ignored, output_closed, internal_error; component "mcp") go to the Tool's
/// operator log, beside the Tool's own. Returns the process exit status (0).
/// Blocks the calling thread.
///
/// Protocol versions 2025-11-25 (answered by default), 2025-06-18, 2025-03-26
/// and 2024-11-05; capabilities: tools only. Tools: raw_sql (only when the raw
/// path is enabled), certified_query, describe_catalog.
///
/// Threads: the calling thread reads requests and answers at once what needs
/// no tool (initialize, ping, tools/list, errors, notifications/cancelled);
/// each tool call is handed to one of max_concurrent_calls worker threads, so
/// ping and cancellation are served while calls run. A call that finds every
/// worker busy waits in a FIFO queue (up to 256 calls; beyond that it is
/// answered with error -32000). notifications/cancelled stops a running call
/// through its Cancellation, or drops a waiting one; neither is answered. One
/// lock around every write keeps each message one whole line.
///
/// End of input (or an `out_fd` that can no longer be written): calls already
/// accepted get 1.5 s to finish and be answered; then what still runs is
/// cancelled and what still waits is dropped, neither answered, and serve
/// returns once its workers have stopped.
///
/// A write to a closed `out_fd` must not kill the process, so serve ignores
/// SIGPIPE process-wide when its disposition is still the default.
int serve(Tool& tool, int in_fd, int out_fd, const ServerOptions& options = {});

}  // namespace rawtool::mcp
