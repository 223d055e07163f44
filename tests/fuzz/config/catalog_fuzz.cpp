// libFuzzer target on the catalog loader: rawtool::parse_catalog on the input,
// then, for a catalog it accepts, Tool::open with that catalog file beside a
// read-only and a read-write database (checking each query's database and
// access), describe_catalog, and bind_arguments with arguments of every type.
// Invariants: no crash, no exception but ConfigError, every ConfigError names
// its field in rawtool's own words (also with every string value replaced by
// a marker), and the catalog's prose cannot break the text surface.

#include "config_error_check.hpp"

#include "oracle.hpp"

#include <rawtool/catalog.hpp>
#include <rawtool/config.hpp>
#include <rawtool/tool.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <unistd.h>

namespace {

const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    auto path = std::filesystem::temp_directory_path() / ("rawtool-catalog-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    return path;
  }();
  return dir;
}

void open_with_catalog(std::string_view text) {
  const auto file = scratch() / "catalog.json";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  rawtool::Config config;
  rawtool::DatabaseConfig primary;
  primary.label = "main";
  primary.kind = rawtool::TargetKind::sqlite_path;
  primary.target = ":memory:";
  rawtool::DatabaseConfig rw = primary;
  rw.label = "rw";
  rw.access = rawtool::AccessMode::read_write;
  config.databases = {primary, rw};
  config.catalog = file;

  std::unique_ptr<rawtool::Tool> tool;
  if (!rawtool::fuzz::loads_or_names_field([&] { tool = rawtool::Tool::open(config); })) return;
  const rawtool::Reply described = tool->describe_catalog();
  const auto problems = rawtool::test::text_surface_problems(described.text());
  if (!problems.empty()) rawtool::fuzz::violated("describe_catalog broke the text surface", problems.front());

  // Arguments of every type against every query: binding reports problems as
  // values in rawtool's words, never throws.
  static const nlohmann::json argument_sets[] = {
      nlohmann::json::object(),
      nullptr,
      {{"a", 1}, {"b", "x"}, {"c", true}, {"d", 2.5}, {"e", nullptr}},
      {{"id", "2024-02-30"}, {"when", "2024-01-01T00:00:00Z"}, {"n", "-12"}, {"x", "1e999"}},
  };
  for (const auto& query : tool->catalog().queries) {
    for (const auto& arguments : argument_sets) {
      try {
        (void)rawtool::bind_arguments(query, arguments);
      } catch (...) {
        rawtool::fuzz::violated("bind_arguments threw");
      }
    }
  }
}

void load(std::string_view text) {
  if (rawtool::fuzz::loads_or_names_field([&] { (void)rawtool::parse_catalog(text); })) open_with_catalog(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  load(text);
  const auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_discarded()) {
    int counter = 0;
    load(rawtool::fuzz::with_marked_strings(parsed, counter).dump());
  }
  return 0;
}
