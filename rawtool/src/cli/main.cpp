// The `rawtool` program: dispatches to one subcommand per file and turns the
// errors they throw into rawtool's own words on stderr and a documented exit
// status.

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"

#include <rawtool/config.hpp>

#include <exception>
#include <new>
#include <string>
#include <vector>

namespace {

using rawtool::cli::Exit;

std::string top_level_help() {
  std::string text =
      "Usage: rawtool <command> [options]\n"
      "       rawtool --help | --version\n"
      "\n"
      "Runs SQL for AI agents against PostgreSQL and SQLite. The database's reply,\n"
      "failure text included, is shown as untrusted content that cannot pass for\n"
      "anything rawtool wrote; pinned queries from a catalog (the certified path)\n"
      "report failures as a status only.\n"
      "\n"
      "Commands:\n";
  for (const auto& command : rawtool::cli::subcommands) {
    text += "  ";
    text += command.name;
    text.append(14 - command.name.size(), ' ');
    text += command.summary;
    text += '\n';
  }
  text +=
      "\n"
      "Run `rawtool <command> --help` for a command's options.\n"
      "\n";
  text += rawtool::cli::exit_status_help;
  text += rawtool::cli::examples_lead;
  text +=
      "  rawtool query --db reviews.db \"SELECT author, rating FROM reviews\"\n"
      "  rawtool certified --config config.json product_reviews product_id=1\n"
      "  rawtool mcp --config config.json\n";
  return text;
}

int dispatch(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) {
    rawtool::cli::print_error("", "no command given; run `rawtool --help`");
    return static_cast<int>(Exit::usage);
  }
  const std::string_view name = args.front();
  if (name == "--help" || name == "-h" || name == "help") {
    rawtool::cli::write_all(1, top_level_help());
    return static_cast<int>(Exit::ok);
  }
  if (name == "--version" || name == "-V") {
    rawtool::cli::write_all(1, "rawtool " RAWTOOL_VERSION "\n");
    return static_cast<int>(Exit::ok);
  }
  for (const auto& command : rawtool::cli::subcommands) {
    if (command.name != name) {
      continue;
    }
    try {
      return command.run(rawtool::cli::Arguments(args).subspan(1));
    } catch (const rawtool::cli::UsageError& e) {
      rawtool::cli::print_error(command.name,
                                std::string(e.what()) + "; run `rawtool " + std::string(command.name) + " --help`");
      return static_cast<int>(Exit::usage);
    } catch (const rawtool::ConfigError& e) {
      // ConfigError's text is rawtool's own: it names a field and the problem.
      rawtool::cli::print_error(command.name, std::string("configuration error: ") + e.what());
      return static_cast<int>(Exit::usage);
    } catch (const std::bad_alloc&) {
      rawtool::cli::print_error(command.name, "out of memory");
      return static_cast<int>(Exit::failure);
    } catch (const std::exception&) {
      // Anything else may carry text from outside; say only that it happened.
      rawtool::cli::print_error(command.name, "internal error; nothing more can be shown safely");
      return static_cast<int>(Exit::failure);
    }
  }
  rawtool::cli::print_error("", "unknown command; run `rawtool --help` for the list");
  return static_cast<int>(Exit::usage);
}

}  // namespace

int main(int argc, char** argv) {
  return dispatch(argc, argv);
}
