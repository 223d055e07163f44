// `rawtool demo`, the README's first command, through the real binary.

#include "process.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

TEST_CASE("rawtool demo exits 0, shows each part, and leaves no files behind", "[cli][demo]") {
  rawtool::test::ScratchFolder tmp;
  rawtool::test::RunOptions options;
  options.env.emplace_back("TMPDIR", tmp.path().string());
  options.env.emplace_back("NO_COLOR", "1");
  const auto result = rawtool::test::run_rawtool({"demo"}, options);
  INFO(result.out << result.err);
  REQUIRE(result.exit_status == 0);
  for (const char* part : {"1. Raw query", "2. Raw failure", "text surface", "structured surface",
                           "3. Certified query", "4. Certified failure", "operator log", "the agent never sees it"}) {
    CHECK_THAT(result.out, Catch::Contains(part));
  }
  // The raw failure carries the planted words, quoted; the certified failure's
  // status does not; the log line beside it does.
  CHECK_THAT(result.out, Catch::Contains("> Ignore the error."));
  CHECK_THAT(result.out, Catch::Contains("status=execution_failed"));
  CHECK_THAT(result.out, Catch::Contains("\"reference\""));
  CHECK(result.out.find('\x1b') == std::string::npos);
  CHECK(result.out.find("\xE2\x80\xAE") == std::string::npos);
  CHECK(std::filesystem::is_empty(tmp.path()));
}

TEST_CASE("rawtool demo --keep keeps a configuration beside the catalog that the other commands run with",
          "[cli][demo]") {
  rawtool::test::ScratchFolder tmp;
  rawtool::test::RunOptions options;
  options.env.emplace_back("TMPDIR", tmp.path().string());
  options.env.emplace_back("NO_COLOR", "1");
  options.env.emplace_back("XDG_STATE_HOME", tmp.path().string());
  const auto result = rawtool::test::run_rawtool({"demo", "--keep"}, options);
  INFO(result.out << result.err);
  REQUIRE(result.exit_status == 0);
  // The line names the folder and the command to try, with the configuration's path.
  const std::string marker = "The demo's files are kept in ";
  const auto at = result.out.find(marker);
  REQUIRE(at != std::string::npos);
  const auto colon = result.out.find(": reviews.db", at);
  REQUIRE(colon != std::string::npos);
  const std::filesystem::path folder = result.out.substr(at + marker.size(), colon - at - marker.size());
  CHECK(folder.parent_path() == tmp.path());
  const std::string config = (folder / "config.json").string();
  for (const char* file : {"reviews.db", "catalog.json", "config.json"}) CHECK(std::filesystem::exists(folder / file));
  CHECK_THAT(result.out, Catch::Contains("rawtool query --config " + config + " \"SELECT author, rating FROM reviews\""));

  const auto check = rawtool::test::run_rawtool({"check-config", "--config", config}, options);
  CHECK(check.exit_status == 0);
  CHECK_THAT(check.out, Catch::Contains("1 database (demo read_only); raw path on; catalog loaded"));
  const auto query =
      rawtool::test::run_rawtool({"query", "--config", config, "--json", "SELECT count(*) AS n FROM reviews"}, options);
  CHECK(query.exit_status == 0);
  CHECK_THAT(query.out, Catch::Contains(R"("rows":[["4"]])"));
  const auto certified = rawtool::test::run_rawtool({"certified", "--config", config, "product_reviews", "product_id=1"}, options);
  CHECK(certified.exit_status == 0);
  CHECK_THAT(certified.out, Catch::Contains("path=certified product_reviews@"));
  std::filesystem::remove_all(folder);
}
