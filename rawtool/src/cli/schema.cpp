// rawtool schema: what the connected role can use, from rawtool's own pinned
// statements (the certified side).

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/open_tool.hpp"
#include "cli/output.hpp"

#include <rawtool/render/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <string>

namespace rawtool::cli {

namespace {

constexpr std::string_view help =
    "Usage: rawtool schema [--config FILE] [--db URL|PATH] [--database LABEL] [--json]\n"
    "                      [--schema NAME] [--pattern LIKE] [--offset N] [--limit N]\n"
    "                      [--log FILE|syslog|stderr] [--log-level LEVEL] [TABLE]\n"
    "\n"
    "Describes what the connected role can use. Without TABLE: a page of the\n"
    "tables, views, materialized views and foreign tables, with row-count\n"
    "estimates and comments (and, on the first page, the schemas). With TABLE\n"
    "(a name, or schema.name): its columns with types, nullability and defaults,\n"
    "its keys, constraints and indexes, and comments. PostgreSQL lists only\n"
    "objects the role has a privilege on; SQLite lists the file.\n"
    "\n"
    "Every name, type, default and comment is the database's, shown as untrusted\n"
    "content: names escaped in double quotes, comments quoted line by line. It\n"
    "runs rawtool's own pinned statements read-only, so a failure is a status and\n"
    "a log reference, as on the certified path.\n"
    "\n"
    "Options:\n"
    "  --config FILE   configuration file (JSON); see the README\n"
    "  --db URL|PATH   a PostgreSQL URL or a SQLite file path\n"
    "  --database LABEL  which configured database (default: the first)\n"
    "  --schema NAME   only this schema\n"
    "  --pattern LIKE  only objects whose name matches (% any run, _ one character)\n"
    "  --offset N      objects to skip: the next_offset of the previous page\n"
    "  --limit N       objects per page, 1 to 200 (default 50)\n"
    "  --json          print the structured surface (one JSON line) instead of text\n";

constexpr std::string_view examples =
    "  rawtool schema --db reviews.db\n"
    "  rawtool schema --db reviews.db reviews\n"
    "  rawtool schema --config config.json --pattern 'rev%' --json\n";

constexpr auto schema_options = with_database_options(std::array<OptionSpec, 5>{{
    {"--database", "LABEL"},
    {"--schema", "NAME"},
    {"--pattern", "LIKE"},
    {"--offset", "N"},
    {"--limit", "N"},
}});

std::uint64_t count_option(const Args& args, std::string_view name, std::uint64_t fallback) {
  const auto text = args.value(name);
  if (!text) return fallback;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || text->empty())
    throw UsageError(std::string(name) + " takes a whole number");
  return value;
}

}  // namespace

int run_schema(Arguments argv) {
  const Args args(argv, schema_options);
  if (args.help()) {
    write_all(1, std::string(help) + std::string(log_options_help) + "\n" + std::string(exit_status_help) + std::string(examples_lead) +
                     std::string(examples));
    return static_cast<int>(Exit::ok);
  }
  if (args.positionals().size() > 1) throw UsageError("give at most one table name");
  SchemaRequest request;
  if (!args.positionals().empty()) request.table = args.positionals().front();
  request.schema = args.value("--schema").value_or("");
  request.pattern = args.value("--pattern").value_or("");
  request.offset = count_option(args, "--offset", request.offset);
  request.limit = count_option(args, "--limit", request.limit);
  CallOptions options;
  options.database = args.value("--database").value_or("");
  auto tool = open_tool(args, LogDefault::state_file);
  // An unknown label or a limit out of range is a reply of its own (exit 1),
  // in rawtool's words, naming the argument and the rule.
  const Reply reply = tool->describe_schema(request, options);
  const Exit status = print_reply(reply, args.flag("--json"));
  print_log_pointer("schema", reply, tool->config().log);
  return static_cast<int>(status);
}

}  // namespace rawtool::cli
