// The subcommands through the real binary: exit statuses, help, errors on
// stderr, and the replies of query, certified and catalog on SQLite.

#include "fixture.hpp"
#include "process.hpp"

#include "oracle.hpp"
#include "pg_url.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
using rawtool::test::prose_canary;
using rawtool::test::run_rawtool;
using rawtool::test::RunOptions;
using rawtool::test::shop_canary;
using rawtool::test::ShopFixture;

const std::vector<std::string> subcommand_names = {"query",  "certified", "catalog", "schema",
                                                   "mcp",    "render",    "demo",    "check-config"};

/// Where the commands' default operator log goes during these tests: a
/// scratch folder, never the home of whoever runs them.
const rawtool::test::ScratchFolder& state_home() {
  static const rawtool::test::ScratchFolder folder;
  return folder;
}

/// No database from the environment leaks into a test.
RunOptions clean_env() {
  RunOptions options;
  for (const char* name : {"RAWTOOL_DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER",
                           "PGSERVICE", "NO_COLOR", "COLUMNS"}) {
    options.env.emplace_back(name, std::nullopt);
  }
  options.env.emplace_back("XDG_STATE_HOME", state_home().path().string());
  return options;
}

bool mentions(const std::string& text, std::string_view word) {
  return text.find(word) != std::string::npos;
}

/// True when every line holding `word` begins with the renderer's quote prefix.
bool only_quoted(const std::string& text, std::string_view word) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    if (line.find(word) != std::string_view::npos && !line.starts_with("> ")) return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

TEST_CASE("rawtool --help lists every command and the exit statuses, --version names the version", "[cli]") {
  const auto help = run_rawtool({"--help"});
  CHECK(help.exit_status == 0);
  for (const auto& name : subcommand_names) CHECK_THAT(help.out, Catch::Contains("  " + name + " "));
  CHECK_THAT(help.out, Catch::Contains("0  success"));
  CHECK_THAT(help.out, Catch::Contains("2  usage error"));
  const auto version = run_rawtool({"--version"});
  CHECK(version.exit_status == 0);
  CHECK(std::regex_match(version.out, std::regex("rawtool [0-9]+\\.[0-9]+\\.[0-9]+\n")));
}

TEST_CASE("every subcommand answers --help with its usage and exit statuses, exit status 0", "[cli]") {
  for (const auto& name : subcommand_names) {
    DYNAMIC_SECTION(name) {
      const auto result = run_rawtool({name, "--help"});
      CHECK(result.exit_status == 0);
      CHECK_THAT(result.out, Catch::StartsWith("Usage: rawtool " + name));
      CHECK_THAT(result.out, Catch::Contains("Exit status"));
      CHECK(result.err.empty());
    }
  }
}

TEST_CASE("a usage error exits 2 with one line of rawtool's own words on stderr", "[cli]") {
  const std::vector<std::vector<std::string>> lines = {
      {},
      {"frobnicate"},
      {"query"},
      {"query", "--bogus", "SELECT 1"},
      {"query", "--config"},
      {"query", "SELECT 1", "SELECT 2"},
      {"certified"},
      {"certified", "--json", "--json", "q"},
      {"catalog", "extra"},
      {"check-config"},
      {"mcp", "--json"},
      {"render", "positional"},
      {"render", "--budget", "lots"},
      {"render", "--label", "bad label"},
      {"demo", "--verbose"},
  };
  for (const auto& args : lines) {
    std::string shown = "rawtool";
    for (const auto& a : args) shown += " " + a;
    DYNAMIC_SECTION(shown) {
      const auto result = run_rawtool(args, clean_env());
      CHECK(result.exit_status == 2);
      CHECK(result.out.empty());
      CHECK_THAT(result.err, Catch::StartsWith("rawtool: "));
      CHECK(result.err.find('\n') == result.err.size() - 1);
    }
  }
}

TEST_CASE("a key=value argument to certified that is not one exits 2 before anything runs", "[cli]") {
  ShopFixture shop;
  const auto config = shop.config("config.json").string();
  for (const char* bad : {"product_id", "=1"}) {
    const auto result = run_rawtool({"certified", "--config", config, "product_reviews", bad}, clean_env());
    CHECK(result.exit_status == 2);
    CHECK_THAT(result.err, Catch::Contains("key=value"));
  }
  const auto twice =
      run_rawtool({"certified", "--config", config, "product_reviews", "product_id=1", "product_id=2"}, clean_env());
  CHECK(twice.exit_status == 2);
  CHECK_THAT(twice.err, Catch::Contains("given twice"));
}

TEST_CASE("a configuration error exits 2 and names the field, for every subcommand that reads one", "[cli]") {
  ShopFixture shop;
  rawtool::test::write_file(shop.folder() / "bad.json",
                            R"({"databases": [{"label": "shop", "path": "shop.db", "limits": {"max_rows": 0}}]})");
  const std::string bad = (shop.folder() / "bad.json").string();
  const std::vector<std::vector<std::string>> lines = {
      {"query", "--config", bad, "SELECT 1"},
      {"certified", "--config", bad, "product_reviews", "product_id=1"},
      {"catalog", "--config", bad},
      {"check-config", "--config", bad},
      {"mcp", "--config", bad},
  };
  for (const auto& args : lines) {
    DYNAMIC_SECTION(args.front()) {
      const auto result = run_rawtool(args, clean_env());
      CHECK(result.exit_status == 2);
      CHECK(result.out.empty());
      CHECK_THAT(result.err, Catch::Contains("databases[0].limits.max_rows"));
    }
  }
  const auto missing = run_rawtool({"check-config", "--config", (shop.folder() / "absent.json").string()}, clean_env());
  CHECK(missing.exit_status == 2);
  CHECK_THAT(missing.err, Catch::Contains("configuration error"));
}

TEST_CASE("with certified_tools per_query, a catalog query named as one of the MCP server's own tools is a configuration "
          "error for every command, and none without it",
          "[cli][certified]") {
  ShopFixture shop;
  for (const std::string name : {"raw_sql", "raw_sql_write", "certified_query", "describe_catalog", "describe_schema"}) {
    rawtool::test::write_file(shop.folder() / "own.json",
                              R"({"queries": [{"name": "fine", "description": "d", "sql": "SELECT 1"}, {"name": ")" + name +
                                  R"(", "description": "d", "sql": "SELECT 1"}]})");
    for (const std::string mode : {"single", "per_query"}) {
      rawtool::test::write_file(shop.folder() / "own_config.json",
                                R"({"databases": [{"label": "shop", "path": "shop.db"}], "catalog": "own.json", "certified_tools": ")" +
                                    mode + "\"}");
      const std::string config = (shop.folder() / "own_config.json").string();
      for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
               {"check-config", "--config", config}, {"mcp", "--config", config}, {"catalog", "--config", config}}) {
        INFO(name << ' ' << mode << ' ' << args.front());
        const auto result = run_rawtool(args, clean_env());
        if (mode == "single") {
          CHECK(result.exit_status == 0);
        } else {
          CHECK(result.exit_status == 2);
          CHECK(result.out.empty());
          CHECK_THAT(result.err, Catch::Contains("catalog: queries[1] (" + name + ").name: is the name of one of rawtool's own MCP tools"));
        }
      }
    }
  }
}

TEST_CASE("without --config, --db or a database in the environment, query exits 2", "[cli]") {
  const auto result = run_rawtool({"query", "SELECT 1"}, clean_env());
  CHECK(result.exit_status == 2);
  CHECK_THAT(result.err, Catch::Contains("configuration error"));
}

TEST_CASE("check-config accepts a servable configuration with exit status 0 and summarises it", "[cli]") {
  ShopFixture shop;
  const auto result = run_rawtool({"check-config", "--config", shop.config("config.json").string()}, clean_env());
  CHECK(result.exit_status == 0);
  CHECK_THAT(result.out, Catch::Contains("configuration OK"));
  CHECK_THAT(result.out, Catch::Contains("shop read_only"));
  CHECK(!mentions(result.out, "shop.db"));
}

TEST_CASE("query prints rows with exit status 0, on the text and the structured surface", "[cli][sqlite]") {
  ShopFixture shop;
  const std::string db = shop.database().string();
  const auto text = run_rawtool({"query", "--db", db, "SELECT id, author, body FROM reviews ORDER BY id"}, clean_env());
  REQUIRE(text.exit_status == 0);
  CHECK(rawtool::test::text_surface_problems(text.out).empty());
  const auto cells = rawtool::test::row_cells(text.out);
  REQUIRE(cells.size() == 3);
  CHECK(cells[0][2] == std::optional<std::string>("Bright.\x1b[2K"));
  CHECK(cells[2][2] == std::nullopt);
  CHECK(text.out.find('\x1b') == std::string::npos);

  const auto structured =
      run_rawtool({"query", "--db", db, "--json", "SELECT id, author, body FROM reviews ORDER BY id"}, clean_env());
  REQUIRE(structured.exit_status == 0);
  const json reply = json::parse(structured.out);
  CHECK(reply.dump().find("Bright.\\u001b[2K") != std::string::npos);
}

TEST_CASE("query shows a database failure as untrusted content with exit status 1", "[cli][sqlite]") {
  ShopFixture shop;
  const auto result = run_rawtool(
      {"query", "--db", shop.database().string(),
       "SELECT json_extract(p.specs, r.spec_path) FROM reviews r JOIN products p ON p.id = r.product_id"},
      clean_env());
  CHECK(result.exit_status == 1);
  CHECK(rawtool::test::text_surface_problems(result.out).empty());
  CHECK(mentions(result.out, shop_canary));
  CHECK(only_quoted(result.out, shop_canary));
  CHECK(only_quoted(result.out, "rawtool: certified"));
}

TEST_CASE("query refuses a write on a read-only database with exit status 1", "[cli][sqlite]") {
  ShopFixture shop;
  const auto result = run_rawtool({"query", "--db", shop.database().string(), "DELETE FROM reviews"}, clean_env());
  CHECK(result.exit_status == 1);
  const auto count =
      run_rawtool({"query", "--db", shop.database().string(), "--json", "SELECT count(*) AS n FROM reviews"},
                  clean_env());
  REQUIRE(count.exit_status == 0);
  CHECK(json::parse(count.out).dump().find("\"3\"") != std::string::npos);
}

TEST_CASE("a SQL argument that begins with a dash runs after --", "[cli][sqlite]") {
  ShopFixture shop;
  const auto result =
      run_rawtool({"query", "--db", shop.database().string(), "--", "-- a comment\nSELECT 1 AS one"}, clean_env());
  CHECK(result.exit_status == 0);
  CHECK(rawtool::test::column_names(result.out) == std::vector<std::string>{"one"});
}

TEST_CASE("certified prints rows with exit status 0, and a failure as a status only with exit status 1",
          "[cli][sqlite]") {
  ShopFixture shop;
  const std::string config = shop.config("config.json").string();
  const auto rows = run_rawtool({"certified", "--config", config, "product_reviews", "product_id=1"}, clean_env());
  CHECK(rows.exit_status == 0);
  CHECK(rawtool::test::row_cells(rows.out).size() == 2);

  for (bool as_json : {false, true}) {
    std::vector<std::string> args = {"certified", "--config", config, "product_reviews", "product_id=2"};
    if (as_json) args.insert(args.begin() + 1, "--json");
    const auto failed = run_rawtool(args, clean_env());
    CHECK(failed.exit_status == 1);
    // Not one byte of the planted text reaches stdout or stderr; stderr says
    // in one line where the operator log is (tests/cli/log_test.cpp reads it).
    CHECK(!mentions(failed.out, shop_canary));
    CHECK(!mentions(failed.out, "SYSTEM"));
    CHECK(!mentions(failed.err, shop_canary));
    CHECK(!mentions(failed.err, "SYSTEM"));
    const std::smatch pointer = [&] {
      std::smatch m;
      std::regex_search(failed.err, m, std::regex("under reference (ref-[0-9a-f]{32})"));
      return m;
    }();
    REQUIRE(pointer.size() == 2);
    CHECK(mentions(failed.out, pointer[1].str()));
    CHECK(mentions(failed.out, "execution_failed"));
  }
}

TEST_CASE("certified refuses arguments that do not fit the query with exit status 1", "[cli][sqlite]") {
  ShopFixture shop;
  const auto result = run_rawtool(
      {"certified", "--config", shop.config("config.json").string(), "product_reviews", "product_id=zero"},
      clean_env());
  CHECK(result.exit_status == 1);
  CHECK(mentions(result.out, "invalid_arguments"));
  // Which parameter and which rule, on the text and the structured surface.
  CHECK(mentions(result.out, "rawtool: argument product_id: is not an integer in decimal form (rule=type)"));
  const auto structured = run_rawtool(
      {"certified", "--config", shop.config("config.json").string(), "--json", "product_reviews", "product_id=zero"},
      clean_env());
  const json reply = json::parse(structured.out);
  CHECK(reply["argument"]["name"] == "product_id");
  CHECK(reply["argument"]["rule"] == "type");
}

TEST_CASE("schema lists the tables and describes one, on the text and the structured surface", "[cli][sqlite]") {
  ShopFixture shop;
  const std::string db = shop.database().string();
  const auto listing = run_rawtool({"schema", "--db", db}, clean_env());
  REQUIRE(listing.exit_status == 0);
  CHECK(rawtool::test::text_surface_problems(listing.out).empty());
  CHECK(mentions(listing.out, "what the connected role can use"));
  const auto cells = rawtool::test::row_cells(listing.out);
  bool products = false;
  for (const auto& row : cells) products = products || (row.size() > 1 && row[1] == std::optional<std::string>("products"));
  CHECK(products);

  const auto table = run_rawtool({"schema", "--db", db, "--json", "reviews"}, clean_env());
  REQUIRE(table.exit_status == 0);
  const json reply = json::parse(table.out);
  CHECK(reply["scope"] == "table");
  CHECK(reply["sections"]["columns"]["rows"][0]["name"] == "id");
  CHECK(reply["certified_provenance"]["query"] == "describe_schema");

  const auto missing = run_rawtool({"schema", "--db", db, "no_such_table"}, clean_env());
  CHECK(missing.exit_status == 1);
  CHECK(mentions(missing.out, "rule=not_found"));
  const auto out_of_range = run_rawtool({"schema", "--db", db, "--limit", "999"}, clean_env());
  CHECK(out_of_range.exit_status == 1);
  CHECK(mentions(out_of_range.out, "rawtool: argument limit: must be at most 200 (rule=maximum)"));
  const auto not_a_number = run_rawtool({"schema", "--db", db, "--offset", "ten"}, clean_env());
  CHECK(not_a_number.exit_status == 2);
}

TEST_CASE("catalog_prose set in a configuration file governs both halves of catalog and certified replies",
          "[cli][sqlite]") {
  ShopFixture shop;
  const std::string quoted = shop.config("quoted.json", R"("catalog_prose": "quoted")").string();
  const std::string omitted = shop.config("omitted.json", R"("catalog_prose": "omitted")").string();

  const auto quoted_text = run_rawtool({"catalog", "--config", quoted}, clean_env());
  REQUIRE(quoted_text.exit_status == 0);
  CHECK(mentions(quoted_text.out, prose_canary));
  CHECK(only_quoted(quoted_text.out, prose_canary));
  CHECK(rawtool::test::text_surface_problems(quoted_text.out).empty());
  const auto quoted_json = run_rawtool({"catalog", "--json", "--config", quoted}, clean_env());
  REQUIRE(quoted_json.exit_status == 0);
  CHECK(mentions(json::parse(quoted_json.out).dump(), prose_canary));

  for (const auto& args : std::vector<std::vector<std::string>>{
           {"catalog", "--config", omitted},
           {"catalog", "--json", "--config", omitted},
           {"certified", "--config", omitted, "product_reviews", "product_id=1"},
           {"certified", "--json", "--config", omitted, "product_reviews", "product_id=1"},
           {"certified", "--config", omitted, "product_reviews", "product_id=2"},
           {"certified", "--json", "--config", omitted, "product_reviews", "product_id=2"},
       }) {
    const auto result = run_rawtool(args, clean_env());
    CHECK(result.exit_status != 2);
    CHECK(!mentions(result.out, prose_canary));
  }
  const auto omitted_text = run_rawtool({"catalog", "--config", omitted}, clean_env());
  CHECK(mentions(omitted_text.out, "omitted"));
  const auto omitted_json = run_rawtool({"catalog", "--json", "--config", omitted}, clean_env());
  CHECK(mentions(omitted_json.out, "product_reviews"));
}

TEST_CASE("the quoted catalog prose in certified replies stays inside quotes", "[cli][sqlite]") {
  ShopFixture shop;
  const std::string quoted = shop.config("quoted.json", R"("catalog_prose": "quoted")").string();
  const auto result = run_rawtool({"certified", "--config", quoted, "product_reviews", "product_id=1"}, clean_env());
  CHECK(result.exit_status == 0);
  CHECK(only_quoted(result.out, prose_canary));
}

TEST_CASE("no colour when stdout is a pipe, colour only on a terminal without NO_COLOR", "[cli][sqlite]") {
  ShopFixture shop;
  const std::vector<std::string> args = {"query", "--db", shop.database().string(),
                                         "SELECT body FROM reviews WHERE id = 1"};
  const auto piped = run_rawtool(args, clean_env());
  REQUIRE(piped.exit_status == 0);
  CHECK(piped.out.find('\x1b') == std::string::npos);

  RunOptions terminal = clean_env();
  terminal.stdout_is_terminal = true;
  const auto coloured = run_rawtool(args, terminal);
  REQUIRE(coloured.exit_status == 0);
  CHECK(mentions(coloured.out, "\x1b[1;36mrawtool:\x1b[0m"));
  // The cell's own escape sequence is still shown escaped, never sent raw.
  CHECK(!mentions(coloured.out, "Bright.\x1b"));

  terminal.env.emplace_back("NO_COLOR", "1");
  const auto plain = run_rawtool(args, terminal);
  REQUIRE(plain.exit_status == 0);
  CHECK(plain.out.find('\x1b') == std::string::npos);
}

TEST_CASE("with raw_path false in the configuration file, query refuses with exit status 1 and runs nothing",
          "[cli][sqlite]") {
  ShopFixture shop;
  const auto config = shop.config("noraw.json", R"("raw_path": false)").string();
  const auto result = run_rawtool({"query", "--config", config, "SELECT author FROM reviews"}, clean_env());
  CHECK(result.exit_status == 1);
  CHECK(!mentions(result.out, "mallory"));
  CHECK(rawtool::test::row_cells(result.out).empty());
  const auto check = run_rawtool({"check-config", "--config", config}, clean_env());
  CHECK(check.exit_status == 0);
  CHECK_THAT(check.out, Catch::Contains("raw path off"));
}

TEST_CASE("rawtool mcp speaks only JSON-RPC on stdout and exits 0 when stdin closes", "[cli][sqlite]") {
  ShopFixture shop;
  RunOptions options = clean_env();
  options.stdin_bytes =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli-test","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"raw_sql","arguments":{"sql":"SELECT author FROM reviews ORDER BY id"}}})"
      "\n";
  const auto result = run_rawtool({"mcp", "--config", shop.config("config.json").string()}, options);
  CHECK(result.exit_status == 0);
  std::vector<json> messages;
  std::size_t start = 0;
  while (start < result.out.size()) {
    const auto end = result.out.find('\n', start);
    REQUIRE(end != std::string::npos);
    messages.push_back(json::parse(result.out.substr(start, end - start)));
    start = end + 1;
  }
  REQUIRE(messages.size() == 2);
  for (const auto& m : messages) CHECK(m.at("jsonrpc") == "2.0");
  CHECK(messages[0].at("id") == 1);
  CHECK(messages[1].at("id") == 2);
  CHECK(messages[1].at("result").at("isError") == false);
  CHECK(mentions(messages[1].dump(), "mallory"));
}

TEST_CASE("query reaches PostgreSQL through --db and through RAWTOOL_DATABASE_URL", "[cli][postgres]") {
  const auto reader = rawtool::test::pg_url(true);
  if (!reader) return;
  const char* url = reader->c_str();
  const auto rows = run_rawtool({"query", "--db", url, "SELECT 42 AS answer"}, clean_env());
  CHECK(rows.exit_status == 0);
  CHECK(rawtool::test::row_cells(rows.out) ==
        std::vector<std::vector<std::optional<std::string>>>{{std::optional<std::string>("42")}});

  RunOptions from_env = clean_env();
  from_env.env.emplace_back("RAWTOOL_DATABASE_URL", url);
  const auto failure = run_rawtool({"query", "--json", "SELECT 1/0"}, from_env);
  CHECK(failure.exit_status == 1);
  const json reply = json::parse(failure.out);
  CHECK(reply.at("kind") == "raw_failure");
  CHECK(reply.at("sqlstate") == "22012");
}

TEST_CASE("query --database runs on the configured database with that label and refuses a label none has", "[cli][sqlite]") {
  ShopFixture shop;
  rawtool::test::write_file(shop.folder() / "two.json",
                            R"({"databases": [{"label": "shop", "path": "shop.db"}, {"label": "scratch", "path": ":memory:"}]})");
  const std::string config = (shop.folder() / "two.json").string();

  const auto first = run_rawtool({"query", "--config", config, "--json", "SELECT count(*) AS n FROM reviews"}, clean_env());
  REQUIRE(first.exit_status == 0);
  CHECK(json::parse(first.out)["raw_provenance"]["database"] == "shop");

  const auto second = run_rawtool({"query", "--config", config, "--database", "scratch", "--json", "SELECT 7 AS n"}, clean_env());
  REQUIRE(second.exit_status == 0);
  const json reply = json::parse(second.out);
  CHECK(reply["raw_provenance"]["database"] == "scratch");
  CHECK(reply["rows"] == json::array({json::array({"7"})}));
  // The shop's table is not in the second database: the statement really ran there.
  const auto missing = run_rawtool({"query", "--config", config, "--database", "scratch", "SELECT count(*) FROM reviews"}, clean_env());
  CHECK(missing.exit_status == 1);
  CHECK_THAT(missing.out, Catch::Contains("no such table: reviews"));

  const auto unknown = run_rawtool({"query", "--config", config, "--database", "nope\x1b[2K", "SELECT 1"}, clean_env());
  CHECK(unknown.exit_status == 2);
  CHECK(unknown.out.empty());
  CHECK_THAT(unknown.err, Catch::Contains("--database names no configured database (configured: shop, scratch)"));
  CHECK(unknown.err.find('\x1b') == std::string::npos);
}

TEST_CASE("query --format table counts a cut column name the way it counts cut cells", "[cli][sqlite][table]") {
  ShopFixture shop;
  const std::string db = shop.database().string();
  const std::string name = std::string(41, 'n');
  const auto names_only = run_rawtool({"query", "--db", db, "--format", "table", "SELECT 1 AS " + name + ", 2 AS short"}, clean_env());
  INFO(names_only.out << names_only.err);
  REQUIRE(names_only.exit_status == 0);
  CHECK(rawtool::test::text_surface_problems(names_only.out, rawtool::render::RowsLayout::table).empty());
  CHECK(mentions(names_only.out, "\nrawtool: cut: 1 column name wider than 40 columns is shown cut there"));
  const auto both = run_rawtool(
      {"query", "--db", db, "--format", "table", "SELECT replace(hex(zeroblob(30)), '0', 'w') AS " + name + " UNION ALL SELECT 'x'"}, clean_env());
  INFO(both.out << both.err);
  REQUIRE(both.exit_status == 0);
  CHECK(mentions(both.out, "\nrawtool: cut: 1 cell and 1 column name wider than 40 columns are shown cut there"));
  // A name exactly as wide as the table allows is not cut.
  const auto fits = run_rawtool({"query", "--db", db, "--format", "table", "SELECT 1 AS " + std::string(40, 'n')}, clean_env());
  CHECK_FALSE(mentions(fits.out, "rawtool: cut:"));
}

TEST_CASE("query and certified --format table print aligned, escaped columns, cut wide cells and say so, --json is "
          "unchanged",
          "[cli][sqlite][table]") {
  ShopFixture shop;
  const std::string db = shop.database().string();
  const std::string sql = "SELECT id, author, body, replace(hex(zeroblob(30)), '0', 'w') AS wide FROM reviews ORDER BY id";
  const auto table = run_rawtool({"query", "--db", db, "--format", "table", sql}, clean_env());
  INFO(table.out << table.err);
  REQUIRE(table.exit_status == 0);
  CHECK(rawtool::test::text_surface_problems(table.out, rawtool::render::RowsLayout::table).empty());
  // The planted escape sequence is still escaped, and nothing but the renderer's prefixes opens a line.
  CHECK(table.out.find('\x1b') == std::string::npos);
  const auto cells = rawtool::test::row_cells(table.out, rawtool::render::RowsLayout::table);
  REQUIRE(cells.size() == 3);
  CHECK(cells[0][2] == std::optional<std::string>("Bright.\x1b[2K"));
  CHECK(cells[2][2] == std::nullopt);
  CHECK(cells[0][3] == std::optional<std::string>(std::string(40, 'w')));  // cut at the table's width
  CHECK(mentions(table.out, "\nrawtool: cut: 3 cells wider than 40 columns are shown cut there"));
  CHECK(mentions(table.out, "untrusted"));  // the boundary is still named
  // Columns align: the separators stand at the same place on the column line and every row line.
  std::set<std::size_t> first_separators;
  std::size_t start = 0;
  while (start < table.out.size()) {
    const std::size_t end = table.out.find('\n', start);
    const std::string line = table.out.substr(start, end - start);
    if (line.starts_with("columns: ") || line.starts_with("row ")) first_separators.insert(line.find(" | "));
    start = end + 1;
  }
  CHECK(first_separators.size() == 1);

  const auto certified = run_rawtool(
      {"certified", "--config", shop.config("config.json").string(), "--format", "table", "product_reviews", "product_id=1"},
      clean_env());
  CHECK(certified.exit_status == 0);
  CHECK(rawtool::test::row_cells(certified.out, rawtool::render::RowsLayout::table).size() == 2);
  CHECK(mentions(certified.out, "path=certified product_reviews@"));

  // --json is the machine form whatever the layout: --format with it is a usage error, and without it unchanged.
  const auto both = run_rawtool({"query", "--db", db, "--json", "--format", "table", sql}, clean_env());
  CHECK(both.exit_status == 2);
  CHECK(both.out.empty());
  const auto bad = run_rawtool({"query", "--db", db, "--format", "grid", sql}, clean_env());
  CHECK(bad.exit_status == 2);
  CHECK(mentions(bad.err, "--format is lines or table"));
  const auto structured = run_rawtool({"query", "--db", db, "--json", sql}, clean_env());
  REQUIRE(structured.exit_status == 0);
  CHECK(json::parse(structured.out).at("rows").at(0).at(3) == std::string(60, 'w'));
}

TEST_CASE("query --format table fits lines to $COLUMNS, measuring wide characters by the columns they take",
          "[cli][sqlite][table]") {
  ShopFixture shop;
  const std::string db = shop.database().string();
  // Four 50-column cells, two of them of wide characters.
  const std::string sql =
      "SELECT id, replace(hex(zeroblob(25)), '0', 'w') AS a, replace(hex(zeroblob(25)), '0', 'x') AS b, "
      "replace(hex(zeroblob(25)), '0', '\xE4\xB8\xAD') AS c, replace(hex(zeroblob(25)), '0', '\xE8\xAA\x9E') AS d FROM reviews";
  for (const std::string columns : {"80", "120", "160"}) {
    RunOptions env = clean_env();
    env.env.emplace_back("COLUMNS", columns);
    const auto table = run_rawtool({"query", "--db", db, "--format", "table", sql}, env);
    INFO(table.out << table.err);
    REQUIRE(table.exit_status == 0);
    CHECK(rawtool::test::text_surface_problems(table.out, rawtool::render::RowsLayout::table).empty());
    CHECK(mentions(table.out, "(to fit the terminal's " + columns + " columns)"));
    std::size_t start = 0;
    std::size_t lines = 0;
    while (start < table.out.size()) {
      const std::size_t end = table.out.find('\n', start);
      const std::string line = table.out.substr(start, end - start);
      start = end + 1;
      if (!line.starts_with("columns: ") && !line.starts_with("row ")) continue;
      ++lines;
      // Terminal columns: a wide character is three bytes here and takes two.
      std::size_t width = 0;
      for (std::size_t i = 0; i < line.size(); ++i) {
        const auto byte = static_cast<unsigned char>(line[i]);
        if (byte == 0xE4 || byte == 0xE8) {
          width += 2;
          i += 2;
        } else {
          ++width;
        }
      }
      CHECK(width <= std::stoul(columns));
    }
    CHECK(lines == 4);
  }
  // Not a number: the terminal's size, and here (no terminal) the fixed cut only.
  RunOptions junk = clean_env();
  junk.env.emplace_back("COLUMNS", "wide");
  const auto unfitted = run_rawtool({"query", "--db", db, "--format", "table", sql}, junk);
  CHECK(mentions(unfitted.out, "\nrawtool: cut: 12 cells wider than 40 columns are shown cut there, marked by"));
}
