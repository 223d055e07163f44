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
