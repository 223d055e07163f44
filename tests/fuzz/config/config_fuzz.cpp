// libFuzzer target on the configuration loader: rawtool::parse_config on the
// input, then Tool::open on what it accepts (which loads the catalog the
// configuration names and checks it against the databases, without
// connecting). Invariants: no crash, no exception but ConfigError, and every
// ConfigError names its field in rawtool's own words, never the input's bytes;
// again with every string value replaced by a marker no check accepts.

#include "config_error_check.hpp"

#include <rawtool/config.hpp>
#include <rawtool/tool.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <unistd.h>

namespace {

// A folder holding a catalog the fuzzed configuration can name ("catalog":
// "catalog.json"), made once per process. Its query runs on database "main".
const std::filesystem::path& base_dir() {
  static const std::filesystem::path dir = [] {
    auto path = std::filesystem::temp_directory_path() / ("rawtool-config-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    std::ofstream(path / "catalog.json")
        << R"({"queries":[{"name":"answer","description":"Says 42.","sql":"SELECT 42","database":"main"},)"
           R"({"name":"write","description":"Writes.","sql":"DELETE FROM t","access":"read_write"}]})";
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                      ("rawtool-config-fuzz-" + std::to_string(::getpid())),
                                  ignored);
    });
    return path;
  }();
  return dir;
}

void load_and_open(std::string_view text) {
  rawtool::Config config;
  if (!rawtool::fuzz::loads_or_names_field([&] { config = rawtool::parse_config(text, base_dir()); })) return;
  // A sink in place of the configured log destination: Tool::open would
  // otherwise create whatever file a fuzzed "log.path" names, anywhere.
  rawtool::ToolOptions options;
  options.log = [](std::string_view) {};
  rawtool::fuzz::loads_or_names_field([&] { (void)rawtool::Tool::open(std::move(config), std::move(options)); });
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The loader falls back to the environment when no database is listed;
  // the fuzzer's results must not depend on the machine it runs on.
  for (const char* name : {"RAWTOOL_DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"}) {
    ::unsetenv(name);
  }
  (void)base_dir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  load_and_open(text);

  const auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_discarded()) {
    int counter = 0;
    load_and_open(rawtool::fuzz::with_marked_strings(parsed, counter).dump());
  }
  return 0;
}
