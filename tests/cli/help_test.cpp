// Every --help page ends with examples, and every example runs as printed:
// in the folder `rawtool demo --keep` leaves, with rawtool on PATH.

#include "process.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace {

using rawtool::test::RunOptions;
using rawtool::test::run_rawtool;
using rawtool::test::ScratchFolder;

/// The lines of `help` after its "Examples" line, without their indent. Empty
/// when the page does not end with examples.
std::vector<std::string> examples_of(const std::string& help) {
  const auto lead = help.rfind("\nExamples");
  if (lead == std::string::npos) return {};
  std::vector<std::string> lines;
  std::size_t start = help.find('\n', lead + 1) + 1;
  while (start < help.size()) {
    const std::size_t end = help.find('\n', start);
    const std::string line = help.substr(start, end - start);
    if (!line.starts_with("  ")) return {};  // something after the examples: they do not end the page
    lines.push_back(line.substr(2));
    start = end == std::string::npos ? help.size() : end + 1;
  }
  return lines;
}

}  // namespace

TEST_CASE("every --help page ends with examples that run as printed in the demo's kept folder", "[cli][help]") {
  ScratchFolder tmp;
  RunOptions options;
  options.env.emplace_back("TMPDIR", tmp.path().string());
  options.env.emplace_back("XDG_STATE_HOME", tmp.path().string());
  options.env.emplace_back("NO_COLOR", "1");
  options.env.emplace_back("COLUMNS", std::nullopt);
  for (const char* name : {"RAWTOOL_DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"})
    options.env.emplace_back(name, std::nullopt);
  const auto kept = run_rawtool({"demo", "--keep"}, options);
  REQUIRE(kept.exit_status == 0);
  std::smatch folder;
  REQUIRE(std::regex_search(kept.out, folder, std::regex("The demo's files are kept in (\\S+):")));

  // rawtool on PATH, as if installed.
  RunOptions in_folder = options;
  in_folder.working_folder = folder[1].str();
  in_folder.env.emplace_back("PATH", rawtool::test::rawtool_binary().parent_path().string() + ":" + std::getenv("PATH"));
  in_folder.launcher = {"bash", "-e", "-o", "pipefail"};

  std::size_t examples = 0;
  for (const std::string page : {"", "query", "certified", "catalog", "schema", "mcp", "render", "demo", "check-config"}) {
    const auto help = page.empty() ? run_rawtool({"--help"}, options) : run_rawtool({page, "--help"}, options);
    INFO("rawtool " << page << " --help:\n" << help.out);
    REQUIRE(help.exit_status == 0);
    const std::vector<std::string> lines = examples_of(help.out);
    CHECK(lines.size() >= 2);
    for (const std::string& example : lines) {
      INFO("example: " << example);
      CHECK(example.find("rawtool ") != std::string::npos);
      ++examples;
      // A server on HTTP runs until stopped: it must listen, then stop cleanly on SIGTERM.
      std::string script = example + "\n";
      std::smatch http;
      if (std::regex_search(example, http, std::regex("--http (\\S+):(\\d+)"))) {
        const std::string probe = "(exec 3<>/dev/tcp/" + http[1].str() + "/" + http[2].str() + ") 2>/dev/null";
        script = example + " &\nserver=$!\nfor attempt in $(seq 200); do " + probe + " && break; sleep 0.05; done\n" + probe +
                 "\nkill -TERM $server\nwait $server\n";
      }
      const std::filesystem::path file = tmp.path() / "example.sh";
      rawtool::test::write_file(file, script);
      // The launcher runs `bash -e -o pipefail SCRIPT` (the binary's path is the script's unused $1).
      RunOptions run = in_folder;
      run.launcher.push_back(file.string());
      const auto result = run_rawtool({}, run);
      INFO(result.out << result.err);
      CHECK(result.exit_status == 0);
      // An MCP server writes nothing to stdout without a client; everything else prints its answer.
      if (example.find("rawtool mcp") == std::string::npos) CHECK(!result.out.empty());
    }
  }
  CHECK(examples >= 19);
}
