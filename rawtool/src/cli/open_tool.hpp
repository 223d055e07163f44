#pragma once

// Builds the configuration a subcommand runs with: --config FILE, or --db
// URL|PATH, or (neither given) RAWTOOL_DATABASE_URL and then the PG*
// environment, as parse_config does for a target left out.

#include "cli/args.hpp"

#include <rawtool/config.hpp>
#include <rawtool/tool.hpp>

#include <array>
#include <memory>

namespace rawtool::cli {

/// The options every database-using subcommand accepts.
inline constexpr std::array<OptionSpec, 3> database_options{{
    {"--config", "FILE"},
    {"--db", "URL|PATH"},
    {"--json", ""},
}};

/// The configuration the command line asks for. --db replaces the first
/// database's target when given with --config. Throws ConfigError or UsageError.
Config config_from(const Args& args);

/// Tool::open(config_from(args)). Throws ConfigError or UsageError.
std::unique_ptr<Tool> open_tool(const Args& args);

}  // namespace rawtool::cli
