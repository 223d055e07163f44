#include "cli/open_tool.hpp"

#include <rawtool/mcp.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <system_error>

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rawtool::cli {

namespace {

// What ConfigError::what() says after "field: ".
std::string problem_of(const ConfigError& e) {
  const std::string what = e.what();
  const std::string prefix = e.field() + ": ";
  return what.starts_with(prefix) ? what.substr(prefix.size()) : what;
}

/// The database --db names; its problems are the command line's.
DatabaseConfig database_from_flag(const std::string& db, const std::filesystem::path& cwd) {
  try {
    return database_for_target(db, cwd);
  } catch (const ConfigError& e) {
    throw UsageError("--db " + problem_of(e));
  }
}

Config database_config(const Args& args) {
  const auto file = args.value("--config");
  const auto db = args.value("--db");
  const std::filesystem::path cwd = std::filesystem::current_path();
  if (!file) {
    Config config;
    if (db) {
      config.databases.push_back(database_from_flag(*db, cwd));
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
    DatabaseConfig replacement = database_from_flag(*db, cwd);
    if (config.databases.empty()) {
      config.databases.push_back(std::move(replacement));
    } else {
      DatabaseConfig& first = config.databases.front();
      if (replacement.kind != first.kind) {
        // Engine-specific settings do not carry over to the other engine.
        first.password_file.clear();
        first.refuse_hazards.clear();
        first.sqlite = SqliteOptions{};
        first.sqlite.create_if_missing = false;
      }
      first.target = std::move(replacement.target);
      first.kind = replacement.kind;
    }
  }
  return config;
}

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before any thread starts
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// mkdir -p, each folder it creates with mode 0700 (the XDG base directory
// specification's mode for the state folder). Throws ConfigError for field "log".
void make_private_folders(const std::filesystem::path& folder) {
  std::filesystem::path built;
  for (const auto& part : folder) {
    built /= part;
    if (::mkdir(built.c_str(), 0700) == 0 || errno == EEXIST) continue;
    const int error = errno;
    throw ConfigError("log", "the folder for the default operator log file cannot be created (" +
                                 std::generic_category().message(error) +
                                 "); name a destination with --log or the configuration's log key");
  }
}

}  // namespace

std::filesystem::path default_log_file() {
  // XDG: a relative XDG_STATE_HOME is invalid and is ignored.
  if (auto state = environment("XDG_STATE_HOME"); state && std::filesystem::path(*state).is_absolute()) {
    return std::filesystem::path(*state) / "rawtool" / "rawtool.log";
  }
  if (auto home = environment("HOME"); home && std::filesystem::path(*home).is_absolute()) {
    return std::filesystem::path(*home) / ".local" / "state" / "rawtool" / "rawtool.log";
  }
  throw ConfigError("log",
                    "no default operator log file: neither XDG_STATE_HOME nor HOME is an absolute path; name a "
                    "destination with --log or the configuration's log key");
}

CommandConfig config_from(const Args& args, LogDefault log_default) {
  CommandConfig result{database_config(args), LogSource::configuration};
  LogConfig& log = result.config.log;
  if (auto level = args.value("--log-level")) {
    auto parsed = log_level_from_name(*level);
    if (!parsed) throw UsageError("--log-level must be error, warn, info or debug");
    log.level = *parsed;
  }
  if (auto destination = args.value("--log")) {
    result.log_source = LogSource::flag;
    if (*destination == "stderr") {
      log.destination = LogDestination::standard_error;
      log.path.clear();
    } else if (*destination == "syslog") {
      log.destination = LogDestination::syslog;
      log.path.clear();
    } else if (destination->empty()) {
      throw UsageError("--log needs a file, syslog or stderr");
    } else {
      log.destination = LogDestination::file;
      log.path = std::filesystem::absolute(*destination).lexically_normal();
    }
  } else if (!log.destination) {
    result.log_source = LogSource::command_default;
    if (log_default == LogDefault::standard_error) {
      log.destination = LogDestination::standard_error;
    } else {
      log.destination = LogDestination::file;
      log.path = default_log_file();
      make_private_folders(log.path.parent_path());
    }
  }
  return result;
}

std::unique_ptr<Tool> open_configured(CommandConfig command) {
  const LogSource source = command.log_source;
  try {
    auto tool = Tool::open(std::move(command.config));
    // One program over the library and its MCP server: every command refuses
    // a configuration `rawtool mcp` would refuse.
    mcp::check_tool_names(*tool);
    return tool;
  } catch (const ConfigError& e) {
    const bool about_log = e.field() == "log.path" || e.field() == "log.destination";
    if (!about_log || source == LogSource::configuration) throw;
    if (source == LogSource::flag) throw UsageError("--log: " + problem_of(e));
    throw ConfigError("log", "the default operator log file " + default_log_file().string() + " " + problem_of(e) +
                                 "; name a destination with --log or the configuration's log key");
  }
}

std::unique_ptr<Tool> open_tool(const Args& args, LogDefault log_default) {
  return open_configured(config_from(args, log_default));
}

void apply_format(const Args& args, Config& config) {
  const auto format = args.value("--format");
  if (!format) return;
  if (*format != "lines" && *format != "table") throw UsageError("--format is lines or table");
  if (args.flag("--json")) throw UsageError("--format lays out the text surface; --json prints the structured one instead");
  config.render.rows_layout = *format == "table" ? render::RowsLayout::table : render::RowsLayout::lines;
  if (config.render.rows_layout == render::RowsLayout::table) config.render.table_line_width = terminal_columns();
}

std::size_t terminal_columns() {
  // COLUMNS first, as shells and other tools honour it; then the terminal's own size.
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr && *columns != '\0') {
    char* end = nullptr;
    errno = 0;
    const unsigned long value = std::strtoul(columns, &end, 10);
    if (errno == 0 && *end == '\0' && value > 0 && value <= 100000 && columns[0] != '-') return value;
  }
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 0;
}

}  // namespace rawtool::cli
