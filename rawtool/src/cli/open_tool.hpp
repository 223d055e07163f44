#pragma once

// Builds the configuration a subcommand runs with: --config FILE, or --db
// URL|PATH, or (neither given) RAWTOOL_DATABASE_URL and then the PG*
// environment, as parse_config does for a target left out; and the operator
// log, from --log / --log-level, the configuration's "log", or the command's
// default.

#include "cli/args.hpp"

#include <rawtool/config.hpp>
#include <rawtool/tool.hpp>

#include <array>
#include <filesystem>
#include <memory>

namespace rawtool::cli {

/// The options every database-using subcommand accepts.
inline constexpr std::array<OptionSpec, 5> database_options{{
    {"--config", "FILE"},
    {"--db", "URL|PATH"},
    {"--json", ""},
    {"--log", "FILE|syslog|stderr"},
    {"--log-level", "LEVEL"},
}};

/// database_options followed by a command's own options.
template <std::size_t N>
constexpr std::array<OptionSpec, database_options.size() + N> with_database_options(const std::array<OptionSpec, N>& own) {
  std::array<OptionSpec, database_options.size() + N> all{};
  for (std::size_t i = 0; i < database_options.size(); ++i) all[i] = database_options[i];
  for (std::size_t i = 0; i < N; ++i) all[database_options.size() + i] = own[i];
  return all;
}

/// The help lines for --log and --log-level.
inline constexpr std::string_view log_options_help =
    "  --log FILE|syslog|stderr  where the operator log goes (complaints a reply\n"
    "                  points at by reference); a FILE is appended to, created\n"
    "                  with mode 0600. Overrides the configuration's log key.\n"
    "  --log-level LEVEL  error, warn, info (default) or debug\n";

/// --format, for the commands that print rows (query, certified).
inline constexpr OptionSpec format_option{"--format", "lines|table"};
inline constexpr std::string_view format_option_help =
    "  --format lines|table  how rows are laid out on the text surface: lines (the\n"
    "                  default), or table: aligned columns for a terminal, cells\n"
    "                  still escaped and quoted, a cell wider than 40 columns cut\n"
    "                  with the cut stated, and cut shorter (to 8) so that lines\n"
    "                  fit the terminal ($COLUMNS, else its size). Not with --json.\n";

/// Sets the configuration's rows layout from --format. Throws UsageError for
/// a value other than lines or table, or --format with --json.
void apply_format(const Args& args, Config& config);

/// The terminal's width for --format table: $COLUMNS when it holds a positive
/// number, else the width of the terminal on stdout, else 0 (unknown).
std::size_t terminal_columns();

/// Where the operator log goes when neither --log nor the configuration says.
enum class LogDefault {
  /// A file under $XDG_STATE_HOME/rawtool, or ~/.local/state/rawtool: the
  /// commands a person or an agent's shell runs, whose stderr the agent reads.
  state_file,
  /// stderr: rawtool mcp, whose stderr the MCP host keeps in its own log.
  standard_error,
};

/// $XDG_STATE_HOME/rawtool/rawtool.log (when XDG_STATE_HOME is an absolute
/// path), else $HOME/.local/state/rawtool/rawtool.log. Throws ConfigError
/// (field "log") when neither variable gives one.
std::filesystem::path default_log_file();

/// Which setting named the operator log's destination.
enum class LogSource { configuration, flag, command_default };

/// A configuration and where its log destination came from.
struct CommandConfig {
  Config config;
  LogSource log_source = LogSource::configuration;
};

/// The configuration the command line asks for. --db replaces the first
/// database's target when given with --config; --log and --log-level replace
/// the configuration's log settings; an unset log destination becomes
/// `log_default` (for state_file, its folder is created, mode 0700). Throws
/// ConfigError or UsageError.
CommandConfig config_from(const Args& args, LogDefault log_default);

/// Tool::open, with a log file that cannot be opened reported against what
/// named it: --log (a UsageError), the configuration's log.path, or the
/// command's default (a ConfigError for field "log").
std::unique_ptr<Tool> open_configured(CommandConfig config);

/// open_configured(config_from(args, log_default)).
std::unique_ptr<Tool> open_tool(const Args& args, LogDefault log_default);

}  // namespace rawtool::cli
