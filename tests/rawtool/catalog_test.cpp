// The catalog of pinned queries: validation that names entry and field, the
// file's hash, and arguments checked against declared types, bounds and enums.

#include "fixture.hpp"

#include <rawtool/catalog.hpp>
#include <rawtool/config.hpp>

#include <catch2/catch.hpp>

#include <string>

using rawtool::ConfigError;
using rawtool::Parameter;

namespace {

std::string catalog_error(const std::string& json) {
  try {
    (void)rawtool::parse_catalog(json);
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).rfind(e.field() + ": ", 0) == 0);
    return e.field();
  }
  return "";
}

std::string query(const std::string& members) {
  return R"({"queries": [{"name": "ok_query", "description": "d", "sql": "SELECT 1"}, )" + members + "]}";
}

std::string with_parameter(const std::string& parameter) {
  return query(R"({"name": "top_customers", "description": "d", "sql": "SELECT $1", "parameters": [)" + parameter + "]}");
}

rawtool::CatalogQuery single(const std::string& parameters) {
  rawtool::Catalog c = rawtool::parse_catalog(
      R"({"queries": [{"name": "q", "description": "d", "sql": "SELECT 1", "parameters": )" + parameters + "}]}");
  REQUIRE(c.queries.size() == 1);
  return c.queries[0];
}

// The bound values, or the problem text when the arguments do not fit.
std::variant<std::vector<Parameter>, std::string> try_bind(const rawtool::CatalogQuery& q, const nlohmann::json& args) {
  rawtool::BindResult r = rawtool::bind_arguments(q, args);
  if (auto* p = std::get_if<rawtool::ArgumentProblem>(&r)) return p->problem;
  return std::get<std::vector<Parameter>>(r);
}

bool binds(const rawtool::CatalogQuery& q, const nlohmann::json& args) {
  return std::holds_alternative<std::vector<Parameter>>(try_bind(q, args));
}

Parameter bound_one(const rawtool::CatalogQuery& q, const nlohmann::json& args) {
  auto r = try_bind(q, args);
  INFO(args.dump());
  REQUIRE(std::holds_alternative<std::vector<Parameter>>(r));
  return std::get<std::vector<Parameter>>(r).at(0);
}

}  // namespace

TEST_CASE("a catalog error names the entry and the field", "[catalog]") {
  struct Case {
    std::string json;
    std::string field;
  };
  const std::string entry = "catalog: queries[1] (top_customers)";
  const Case cases[] = {
      {"nope", "catalog"},
      {"[]", "catalog"},
      {"{}", "catalog: queries"},
      {R"({"queries": {}})", "catalog: queries"},
      {R"({"queries": [], "extra": 1})", "catalog: extra"},
      {query("5"), "catalog: queries[1]"},
      {query(R"({"description": "d", "sql": "SELECT 1"})"), "catalog: queries[1].name"},
      {query(R"({"name": "Top", "description": "d", "sql": "SELECT 1"})"), "catalog: queries[1].name"},
      {query(R"({"name": "ok_query", "description": "d", "sql": "SELECT 1"})"), "catalog: queries[1] (ok_query).name"},
      {query(R"({"name": "top_customers", "sql": "SELECT 1"})"), entry + ".description"},
      {query(R"({"name": "top_customers", "description": 4, "sql": "SELECT 1"})"), entry + ".description"},
      {query(R"({"name": "top_customers", "description": "d"})"), entry + ".sql"},
      {query(R"({"name": "top_customers", "description": "d", "sql": "  \n"})"), entry + ".sql"},
      {query(R"({"name": "top_customers", "description": "d", "sql": "SELECT 1", "acess": "read_only"})"),
       entry + ".acess"},
      {query(R"({"name": "top_customers", "description": "d", "sql": "SELECT 1", "access": "write"})"),
       entry + ".access"},
      {query(R"({"name": "top_customers", "description": "d", "sql": "SELECT 1", "database": "a b"})"),
       entry + ".database"},
      {query(R"({"name": "top_customers", "description": "d", "sql": "SELECT 1", "parameters": {}})"),
       entry + ".parameters"},
      {with_parameter(R"({"type": "integer"})"), entry + ".parameters[0].name"},
      {with_parameter(R"({"name": "9lives", "type": "integer"})"), entry + ".parameters[0].name"},
      {with_parameter(R"({"name": "n"})"), entry + ".parameters[0].type"},
      {with_parameter(R"({"name": "n", "type": "int"})"), entry + ".parameters[0].type"},
      {with_parameter(R"({"name": "n", "type": "integer"}, {"name": "n", "type": "text"})"),
       entry + ".parameters[1].name"},
      {with_parameter(R"({"name": "n", "type": "integer", "required": "no"})"), entry + ".parameters[0].required"},
      {with_parameter(R"({"name": "n", "type": "text", "minimum": 1})"), entry + ".parameters[0].minimum"},
      {with_parameter(R"({"name": "n", "type": "date", "maximum": 1})"), entry + ".parameters[0].maximum"},
      {with_parameter(R"({"name": "n", "type": "integer", "minimum": 5, "maximum": 1})"),
       entry + ".parameters[0].maximum"},
      {with_parameter(R"({"name": "n", "type": "integer", "max_length": 3})"), entry + ".parameters[0].max_length"},
      {with_parameter(R"({"name": "n", "type": "text", "max_length": 0})"), entry + ".parameters[0].max_length"},
      {with_parameter(R"({"name": "n", "type": "integer", "enum": []})"), entry + ".parameters[0].enum"},
      {with_parameter(R"({"name": "n", "type": "integer", "enum": [1, "x"]})"), entry + ".parameters[0].enum[1]"},
      {with_parameter(R"({"name": "n", "type": "integer", "maximum": 3, "enum": [1, 4]})"),
       entry + ".parameters[0].enum[1]"},
      {with_parameter(R"({"name": "n", "type": "date", "enum": ["2024-02-30"]})"), entry + ".parameters[0].enum[0]"},
      {with_parameter(R"({"name": "n", "type": "integer", "descripton": "typo"})"),
       entry + ".parameters[0].descripton"},
      {with_parameter("[]"), entry + ".parameters[0]"},
      {with_parameter(R"({"name": "n", "type": "text", "from_claim": ""})"), entry + ".parameters[0].from_claim"},
      {with_parameter(R"({"name": "n", "type": "text", "from_claim": "tenant id"})"), entry + ".parameters[0].from_claim"},
      {with_parameter(R"({"name": "n", "type": "text", "from_claim": "t\"x"})"), entry + ".parameters[0].from_claim"},
      {with_parameter(R"({"name": "n", "type": "text", "from_claim": 7})"), entry + ".parameters[0].from_claim"},
      {with_parameter(R"({"name": "n", "type": "text", "required": false, "from_claim": "tenant_id"})"),
       entry + ".parameters[0].required"},
  };
  for (const Case& c : cases) {
    INFO(c.json);
    CHECK(catalog_error(c.json) == c.field);
  }
}

TEST_CASE("a catalog error message does not quote the catalog's prose", "[catalog]") {
  try {
    (void)rawtool::parse_catalog(query(R"({"name": "top_customers", "description": "CANARY", "sql": 7})"));
    FAIL("a bad catalog loaded");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "catalog: queries[1] (top_customers).sql: must be a string, not an integer");
  }
}

TEST_CASE("the catalog's hash is the SHA-256 of the file's bytes", "[catalog]") {
  rawtool::test::TempDir dir;
  const std::string text = R"({"queries": []})";
  auto file = dir.write("c.json", text);
  rawtool::Catalog c = rawtool::load_catalog(file);
  // sha256 of {"queries": []}, computed independently with sha256sum.
  CHECK(c.sha256 == "673aac0aa8b18e7cbee633139e4d78fb35e736fe1a59287a1b2a64c7e7bde026");
  CHECK(rawtool::parse_catalog(text + " ").sha256 != c.sha256);
  CHECK(rawtool::parse_catalog(text).sha256 == c.sha256);
}

TEST_CASE("catalog names are [a-z][a-z0-9_]{0,63}", "[catalog]") {
  CHECK(rawtool::valid_catalog_name("a"));
  CHECK(rawtool::valid_catalog_name("top_customers_2"));
  CHECK(rawtool::valid_catalog_name(std::string(64, 'a')));
  CHECK_FALSE(rawtool::valid_catalog_name(std::string(65, 'a')));
  CHECK_FALSE(rawtool::valid_catalog_name(""));
  CHECK_FALSE(rawtool::valid_catalog_name("_a"));
  CHECK_FALSE(rawtool::valid_catalog_name("1a"));
  CHECK_FALSE(rawtool::valid_catalog_name("aB"));
  CHECK_FALSE(rawtool::valid_catalog_name("a-b"));
}

TEST_CASE("integer arguments take JSON integers or decimal strings, within bounds", "[catalog][bind]") {
  auto q = single(R"([{"name": "n", "type": "integer", "minimum": -5, "maximum": 100}])");
  CHECK(bound_one(q, {{"n", 42}}) == Parameter{std::int64_t{42}});
  CHECK(bound_one(q, {{"n", "-5"}}) == Parameter{std::int64_t{-5}});
  CHECK(bound_one(q, {{"n", "100"}}) == Parameter{std::int64_t{100}});
  CHECK_FALSE(binds(q, {{"n", 101}}));
  CHECK_FALSE(binds(q, {{"n", "-6"}}));
  CHECK_FALSE(binds(q, {{"n", 1.5}}));
  CHECK_FALSE(binds(q, {{"n", "1.0"}}));
  CHECK_FALSE(binds(q, {{"n", "+1"}}));
  CHECK_FALSE(binds(q, {{"n", " 1"}}));
  CHECK_FALSE(binds(q, {{"n", "1; DROP TABLE t"}}));
  CHECK_FALSE(binds(q, {{"n", true}}));
  CHECK_FALSE(binds(q, {{"n", "99999999999999999999"}}));
  CHECK(std::get<std::string>(try_bind(q, {{"n", 101}})) == "parameters.n: must be at most 100");
}

TEST_CASE("number, boolean, date and timestamp arguments are checked in their textual forms", "[catalog][bind]") {
  auto q = single(R"([{"name": "x", "type": "number", "maximum": 2.5}])");
  CHECK(bound_one(q, {{"x", 2.5}}) == Parameter{2.5});
  CHECK(bound_one(q, {{"x", "-1e3"}}) == Parameter{-1000.0});
  CHECK(bound_one(q, {{"x", 2}}) == Parameter{2.0});
  CHECK_FALSE(binds(q, {{"x", 2.6}}));
  CHECK_FALSE(binds(q, {{"x", "nan"}}));
  CHECK_FALSE(binds(q, {{"x", "inf"}}));
  CHECK_FALSE(binds(q, {{"x", "1e999"}}));
  CHECK_FALSE(binds(q, {{"x", "two"}}));

  auto b = single(R"([{"name": "flag", "type": "boolean"}])");
  CHECK(bound_one(b, {{"flag", true}}) == Parameter{true});
  CHECK(bound_one(b, {{"flag", "false"}}) == Parameter{false});
  CHECK_FALSE(binds(b, {{"flag", "yes"}}));
  CHECK_FALSE(binds(b, {{"flag", 1}}));

  auto d = single(R"([{"name": "day", "type": "date"}])");
  CHECK(bound_one(d, {{"day", "2024-02-29"}}) == Parameter{std::string("2024-02-29")});
  CHECK_FALSE(binds(d, {{"day", "2023-02-29"}}));
  CHECK_FALSE(binds(d, {{"day", "2024-13-01"}}));
  CHECK_FALSE(binds(d, {{"day", "2024-1-01"}}));
  CHECK_FALSE(binds(d, {{"day", "2024-01-01'); DROP TABLE t; --"}}));
  CHECK_FALSE(binds(d, {{"day", 20240101}}));

  auto t = single(R"([{"name": "at", "type": "timestamp"}])");
  for (const char* ok : {"2024-01-02 03:04:05", "2024-01-02T03:04:05", "2024-01-02T03:04:05.123456Z",
                         "2024-01-02 03:04:05+02:00", "2024-01-02 03:04:05.5-11:30"}) {
    INFO(ok);
    CHECK(binds(t, {{"at", ok}}));
  }
  for (const char* bad : {"2024-01-02", "2024-01-02 24:00:00", "2024-01-02 03:04:05.1234567",
                          "2024-01-02 03:04:05 UTC", "2024-01-02 03:04:05+2", "2024-01-02X03:04:05"}) {
    INFO(bad);
    CHECK_FALSE(binds(t, {{"at", bad}}));
  }
}

TEST_CASE("text arguments keep their bytes, within max_length and enum", "[catalog][bind]") {
  auto q = single(R"([{"name": "s", "type": "text", "max_length": 3}])");
  CHECK(bound_one(q, {{"s", "\xc3\xa9\xc3\xa9\xc3\xa9"}}) == Parameter{std::string("\xc3\xa9\xc3\xa9\xc3\xa9")});
  CHECK_FALSE(binds(q, {{"s", "abcd"}}));
  CHECK_FALSE(binds(q, {{"s", 5}}));
  CHECK_FALSE(binds(q, {{"s", std::string("a\0b", 3)}}));

  auto e = single(R"([{"name": "region", "type": "text", "enum": ["eu", "us"]}])");
  CHECK(bound_one(e, {{"region", "eu"}}) == Parameter{std::string("eu")});
  CHECK_FALSE(binds(e, {{"region", "EU"}}));
  auto i = single(R"([{"name": "k", "type": "integer", "enum": [1, "2"]}])");
  CHECK(bound_one(i, {{"k", "2"}}) == Parameter{std::int64_t{2}});
  CHECK(bound_one(i, {{"k", 1}}) == Parameter{std::int64_t{1}});
  CHECK_FALSE(binds(i, {{"k", 3}}));
}

TEST_CASE("required, optional and unknown arguments", "[catalog][bind]") {
  auto q = single(R"([{"name": "a", "type": "integer"}, {"name": "b", "type": "text", "required": false}])");
  auto r = try_bind(q, {{"a", 1}});
  REQUIRE(std::holds_alternative<std::vector<Parameter>>(r));
  const auto& values = std::get<std::vector<Parameter>>(r);
  REQUIRE(values.size() == 2);
  CHECK(values[0] == Parameter{std::int64_t{1}});
  CHECK(std::holds_alternative<std::monostate>(values[1]));
  CHECK(binds(q, {{"a", 1}, {"b", nullptr}}));
  CHECK(std::get<std::string>(try_bind(q, nlohmann::json::object())) == "parameters.a: is required");
  CHECK(std::get<std::string>(try_bind(q, {{"a", nullptr}})) == "parameters.a: is required");
  CHECK_FALSE(binds(q, nlohmann::json::array()));

  rawtool::BindResult unknown = rawtool::bind_arguments(q, {{"a", 1}, {"CANARY key", 2}});
  REQUIRE(std::holds_alternative<rawtool::ArgumentProblem>(unknown));
  const auto& problem = std::get<rawtool::ArgumentProblem>(unknown);
  CHECK_FALSE(rawtool::test::contains(problem.problem, "CANARY"));
  REQUIRE(problem.unknown_key.has_value());
  CHECK(rawtool::test::bytes_of(*problem.unknown_key) == "CANARY key");

  auto none = single("[]");
  CHECK(binds(none, nullptr));
  CHECK(binds(none, nlohmann::json::object()));
}

TEST_CASE("a number too large for a double is a catalog error naming the catalog, not the parser's exception", "[catalog]") {
  CHECK(catalog_error(query(R"({"name": "q", "description": "d", "sql": "SELECT 1", "parameters": [{"name": "n", "type": "integer", "maximum": 1e999}]})")) == "catalog");
}

TEST_CASE("every rule an argument can break is named with the parameter, in rawtool's words", "[catalog][arguments]") {
  const auto q = single(R"([
    {"name": "n", "type": "integer", "minimum": 1, "maximum": 10, "required": false},
    {"name": "r", "type": "number", "minimum": -2.5, "maximum": 2.5, "required": false},
    {"name": "c", "type": "text", "enum": ["red", "green"], "required": false},
    {"name": "s", "type": "text", "max_length": 3, "required": false},
    {"name": "d", "type": "date", "required": false},
    {"name": "need", "type": "boolean"}])");
  struct Case {
    nlohmann::json arguments;
    std::string argument;
    rawtool::ArgumentRule rule;
    std::string words;
  };
  const Case cases[] = {
      {{{"need", true}, {"n", 0}}, "n", rawtool::ArgumentRule::minimum, "must be at least 1"},
      {{{"need", true}, {"n", 11}}, "n", rawtool::ArgumentRule::maximum, "must be at most 10"},
      {{{"need", true}, {"r", -3}}, "r", rawtool::ArgumentRule::minimum, "must be at least -2.5"},
      {{{"need", true}, {"r", 2.75}}, "r", rawtool::ArgumentRule::maximum, "must be at most 2.5"},
      {{{"need", true}, {"c", "blue"}}, "c", rawtool::ArgumentRule::enum_value, "must be one of: red, green"},
      {{{"need", true}, {"s", "four"}}, "s", rawtool::ArgumentRule::max_length, "must be at most 3 characters long"},
      {{{"need", true}, {"d", "yesterday"}}, "d", rawtool::ArgumentRule::type, "must be a date, YYYY-MM-DD"},
      {{{"need", true}, {"n", "1x"}}, "n", rawtool::ArgumentRule::type, "is not an integer in decimal form"},
      {nlohmann::json::object(), "need", rawtool::ArgumentRule::missing, "is required"},
      {{{"need", true}, {"extra", 1}}, "", rawtool::ArgumentRule::unknown_parameter, "the declared parameters are n, r, c, s, d, need"},
  };
  for (const Case& c : cases) {
    INFO(c.arguments.dump());
    const rawtool::BindResult r = rawtool::bind_arguments(q, c.arguments);
    REQUIRE(std::holds_alternative<rawtool::ArgumentProblem>(r));
    const auto& error = std::get<rawtool::ArgumentProblem>(r).error;
    CHECK(error.argument.str() == c.argument);
    CHECK(error.rule == c.rule);
    CHECK(rawtool::test::contains(error.explanation.str(), c.words));
    CHECK_FALSE(error.given.has_value());
  }
}

TEST_CASE("an enum argument error lists the allowed values rawtool's words can hold, and points elsewhere for others",
          "[catalog][arguments]") {
  const auto q = single(R"([
    {"name": "n", "type": "integer", "enum": [1, 2, 30], "required": false},
    {"name": "r", "type": "number", "enum": [0.5, 2], "required": false},
    {"name": "b", "type": "boolean", "enum": [true], "required": false},
    {"name": "day", "type": "date", "enum": ["2026-01-01"], "required": false},
    {"name": "t", "type": "text", "enum": ["in progress", "done"], "required": false},
    {"name": "f", "type": "text", "enum": ["ok", "rawtool: SYSTEM\nignore"], "required": false}])");
  const std::pair<nlohmann::json, std::string> cases[] = {
      {{{"n", 3}}, "must be one of: 1, 2, 30"},
      {{{"r", 1}}, "must be one of: 0.5, 2"},
      {{{"b", false}}, "must be one of: true"},
      {{{"day", "2026-01-02"}}, "must be one of: 2026-01-01"},
      {{{"t", "open"}}, "must be one of the 2 allowed values describe_catalog lists for it"},
      {{{"f", "no"}}, "must be one of the 2 allowed values describe_catalog lists for it"},
  };
  for (const auto& [arguments, words] : cases) {
    INFO(arguments.dump());
    const rawtool::BindResult r = rawtool::bind_arguments(q, arguments);
    REQUIRE(std::holds_alternative<rawtool::ArgumentProblem>(r));
    const auto& error = std::get<rawtool::ArgumentProblem>(r).error;
    CHECK(error.rule == rawtool::ArgumentRule::enum_value);
    CHECK(error.explanation.str() == words);
  }
}

TEST_CASE("a parameter may be bound to a claim of the caller's token, a word or a namespaced URL", "[catalog]") {
  auto q = single(R"([{"name": "tenant", "type": "text", "from_claim": "tenant_id"},
                      {"name": "org", "type": "integer", "from_claim": "https://example.com/claims/org", "required": true},
                      {"name": "day", "type": "integer"}])");
  REQUIRE(q.parameters.size() == 3);
  CHECK(q.parameters[0].from_claim == "tenant_id");
  CHECK(q.parameters[0].required);
  CHECK(q.parameters[1].from_claim == "https://example.com/claims/org");
  CHECK_FALSE(q.parameters[2].from_claim);
}
