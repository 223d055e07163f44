#include "mcp/tool_backend.hpp"

#include "mcp/metrics.hpp"

#include "mcp/query_tools.hpp"
#include "mcp/tools.hpp"

#include <rawtool/mcp.hpp>

#include <rawtool/render/status.hpp>

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include <variant>

#ifndef RAWTOOL_VERSION
#define RAWTOOL_VERSION "0.0.0"
#endif

namespace rawtool::mcp::detail {

namespace {

class ToolControl final : public CallControl {
public:
  void cancel() noexcept override { cancellation_.cancel(); }
  Cancellation& cancellation() noexcept { return cancellation_; }

private:
  Cancellation cancellation_;
};

bool reaches(const std::vector<std::string>* reach, const std::string& label) {
  return reach == nullptr || std::find(reach->begin(), reach->end(), label) != reach->end();
}

// The settings a session is shown: only the databases in `reach` (every
// database when it is null), the first of them its default, and only the
// catalog queries on them.
ToolSettings settings_of(const Tool& tool, const std::vector<std::string>* reach) {
  ToolSettings settings;
  const auto& config = tool.config();
  settings.raw_path_enabled = tool.raw_path_enabled();
  for (const DatabaseConfig& database : config.databases) {
    if (!reaches(reach, database.label)) continue;
    settings.databases.push_back({database.label, database.kind == TargetKind::postgresql ? "postgresql" : "sqlite",
                                  database.access == AccessMode::read_write});
  }
  settings.read_write = std::any_of(settings.databases.begin(), settings.databases.end(),
                                    [](const ToolSettings::Database& database) { return database.read_write; });
  if (!settings.databases.empty()) settings.database_label = settings.databases.front().label;
  std::vector<std::string> labels;
  for (const auto& database : settings.databases) labels.push_back(database.label);
  for (const ResolvedQuery& query : tool.resolved_queries()) {
    if (!reaches(reach, query.database->label)) continue;
    settings.catalog_names.push_back(query.query->name);
    if (query.access == AccessMode::read_write) settings.certified_read_write = true;
  }
  settings.structured_content = config.structured_content;
  settings.per_query = config.certified_tools == Config::CertifiedTools::per_query;
  if (settings.per_query) settings.query_tools = query_tools(tool, labels);
  return settings;
}

ServerDescription describe_server_for(const Tool& tool, const std::vector<std::string>* databases);

}  // namespace

std::unique_ptr<CallControl> ToolBackend::make_control() { return std::make_unique<ToolControl>(); }

CallReply ToolBackend::run(const ToolCall& call, CallControl& control, const ProgressSink& progress) {
  if (metrics_ == nullptr) return run_on_tool(call, control, progress);
  const auto start = std::chrono::steady_clock::now();
  CallReply reply = run_on_tool(call, control, progress);
  try {
    metrics_->record_call(call, reply, std::chrono::steady_clock::now() - start,
                          static_cast<ToolControl&>(control).cancellation().cancelled());
  } catch (...) {  // NOLINT(bugprone-empty-catch): a figure lost is better than a reply lost
  }
  return reply;
}

CallReply ToolBackend::run_on_tool(const ToolCall& call, CallControl& control, const ProgressSink& progress) {
  CallOptions options;
  options.cancellation = &static_cast<ToolControl&>(control).cancellation();
  options.on_progress = progress;  // once a second, CallOptions' default interval
  return std::visit(
      [&](const auto& step) -> CallReply {
        using Step = std::decay_t<decltype(step)>;
        if constexpr (std::is_same_v<Step, RawSqlCall>) {
          options.database = step.database;
          return tool_.raw(step.sql, options);
        } else if constexpr (std::is_same_v<Step, CertifiedQueryCall>) {
          return tool_.certified(step.name, step.params, options);
        } else if constexpr (std::is_same_v<Step, DescribeSchemaCall>) {
          options.database = step.database;
          return tool_.describe_schema(step.request, options);
        } else {
          static_assert(std::is_same_v<Step, DescribeCatalogCall>, "every ToolCall is run");
          return tool_.describe_catalog(step.databases);
        }
      },
      call);
}

CallReply ToolBackend::too_large(const ToolCall& call, std::size_t bytes) {
  const auto& databases = tool_.config().databases;
  const DatabaseConfig* chosen = &databases.front();
  if (const auto* raw = std::get_if<RawSqlCall>(&call); raw != nullptr && !raw->database.empty()) {
    const auto named = std::find_if(databases.begin(), databases.end(),
                                    [&](const DatabaseConfig& candidate) { return candidate.label == raw->database; });
    if (named != databases.end()) chosen = &*named;
  }
  const DatabaseConfig& database = *chosen;
  render::Provenance provenance;
  if (const auto* certified = std::get_if<CertifiedQueryCall>(&call)) {
    provenance.path = render::PathKind::certified;
    // A name the catalog does not hold is the caller's text: not repeated.
    if (tool_.find_query(certified->name) != nullptr) {
      provenance.certified_name = Label::checked(certified->name);
      if (!tool_.catalog().sha256.empty()) provenance.catalog_hash = Label::checked(tool_.catalog().sha256);
    }
  }
  provenance.engine = database.kind == TargetKind::postgresql ? Engine::postgresql : Engine::sqlite;
  provenance.database_label = Label::checked(database.label);
  const Refusal refusal{RefusalReason::limit,
                        Trusted::format("the reply would be {} bytes on the wire, over the MCP transport's limit; "
                                        "lower the row or byte limits or select fewer rows",
                                        bytes)};
  auto rendered = render::render_refusal(refusal, provenance);
  return CallReply(std::move(rendered), true);
}

ServerDescription describe_server(const Tool& tool) { return describe_server_for(tool, nullptr); }

ServerDescription describe_server(const Tool& tool, const std::vector<std::string>& databases) {
  return describe_server_for(tool, &databases);
}

namespace {

ServerDescription describe_server_for(const Tool& tool, const std::vector<std::string>* databases) {
  check_tool_names(tool);
  const ToolSettings settings = settings_of(tool, databases);
  ServerDescription description;
  description.version = RAWTOOL_VERSION;
  description.tools = describe_tools(settings);
  description.instructions = server_instructions(settings);
  description.raw_path_enabled = settings.raw_path_enabled;
  const RawTools raw = raw_tools(settings);
  description.database_labels = raw.raw_sql;
  description.write_database_labels = raw.raw_sql_write;
  for (const auto& database : settings.databases) description.all_database_labels.push_back(database.label);
  for (const ResolvedQuery& query : tool.resolved_queries()) {
    if (!reaches(databases, query.database->label)) continue;
    description.catalog_names.push_back(query.query->name);
    for (const ParameterSpec& spec : query.query->parameters)
      if (spec.from_claim) description.claim_parameters[query.query->name].emplace_back(spec.name, *spec.from_claim);
  }
  description.certified_query_tool = !settings.per_query && !settings.catalog_names.empty();
  description.structured_content = settings.structured_content;
  for (const auto& query : settings.query_tools) description.query_tools.emplace_back(query.name, query.name);
  description.render = tool.config().render;
  return description;
}

}  // namespace

}  // namespace rawtool::mcp::detail

namespace rawtool::mcp {

void check_tool_names(const Tool& tool) {
  if (tool.config().certified_tools != Config::CertifiedTools::per_query) return;
  const auto& queries = tool.catalog().queries;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const std::string& name = queries[i].name;
    if (std::find(std::begin(detail::own_tool_names), std::end(detail::own_tool_names), name) == std::end(detail::own_tool_names))
      continue;
    throw ConfigError("catalog: queries[" + std::to_string(i) + "] (" + name + ").name",
                      "is the name of one of rawtool's own MCP tools, which certified_tools \"per_query\" would hide");
  }
}

}  // namespace rawtool::mcp
