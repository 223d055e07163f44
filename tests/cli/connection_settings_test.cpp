// Connection settings through the real binary: what names a database is
// validated when the configuration is read, never guessed into a SQLite path
// that fails later, and secrets come from the environment or a file.

#include "fixture.hpp"
#include "pg_server.hpp"
#include "process.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <thread>
#include <chrono>

namespace {

using nlohmann::json;
using rawtool::test::pg_url;
using rawtool::test::run_rawtool;
using rawtool::test::RunOptions;
using rawtool::test::ScratchFolder;
using rawtool::test::write_file;

RunOptions clean_env(const std::filesystem::path& state) {
  return rawtool::test::isolated_env(state, {"SHOP_DB_URL", "SHOP_DB_PASSWORD"});
}

/// One line on stderr, nothing on stdout, exit status 2.
void check_configuration_error(const rawtool::test::RunResult& result, const std::string& expected) {
  INFO(result.out << result.err);
  CHECK(result.exit_status == 2);
  CHECK(result.out.empty());
  CHECK_THAT(result.err, Catch::StartsWith("rawtool: ") && Catch::Contains(expected));
  CHECK(result.err.find('\n') == result.err.size() - 1);
}

}  // namespace

TEST_CASE("an unknown scheme, a bare path in url and an unset ${NAME} stop every command with exit 2, naming the field",
          "[cli][config]") {
  ScratchFolder folder;
  const RunOptions env = clean_env(folder.path());
  const auto config = [&](const std::string& name, const std::string& database) {
    write_file(folder.path() / name, R"({"databases": [)" + database + "]}");
    return (folder.path() / name).string();
  };
  const std::string mysql = config("mysql.json", R"({"label": "shop", "url": "mysql://app@db/shop"})");
  const std::string bare = config("bare.json", R"({"label": "shop", "url": "shop.db"})");
  const std::string unset = config("unset.json", R"({"label": "shop", "url": "${SHOP_DB_URL}"})");
  for (const auto& command : std::vector<std::vector<std::string>>{
           {"query", "SELECT 1"}, {"certified", "anything"}, {"catalog"}, {"mcp"}, {"check-config"}}) {
    DYNAMIC_SECTION(command.front()) {
      const auto with = [&](const std::string& file) {
        std::vector<std::string> args{command.front(), "--config", file};
        args.insert(args.end(), command.begin() + 1, command.end());
        return run_rawtool(args, env);
      };
      check_configuration_error(with(mysql),
                                "configuration error: databases[0].url: uses the scheme mysql, which is not one rawtool speaks");
      check_configuration_error(with(bare), "configuration error: databases[0].url: names no engine");
      check_configuration_error(
          with(unset), "configuration error: databases[0].url: names ${SHOP_DB_URL}, but the environment variable "
                       "SHOP_DB_URL is not set or is empty");
    }
  }
  // The same configuration runs once the variable is set.
  ScratchFolder data;
  RunOptions with_url = env;
  with_url.env.emplace_back("SHOP_DB_URL", "sqlite::memory:");
  const auto ran = run_rawtool({"query", "--config", unset, "--json", "SELECT 6 * 7 AS answer"}, with_url);
  INFO(ran.err);
  CHECK(ran.exit_status == 0);
  CHECK(json::parse(ran.out)["rows"] == json::array({json::array({"42"})}));
}

TEST_CASE("the --db option and RAWTOOL_DATABASE_URL refuse another engine's URL and an unreplaced ${NAME}", "[cli][config]") {
  ScratchFolder folder;
  RunOptions env = clean_env(folder.path());
  check_configuration_error(run_rawtool({"query", "--db", "mysql://app@db/shop", "SELECT 1"}, env),
                            "query: --db uses the scheme mysql, which is not one rawtool speaks");
  RunOptions from_env = env;
  from_env.env.emplace_back("RAWTOOL_DATABASE_URL", "${DATABASE_URL}");
  check_configuration_error(run_rawtool({"query", "SELECT 1"}, from_env),
                            "configuration error: RAWTOOL_DATABASE_URL: holds ${, a variable nobody replaced");
  CHECK_FALSE(std::filesystem::exists(folder.path() / "mysql:"));
}

TEST_CASE("a read-write SQLite path that does not exist is a configuration error unless create_if_missing is set",
          "[cli][config][sqlite]") {
  ScratchFolder folder;
  const RunOptions env = clean_env(folder.path());
  write_file(folder.path() / "strict.json", R"({"databases": [{"path": "typo.db", "access": "read_write"}]})");
  check_configuration_error(
      run_rawtool({"query", "--config", (folder.path() / "strict.json").string(), "CREATE TABLE t (x)"}, env),
      "configuration error: databases[0]: is a read_write SQLite database whose file does not exist");
  CHECK_FALSE(std::filesystem::exists(folder.path() / "typo.db"));

  write_file(folder.path() / "create.json",
             R"({"databases": [{"path": "new.db", "access": "read_write", "create_if_missing": true}]})");
  const auto created =
      run_rawtool({"query", "--config", (folder.path() / "create.json").string(), "CREATE TABLE t (x)"}, env);
  CHECK(created.exit_status == 0);
  CHECK(std::filesystem::exists(folder.path() / "new.db"));
}

TEST_CASE("a configuration file that cannot be read is named, escaped, with the reason", "[cli][config]") {
  ScratchFolder folder;
  const RunOptions env = clean_env(folder.path());
  const std::string missing = (folder.path() / "gone\x1b[2J.json").string();
  for (const char* command : {"query", "check-config", "mcp"}) {
    DYNAMIC_SECTION(command) {
      std::vector<std::string> args{command, "--config", missing};
      if (std::string_view(command) == "query") args.emplace_back("SELECT 1");
      const auto result = run_rawtool(args, env);
      check_configuration_error(result, "configuration error: configuration: cannot open the file \"" +
                                            folder.path().string() + "/gone\\x1B[2J.json\": No such file or directory");
      CHECK(result.err.find('\x1b') == std::string::npos);
    }
  }
}

TEST_CASE("a password file is read when connecting, one that is gone makes the database unavailable, said in the log",
          "[cli][config][postgres]") {
  const auto reader = pg_url(true);
  if (!reader) return;
  ScratchFolder folder;
  RunOptions env = clean_env(folder.path());
  env.env.emplace_back("SHOP_DB_PASSWORD", "not-the-password");
  write_file(folder.path() / "secret", "s3cret-from-a-file\n");
  // An application name of its own, to find this test's connections on the server.
  write_file(folder.path() / "config.json",
             json{{"databases", json::array({json{{"label", "shop"},
                                                  {"url", *reader + "?application_name=rawtool_password_file_test"},
                                                  {"password_file", "secret"}}})},
                  {"log", {{"path", "operator.log"}}}}
                 .dump());
  const std::string config = (folder.path() / "config.json").string();
  // The test server trusts loopback connections, so this shows the file is read and used, not that a
  // server checked it.
  const auto ok = run_rawtool({"query", "--config", config, "--json", "SELECT current_user AS who"}, env);
  INFO(ok.out << ok.err);
  CHECK(ok.exit_status == 0);

  std::filesystem::remove(folder.path() / "secret");
  const auto check = run_rawtool({"check-config", "--config", config}, env);
  check_configuration_error(check, "configuration error: databases[0].password_file: cannot be opened: No such file or directory");

  // Removed after the configuration was read: the connection is unavailable. The agent is told only
  // that; the operator log (here the MCP server's stderr) has the reason, in rawtool's words.
  write_file(folder.path() / "secret", "x\n");
  RunOptions mcp_env = env;
  mcp_env.keep_stdin_open = true;
  rawtool::test::RunningRawtool server({"mcp", "--config", config, "--log", "stderr"}, mcp_env);
  REQUIRE(server.wait_for([](const auto& so_far) { return so_far.err.find("\"serving\"") != std::string::npos; },
                          std::chrono::seconds(30)));
  // The server connects once at start to check the database, and keeps the
  // connection: once it has, the file goes, and so does that connection, so
  // that the call must connect again.
  const std::string mine = "application_name = 'rawtool_password_file_test'";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (rawtool::test::pg_admin("SELECT count(*) FROM pg_stat_activity WHERE " + mine) == "0" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::filesystem::remove(folder.path() / "secret");
  rawtool::test::pg_admin("SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE " + mine);
  server.write_stdin(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"raw_sql","arguments":{"sql":"SELECT 1"}}})"
      "\n");
  server.close_stdin();
  const auto served = server.finish();
  INFO(served.out << served.err);
  CHECK(served.exit_status == 0);
  // The agent is told the cause, in rawtool's words, and not the file's name or the system's complaint.
  CHECK_THAT(served.out, Catch::Contains("status=unavailable; cause=password_file"));
  CHECK(served.out.find("secret") == std::string::npos);
  CHECK(served.out.find("No such file") == std::string::npos);
  CHECK_THAT(served.err, Catch::Contains("\"event\":\"raw_unavailable\""));
  CHECK_THAT(served.err, Catch::Contains("rawtool could not open the password file (password_file): No such file or directory"));
}
