// rawtool check-config: validate a configuration (and its catalog) before
// serving it.

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"

#include <rawtool/config.hpp>
#include <rawtool/tool.hpp>

#include <array>
#include <string>

namespace rawtool::cli {

namespace {

constexpr std::string_view help =
    "Usage: rawtool check-config --config FILE\n"
    "\n"
    "Reads the configuration and its catalog exactly as `rawtool mcp` would and\n"
    "reports the first problem, naming the field. Does not connect to any\n"
    "database. Prints a short summary when the configuration can be served.\n"
    "\n"
    "Exit status:\n"
    "  0  the configuration can be served\n"
    "  2  usage error or configuration error (the field is named on stderr)\n";

constexpr std::array<OptionSpec, 1> options{{{"--config", "FILE"}}};

}  // namespace

int run_check_config(Arguments argv) {
  const Args args(argv, options);
  if (args.help()) {
    write_all(1, help);
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
  const Config& config = tool->config();
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
  summary += '\n';
  write_all(1, summary);
  return static_cast<int>(Exit::ok);
}

}  // namespace rawtool::cli
