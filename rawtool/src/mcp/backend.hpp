#pragma once

// The tool behind the MCP server, as the server's core sees it: a call goes
// in, both halves of a reply come out. serve.cpp puts rawtool::Tool behind
// it; the in-process tests put a scripted backend there.

#include "mcp/protocol.hpp"

#include <rawtool/tool.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace rawtool::mcp::detail {

/// Stops one tool call from another thread. Thread-safe.
class CallControl {
public:
  virtual ~CallControl() = default;
  CallControl() = default;
  CallControl(const CallControl&) = delete;
  CallControl& operator=(const CallControl&) = delete;
  virtual void cancel() noexcept = 0;
};

/// Where a running call's figures go (elapsed, rows read, the row cap).
using ProgressSink = std::function<void(const ProgressFigures&)>;

/// Both halves of one tool reply, as the renderer wrote them: the library's
/// Reply, which wraps a render::Rendered that only the renderer makes.
using CallReply = rawtool::Reply;

/// The tool behind the server. One backend serves every session of a server:
/// make_control(), run() and too_large() are called from many threads at once.
class Backend {
public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual std::unique_ptr<CallControl> make_control() = 0;
  /// Runs the call; returns its reply. Cancelled through `control`, it returns
  /// promptly (its reply is then dropped). `progress`, when not empty, is
  /// given the call's figures at a bounded rate while it runs, never after
  /// run() returns.
  virtual CallReply run(const ToolCall& call, CallControl& control, const ProgressSink& progress) = 0;
  /// The reply that stands in for one whose serialised message would be
  /// `bytes` long, over the transport's limit: a refusal written by rawtool.
  virtual CallReply too_large(const ToolCall& call, std::size_t bytes) = 0;
};

}  // namespace rawtool::mcp::detail
