#include "mcp/startup_check.hpp"

#include <rawtool/log.hpp>
#include <rawtool/render/json.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace rawtool::mcp::detail {

void warn_of_unusable(const OperatorLog& log, const std::vector<DatabaseCheck>& checks) {
  for (const DatabaseCheck& check : checks) {
    if (check.report) continue;
    log.write(LogLevel::warn, "mcp", "database_unusable",
              nlohmann::json{{"detail", "could not connect at start-up: " +
                                            std::string(unavailable_cause_text(check.cause).view()) +
                                            "; rawtool serves on, and calls to this database fail until it can connect"},
                             {"database", check.label},
                             {"engine", engine_name(check.engine)},
                             {"cause", unavailable_cause_name(check.cause)},
                             {"complaint", render::to_log_json(check.complaint)}});
  }
}

StartupCheck::StartupCheck(Tool& tool) {
  if (!tool.log().enabled(LogLevel::warn)) return;
  thread_ = std::thread([this, &tool] {
    try {
      std::vector<DatabaseCheck> checks = tool.inspect_databases(&cancellation_);
      if (!cancellation_.cancelled()) warn_of_unusable(tool.log(), checks);
    } catch (const std::exception&) {
      // Only a warning was at stake; each call meets the database on its own.
    }
  });
}

StartupCheck::StartupCheck(const Tool& tool, const std::vector<DatabaseCheck>& checks) { warn_of_unusable(tool.log(), checks); }

StartupCheck::~StartupCheck() {
  cancellation_.cancel();
  if (thread_.joinable()) thread_.join();
}

}  // namespace rawtool::mcp::detail
