// describe_schema through the library on real engines, set up through a
// configuration file: every hostile name (CELLS) stands as a column and a
// table name and every hostile text (PROSE) as a comment or a definition, and
// each comes back exact on the structured half and escaped or quoted on the
// text half, with nothing raw at a line start and no hidden code point; a
// table the role has no privilege on is absent; argument mistakes name the
// argument and the rule.

#include "fixture.hpp"
#include "oracle.hpp"

#include <rawtool/corpus.hpp>
#include <rawtool/render/bytes.hpp>
#include <rawtool/render/json.hpp>
#include <rawtool/render/status.hpp>
#include <rawtool/tool.hpp>

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

using rawtool::test::contains;

namespace {

bool has_nul(const std::string& bytes) { return bytes.find('\0') != std::string::npos; }

// "name" with every double quote doubled, in double quotes: an identifier on both engines.
std::string quoted_identifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// 'text' with every single quote doubled: a literal on both engines
// (standard_conforming_strings is on in every supported PostgreSQL).
std::string quoted_literal(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The invariants every schema reply holds, whatever it carries.
void check_surface(const rawtool::Reply& reply) {
  INFO(reply.text());
  CHECK(rawtool::test::text_surface_problems(reply.text()) == std::vector<std::string>{});
  CHECK(reply.structured()["kind"] == "schema");
  CHECK(reply.structured().contains("certified_provenance"));
  CHECK(reply.structured()["certified_provenance"]["query"] == "describe_schema");
  CHECK(contains(reply.text(), "what the connected role can use"));
}

// The decoded bytes of every cell of every row line of the text half.
std::vector<std::string> text_cells(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& row : rawtool::test::row_cells(text))
    for (const auto& cell : row)
      if (cell) out.push_back(*cell);
  return out;
}

// The bytes of one column of one section, row by row, on the structured half.
std::vector<std::string> structured_column(const rawtool::Reply& reply, const std::string& section, const std::string& column) {
  std::vector<std::string> out;
  for (const auto& row : reply.structured()["sections"][section]["rows"]) {
    if (row[column].is_null()) continue;
    auto bytes = rawtool::test::json_bytes(row[column]);
    REQUIRE(bytes.has_value());
    out.push_back(*bytes);
  }
  return out;
}

bool has(const std::vector<std::string>& values, const std::string& wanted) {
  return std::find(values.begin(), values.end(), wanted) != values.end();
}

void sqlite_exec(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  INFO(sql << "\n" << message);
  REQUIRE(rc == SQLITE_OK);
}

struct SqliteSchema {
  rawtool::test::TempDir dir;
  rawtool::test::CapturedLog log;
  std::filesystem::path db_file = dir.path() / "schema.db";

  std::unique_ptr<rawtool::Tool> open(const std::string& render = "{}") {
    dir.write("rawtool.json", R"({"databases": [{"label": "main", "path": "schema.db"}], "render": )" + render + "}");
    rawtool::ToolOptions options;
    options.log = log.sink();
    return rawtool::Tool::open(rawtool::load_config(dir.path() / "rawtool.json"), std::move(options));
  }
};

rawtool::Reply describe(rawtool::Tool& tool, const std::string& table, const std::string& database = "") {
  rawtool::SchemaRequest request;
  request.table = table;
  request.limit = rawtool::SchemaRequest::limit_max;
  rawtool::CallOptions options;
  options.database = database;
  return tool.describe_schema(request, options);
}

}  // namespace

TEST_CASE("every hostile name comes back from SQLite's schema as a column and a table, escaped and exact",
          "[tool][sqlite][schema][corpus]") {
  SqliteSchema setup;
  const auto cases = rawtool::corpus::load_cells();
  std::vector<std::string> names;
  std::string ddl;
  for (const auto& c : cases) {
    const bool column_name = std::find(c.places.begin(), c.places.end(), rawtool::corpus::CellPlace::column_name) != c.places.end();
    // A statement's text ends at NUL; an empty identifier is not one.
    if (!column_name || c.null || has_nul(c.bytes) || c.bytes.empty()) continue;
    const std::string table = "t" + std::to_string(names.size());
    ddl += "CREATE TABLE " + table + " (id INTEGER PRIMARY KEY, " + quoted_identifier(c.bytes) + " TEXT);";
    ddl += "CREATE TABLE " + quoted_identifier("n" + std::to_string(names.size()) + c.bytes) + " (x);";
    names.push_back(c.bytes);
  }
  REQUIRE(names.size() > cases.size() / 2);
  sqlite_exec(setup.db_file, ddl);

  for (const std::string& render : {std::string("{}"), std::string(R"({"ascii_only": true})")}) {
    auto tool = setup.open(render);
    for (std::size_t i = 0; i < names.size(); ++i) {
      INFO(render << " case " << i);
      const rawtool::Reply reply = describe(*tool, "t" + std::to_string(i));
      REQUIRE_FALSE(reply.is_error());
      check_surface(reply);
      CHECK(has(structured_column(reply, "columns", "name"), names[i]));
      CHECK(has(text_cells(reply.text()), names[i]));
    }
    // The listing, page by page: every hostile table name, exact.
    std::vector<std::string> listed_text;
    std::vector<std::string> listed;
    rawtool::SchemaRequest request;
    request.limit = 7;
    for (int pages = 0; pages < 100; ++pages) {
      const rawtool::Reply page = tool->describe_schema(request);
      REQUIRE_FALSE(page.is_error());
      check_surface(page);
      for (const auto& name : structured_column(page, "objects", "name")) listed.push_back(name);
      for (const auto& cell : text_cells(page.text())) listed_text.push_back(cell);
      if (page.structured()["page"]["next_offset"].is_null()) break;
      request.offset = page.structured()["page"]["next_offset"].get<std::uint64_t>();
    }
    CHECK(listed.size() == 2 * names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      CHECK(has(listed, "n" + std::to_string(i) + names[i]));
      CHECK(has(listed_text, "n" + std::to_string(i) + names[i]));
    }
  }
}

TEST_CASE("every hostile text in a SQLite table's definition is quoted per line inside the boundary",
          "[tool][sqlite][schema][corpus]") {
  SqliteSchema setup;
  const auto cases = rawtool::corpus::load_prose();
  std::vector<std::string> texts;
  std::string ddl;
  for (const auto& c : cases) {
    // A block comment ends at "*/", a statement at NUL.
    if (has_nul(c.bytes) || contains(c.bytes, "*/")) continue;
    ddl += "CREATE TABLE p" + std::to_string(texts.size()) + " (x /*" + c.bytes + "*/);";
    texts.push_back(c.bytes);
  }
  REQUIRE(texts.size() > cases.size() / 2);
  sqlite_exec(setup.db_file, ddl);
  auto tool = setup.open();
  for (std::size_t i = 0; i < texts.size(); ++i) {
    INFO("case " << i);
    const rawtool::Reply reply = describe(*tool, "p" + std::to_string(i));
    REQUIRE_FALSE(reply.is_error());
    check_surface(reply);
    const std::string definition = "CREATE TABLE p" + std::to_string(i) + " (x /*" + texts[i] + "*/)";
    CHECK(structured_column(reply, "table", "definition") == std::vector<std::string>{definition});
    bool quoted = false;
    for (const auto& [label, bytes] : rawtool::test::quoted_fields(reply.text())) quoted = quoted || (label == "definition of row 1" && bytes == definition);
    CHECK(quoted);
  }
}

TEST_CASE("describe_schema on SQLite reports columns, keys, indexes and paging in rawtool's words",
          "[tool][sqlite][schema]") {
  SqliteSchema setup;
  sqlite_exec(setup.db_file,
              "CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE);"
              "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER REFERENCES customers(id), total REAL DEFAULT 0);"
              "CREATE INDEX orders_by_customer ON orders (customer);"
              "CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;");
  auto tool = setup.open();

  const rawtool::Reply orders = describe(*tool, "main.orders");
  REQUIRE_FALSE(orders.is_error());
  check_surface(orders);
  CHECK(orders.structured()["scope"] == "table");
  CHECK(structured_column(orders, "columns", "name") == std::vector<std::string>{"id", "customer", "total"});
  CHECK(structured_column(orders, "columns", "primary_key") == std::vector<std::string>{"yes", "no", "no"});
  CHECK(structured_column(orders, "columns", "default_value") == std::vector<std::string>{"0"});
  CHECK(structured_column(orders, "constraints", "kind") == std::vector<std::string>{"primary key", "foreign key"});
  CHECK(structured_column(orders, "constraints", "references_table") == std::vector<std::string>{"customers"});
  CHECK(structured_column(orders, "indexes", "name") == std::vector<std::string>{"orders_by_customer"});

  CHECK(structured_column(orders, "referenced_by", "table").empty());

  const rawtool::Reply customers = describe(*tool, "customers");
  CHECK(has(structured_column(customers, "constraints", "kind"), "unique"));
  // Who points at it: orders' key, named from both sides.
  CHECK(structured_column(customers, "referenced_by", "table") == std::vector<std::string>{"orders"});
  CHECK(structured_column(customers, "referenced_by", "columns") == std::vector<std::string>{R"(["customer"])"});
  CHECK(structured_column(customers, "referenced_by", "references_columns") == std::vector<std::string>{R"(["id"])"});
  CHECK(contains(customers.text(), "rawtool: section referenced_by: 1 row;"));
  CHECK(structured_column(customers, "columns", "nullable") == std::vector<std::string>{"yes", "no"});

  rawtool::SchemaRequest request;
  request.limit = 2;
  const rawtool::Reply first = tool->describe_schema(request);
  CHECK(structured_column(first, "objects", "name") == std::vector<std::string>{"big_orders", "customers"});
  CHECK(first.structured()["page"]["more"] == true);
  CHECK(first.structured()["page"]["next_offset"] == 2);
  CHECK(contains(first.text(), "call again with offset 2"));
  request.offset = 2;
  const rawtool::Reply second = tool->describe_schema(request);
  CHECK(structured_column(second, "objects", "name") == std::vector<std::string>{"orders"});
  CHECK(second.structured()["page"]["more"] == false);
  CHECK(second.structured()["page"]["next_offset"].is_null());
  CHECK(structured_column(second, "objects", "kind") == std::vector<std::string>{"table"});

  request = {};
  request.pattern = "%ORDER%";
  CHECK(structured_column(tool->describe_schema(request), "objects", "name") == std::vector<std::string>{"big_orders", "orders"});

  const rawtool::Reply missing = describe(*tool, "no_such_table");
  CHECK(missing.is_error());
  CHECK(missing.structured()["found"] == false);
  CHECK(contains(missing.text(), "rule=not_found"));
  CHECK(rawtool::test::text_surface_problems(missing.text()) == std::vector<std::string>{});
}

TEST_CASE("describe_schema's argument mistakes name the argument and the rule, and run nothing",
          "[tool][sqlite][schema][arguments]") {
  SqliteSchema setup;
  sqlite_exec(setup.db_file, "CREATE TABLE t (x);");
  auto tool = setup.open();
  struct Case {
    rawtool::SchemaRequest request;
    std::string database;
    std::string argument;
    std::string rule;
    std::string words;
  };
  rawtool::SchemaRequest zero_limit;
  zero_limit.limit = 0;
  rawtool::SchemaRequest big_limit;
  big_limit.limit = rawtool::SchemaRequest::limit_max + 1;
  rawtool::SchemaRequest big_offset;
  big_offset.offset = rawtool::SchemaRequest::offset_max + 1;
  rawtool::SchemaRequest long_pattern;
  long_pattern.pattern = std::string(rawtool::SchemaRequest::name_max_length + 1, 'x');
  rawtool::SchemaRequest bad_table;
  bad_table.table = std::string("t\xC0\xAF", 3);
  const Case cases[] = {
      {zero_limit, "", "limit", "minimum", "must be at least 1"},
      {big_limit, "", "limit", "maximum", "must be at most 200"},
      {big_offset, "", "offset", "maximum", "must be at most 1000000000"},
      {long_pattern, "", "pattern", "max_length", "must be at most 256 characters long"},
      {bad_table, "", "table", "type", "must be UTF-8 text"},
      {{}, "CANARY-no-such-label", "database", "unknown_database", "names no configured database; the configured databases are main"},
  };
  for (const Case& c : cases) {
    rawtool::CallOptions options;
    options.database = c.database;
    const rawtool::Reply reply = tool->describe_schema(c.request, options);
    INFO(reply.text());
    CHECK(reply.is_error());
    CHECK(reply.structured()["kind"] == "argument_error");
    CHECK(reply.structured()["tool"] == "describe_schema");
    CHECK(reply.structured()["argument"]["name"] == c.argument);
    CHECK(reply.structured()["argument"]["rule"] == c.rule);
    CHECK(contains(reply.text(), "argument " + c.argument + ": " + c.words));
    CHECK(contains(reply.text(), "(rule=" + c.rule + ")"));
    CHECK_FALSE(contains(reply.text(), "CANARY"));
    CHECK(rawtool::test::text_surface_problems(reply.text()) == std::vector<std::string>{});
  }
}

TEST_CASE("describe_schema's JSON arguments: types, ranges and unknown names, an unknown name echoed escaped",
          "[tool][schema][arguments]") {
  using nlohmann::json;
  const auto ok = rawtool::schema_arguments_from_json({{"database", "main"}, {"table", "orders"}, {"limit", 10}, {"offset", 20}});
  REQUIRE(std::holds_alternative<rawtool::SchemaArguments>(ok));
  const auto& arguments = std::get<rawtool::SchemaArguments>(ok);
  CHECK(arguments.database == "main");
  CHECK(arguments.request.table == "orders");
  CHECK(arguments.request.limit == 10);
  CHECK(arguments.request.offset == 20);

  struct Case {
    json arguments;
    std::string argument;
    rawtool::ArgumentRule rule;
  };
  const Case cases[] = {
      {{{"table", 42}}, "table", rawtool::ArgumentRule::type},
      {{{"limit", "ten"}}, "limit", rawtool::ArgumentRule::type},
      {{{"limit", 2.5}}, "limit", rawtool::ArgumentRule::type},
      {{{"limit", -1}}, "limit", rawtool::ArgumentRule::minimum},
      {{{"limit", 1000}}, "limit", rawtool::ArgumentRule::maximum},
      {{{"offset", -3}}, "offset", rawtool::ArgumentRule::minimum},
      {json::array({1}), "arguments", rawtool::ArgumentRule::type},
  };
  for (const Case& c : cases) {
    INFO(c.arguments.dump());
    const auto result = rawtool::schema_arguments_from_json(c.arguments);
    REQUIRE(std::holds_alternative<rawtool::ArgumentError>(result));
    CHECK(std::get<rawtool::ArgumentError>(result).argument.str() == c.argument);
    CHECK(std::get<rawtool::ArgumentError>(result).rule == c.rule);
  }

  // An unknown name is the caller's bytes: echoed, but only quoted and escaped.
  std::size_t walked = 0;
  for (const auto& c : rawtool::corpus::load_prose()) {
    if (!rawtool::render::is_valid_utf8(c.bytes) || c.bytes == "table") continue;  // a JSON key is UTF-8
    const auto result = rawtool::schema_arguments_from_json({{c.bytes, 1}});
    REQUIRE(std::holds_alternative<rawtool::ArgumentError>(result));
    const auto& error = std::get<rawtool::ArgumentError>(result);
    CHECK(error.rule == rawtool::ArgumentRule::unknown_parameter);
    CHECK(error.argument.empty());
    REQUIRE(error.given.has_value());
    const auto rendered = rawtool::render::render_argument_error(rawtool::Label("describe_schema"), error, {});
    INFO(c.name << "\n" << rendered.text());
    CHECK(rawtool::test::text_surface_problems(rendered.text()) == std::vector<std::string>{});
    bool echoed = false;
    for (const auto& [label, bytes] : rawtool::test::quoted_fields(rendered.text())) echoed = echoed || (label == "name given" && bytes == c.bytes);
    CHECK(echoed);
    CHECK(rawtool::test::json_bytes(rendered.structured()["argument"]["given"]) == c.bytes);
    CHECK(rendered.structured()["argument"]["name"].is_null());
    ++walked;
  }
  CHECK(walked > 10);
}

TEST_CASE("describe_schema on PostgreSQL: hostile names and comments arrive escaped and exact, and what the role "
          "cannot use is absent",
          "[tool][postgres][schema][corpus]") {
  const auto admin_url = rawtool::test::pg_url();
  const auto reader_url = rawtool::test::pg_url(true);
  if (!admin_url || !reader_url) return;
  rawtool::test::TempDir dir;
  rawtool::test::CapturedLog log;
  nlohmann::json config = {{"databases",
                            {{{"label", "reader"}, {"url", *reader_url}},
                             {{"label", "admin"}, {"url", *admin_url}, {"access", "read_write"}, {"pool_size", 1}}}}};
  dir.write("rawtool.json", config.dump());
  rawtool::ToolOptions options;
  options.log = log.sink();
  auto tool = rawtool::Tool::open(rawtool::load_config(dir.path() / "rawtool.json"), std::move(options));
  const std::string schema = rawtool::test::unique_name("lib_schema");
  rawtool::CallOptions as_admin;
  as_admin.database = "admin";
  const auto admin = [&](const std::string& sql) {
    const rawtool::Reply r = tool->raw(sql, as_admin);
    INFO(sql << "\n" << r.text());
    REQUIRE_FALSE(r.is_error());
  };
  admin("CREATE SCHEMA " + schema);
  struct Cleanup {
    std::function<void()> run;
    ~Cleanup() { run(); }
  } cleanup{[&] { (void)tool->raw("DROP SCHEMA " + schema + " CASCADE", as_admin); }};
  admin("GRANT USAGE ON SCHEMA " + schema + " TO rawtool_reader");

  // Names: PostgreSQL keeps at most 63 bytes of an identifier, UTF-8 only.
  std::vector<std::string> names;
  for (const auto& c : rawtool::corpus::load_cells()) {
    const bool column_name = std::find(c.places.begin(), c.places.end(), rawtool::corpus::CellPlace::column_name) != c.places.end();
    if (!column_name || c.null || c.bytes.empty() || has_nul(c.bytes) || c.bytes.size() > 63 || !rawtool::render::is_valid_utf8(c.bytes)) continue;
    const std::string table = schema + ".c" + std::to_string(names.size());
    admin("CREATE TABLE " + table + " (id int PRIMARY KEY, " + quoted_identifier(c.bytes) + " text)");
    names.push_back(c.bytes);
  }
  // Comments: any UTF-8 text without NUL, on a table and on a column.
  std::vector<std::string> comments;
  for (const auto& c : rawtool::corpus::load_prose()) {
    if (has_nul(c.bytes) || !rawtool::render::is_valid_utf8(c.bytes)) continue;
    const std::string table = schema + ".p" + std::to_string(comments.size());
    admin("CREATE TABLE " + table + " (x int)");
    admin("COMMENT ON TABLE " + table + " IS " + quoted_literal(c.bytes));
    admin("COMMENT ON COLUMN " + table + ".x IS " + quoted_literal(c.bytes));
    comments.push_back(c.bytes);
  }
  REQUIRE(names.size() > 10);
  REQUIRE(comments.size() > 10);
  admin("CREATE TABLE " + schema + ".parent (id int PRIMARY KEY)");
  admin("CREATE TABLE " + schema + ".child (parent_id int REFERENCES " + schema + ".parent (id))");
  admin("CREATE TABLE " + schema + ".secret_CANARY (x int REFERENCES " + schema + ".parent (id))");
  admin("CREATE TABLE " + schema + ".half (visible int, hidden_CANARY int)");
  admin("GRANT SELECT ON ALL TABLES IN SCHEMA " + schema + " TO rawtool_reader");
  admin("REVOKE SELECT ON " + schema + ".secret_CANARY FROM rawtool_reader");
  admin("REVOKE SELECT ON " + schema + ".half FROM rawtool_reader");
  admin("GRANT SELECT (visible) ON " + schema + ".half TO rawtool_reader");

  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO("name case " << i);
    const rawtool::Reply reply = describe(*tool, schema + ".c" + std::to_string(i));
    REQUIRE_FALSE(reply.is_error());
    check_surface(reply);
    CHECK(has(structured_column(reply, "columns", "name"), names[i]));
    CHECK(has(text_cells(reply.text()), names[i]));
  }
  for (std::size_t i = 0; i < comments.size(); ++i) {
    INFO("comment case " << i);
    const rawtool::Reply reply = describe(*tool, schema + ".p" + std::to_string(i));
    REQUIRE_FALSE(reply.is_error());
    check_surface(reply);
    CHECK(structured_column(reply, "table", "comment") == std::vector<std::string>{comments[i]});
    CHECK(structured_column(reply, "columns", "comment") == std::vector<std::string>{comments[i]});
    std::size_t quoted = 0;
    for (const auto& [label, bytes] : rawtool::test::quoted_fields(reply.text()))
      if (label == "comment of row 1" && bytes == comments[i]) ++quoted;
    CHECK(quoted == 2);  // the table's and the column's
  }

  // The listing, in the schema only: every table the role can use, not the secret one.
  rawtool::SchemaRequest request;
  request.schema = schema;
  request.limit = rawtool::SchemaRequest::limit_max;
  const rawtool::Reply listing = tool->describe_schema(request);
  REQUIRE_FALSE(listing.is_error());
  check_surface(listing);
  const auto listed = structured_column(listing, "objects", "name");
  CHECK(listed.size() == names.size() + comments.size() + 3);
  CHECK(has(listed, "half"));
  CHECK_FALSE(contains(listing.text(), "secret"));
  CHECK(structured_column(listing, "objects", "comment").size() == comments.size());

  const rawtool::Reply secret = describe(*tool, schema + ".secret_CANARY");
  CHECK(secret.is_error());
  CHECK(secret.structured()["found"] == false);
  CHECK_FALSE(contains(secret.text(), "CANARY"));
  // Who points at parent: child, not the table the role cannot use.
  const rawtool::Reply parent = describe(*tool, schema + ".parent");
  REQUIRE_FALSE(parent.is_error());
  check_surface(parent);
  CHECK(structured_column(parent, "referenced_by", "table") == std::vector<std::string>{"child"});
  CHECK(structured_column(parent, "referenced_by", "columns") == std::vector<std::string>{R"(["parent_id"])"});
  CHECK(structured_column(parent, "referenced_by", "references_columns") == std::vector<std::string>{R"(["id"])"});
  CHECK_FALSE(contains(parent.text(), "CANARY"));
  const rawtool::Reply half = describe(*tool, "half");  // found without the schema: it is not in the search path
  REQUIRE_FALSE(half.is_error());
  CHECK(structured_column(half, "columns", "name") == std::vector<std::string>{"visible"});
  CHECK_FALSE(contains(half.text(), "hidden"));

  // A failure on this side shows a status and a reference, never the database's words.
  rawtool::SchemaRequest on_admin;
  rawtool::CallOptions cancelled;
  rawtool::Cancellation cancellation;
  cancellation.cancel();
  cancelled.cancellation = &cancellation;
  const rawtool::Reply refused = tool->describe_schema(on_admin, cancelled);
  CHECK(refused.is_error());
  CHECK(refused.structured()["kind"] == "certified_status");
  CHECK(refused.structured()["certified_provenance"]["query"] == "describe_schema");
  CHECK(contains(log.all(), refused.structured()["reference"].get<std::string>()));
}
