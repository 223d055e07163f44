#pragma once

// The stdio side of a `rawtool mcp` server under test, shared by the
// end-to-end tests, the load and fault runs and the benchmarks: starting the
// binary with pipes on its standard streams, and what a line it writes on
// stdout must be.

#include <nlohmann/json.hpp>

#include <filesystem>

#include <sys/types.h>

namespace rawtool::test {

/// A started `rawtool mcp` process and the parent's ends of its pipes. The
/// caller owns both descriptors and reaps the process.
struct McpChild {
  pid_t pid = -1;
  int to_server = -1;    ///< writes to the server's stdin
  int from_server = -1;  ///< reads the server's stdout
};

/// Starts `binary mcp --config config` with stdin and stdout on new pipes and
/// stderr written to `stderr_file` (created or truncated), or discarded when
/// `stderr_file` is empty. The returned descriptors are close-on-exec, so
/// another child started meanwhile does not hold them open. Throws
/// std::runtime_error when the pipes or the process cannot be made.
McpChild spawn_mcp_server(const std::filesystem::path& binary, const std::filesystem::path& config,
                          const std::filesystem::path& stderr_file = {});

/// Whether `message` is one JSON-RPC 2.0 message a server may write on stdout:
/// a response (an id and exactly one of result and error), a notification (a
/// method and no id), or an error that could name no id.
bool is_protocol_message(const nlohmann::json& message);

/// A waitpid() status as one exit code: the exit status, or 128 + the signal
/// that ended the process.
int exit_code(int wait_status);

}  // namespace rawtool::test
