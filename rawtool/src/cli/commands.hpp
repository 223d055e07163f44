#pragma once

// The subcommands of the `rawtool` program. Each lives in its own file and
// receives the arguments after its name; main.cpp only dispatches.

#include <span>
#include <string_view>

namespace rawtool::cli {

using Arguments = std::span<const std::string_view>;

/// Each returns the process exit status (see Exit). They throw UsageError and
/// ConfigError for the dispatcher to report; nothing a database says is thrown.
int run_query(Arguments args);
int run_certified(Arguments args);
int run_catalog(Arguments args);
int run_schema(Arguments args);
int run_mcp(Arguments args);
int run_render(Arguments args);
int run_demo(Arguments args);
int run_check_config(Arguments args);

struct Subcommand {
  std::string_view name;
  std::string_view summary;
  int (*run)(Arguments);
};

inline constexpr Subcommand subcommands[] = {
    {"query", "run your own SQL (the raw path); failures are shown as untrusted content", run_query},
    {"certified", "run a pinned query from the catalog; failures are a status only", run_certified},
    {"catalog", "describe the catalog of pinned queries", run_catalog},
    {"schema", "describe the tables and columns the connected role can use", run_schema},
    {"mcp", "serve the Model Context Protocol on stdin/stdout, or over HTTP with --http", run_mcp},
    {"render", "render one database failure, read as JSON on stdin (for gateways)", run_render},
    {"demo", "show both paths on a SQLite database built for the occasion", run_demo},
    {"check-config", "validate a configuration file and its catalog", run_check_config},
};

/// The exit-status paragraph every --help ends with.
inline constexpr std::string_view exit_status_help =
    "Exit status:\n"
    "  0  success (rows, or the requested output)\n"
    "  1  the database failed, rawtool refused, or a certified query reported a status\n"
    "  2  usage error, malformed input (an empty statement, or one longer than\n"
    "     max_statement_bytes, whatever its source), or configuration error\n";

/// Every --help ends with examples, led by this line: they use the files the
/// demo keeps, so that each runs as printed (tests/cli/help_test.cpp runs them).
inline constexpr std::string_view examples_lead = "\nExamples, in the folder `rawtool demo --keep` leaves:\n";

}  // namespace rawtool::cli
