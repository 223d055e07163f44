// rawtool catalog: what the certified path offers.

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/open_tool.hpp"
#include "cli/output.hpp"

#include <string>

namespace rawtool::cli {

namespace {

constexpr std::string_view help =
    "Usage: rawtool catalog [--config FILE] [--db URL|PATH] [--json] [--log FILE|syslog|stderr]\n"
    "                       [--log-level LEVEL]\n"
    "\n"
    "Describes the catalog of pinned queries: names, parameters, and the\n"
    "descriptions as the configuration's catalog_prose setting says (quoted as\n"
    "untrusted content, or omitted). Does not connect to the database.\n"
    "\n"
    "Options:\n"
    "  --config FILE   configuration file (JSON) naming the catalog; see the README\n"
    "  --db URL|PATH   the database, replacing the configuration's first target\n"
    "  --json          print the structured surface (one JSON line) instead of text\n";

constexpr std::string_view examples =
    "  rawtool catalog --config config.json\n"
    "  rawtool catalog --config config.json --json\n";

}  // namespace

int run_catalog(Arguments argv) {
  const Args args(argv, database_options);
  if (args.help()) {
    write_all(1, std::string(help) + std::string(log_options_help) + "\n" + std::string(exit_status_help) + std::string(examples_lead) +
                     std::string(examples));
    return static_cast<int>(Exit::ok);
  }
  if (!args.positionals().empty()) {
    throw UsageError("catalog takes no arguments");
  }
  auto tool = open_tool(args, LogDefault::state_file);
  return static_cast<int>(print_reply(tool->describe_catalog(), args.flag("--json")));
}

}  // namespace rawtool::cli
