#pragma once

// The MCP server's Prometheus metrics: what each tool call came to, the
// pools, and, over HTTP, the requests, the memory budget and each token's
// sessions and calls. Every label value is a configured name (a database
// label, a token's name) or a fixed word of rawtool's: nothing the database
// or the agent wrote becomes a label.

#include "mcp/backend.hpp"
#include "mcp/protocol.hpp"

#include <rawtool/tool.hpp>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rawtool::mcp::detail {

/// What the HTTP transport holds now, asked for at each scrape.
struct HttpFigures {
  std::size_t memory_held = 0;
  std::size_t memory_limit = 0;
  struct Token {
    std::string name;  ///< a configured token's name; "" without tokens
    std::size_t sessions = 0;
    std::size_t calls = 0;  ///< tool calls accepted and not yet answered
  };
  std::vector<Token> tokens;
};

/// Thread-safe: calls are recorded from every worker at once while a scrape
/// reads. `tool` outlives it.
class Metrics {
public:
  explicit Metrics(const Tool& tool);
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  /// One tool call and its reply, as the worker that ran it saw them;
  /// `cancelled`: the client (or a stop) cancelled it while it ran.
  void record_call(const ToolCall& call, const CallReply& reply, std::chrono::duration<double> elapsed, bool cancelled);
  /// One HTTP request, by the status it was answered with.
  void record_http_request(unsigned status);
  /// The HTTP transport's figures come from `source` until it is replaced
  /// (an empty one: no transport). Set and cleared by the transport itself.
  void set_http_source(std::function<HttpFigures()> source);
  /// The database hazards the start-up audit found, by database and kind.
  void set_hazards(const std::vector<DatabaseCheck>& checks);

  /// Everything, for the exposer.
  [[nodiscard]] std::shared_ptr<prometheus::Registry> registry() const noexcept { return registry_; }
  /// The figures read now, not kept: pools, HTTP, hazards.
  [[nodiscard]] std::shared_ptr<prometheus::Collectable> live() const noexcept;
  /// The text exposition of both, as GET /metrics answers.
  [[nodiscard]] std::string text() const;

private:
  class Live;

  const Tool& tool_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& calls_;
  prometheus::Family<prometheus::Histogram>& durations_;
  prometheus::Family<prometheus::Counter>& rows_;
  prometheus::Family<prometheus::Counter>& reply_bytes_;
  prometheus::Family<prometheus::Counter>& http_requests_;
  std::shared_ptr<Live> live_;
};

}  // namespace rawtool::mcp::detail
