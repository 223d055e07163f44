// rawtool certified: a pinned query from the catalog, by name.

#include "cli/args.hpp"
#include "cli/call_watch.hpp"
#include "cli/commands.hpp"
#include "cli/open_tool.hpp"
#include "cli/output.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <string>

#include <unistd.h>

namespace rawtool::cli {

namespace {

constexpr std::string_view help =
    "Usage: rawtool certified [--config FILE] [--db URL|PATH] [--json | --format table] [--log FILE|syslog|stderr]\n"
    "                         [--log-level LEVEL] NAME [key=value...]\n"
    "\n"
    "Runs the pinned query NAME from the configured catalog with its parameters\n"
    "bound (never spliced into SQL). Each value is given in its type's textual\n"
    "form: 42, 3.5, true, 2024-05-01, some text. On failure only a status from a\n"
    "closed set and a log reference are printed; the database's complaint goes to\n"
    "the operator log under that reference, and one line on stderr says where.\n"
    "By default the operator log is $XDG_STATE_HOME/rawtool/rawtool.log (or\n"
    "~/.local/state/rawtool/rawtool.log), never stdout or stderr.\n"
    "\n"
    "Options:\n"
    "  --config FILE   configuration file (JSON) naming the catalog; see the README\n"
    "  --db URL|PATH   the database, replacing the configuration's first target\n"
    "  --json          print the structured surface (one JSON line) instead of text\n";

constexpr std::string_view examples =
    "  rawtool catalog --config config.json\n"
    "  rawtool certified --config config.json product_reviews product_id=1\n"
    "  rawtool certified --config config.json --json product_reviews product_id=1\n";

constexpr auto certified_options = with_database_options(std::array<OptionSpec, 1>{{format_option}});

nlohmann::json parameters_from(const std::vector<std::string>& pairs) {
  nlohmann::json params = nlohmann::json::object();
  for (const std::string& pair : pairs) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("parameters are key=value; one argument is not");
    }
    std::string key = pair.substr(0, eq);
    if (params.contains(key)) {
      throw UsageError("parameter " + key + " given twice");
    }
    params[std::move(key)] = pair.substr(eq + 1);
  }
  return params;
}

}  // namespace

int run_certified(Arguments argv) {
  const Args args(argv, certified_options);
  if (args.help()) {
    write_all(1, std::string(help) + std::string(format_option_help) + std::string(log_options_help) + "\n" +
                     std::string(exit_status_help) + std::string(examples_lead) + std::string(examples));
    return static_cast<int>(Exit::ok);
  }
  const auto& positionals = args.positionals();
  if (positionals.empty()) {
    throw UsageError("no query name given");
  }
  const nlohmann::json params = parameters_from({positionals.begin() + 1, positionals.end()});
  CommandConfig command = config_from(args, LogDefault::state_file);
  apply_format(args, command.config);
  auto tool = open_configured(std::move(command));
  const WatchedReply watched =
      watched_call("certified", tool->config().log, CallOptions{}, [&](const CallOptions& call_options) {
        return tool->certified(positionals.front(), params, call_options);
      });
  if (watched.interrupted_by) {
    write_all(STDERR_FILENO, interruption_line("certified", *watched.interrupted_by, watched.reply));
    return interrupted_exit_status(*watched.interrupted_by);
  }
  const Exit status = print_reply(watched.reply, args.flag("--json"));
  print_log_pointer("certified", watched.reply, tool->config().log);
  return static_cast<int>(status);
}

}  // namespace rawtool::cli
