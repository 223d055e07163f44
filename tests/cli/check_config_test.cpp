// `rawtool check-config --connect` through the real binary against the real
// PostgreSQL server and SQLite: what each database's role can do, reported
// to the operator with every server-sent name escaped.

#include "fixture.hpp"
#include "pg_server.hpp"
#include "process.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>

namespace {

using rawtool::test::pg_admin;
using rawtool::test::pg_url;
using rawtool::test::run_rawtool;
using rawtool::test::RunOptions;
using rawtool::test::ScratchFolder;
using rawtool::test::write_file;

RunOptions clean_env() {
  RunOptions options;
  for (const char* name : {"RAWTOOL_DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"}) {
    options.env.emplace_back(name, std::nullopt);
  }
  return options;
}

/// The lines of `text` that begin with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, std::string_view prefix) {
  std::vector<std::string> found;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (line.starts_with(prefix)) found.push_back(std::move(line));
    start = end + 1;
  }
  return found;
}

}  // namespace

TEST_CASE("check-config --connect names what each role can become, escaped, and fails on a refused hazard",
          "[cli][postgres]") {
  const auto url = pg_url();
  if (!url) return;
  const auto reader = pg_url(true);
  if (!reader) return;
  // A superuser role reachable through a NOINHERIT chain, named to forge a line
  // and reorder text when printed raw.
  const std::string hostile = "cli_su\nrawtool: connect check OK\xE2\x80\xAE";
  const std::string drop =
      "DO $$DECLARE r text; BEGIN FOREACH r IN ARRAY ARRAY[E'cli_su\\nrawtool: connect check OK\\u202E', "
      "'cli_check_mid', 'cli_check_login'] LOOP IF EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN "
      "EXECUTE format('DROP OWNED BY %I', r); EXECUTE format('DROP ROLE %I', r); END IF; END LOOP; END$$";
  pg_admin(drop);
  pg_admin("CREATE ROLE \"cli_su\nrawtool: connect check OK\xE2\x80\xAE\" SUPERUSER NOLOGIN;"
           "CREATE ROLE cli_check_mid NOINHERIT NOLOGIN; GRANT \"cli_su\nrawtool: connect check OK\xE2\x80\xAE\" TO cli_check_mid;"
           "CREATE ROLE cli_check_login LOGIN; GRANT cli_check_mid TO cli_check_login;"
           "GRANT CONNECT ON DATABASE rawtool_test TO cli_check_login");

  ScratchFolder folder;
  const auto config = folder.path() / "config.json";
  write_file(config, fmt::format(R"({{"databases": [
      {{"label": "reader", "url": "{}"}},
      {{"label": "escalates", "url": "{}?user=cli_check_login"}},
      {{"label": "gone", "url": "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"}},
      {{"label": "lite", "path": ":memory:"}}]}})",
                                 *reader, *url));
  const auto result = run_rawtool({"check-config", "--config", config.string(), "--connect"}, clean_env());
  pg_admin(drop);

  CHECK(result.exit_status == 1);
  // Every line of the report is rawtool's: the forged line is inside quotes, escaped.
  for (const std::string& line : lines_starting(result.out, "")) {
    INFO(line);
    CHECK(line.starts_with("rawtool: "));
  }
  CHECK(result.out.find("\xE2\x80\xAE") == std::string::npos);
  CHECK_THAT(result.out, Catch::Contains(R"("cli_su\nrawtool: connect check OK\u{202E}")"));
  const auto escalates = lines_starting(result.out, "rawtool: database escalates: hazard superuser (refused in read-only mode)");
  CHECK(escalates.size() == 1);
  CHECK(lines_starting(result.out, "rawtool: database reader: hazard").size() >= 1);
  CHECK(lines_starting(result.out, "rawtool: database reader: hazard superuser").empty());
  CHECK_THAT(result.out, Catch::Contains("rawtool: database reader: postgresql, read_only; server version \"15"));
  CHECK_THAT(result.out, Catch::Contains("rawtool: database gone: could not connect"));
  CHECK_THAT(result.out, Catch::Contains("rawtool: database lite: sqlite, read_only"));
  CHECK_THAT(result.out, Catch::Contains("rawtool: connect check found 2 problems"));
  // The library's words about the unreachable server go to stderr, escaped.
  CHECK_THAT(result.err, Catch::Contains("database gone: could not connect: \""));
  CHECK(result.out.find("Connection refused") == std::string::npos);

  // The role the README recommends passes.
  const auto config_ok = folder.path() / "ok.json";
  write_file(config_ok, fmt::format(R"({{"databases": [{{"label": "reader", "url": "{}"}}]}})", *reader));
  const auto ok = run_rawtool({"check-config", "--config", config_ok.string(), "--connect"}, clean_env());
  CHECK(ok.exit_status == 0);
  CHECK_THAT(ok.out, Catch::Contains("rawtool: connect check OK"));
}
