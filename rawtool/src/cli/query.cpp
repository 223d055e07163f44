// rawtool query: the raw path from the command line.

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/open_tool.hpp"
#include "cli/output.hpp"

#include <string>

namespace rawtool::cli {

namespace {

constexpr std::string_view help =
    "Usage: rawtool query [--config FILE] [--db URL|PATH] [--json] [--] SQL\n"
    "\n"
    "Runs one statement of your own SQL on the raw path, in the configured access\n"
    "mode (read-only unless the operator chose otherwise) and limits. Rows are\n"
    "printed with every cell escaped; a database failure is printed as untrusted\n"
    "content, quoted line by line inside named boundaries.\n"
    "\n"
    "Options:\n"
    "  --config FILE   configuration file (JSON); see the README\n"
    "  --db URL|PATH   a PostgreSQL URL or a SQLite file path; without --config and\n"
    "                  --db, RAWTOOL_DATABASE_URL and then the PG* variables are used\n"
    "  --json          print the structured surface (one JSON line) instead of text\n"
    "  --              end of options, for SQL that begins with \"-\"\n"
    "\n";

}  // namespace

int run_query(Arguments argv) {
  const Args args(argv, database_options);
  if (args.help()) {
    write_all(1, std::string(help) + std::string(exit_status_help));
    return static_cast<int>(Exit::ok);
  }
  if (args.positionals().size() != 1) {
    throw UsageError(args.positionals().empty() ? "no SQL given" : "give the SQL as one argument (quote it)");
  }
  auto tool = open_tool(args);
  const Reply reply = tool->raw(args.positionals().front());
  return static_cast<int>(print_reply(reply, args.flag("--json")));
}

}  // namespace rawtool::cli
