// rawtool check-config: validate a configuration (and its catalog) before
// serving it.

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"

#include <rawtool/config.hpp>
#include <rawtool/mcp.hpp>
#include <rawtool/render/escape.hpp>
#include <rawtool/shared_roles.hpp>
#include <rawtool/tool.hpp>

#include <array>
#include <string>

namespace rawtool::cli {

namespace {

constexpr std::string_view help =
    "Usage: rawtool check-config --config FILE [--connect]\n"
    "\n"
    "Reads the configuration and its catalog exactly as `rawtool mcp` would and\n"
    "reports the first problem, naming the field. Prints a short summary when the\n"
    "configuration can be served. It opens the log file the configuration names\n"
    "(creating it if missing), so that one that cannot be written is reported\n"
    "now. Without --connect it connects to no database.\n"
    "\n"
    "With --connect it also connects to every configured database and reports,\n"
    "per database, the server's version and encoding, the role, and every hazard\n"
    "the driver checks for: what the role can become or do that a read-only\n"
    "transaction does not stop (refused in read-only mode) or that an operator\n"
    "should know (reported only; a database's refuse_hazards makes the kinds it\n"
    "lists refused). Names the server sent are shown escaped, at most twenty per\n"
    "hazard and a count of the others. A database that cannot be reached is\n"
    "reported in rawtool's words on stdout and with the library's words on stderr.\n"
    "It warns when tokens (http.tokens) with different database scopes reach\n"
    "databases that connect as one PostgreSQL role on one server (one server: the\n"
    "same postmaster start time and port, as the server answers): their tenants\n"
    "can see and cancel each other's statements.\n"
    "\n"
    "With --connect it also prepares every catalog query on its database without\n"
    "running it (PostgreSQL: prepared, described and planned inside a READ ONLY\n"
    "transaction that is rolled back; SQLite: compiled) and reports, naming the\n"
    "query and the field, what only the engine knows: the SQL does not prepare,\n"
    "it is more than one statement, it uses more or fewer placeholders than the\n"
    "query declares parameters ($1.. on PostgreSQL, ?1.. on SQLite), it writes\n"
    "where the query runs read-only, a declared parameter type does not fit the\n"
    "type the server infers. The engine's own words follow, escaped and labelled.\n"
    "\n"
    "With --connect and http.oauth it also loads the issuer's key set\n"
    "(jwks_url or jwks_file) as `rawtool mcp --http` would, and says how many\n"
    "signing keys it can use.\n"
    "\n"
    "Exit status:\n"
    "  0  the configuration can be served (with --connect: every database answered,\n"
    "     no read-only database has a hazard that read-only mode refuses, and every\n"
    "     catalog query prepares as declared)\n"
    "  1  with --connect: a database could not be reached, a read-only database\n"
    "     has a refused hazard, a catalog query has a problem, or the OAuth\n"
    "     issuer's key set cannot be loaded\n"
    "  2  usage error or configuration error (the field is named on stderr)\n";

constexpr std::string_view examples =
    "  rawtool check-config --config config.json\n"
    "  rawtool check-config --config config.json --connect\n";

constexpr std::array<OptionSpec, 2> options{{{"--config", "FILE"}, {"--connect", {}}}};

/// A value the server sent, escaped and in double quotes: it cannot break the line.
std::string quoted(const Untrusted& value) {
  std::string out = "\"";
  render::append_escaped(out, value, render::EscapeContext::cell, render::RenderOptions{});
  out += '"';
  return out;
}

/// Prints whether the OAuth issuer's key set loads; 1 when it does not.
std::size_t print_oauth_check(const Config& config) {
  if (!config.http.oauth) return 0;
  try {
    write_all(1, "oauth: the issuer's key set: " + mcp::check_oauth_keys(config) + "\n");
    return 0;
  } catch (const std::runtime_error& error) {
    std::string line = "oauth: the issuer's key set could not be loaded: ";
    render::append_escaped(line, Untrusted(std::string_view(error.what())), render::EscapeContext::cell,
                           render::RenderOptions{});
    write_all(1, line + "\n");
    return 1;
  }
}

/// Prints the --connect part; returns the number of problems found.
std::size_t print_connect_check(Tool& tool) {
  std::size_t problems = 0;
  std::string out;
  const std::vector<DatabaseCheck> checks = tool.inspect_databases();
  for (const DatabaseCheck& check : checks) {
    const std::string head = "rawtool: database " + check.label + ": ";
    if (!check.report) {
      ++problems;
      out += head + "could not connect: " + std::string(unavailable_cause_text(check.cause).view()) + " (cause=" +
             std::string(unavailable_cause_name(check.cause)) + "); the library's words are on stderr\n";
      print_error("check-config", "database " + check.label + ": could not connect: " + quoted(check.complaint));
      continue;
    }
    const DatabaseReport& report = *check.report;
    out += head + std::string(engine_name(check.engine)) + ", " + std::string(access_mode_name(check.access)) +
           "; server version " + quoted(report.server_version) + "; encoding " + quoted(report.encoding);
    if (!report.role.empty()) out += "; role " + quoted(report.role);
    out += "; " + std::to_string(report.hazards.size()) + (report.hazards.size() == 1 ? " hazard\n" : " hazards\n");
    bool refused = false;
    for (const Hazard& hazard : report.hazards) {
      refused = refused || (hazard.refused && check.access == AccessMode::read_only);
      out += head + "hazard " + std::string(hazard_kind_name(hazard.kind)) +
             (hazard.refused ? " (refused in read-only mode): " : " (reported, not refused): ") + hazard.explanation.str();
      if (!hazard.names.empty()) {
        out += " Named: ";
        for (std::size_t i = 0; i < hazard.names.size(); ++i) out += (i == 0 ? "" : ", ") + quoted(hazard.names[i]);
        if (hazard.names_left_out > 0) out += ", and " + std::to_string(hazard.names_left_out) + " more";
        out += '.';
      }
      out += '\n';
    }
    if (refused) ++problems;
  }
  // A warning, not a problem: the configuration works, and the operator may
  // mean it (tokens of one tenant with scopes of different sizes).
  for (const SharedRole& shared : find_shared_roles(tool.config(), checks)) {
    out += "rawtool: warning: tokens ";
    for (std::size_t i = 0; i < shared.tokens.size(); ++i) out += (i == 0 ? "" : ", ") + shared.tokens[i];
    out += " have different database scopes but connect as one PostgreSQL role, " + quoted(shared.role) +
           ", on one server (databases ";
    for (std::size_t i = 0; i < shared.databases.size(); ++i) out += (i == 0 ? "" : ", ") + shared.databases[i];
    out += "): " + std::string(shared_role_consequence) + ".\n";
  }
  // A problem is a database: one that cannot be reached, or a read-only one with a refused hazard.
  out += problems == 0 ? "rawtool: connect check OK\n"
                       : "rawtool: connect check found " + std::to_string(problems) +
                             (problems == 1 ? " problem\n" : " problems\n");
  write_all(1, out);
  return problems;
}

/// The engine's complaint about a statement it would not prepare, escaped and
/// labelled as the engine's: codes, message, detail, hint, position.
std::string engine_words(const Failure& failure) {
  std::string out = "; the engine's words: ";
  if (!failure.sqlstate.empty()) out += "SQLSTATE " + quoted(failure.sqlstate) + " ";
  if (failure.sqlite_code) out += "SQLite code " + std::to_string(*failure.sqlite_code) + " ";
  out += quoted(failure.message);
  if (!failure.detail.empty()) out += ", detail " + quoted(failure.detail);
  if (!failure.hint.empty()) out += ", hint " + quoted(failure.hint);
  if (failure.position) out += ", at position " + std::to_string(*failure.position);
  return out;
}

/// Prints the catalog part of --connect; returns the number of problems found.
std::size_t print_catalog_check(Tool& tool) {
  if (tool.catalog().queries.empty()) return 0;
  const std::vector<CatalogQueryProblem> problems = tool.check_catalog_queries();
  std::string out;
  for (const CatalogQueryProblem& problem : problems) {
    out += "rawtool: catalog query " + problem.query.str() + ": " + problem.field.str() + ": " + problem.problem.str();
    if (problem.failure) out += engine_words(*problem.failure);
    if (!problem.engine_words.empty()) {
      if (problem.field.view() == "database") {
        print_error("check-config", "catalog query " + problem.query.str() + ": could not connect: " +
                                        quoted(problem.engine_words));
        out += "; the library's words are on stderr";
      } else {
        out += ": " + quoted(problem.engine_words);
      }
    }
    out += '\n';
  }
  const std::size_t count = tool.catalog().queries.size();
  out += problems.empty() ? "rawtool: catalog check OK: " + std::to_string(count) +
                                (count == 1 ? " query prepares as declared\n" : " queries prepare as declared\n")
                          : "rawtool: catalog check found " + std::to_string(problems.size()) +
                                (problems.size() == 1 ? " problem\n" : " problems\n");
  write_all(1, out);
  return problems.size();
}

}  // namespace

int run_check_config(Arguments argv) {
  const Args args(argv, options);
  if (args.help()) {
    write_all(1, std::string(help) + std::string(examples_lead) + std::string(examples));
    return static_cast<int>(Exit::ok);
  }
  const auto file = args.value("--config");
  if (!file) {
    throw UsageError("--config FILE is required");
  }
  if (!args.positionals().empty()) {
    throw UsageError("check-config takes no arguments");
  }
  auto tool = Tool::open(load_config(*file));
  mcp::check_tool_names(*tool);
  const Config& config = tool->config();
  if (!config.metrics.listen.empty() && !mcp::MetricsServer::valid_address(config.metrics.listen)) {
    throw ConfigError("metrics.listen", "must be HOST:PORT, HOST an IP address (an IPv6 one in brackets) or localhost");
  }
  // Labels are validated identifiers; targets are not printed (URLs may hold passwords).
  std::string summary = "rawtool: configuration OK: ";
  summary += std::to_string(config.databases.size());
  summary += config.databases.size() == 1 ? " database (" : " databases (";
  for (std::size_t i = 0; i < config.databases.size(); ++i) {
    if (i > 0) {
      summary += ", ";
    }
    summary += config.databases[i].label;
    summary += ' ';
    summary += access_mode_name(config.databases[i].access);
  }
  summary += "); raw path ";
  summary += tool->raw_path_enabled() ? "on" : "off";
  summary += "; catalog ";
  summary += config.catalog ? "loaded" : "none";
  summary += "; catalog_prose ";
  summary += config.render.catalog_prose == render::CatalogProse::quoted ? "quoted" : "omitted";
  summary += "; log ";
  if (config.log.destination) {
    summary += log_destination_name(*config.log.destination);
    if (*config.log.destination == LogDestination::file) {
      // The operator's own path, escaped like a cell.
      summary += ' ';
      render::append_escaped(summary, Untrusted(config.log.path.string()), render::EscapeContext::cell,
                             render::RenderOptions{});
    }
  } else {
    summary += "not set (rawtool mcp: stderr; query, certified, catalog: $XDG_STATE_HOME/rawtool/rawtool.log or "
               "~/.local/state/rawtool/rawtool.log)";
  }
  summary += ", level ";
  summary += log_level_name(config.log.level);
  summary += '\n';
  write_all(1, summary);
  if (args.flag("--connect")) {
    const std::size_t database_problems = print_connect_check(*tool);
    const std::size_t catalog_problems = print_catalog_check(*tool);
    const std::size_t oauth_problems = print_oauth_check(config);
    if (database_problems + catalog_problems + oauth_problems != 0) return static_cast<int>(Exit::failure);
  }
  return static_cast<int>(Exit::ok);
}

}  // namespace rawtool::cli
