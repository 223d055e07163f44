// rawtool query: the raw path from the command line.

#include "cli/args.hpp"
#include "cli/call_watch.hpp"
#include "cli/commands.hpp"
#include "cli/open_tool.hpp"
#include "cli/output.hpp"

#include <rawtool/render/escape.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace rawtool::cli {

namespace {

constexpr std::string_view help =
    "Usage: rawtool query [--config FILE] [--db URL|PATH] [--database LABEL] [--json | --format table]\n"
    "                     [--log FILE|syslog|stderr] [--log-level LEVEL] [--] SQL\n"
    "       rawtool query [options] -          (the statement from stdin)\n"
    "       rawtool query [options] --file FILE\n"
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
    "  --file FILE     read the statement from FILE (a command line holds about\n"
    "                  128 KiB; max_statement_bytes allows up to 16 MiB)\n"
    "  -               read the statement from stdin; with no SQL at all and stdin\n"
    "                  not a terminal, stdin is read too\n"
    "  --              end of options, for SQL that begins with \"-\"\n";

constexpr std::string_view examples =
    "  rawtool query --db reviews.db \"SELECT author, rating FROM reviews\"\n"
    "  rawtool query --config config.json --format table \"SELECT * FROM reviews\"\n"
    "  echo \"SELECT count(*) FROM reviews\" | rawtool query --db reviews.db --json -\n";

// The options every database-using command takes, the choice of database and
// where the statement comes from.
constexpr auto query_options =
    with_database_options(std::array<OptionSpec, 3>{{{"--database", "LABEL"}, {"--file", "FILE"}, format_option}});

/// A path the user gave, escaped and quoted for a message.
std::string shown_path(const std::string& path) {
  std::string shown = "\"";
  render::append_escaped(shown, Untrusted(path), render::EscapeContext::cell, render::RenderOptions{});
  shown += '"';
  return shown;
}

/// `sql` from `source` if it can run: throws UsageError, naming `source`, when
/// it holds nothing but white space or is longer than `limit`. The same rule
/// for every source, so that an empty or oversized statement exits 2 whether
/// it came as the argument, from stdin or from a file.
std::string checked_statement(std::string sql, const std::string& source, std::size_t limit, const std::string& database) {
  if (sql.size() > limit) {
    throw UsageError("the statement " + source + " is longer than " + std::to_string(limit) +
                     " bytes, the max_statement_bytes of database " + database + "; nothing was run");
  }
  if (sql.find_first_not_of(" \t\r\n") == std::string::npos) throw UsageError("no SQL given: the statement " + source + " is empty");
  return sql;
}

/// The statement from `fd`, read to at most `limit` + 1 bytes (a statement is
/// never cut short: one that is too long is not run at all), then checked.
std::string read_statement(int fd, const std::string& source, std::size_t limit, const std::string& database) {
  std::string sql;
  std::array<char, 65536> buffer{};
  while (sql.size() <= limit) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw UsageError("cannot read the statement " + source + ": " + std::generic_category().message(errno));
    }
    if (n == 0) break;
    sql.append(buffer.data(), static_cast<std::size_t>(n));
  }
  return checked_statement(std::move(sql), source, limit, database);
}

/// Where the statement comes from: the argument, `-` (stdin), --file, or
/// stdin when there is no argument and stdin is not a terminal.
std::string statement_from(const Args& args, const DatabaseConfig& database) {
  const auto& positionals = args.positionals();
  const auto file = args.value("--file");
  if (positionals.size() > 1) throw UsageError("give the SQL as one argument (quote it)");
  if (file && !positionals.empty()) throw UsageError("give the SQL as an argument, -, or --file FILE: one of them");
  const std::size_t limit = database.limits.max_statement_bytes;
  if (file) {
    const int fd = ::open(file->c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw UsageError("--file: cannot open " + shown_path(*file) + ": " + std::generic_category().message(errno));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    return read_statement(fd, "in --file " + shown_path(*file), limit, database.label);
  }
  if (!positionals.empty() && positionals.front() != "-") {
    return checked_statement(std::string(positionals.front()), "given as the argument", limit, database.label);
  }
  if (positionals.empty() && ::isatty(STDIN_FILENO) == 1) throw UsageError("no SQL given");
  return read_statement(STDIN_FILENO, "from stdin", limit, database.label);
}

}  // namespace

int run_query(Arguments argv) {
  const Args args(argv, query_options);
  if (args.help()) {
    write_all(1, std::string(help) + std::string(format_option_help) + std::string(log_options_help) + "\n" +
                     std::string(exit_status_help) + std::string(examples_lead) + std::string(examples));
    return static_cast<int>(Exit::ok);
  }
  if (args.positionals().size() > 1) throw UsageError("give the SQL as one argument (quote it)");
  CommandConfig command = config_from(args, LogDefault::state_file);
  apply_format(args, command.config);
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
  const DatabaseConfig& database =
      options.database.empty() ? config.databases.front()
                               : *std::find_if(config.databases.begin(), config.databases.end(),
                                               [&](const DatabaseConfig& d) { return d.label == options.database; });
  const std::string sql = statement_from(args, database);
  auto tool = open_configured(std::move(command));
  const WatchedReply watched = watched_call("query", tool->config().log, options,
                                            [&](const CallOptions& call_options) { return tool->raw(sql, call_options); });
  if (watched.interrupted_by) {
    write_all(STDERR_FILENO, interruption_line("query", *watched.interrupted_by, watched.reply));
    return interrupted_exit_status(*watched.interrupted_by);
  }
  Exit status = print_reply(watched.reply, args.flag("--json"));
  print_log_pointer("query", watched.reply, tool->config().log);
  // A statement of nothing but comments or semicolons is refused by the
  // database's own parser; it is the same kind of input error as one of
  // nothing but white space, and exits the same way.
  const nlohmann::json& structured = watched.reply.structured();
  if (structured.value("kind", "") == "refusal" && structured.value("reason", "") == "empty_statement") status = Exit::usage;
  return static_cast<int>(status);
}

}  // namespace rawtool::cli
