#include "mcp/metrics.hpp"

#include <prometheus/text_serializer.h>

#include <map>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace rawtool::mcp::detail {

namespace {

using nlohmann::json;

/// The tool a call ran as: rawtool's own word for each kind of call (a
/// catalog query offered as a tool of its own counts as certified_query).
std::string_view tool_word(const ToolCall& call) {
  return std::visit(
      [](const auto& step) -> std::string_view {
        using Step = std::decay_t<decltype(step)>;
        if constexpr (std::is_same_v<Step, RawSqlCall>) return "raw_sql";
        if constexpr (std::is_same_v<Step, CertifiedQueryCall>) return "certified_query";
        if constexpr (std::is_same_v<Step, DescribeSchemaCall>) return "describe_schema";
        return "describe_catalog";
      },
      call);
}

/// A string member of `object`, or "".
std::string member(const json& object, std::string_view name) {
  const auto found = object.find(name);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

struct Outcome {
  std::string_view outcome;  ///< ok, failed, refused, cancelled, timeout, unavailable
  std::string reason;        ///< a refusal's reason or a status's name: rawtool's closed sets only
};

/// What a reply came to, from its structured surface's closed-set members.
/// A reason outside rawtool's closed sets (which would be a bug) is "other":
/// nothing open-ended becomes a label.
Outcome outcome_of(const CallReply& reply) {
  static const std::map<std::string, std::string_view, std::less<>> closed_reasons = {
      {"empty_statement", "empty_statement"}, {"multiple_statements", "multiple_statements"},
      {"read_only", "read_only"},             {"not_permitted", "not_permitted"},
      {"limit", "limit"},                     {"bad_header_field", "bad_header_field"},
      {"render_budget", "render_budget"},     {"self_check_failed", "self_check_failed"},
      {"internal", "internal"},               {"invalid_arguments", "invalid_arguments"},
      {"not_found", "not_found"},             {"refused", "refused"},
      {"execution_failed", "execution_failed"}};
  const auto closed = [&](const std::string& word) {
    const auto found = closed_reasons.find(word);
    return std::string(found != closed_reasons.end() ? found->second : "other");
  };
  const json& s = reply.structured();
  const std::string kind = member(s, "kind");
  // PostgreSQL ends a statement at statement_timeout with SQLSTATE 57014
  // (query_canceled); a cancel by the client is told apart before this.
  if (kind == "raw_failure") {
    return {member(s, "sqlstate") == "57014" ? "timeout" : "failed", ""};
  }
  if (kind == "raw_unavailable") return {"unavailable", ""};
  if (kind == "argument_error") return {"refused", "invalid_arguments"};
  if (kind == "refusal") {
    const std::string reason = member(s, "reason");
    if (reason == "cancelled") return {"cancelled", ""};
    if (reason == "timeout") return {"timeout", ""};
    return {"refused", closed(reason)};
  }
  if (kind == "certified_status") {
    const std::string status = member(s, "status");
    if (status == "timeout") return {"timeout", ""};
    if (status == "unavailable") return {"unavailable", ""};
    if (status == "execution_failed") return {"failed", ""};
    return {"refused", closed(status)};
  }
  return {reply.is_error() ? "failed" : "ok", ""};
}

/// The configured database a reply names, from its provenance; "" when it
/// names none (an argument error before a database was chosen).
std::string database_of(const CallReply& reply, const Tool& tool) {
  const json& s = reply.structured();
  for (const char* provenance : {"raw_provenance", "certified_provenance"}) {
    const auto found = s.find(provenance);
    if (found == s.end() || !found->is_object()) continue;
    const std::string label = member(*found, "database");
    // Only a configured label becomes a label value.
    for (const DatabaseConfig& database : tool.config().databases)
      if (database.label == label) return label;
  }
  return {};
}

const prometheus::Histogram::BucketBoundaries duration_buckets{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                                0.5,   1,     2.5,  5,     10,   30,  60};

prometheus::ClientMetric gauge(std::vector<prometheus::ClientMetric::Label> labels, double value) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  return metric;
}

}  // namespace

/// The figures read at each scrape.
class Metrics::Live final : public prometheus::Collectable {
public:
  explicit Live(const Tool& tool) : tool_(tool) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    using prometheus::MetricType;
    std::vector<prometheus::MetricFamily> families;
    prometheus::MetricFamily build{"rawtool_build_info", "rawtool's version, as a label; the value is 1", MetricType::Gauge, {}};
    build.metric.push_back(gauge({{"version", RAWTOOL_VERSION}}, 1));
    families.push_back(std::move(build));

    prometheus::MetricFamily connections{"rawtool_pool_connections",
                                         "connections of each database's pool, in use by a call or idle", MetricType::Gauge, {}};
    prometheus::MetricFamily waits{"rawtool_pool_waits_total",
                                   "calls that found every connection of their database's pool in use and waited",
                                   MetricType::Counter, {}};
    for (const Tool::PoolFigures& pool : tool_.pool_figures()) {
      connections.metric.push_back(gauge({{"database", pool.label}, {"state", "in_use"}}, static_cast<double>(pool.in_use)));
      connections.metric.push_back(gauge({{"database", pool.label}, {"state", "idle"}}, static_cast<double>(pool.idle)));
      prometheus::ClientMetric waited;
      waited.label = {{"database", pool.label}};
      waited.counter.value = static_cast<double>(pool.waits);
      waits.metric.push_back(std::move(waited));
    }
    families.push_back(std::move(connections));
    families.push_back(std::move(waits));

    std::lock_guard lock(mutex_);
    prometheus::MetricFamily hazards{"rawtool_database_hazards",
                                     "hazards the start-up audit found on each database's role, by kind; refused: read-only "
                                     "mode refuses every statement while it holds",
                                     MetricType::Gauge, hazards_};
    families.push_back(std::move(hazards));
    if (http_source_) {
      const HttpFigures http = http_source_();
      prometheus::MetricFamily memory{"rawtool_http_memory_bytes",
                                      "the HTTP server's memory budget (http.max_memory_bytes): held by bodies, calls and "
                                      "unread answers, and its limit",
                                      MetricType::Gauge, {}};
      memory.metric.push_back(gauge({{"state", "held"}}, static_cast<double>(http.memory_held)));
      memory.metric.push_back(gauge({{"state", "limit"}}, static_cast<double>(http.memory_limit)));
      prometheus::MetricFamily sessions{"rawtool_http_sessions", "open MCP sessions, by token", MetricType::Gauge, {}};
      prometheus::MetricFamily calls{"rawtool_http_calls_in_flight",
                                     "tool calls accepted and not yet answered, by token", MetricType::Gauge, {}};
      for (const HttpFigures::Token& token : http.tokens) {
        sessions.metric.push_back(gauge({{"token", token.name}}, static_cast<double>(token.sessions)));
        calls.metric.push_back(gauge({{"token", token.name}}, static_cast<double>(token.calls)));
      }
      families.push_back(std::move(memory));
      families.push_back(std::move(sessions));
      families.push_back(std::move(calls));
    }
    return families;
  }

  void set_http_source(std::function<HttpFigures()> source) {
    std::lock_guard lock(mutex_);
    http_source_ = std::move(source);
  }

  void set_hazards(std::vector<prometheus::ClientMetric> hazards) {
    std::lock_guard lock(mutex_);
    hazards_ = std::move(hazards);
  }

private:
  const Tool& tool_;
  mutable std::mutex mutex_;
  std::function<HttpFigures()> http_source_;     // guarded by mutex_
  std::vector<prometheus::ClientMetric> hazards_;  // guarded by mutex_
};

Metrics::Metrics(const Tool& tool)
    : tool_(tool),
      registry_(std::make_shared<prometheus::Registry>()),
      calls_(prometheus::BuildCounter()
                 .Name("rawtool_tool_calls_total")
                 .Help("tool calls answered, by tool, database and outcome (ok, failed, refused with its reason, cancelled, "
                       "timeout, unavailable)")
                 .Register(*registry_)),
      durations_(prometheus::BuildHistogram()
                     .Name("rawtool_tool_call_duration_seconds")
                     .Help("how long tool calls ran, from the worker taking them to their reply, by tool and database")
                     .Register(*registry_)),
      rows_(prometheus::BuildCounter()
                .Name("rawtool_rows_returned_total")
                .Help("rows shown in tool replies, by tool and database")
                .Register(*registry_)),
      reply_bytes_(prometheus::BuildCounter()
                       .Name("rawtool_reply_bytes_total")
                       .Help("bytes of the text of tool replies, by tool and database")
                       .Register(*registry_)),
      http_requests_(prometheus::BuildCounter()
                         .Name("rawtool_http_requests_total")
                         .Help("HTTP requests answered, by status")
                         .Register(*registry_)),
      live_(std::make_shared<Live>(tool)) {}

void Metrics::record_call(const ToolCall& call, const CallReply& reply, std::chrono::duration<double> elapsed, bool cancelled) {
  const std::string tool(tool_word(call));
  const std::string database = database_of(reply, tool_);
  const Outcome outcome = cancelled ? Outcome{"cancelled", ""} : outcome_of(reply);
  calls_.Add({{"tool", tool}, {"database", database}, {"outcome", std::string(outcome.outcome)}, {"reason", outcome.reason}})
      .Increment();
  durations_.Add({{"tool", tool}, {"database", database}}, duration_buckets).Observe(elapsed.count());
  const auto rows = reply.structured().find("rows");
  const double row_count = rows != reply.structured().end() && rows->is_array() ? static_cast<double>(rows->size()) : 0.0;
  rows_.Add({{"tool", tool}, {"database", database}}).Increment(row_count);
  reply_bytes_.Add({{"tool", tool}, {"database", database}}).Increment(static_cast<double>(reply.text().size()));
}

std::shared_ptr<prometheus::Collectable> Metrics::live() const noexcept { return live_; }

void Metrics::record_http_request(unsigned status) {
  http_requests_.Add({{"status", std::to_string(status)}}).Increment();
}

void Metrics::set_http_source(std::function<HttpFigures()> source) { live_->set_http_source(std::move(source)); }

void Metrics::set_hazards(const std::vector<DatabaseCheck>& checks) {
  std::vector<prometheus::ClientMetric> hazards;
  for (const DatabaseCheck& check : checks) {
    if (!check.report) continue;
    std::map<std::pair<std::string_view, bool>, double> counted;
    for (const Hazard& hazard : check.report->hazards) counted[{hazard_kind_name(hazard.kind), hazard.refused}] += 1;
    for (const auto& [kind, count] : counted) {
      hazards.push_back(gauge(
          {{"database", check.label}, {"kind", std::string(kind.first)}, {"refused", kind.second ? "true" : "false"}}, count));
    }
  }
  live_->set_hazards(std::move(hazards));
}

std::string Metrics::text() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (auto& family : live_->Collect()) families.push_back(std::move(family));
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace rawtool::mcp::detail
