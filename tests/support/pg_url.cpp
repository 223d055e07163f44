#include "pg_url.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

namespace rawtool::test {

std::optional<std::string> pg_url(bool reader) {
  const char* name = reader ? "RAWTOOL_TEST_PG_READER_URL" : "RAWTOOL_TEST_PG_URL";
  const char* url = std::getenv(name);
  if (url != nullptr && *url != '\0') return std::string(url);
  const char* required = std::getenv("RAWTOOL_REQUIRE_PG");
  if (required != nullptr && std::string_view(required) == "1") {
    FAIL(name << " is not set, and RAWTOOL_REQUIRE_PG=1 says the PostgreSQL tests must run");
  }
  WARN("*** " << name << " is not set: this PostgreSQL test " << not_run << ". "
              << "Start a server with `eval \"$(bash .ci/pg-start)\"` to run it. ***");
  return std::nullopt;
}

}  // namespace rawtool::test
