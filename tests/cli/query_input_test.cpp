// Where `rawtool query` takes its statement from, through the real binary:
// the argument, stdin (`-`, or no argument when stdin is not a terminal) and
// --file; a statement larger than a command line can hold; and bad input
// refused in rawtool's words before anything runs.

#include "fixture.hpp"
#include "process.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

namespace {

using nlohmann::json;
using rawtool::test::run_rawtool;
using rawtool::test::RunOptions;
using rawtool::test::ScratchFolder;
using rawtool::test::ShopFixture;
using rawtool::test::write_file;

RunOptions clean_env(const ScratchFolder& state) { return rawtool::test::isolated_env(state.path()); }

/// A statement of at least `bytes` bytes that counts the reviews: the rest is a comment.
std::string padded_count(std::size_t bytes) {
  std::string sql = "SELECT count(*) AS n FROM reviews /* ";
  sql.append(bytes > sql.size() ? bytes - sql.size() : 0, 'x');
  sql += " */";
  return sql;
}

void check_usage_error(const rawtool::test::RunResult& result, const std::string& expected) {
  INFO(result.out << result.err);
  CHECK(result.exit_status == 2);
  CHECK(result.out.empty());
  CHECK_THAT(result.err, Catch::StartsWith("rawtool: query: ") && Catch::Contains(expected));
  CHECK(result.err.find('\n') == result.err.size() - 1);
}

}  // namespace

TEST_CASE("query reads the statement from stdin with -, and with no argument when stdin is not a terminal",
          "[cli][sqlite]") {
  ShopFixture shop;
  ScratchFolder state;
  RunOptions options = clean_env(state);
  options.stdin_bytes = "SELECT count(*) AS n\nFROM reviews;\n";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"query", "--db", shop.database().string(), "--json", "-"},
        std::vector<std::string>{"query", "--db", shop.database().string(), "--json"}}) {
    const auto result = run_rawtool(args, options);
    INFO(result.err);
    REQUIRE(result.exit_status == 0);
    CHECK(json::parse(result.out)["rows"] == json::array({json::array({"3"})}));
  }
}

TEST_CASE("query --file runs a statement larger than a command line can carry, up to max_statement_bytes",
          "[cli][sqlite]") {
  ShopFixture shop;
  ScratchFolder state;
  const RunOptions options = clean_env(state);
  // 1 MiB: eight times what Linux allows one argument (MAX_ARG_STRLEN, 128 KiB).
  const std::string sql = padded_count(1024 * 1024);
  write_file(shop.folder() / "big.sql", sql);
  write_file(shop.folder() / "big.json", R"({"databases": [{"label": "shop", "path": "shop.db", "limits": {"max_statement_bytes": 2097152}}]})");
  const std::string config = (shop.folder() / "big.json").string();
  const auto from_file = run_rawtool({"query", "--config", config, "--json", "--file", (shop.folder() / "big.sql").string()}, options);
  INFO(from_file.err);
  REQUIRE(from_file.exit_status == 0);
  CHECK(json::parse(from_file.out)["rows"] == json::array({json::array({"3"})}));

  RunOptions piped = options;
  piped.stdin_bytes = sql;
  const auto from_stdin = run_rawtool({"query", "--config", config, "--json", "-"}, piped);
  REQUIRE(from_stdin.exit_status == 0);
  CHECK(json::parse(from_stdin.out)["rows"] == json::array({json::array({"3"})}));

  // Past the database's limit nothing runs, and nothing is cut short.
  piped.stdin_bytes = padded_count(3 * 1024 * 1024);
  check_usage_error(run_rawtool({"query", "--config", config, "-"}, piped),
                    "the statement from stdin is longer than 2097152 bytes, the max_statement_bytes of database shop; "
                    "nothing was run");
  write_file(shop.folder() / "huge.sql", padded_count(3 * 1024 * 1024));
  check_usage_error(run_rawtool({"query", "--config", config, "--file", (shop.folder() / "huge.sql").string()}, options),
                    "is longer than 2097152 bytes");
}

TEST_CASE("query refuses a missing file, empty input, two sources and no SQL at a terminal, exit 2", "[cli][sqlite]") {
  ShopFixture shop;
  ScratchFolder state;
  const RunOptions options = clean_env(state);
  const std::string db = shop.database().string();
  const std::string missing = (shop.folder() / "no\x1b[2Jsuch.sql").string();
  const auto gone = run_rawtool({"query", "--db", db, "--file", missing}, options);
  check_usage_error(gone, "--file: cannot open \"" + shop.folder().string() + "/no\\x1B[2Jsuch.sql\": No such file or directory");
  CHECK(gone.err.find('\x1b') == std::string::npos);

  check_usage_error(run_rawtool({"query", "--db", db, "-"}, options), "no SQL given: the statement from stdin is empty");
  write_file(shop.folder() / "blank.sql", " \n\t\n");
  check_usage_error(run_rawtool({"query", "--db", db, "--file", (shop.folder() / "blank.sql").string()}, options),
                    "no SQL given: the statement in --file");
  check_usage_error(run_rawtool({"query", "--db", db, "--file", (shop.folder() / "blank.sql").string(), "SELECT 1"}, options),
                    "give the SQL as an argument, -, or --file FILE: one of them");

  // At a terminal, no argument means no SQL: rawtool does not sit waiting for typing.
  RunOptions terminal = options;
  terminal.stderr_is_terminal = true;
  terminal.stdin_is_terminal = true;
  const auto at_terminal = run_rawtool({"query", "--db", db}, terminal);
  CHECK(at_terminal.exit_status == 2);
  CHECK_THAT(at_terminal.err, Catch::StartsWith("rawtool: query: no SQL given;"));
}

TEST_CASE("an empty or oversized statement exits 2 whatever its source: the argument, stdin or --file", "[cli][sqlite]") {
  ShopFixture shop;
  ScratchFolder state;
  const RunOptions options = clean_env(state);
  const std::string config = (shop.folder() / "small.json").string();
  write_file(config, nlohmann::json{{"databases", {{{"label", "shop"}, {"path", shop.database().string()},
                                                   {"limits", {{"max_statement_bytes", 64}}}}}}}.dump());
  const std::string statement_file = (shop.folder() / "statement.sql").string();
  // Each source, given the same statement.
  const auto run_from = [&](const std::string& source, const std::string& sql) {
    RunOptions run = options;
    std::vector<std::string> args{"query", "--config", config};
    if (source == "argument") {
      args.insert(args.end(), {"--", sql});
    } else if (source == "stdin") {
      args.push_back("-");
      run.stdin_bytes = sql;
    } else {
      write_file(statement_file, sql);
      args.insert(args.end(), {"--file", statement_file});
    }
    return run_rawtool(args, run);
  };
  for (const std::string source : {"argument", "stdin", "file"}) {
    INFO("from " << source);
    // Nothing but white space, or too long: refused before anything runs, on stderr.
    for (const std::string& sql : {std::string(), std::string(" \n\t "), "SELECT 1 -- " + std::string(60, 'x')}) {
      INFO("statement: " << sql);
      const auto refused = run_from(source, sql);
      INFO(refused.out << refused.err);
      CHECK(refused.exit_status == 2);
      CHECK(refused.out.empty());
      CHECK_THAT(refused.err, Catch::Contains(sql.size() > 64 ? "is longer than 64 bytes, the max_statement_bytes of database shop"
                                                               : "no SQL given: the statement "));
    }
    // Nothing but a comment or a semicolon: the engine finds no statement; the same kind, the same status.
    for (const std::string sql : {"-- only a comment", ";"}) {
      const auto empty = run_from(source, sql);
      INFO(empty.out << empty.err);
      CHECK(empty.exit_status == 2);
      CHECK_THAT(empty.out, Catch::Contains("reason=empty_statement"));
    }
    // Exactly the limit runs.
    const auto fits = run_from(source, "SELECT 1 AS one -- " + std::string(64 - 19, 'x'));
    INFO(fits.out << fits.err);
    CHECK(fits.exit_status == 0);
  }
}
