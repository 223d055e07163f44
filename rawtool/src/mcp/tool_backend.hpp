#pragma once

// rawtool::Tool behind the MCP core: the Backend every session of a server
// shares, and the description of the server a session that may use every
// configured database is shown.

#include "mcp/backend.hpp"
#include "mcp/protocol.hpp"

#include <rawtool/tool.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace rawtool::mcp::detail {

class Metrics;

/// Runs calls on a Tool, each with a Cancellation of its own. Thread-safe, as
/// the Tool is; the Tool outlives it.
class ToolBackend final : public Backend {
public:
  /// Each call's outcome goes to `metrics` too, when given; it outlives the backend.
  explicit ToolBackend(Tool& tool, Metrics* metrics = nullptr) : tool_(tool), metrics_(metrics) {}

  std::unique_ptr<CallControl> make_control() override;
  CallReply run(const ToolCall& call, CallControl& control, const ProgressSink& progress) override;
  CallReply too_large(const ToolCall& call, std::size_t bytes) override;

private:
  CallReply run_on_tool(const ToolCall& call, CallControl& control, const ProgressSink& progress);

  Tool& tool_;
  Metrics* metrics_;
};

/// The tools, instructions and database labels of `tool`'s configuration,
/// every database included.
ServerDescription describe_server(const Tool& tool);
/// The same for a client that reaches only `databases` (labels of configured
/// databases): raw_sql lists and accepts only them, the first is its default.
ServerDescription describe_server(const Tool& tool, const std::vector<std::string>& databases);

}  // namespace rawtool::mcp::detail
