#pragma once

// The stdio transport: one thread reads request lines and hands each message
// to a Dispatcher, whose tool calls run on a WorkerPool; every message out is
// one line, written under one lock. It knows the tool only through Backend,
// so it can run over a scripted backend as well as over rawtool::Tool.

#include "mcp/backend.hpp"
#include "mcp/protocol.hpp"

#include <rawtool/log.hpp>

#include <chrono>
#include <cstddef>

namespace rawtool::mcp::detail {

struct ServerLimits {
  std::size_t max_line_bytes = 4 * 1024 * 1024;
  LineLimits line;
  /// Worker threads: tool calls served at once.
  std::size_t max_concurrent_calls = 4;
  /// Calls accepted but waiting for a worker; one more is answered with a
  /// server_busy error.
  std::size_t max_queued_calls = 256;
  /// Longest response line written; a tool reply over it becomes Backend::too_large.
  /// The official clients cap one message at 10 MiB.
  std::size_t max_reply_bytes = 8 * 1024 * 1024;
  /// After end of input, how long accepted calls may still finish and be
  /// answered before the rest are cancelled.
  std::chrono::milliseconds end_of_input_grace{1500};
};

/// Serves one session on `in_fd`/`out_fd` until end of input (or until
/// `out_fd` can no longer be written); returns the process exit status. Reads
/// on the calling thread; runs tool calls on max_concurrent_calls worker
/// threads of its own. The server's own events (serving, stopped, ignored,
/// output_closed, internal_error) go to `log` with component "mcp".
int run_server(Backend& backend, const ServerDescription& description, int in_fd, int out_fd,
               const ServerLimits& limits, const rawtool::OperatorLog& log);

}  // namespace rawtool::mcp::detail
