// rawtool query: the raw path from the command line.

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/open_tool.hpp"
#include "cli/output.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace rawtool::cli {

namespace {

constexpr std::string_view help =
    "Usage: rawtool query [--config FILE] [--db URL|PATH] [--database LABEL] [--json]\n"
    "                     [--log FILE|syslog|stderr] [--log-level LEVEL] [--] SQL\n"
    "\n"
    "Runs one statement of your own SQL on the raw path, in the configured access\n"
    "mode (read-only unless the operator chose otherwise) and limits. Rows are\n"
    "printed with every cell escaped; a database failure is printed as untrusted\n"
    "content, quoted line by line inside named boundaries. What is not shown (a\n"
    "connection's complaint, a reply too large to show) goes to the operator log,\n"
    "by default $XDG_STATE_HOME/rawtool/rawtool.log (or ~/.local/state/rawtool/\n"
    "rawtool.log), and one line on stderr says where and under which reference.\n"
    "\n"
    "Options:\n"
    "  --config FILE   configuration file (JSON); see the README\n"
    "  --db URL|PATH   a PostgreSQL URL or a SQLite file path; without --config and\n"
    "                  --db, RAWTOOL_DATABASE_URL and then the PG* variables are used\n"
    "  --database LABEL  which configured database to run on (default: the first\n"
    "                  one in the configuration file)\n"
    "  --json          print the structured surface (one JSON line) instead of text\n"
    "  --              end of options, for SQL that begins with \"-\"\n";

// The options every database-using command takes, and the choice of database.
constexpr std::array<OptionSpec, database_options.size() + 1> query_options = [] {
  std::array<OptionSpec, database_options.size() + 1> all{};
  std::copy(database_options.begin(), database_options.end(), all.begin());
  all.back() = OptionSpec{"--database", "LABEL"};
  return all;
}();

}  // namespace

int run_query(Arguments argv) {
  const Args args(argv, query_options);
  if (args.help()) {
    write_all(1, std::string(help) + std::string(log_options_help) + "\n" + std::string(exit_status_help));
    return static_cast<int>(Exit::ok);
  }
  if (args.positionals().size() != 1) {
    throw UsageError(args.positionals().empty() ? "no SQL given" : "give the SQL as one argument (quote it)");
  }
  CommandConfig command = config_from(args, LogDefault::state_file);
  const Config& config = command.config;
  CallOptions options;
  if (auto label = args.value("--database")) {
    const bool known = std::any_of(config.databases.begin(), config.databases.end(),
                                   [&](const DatabaseConfig& database) { return database.label == *label; });
    if (!known) {
      // The labels passed the configuration's grammar; the argument did not, so it is not repeated.
      std::string labels;
      for (const DatabaseConfig& database : config.databases) labels += (labels.empty() ? "" : ", ") + database.label;
      throw UsageError("--database names no configured database (configured: " + labels + ")");
    }
    options.database = std::move(*label);
  }
  auto tool = open_configured(std::move(command));
  const Reply reply = tool->raw(args.positionals().front(), options);
  const Exit status = print_reply(reply, args.flag("--json"));
  print_log_pointer("query", reply, tool->config().log);
  return static_cast<int>(status);
}

}  // namespace rawtool::cli
