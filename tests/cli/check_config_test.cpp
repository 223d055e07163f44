// `rawtool check-config --connect` through the real binary against the real
// PostgreSQL server and SQLite: what each database's role can do, reported
// to the operator with every server-sent name escaped.

#include "fixture.hpp"
#include "pg_server.hpp"
#include "process.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

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
  CHECK_THAT(result.out, Catch::Contains("rawtool: database reader: postgresql, read_only; server version \"" +
                                         pg_admin("SHOW server_version") + "\""));
  CHECK_THAT(result.out, Catch::Contains("rawtool: database gone: could not connect"));
  CHECK_THAT(result.out, Catch::Contains("rawtool: database lite: sqlite, read_only"));
  CHECK_THAT(result.out, Catch::Contains("rawtool: connect check found 2 problems"));
  // The library's words about the unreachable server go to stderr, escaped.
  CHECK_THAT(result.err, Catch::Contains("database gone: could not connect: \""));
  CHECK(result.out.find("Connection refused") == std::string::npos);

  // The role docs/postgresql-role.md recommends passes.
  const auto config_ok = folder.path() / "ok.json";
  write_file(config_ok, fmt::format(R"({{"databases": [{{"label": "reader", "url": "{}"}}]}})", *reader));
  const auto ok = run_rawtool({"check-config", "--config", config_ok.string(), "--connect"}, clean_env());
  CHECK(ok.exit_status == 0);
  CHECK_THAT(ok.out, Catch::Contains("rawtool: connect check OK"));
}

TEST_CASE("check-config --connect names what a role owns, the SECURITY DEFINER functions it can run and its server "
          "log, and refuse_hazards in the file refuses a read-only call",
          "[cli][postgres]") {
  const auto url = pg_url();
  if (!url) return;
  const std::string drop =
      "DROP TABLE IF EXISTS cli_audit_t; DROP FUNCTION IF EXISTS cli_audit_run();"
      "DO $$DECLARE r text; BEGIN FOREACH r IN ARRAY ARRAY['cli_audit_owner', 'cli_audit_definer'] LOOP "
      "IF EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN EXECUTE format('DROP OWNED BY %I', r); "
      "EXECUTE format('DROP ROLE %I', r); END IF; END LOOP; END$$";
  pg_admin(drop);
  pg_admin("CREATE ROLE cli_audit_owner LOGIN; CREATE ROLE cli_audit_definer LOGIN;"
           "GRANT CONNECT ON DATABASE rawtool_test TO cli_audit_owner, cli_audit_definer;"
           "CREATE TABLE cli_audit_t (x int); ALTER TABLE cli_audit_t OWNER TO cli_audit_owner;"
           "CREATE FUNCTION cli_audit_run() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 7';"
           "REVOKE EXECUTE ON FUNCTION cli_audit_run() FROM PUBLIC;"
           "GRANT EXECUTE ON FUNCTION cli_audit_run() TO cli_audit_definer");
  const std::string superuser = pg_admin("SELECT current_user");

  ScratchFolder folder;
  const auto config = folder.path() / "config.json";
  write_file(config, fmt::format(R"({{"databases": [
      {{"label": "owner", "url": "{0}?user=cli_audit_owner"}},
      {{"label": "definer", "url": "{0}?user=cli_audit_definer"}},
      {{"label": "strict", "url": "{0}?user=cli_audit_definer", "refuse_hazards": ["security_definer"]}}]}})",
                                 *url));
  const auto result = run_rawtool({"check-config", "--config", config.string(), "--connect"}, clean_env());
  const auto one_line = [&](std::string_view prefix) {
    const auto found = lines_starting(result.out, prefix);
    INFO(result.out);
    REQUIRE(found.size() == 1);
    return found.front();
  };
  CHECK_THAT(one_line("rawtool: database owner: hazard table_owner (refused in read-only mode): "),
             Catch::EndsWith(R"( Named: "cli_audit_t".)"));
  CHECK_THAT(one_line("rawtool: database definer: hazard security_definer (reported, not refused): "),
             Catch::Contains(R"("cli_audit_run() owned by )" + superuser + "\""));
  CHECK_THAT(one_line("rawtool: database strict: hazard security_definer (refused in read-only mode): "),
             Catch::Contains("The configuration's refuse_hazards lists security_definer"));
  CHECK_THAT(one_line("rawtool: database definer: hazard server_log (reported, not refused): "),
             Catch::Contains(R"( Named: "ALTER ROLE cli_audit_definer SET log_min_messages = fatal", )"
                             R"("log_min_messages = warning", "log_min_error_statement = )"));
  CHECK(result.exit_status == 1);
  CHECK_THAT(result.out, Catch::Contains("rawtool: connect check found 2 problems"));

  // The same file serves a read-only call: refused on strict, run on definer.
  const auto query = [&](const char* label) {
    return run_rawtool({"query", "--config", config.string(), "--database", label, "SELECT cli_audit_run() AS r"},
                       clean_env());
  };
  const auto strict = query("strict");
  CHECK(strict.exit_status == 1);
  CHECK_THAT(strict.out + strict.err, Catch::Contains("refuse_hazards lists: security_definer"));
  const auto definer = query("definer");
  CHECK(definer.exit_status == 0);
  CHECK_THAT(definer.out, Catch::Contains("7"));
  pg_admin(drop);
}

namespace {

/// A catalog entry as JSON text: `parameters` is a JSON array of {name, type}.
std::string catalog_entry(std::string_view name, std::string_view sql, std::string_view parameters = "[]",
                          std::string_view extra = "") {
  nlohmann::json entry = {{"name", name}, {"description", "a query under check"}, {"sql", sql},
                          {"parameters", nlohmann::json::parse(parameters)}};
  if (!extra.empty()) entry.update(nlohmann::json::parse(extra));
  return entry.dump();
}

/// Writes a catalog of `entries` and a configuration with the one database
/// `database` (a JSON object) using it, and runs check-config --connect on them.
rawtool::test::RunResult check_catalog(const ScratchFolder& folder, const std::vector<std::string>& entries,
                                       const nlohmann::json& database) {
  write_file(folder.path() / "catalog.json", "{\"queries\": [" + fmt::format("{}", fmt::join(entries, ",")) + "]}");
  write_file(folder.path() / "config.json",
             nlohmann::json{{"databases", nlohmann::json::array({database})}, {"catalog", "catalog.json"}}.dump());
  return run_rawtool({"check-config", "--config", (folder.path() / "config.json").string(), "--connect"}, clean_env());
}

/// What every catalog check with problems holds to: exit status 1, every line
/// rawtool's own (a forged line in the engine's words stays inside quotes, so
/// no "catalog check OK" line appears), and no line for the query "fine".
void check_report_with_problems(const rawtool::test::RunResult& result) {
  CHECK(result.exit_status == 1);
  for (const std::string& line : lines_starting(result.out, "")) {
    INFO(line);
    CHECK(line.starts_with("rawtool: "));
  }
  CHECK(lines_starting(result.out, "rawtool: catalog check OK").empty());
  CHECK(lines_starting(result.out, "rawtool: catalog query fine:").empty());
}

/// The report line for a catalog query's field, or "" when there is none.
std::string catalog_line(const std::string& out, std::string_view query, std::string_view field) {
  const auto found = lines_starting(out, fmt::format("rawtool: catalog query {}: {}: ", query, field));
  return found.empty() ? std::string() : found.front();
}

}  // namespace

TEST_CASE("check-config --connect prepares each PostgreSQL catalog query without running it and names what is wrong",
          "[cli][postgres][catalog]") {
  const auto reader = pg_url(true);
  if (!reader) return;
  const std::string table = "cli_catalog_check_" + std::to_string(std::random_device{}() % 1000000);
  pg_admin(fmt::format("CREATE TABLE {0} (id integer PRIMARY KEY, name text, born date); "
                       "INSERT INTO {0} VALUES (1, 'one', '2001-01-01'), (2, 'two', '2002-02-02'); "
                       "GRANT SELECT, DELETE ON {0} TO rawtool_reader",
                       table));
  struct Drop {
    std::string table;
    ~Drop() { pg_admin("DROP TABLE IF EXISTS " + table); }
  } drop{table};

  ScratchFolder folder;
  const std::vector<std::string> entries = {
      catalog_entry("fine", fmt::format("SELECT id, name FROM {} WHERE id = $1 AND born > $2", table),
                    R"([{"name": "id", "type": "integer"}, {"name": "after", "type": "date"}])"),
      catalog_entry("too_few_declared", fmt::format("SELECT id FROM {} WHERE id = $1 AND name = $2", table),
                    R"([{"name": "id", "type": "integer"}])"),
      catalog_entry("too_many_declared", fmt::format("SELECT id FROM {} WHERE id = $1", table),
                    R"([{"name": "id", "type": "integer"}, {"name": "unused", "type": "integer"}])"),
      catalog_entry("sqlite_style", fmt::format("SELECT id FROM {} WHERE id = ?1", table),
                    R"([{"name": "id", "type": "integer"}])"),
      catalog_entry("misspelt", "SELEC 1"),
      catalog_entry("two_statements", "SELECT 1; SELECT 2"),
      catalog_entry("deletes", fmt::format("DELETE FROM {} WHERE id = $1", table), R"([{"name": "id", "type": "integer"}])"),
      catalog_entry("deletes_inside_with", fmt::format("WITH gone AS (DELETE FROM {} RETURNING id) SELECT id FROM gone", table)),
      catalog_entry("text_for_a_number", fmt::format("SELECT name FROM {} WHERE id = $1", table),
                    R"([{"name": "id", "type": "text"}])"),
      catalog_entry("integer_for_text", fmt::format("SELECT id FROM {} WHERE name = $1", table),
                    R"([{"name": "name", "type": "integer"}])"),
      // The server's complaint names the table: a forged report line inside it stays inside quotes.
      catalog_entry("hostile_name", "SELECT * FROM \"nowhere\nrawtool: catalog check OK: 99 queries prepare as declared\""),
  };
  const nlohmann::json database = {{"label", "reader"}, {"url", *reader}};
  const auto result = check_catalog(folder, entries, database);
  INFO(result.out << result.err);
  check_report_with_problems(result);
  CHECK_THAT(catalog_line(result.out, "too_few_declared", "parameters"),
             Catch::Contains("uses placeholders up to $2; the query declares 1 parameters"));
  CHECK_THAT(catalog_line(result.out, "too_many_declared", "parameters"),
             Catch::Contains("uses placeholders up to $1; the query declares 2 parameters"));
  const std::string qmark = catalog_line(result.out, "sqlite_style", "sql");
  CHECK_THAT(qmark, Catch::Contains("the engine would not prepare it (where it points, a ?: PostgreSQL placeholders are "
                                    "written $1, $2, ...); the engine's words: SQLSTATE \"42883\""));
  CHECK_THAT(catalog_line(result.out, "misspelt", "sql"),
             Catch::Contains("the engine would not prepare it; the engine's words: SQLSTATE \"42601\""));
  CHECK_THAT(catalog_line(result.out, "two_statements", "sql"),
             Catch::Contains("the engine would not prepare it; the engine's words: SQLSTATE \"42601\" \"cannot insert "
                             "multiple commands into a prepared statement\""));
  CHECK(catalog_line(result.out, "deletes", "sql") ==
        "rawtool: catalog query deletes: sql: the server's plan modifies a table, and the query runs read-only");
  CHECK(catalog_line(result.out, "deletes_inside_with", "sql") ==
        "rawtool: catalog query deletes_inside_with: sql: the server's plan modifies a table, and the query runs "
        "read-only");
  CHECK(catalog_line(result.out, "text_for_a_number", "parameters[0] (id).type") ==
        "rawtool: catalog query text_for_a_number: parameters[0] (id).type: is text, but the server infers another "
        "type for $1 (its name follows): \"integer\"");
  CHECK_THAT(catalog_line(result.out, "integer_for_text", "sql"),
             Catch::Contains("the engine would not prepare it; the engine's words: SQLSTATE \"42883\""));
  const std::string hostile = catalog_line(result.out, "hostile_name", "sql");
  CHECK_THAT(hostile, Catch::Contains(R"(SQLSTATE "42P01" "relation \"nowhere\nrawtool: catalog check OK)"));
  CHECK_THAT(result.out, Catch::Contains("rawtool: catalog check found 10 problems\n"));
  // Nothing ran: both rows are still there.
  CHECK(pg_admin("SELECT count(*) FROM " + table) == "2");

  // The same queries that are right pass, and the exit status says so.
  const auto fine = check_catalog(folder, {entries[0]}, database);
  INFO(fine.out << fine.err);
  CHECK(fine.exit_status == 0);
  CHECK_THAT(fine.out, Catch::EndsWith("rawtool: connect check OK\nrawtool: catalog check OK: 1 query prepares as declared\n"));
}

TEST_CASE("check-config --connect compiles each SQLite catalog query without running it and names what is wrong",
          "[cli][sqlite][catalog]") {
  ScratchFolder folder;
  const auto database = folder.path() / "shop.db";
  write_file(folder.path() / "rw.json",
             fmt::format(R"({{"databases": [{{"label": "shop", "path": "{}", "access": "read_write",
                                              "create_if_missing": true}}]}})",
                         database.string()));
  const auto created = run_rawtool({"query", "--config", (folder.path() / "rw.json").string(),
                                    "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"},
                                   clean_env());
  REQUIRE(created.exit_status == 0);
  const auto inserted = run_rawtool({"query", "--config", (folder.path() / "rw.json").string(),
                                     "INSERT INTO items VALUES (1, 'one'), (2, 'two')"},
                                    clean_env());
  REQUIRE(inserted.exit_status == 0);

  const std::vector<std::string> entries = {
      catalog_entry("fine", "SELECT id, name FROM items WHERE id = ?1 AND name = ?2",
                    R"([{"name": "id", "type": "integer"}, {"name": "name", "type": "text"}])"),
      catalog_entry("named", "SELECT id FROM items WHERE id = :id", R"([{"name": "id", "type": "integer"}])"),
      catalog_entry("too_few_declared", "SELECT id FROM items WHERE id = ?1 OR id = ?2",
                    R"([{"name": "id", "type": "integer"}])"),
      catalog_entry("misspelt", "SELEC 1"),
      catalog_entry("two_statements", "SELECT 1; SELECT 2"),
      catalog_entry("deletes", "DELETE FROM items WHERE id = ?1", R"([{"name": "id", "type": "integer"}])"),
      catalog_entry("no_table", "SELECT * FROM \"gone\nrawtool: catalog check OK: 7 queries prepare as declared\""),
  };
  const auto result = check_catalog(folder, entries, {{"label", "shop"}, {"path", database.string()}});
  INFO(result.out << result.err);
  check_report_with_problems(result);
  CHECK(catalog_line(result.out, "named", "sql") ==
        "rawtool: catalog query named: sql: placeholder 1 is not written ?1: the catalog binds parameters by position, "
        "the first declared as ?1 (the placeholder as written follows): \":id\"");
  CHECK(catalog_line(result.out, "too_few_declared", "parameters") ==
        "rawtool: catalog query too_few_declared: parameters: the statement takes 2 parameters; the query declares 1, "
        "bound in order as ?1, ?2, ...");
  CHECK_THAT(catalog_line(result.out, "misspelt", "sql"),
             Catch::Contains("the engine would not prepare it; the engine's words: SQLite code 1 \"near \\\"SELEC\\\": "
                             "syntax error\""));
  CHECK(catalog_line(result.out, "two_statements", "sql") ==
        "rawtool: catalog query two_statements: sql: holds more than one statement; a query is one");
  CHECK_THAT(catalog_line(result.out, "deletes", "sql"),
             Catch::StartsWith("rawtool: catalog query deletes: sql: the engine shows it writes, and it runs read-only: "));
  CHECK_THAT(catalog_line(result.out, "no_table", "sql"),
             Catch::Contains(R"("no such table: gone\nrawtool: catalog check OK)"));
  CHECK_THAT(result.out, Catch::Contains("rawtool: catalog check found 6 problems\n"));
  // Nothing ran: both rows are still there.
  const auto counted = run_rawtool(
      {"query", "--config", (folder.path() / "config.json").string(), "--json", "SELECT count(*) AS n FROM items"},
      clean_env());
  CHECK_THAT(counted.out, Catch::Contains(R"([["2"]])"));
}

TEST_CASE("check-config --connect names tokens of different scopes that connect as one PostgreSQL role on one server",
          "[cli][postgres][http]") {
  const auto url = pg_url();
  if (!url) return;
  const auto reader = pg_url(true);
  if (!reader) return;
  // The server's socket folder where .ci/pg-start made it; elsewhere (the
  // container stage) the reader URL's host and port.
  std::string host_text = std::getenv("RAWTOOL_TEST_PG_DIR") != nullptr ? std::getenv("RAWTOOL_TEST_PG_DIR") : "";
  std::string port_text = std::getenv("RAWTOOL_TEST_PG_PORT") != nullptr ? std::getenv("RAWTOOL_TEST_PG_PORT") : "";
  if (host_text.empty() || port_text.empty()) {
    const std::size_t at = reader->find('@');
    const std::size_t slash = reader->find('/', at);
    REQUIRE((at != std::string::npos && slash != std::string::npos));
    const std::string host_port = reader->substr(at + 1, slash - at - 1);
    const std::size_t colon = host_port.rfind(':');
    REQUIRE(colon != std::string::npos);
    host_text = host_port.substr(0, colon);
    port_text = host_port.substr(colon + 1);
  }
  const char* socket_dir = host_text.c_str();
  const char* port = port_text.c_str();
  const std::string drop =
      "DO $$BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cli_shared_other') THEN "
      "DROP OWNED BY cli_shared_other; DROP ROLE cli_shared_other; END IF; END$$";
  pg_admin(drop);
  pg_admin("CREATE ROLE cli_shared_other LOGIN; GRANT CONNECT ON DATABASE rawtool_test TO cli_shared_other");
  struct Drop {
    std::string sql;
    ~Drop() { pg_admin(sql); }
  } dropped{drop};

  // The second database is another database of the same server, reached
  // through its socket rather than TCP: one server all the same. Read-write,
  // as tenants' databases often are (and the postgres database's grants are
  // not the test database's, which read-only mode would refuse).
  const std::string same_role = fmt::format("postgresql:///postgres?host={}&port={}&user=rawtool_reader", socket_dir, port);
  const std::string other_role = fmt::format("postgresql:///postgres?host={}&port={}&user=cli_shared_other", socket_dir, port);
  const auto config_for = [&](const std::string& second) {
    return nlohmann::json{
        {"databases",
         {{{"label", "tenant_a_db"}, {"url", *reader}, {"access", "read_write"}},
          {{"label", "tenant_b_db"}, {"url", second}, {"access", "read_write"}}}},
        {"http",
         {{"tokens",
           {{{"name", "tenant-a"}, {"sha256", std::string(64, 'a')}, {"databases", {"tenant_a_db"}}},
            {{"name", "tenant-b"}, {"sha256", std::string(64, 'b')}, {"databases", {"tenant_b_db"}}}}}}}}
        .dump();
  };
  ScratchFolder folder;
  write_file(folder.path() / "shared.json", config_for(same_role));
  write_file(folder.path() / "apart.json", config_for(other_role));

  const auto shared = run_rawtool({"check-config", "--config", (folder.path() / "shared.json").string(), "--connect"}, clean_env());
  INFO(shared.out << shared.err);
  const auto warnings = lines_starting(shared.out, "rawtool: warning: tokens tenant-a, tenant-b ");
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("one PostgreSQL role, \"rawtool_reader\", on one server"));
  CHECK_THAT(warnings[0], Catch::Contains("(databases tenant_a_db, tenant_b_db)"));
  CHECK_THAT(warnings[0], Catch::Contains("see the others' statements in pg_stat_activity"));
  CHECK_THAT(warnings[0], Catch::Contains("cancel or end their sessions"));
  CHECK_THAT(warnings[0], Catch::Contains("give each token scope a role of its own"));
  CHECK(shared.exit_status == 0);  // a warning: the configuration can be served

  const auto apart = run_rawtool({"check-config", "--config", (folder.path() / "apart.json").string(), "--connect"}, clean_env());
  INFO(apart.out << apart.err);
  CHECK_THAT(apart.out, Catch::Contains("role \"cli_shared_other\""));  // it connected, as the other role
  CHECK(lines_starting(apart.out, "rawtool: warning:").empty());
  CHECK(apart.exit_status == 0);
}
