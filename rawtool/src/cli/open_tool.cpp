#include "cli/open_tool.hpp"

#include <filesystem>

namespace rawtool::cli {

Config config_from(const Args& args) {
  const auto file = args.value("--config");
  const auto db = args.value("--db");
  const std::filesystem::path cwd = std::filesystem::current_path();
  if (!file) {
    Config config;
    if (db) {
      config.databases.push_back(database_for_target(*db, cwd));
    } else {
      // Every key left out: parse_config takes the database from
      // RAWTOOL_DATABASE_URL, then the PG* environment, and names the problem
      // when neither is set.
      config = parse_config("{}", cwd);
    }
    return config;
  }
  Config config = load_config(*file);
  if (db) {
    // --db replaces where the first database lives, keeping the operator's
    // label, access mode, limits and pool size for it.
    DatabaseConfig replacement = database_for_target(*db, cwd);
    if (config.databases.empty()) {
      config.databases.push_back(std::move(replacement));
    } else {
      config.databases.front().target = std::move(replacement.target);
      config.databases.front().kind = replacement.kind;
    }
  }
  return config;
}

std::unique_ptr<Tool> open_tool(const Args& args) {
  return Tool::open(config_from(args));
}

}  // namespace rawtool::cli
