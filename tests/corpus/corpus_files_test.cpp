// The corpus as data: the files load, the format is enforced strictly, the
// coverage cannot shrink without a failing test, and the builders put each
// payload exactly where the case says.
#include <rawtool/corpus.hpp>

#include "untrusted_bytes.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <utility>

namespace corpus = rawtool::corpus;
using rawtool::test::bytes_of;

namespace {

// A valid FAILURE line to break one member at a time.
std::string failure_line(std::string_view name, std::string_view members) {
  return "{\"name\": \"" + std::string(name) + "\", \"class\": \"role_line\", \"fields\": [\"message\"], " + std::string(members) +
         ", \"expect\": \"shown\"}";
}

template <typename Cases>
bool has_case(const Cases& cases, std::string_view name) {
  return std::any_of(cases.begin(), cases.end(), [&](const auto& c) { return c.name == name; });
}

}  // namespace

TEST_CASE("every corpus file loads and passes validation", "[corpus]") {
  CHECK_NOTHROW(corpus::load_failures());
  CHECK_NOTHROW(corpus::load_cells());
  CHECK_NOTHROW(corpus::load_prose());
  CHECK_NOTHROW(corpus::load_session_states());
}

TEST_CASE("the FAILURE corpus holds at least 60 payload cases", "[corpus]") {
  CHECK(corpus::load_failures().size() >= 60);
}

TEST_CASE("every FAILURE class is placed in every field it must cover", "[corpus][coverage]") {
  const auto cases = corpus::load_failures();
  std::set<std::pair<std::string, corpus::FailureField>> covered;
  for (const auto& c : cases)
    for (const auto field : c.fields) covered.emplace(c.case_class, field);

  std::size_t pairs = 0;
  for (const auto klass : corpus::failure_classes()) {
    for (const auto field : corpus::required_fields(klass)) {
      INFO("class " << klass << " in field " << corpus::field_name(field));
      CHECK(covered.count({std::string(klass), field}) == 1);
      ++pairs;
    }
  }
  // The closed class list is part of the coverage: 27 text classes in five
  // fields and the header class in four code fields. Dropping a class from the
  // list would shrink what every walk covers, so it fails here.
  CHECK(pairs >= 27 * 5 + 4);
}

TEST_CASE("every CELLS class is put in every place it must cover", "[corpus][coverage]") {
  const auto cases = corpus::load_cells();
  std::set<std::pair<std::string, corpus::CellPlace>> covered;
  for (const auto& c : cases)
    for (const auto place : c.places) covered.emplace(c.case_class, place);
  for (const auto klass : corpus::cell_classes()) {
    for (const auto place : corpus::required_places(klass)) {
      INFO("class " << klass << " in place " << corpus::place_name(place));
      CHECK(covered.count({std::string(klass), place}) == 1);
    }
  }
}

TEST_CASE("every PROSE class has a case", "[corpus][coverage]") {
  const auto cases = corpus::load_prose();
  for (const auto klass : corpus::prose_classes()) {
    INFO("class " << klass);
    CHECK(std::any_of(cases.begin(), cases.end(), [&](const auto& c) { return c.case_class == klass; }));
  }
}

TEST_CASE("every header-field case expects a bad_header_field refusal", "[corpus]") {
  std::size_t header_cases = 0;
  for (const auto& c : corpus::load_failures()) {
    if (c.case_class != "header_field") continue;
    ++header_cases;
    INFO(c.name);
    CHECK(c.expect == corpus::Expect::refused);
    CHECK(c.reason == rawtool::RefusalReason::bad_header_field);
  }
  CHECK(header_cases >= 10);
}

TEST_CASE("long and many-line FAILURE cases include one that fits and one refused for budget", "[corpus]") {
  const auto cases = corpus::load_failures();
  for (const std::string_view klass : {"long_line", "many_lines"}) {
    INFO("class " << klass);
    const auto of_class = [&](auto pred) {
      return std::any_of(cases.begin(), cases.end(), [&](const auto& c) { return c.case_class == klass && pred(c); });
    };
    CHECK(of_class([](const auto& c) { return c.expect == corpus::Expect::shown && c.bytes.size() >= 3000; }));
    CHECK(of_class([](const auto& c) { return c.reason == rawtool::RefusalReason::render_budget; }));
  }
}

TEST_CASE("every shown case whose point is an escape names the escaped form it expects", "[corpus]") {
  // For these families a lossless round trip is not enough: the text surface
  // must show the visible escape, so each case says which.
  const std::set<std::string_view> escaping{
      "line_forgery_cr", "line_forgery_crlf", "ansi_csi", "ansi_osc", "ansi_dcs", "c1_csi", "bidi", "zero_width",
      "default_ignorable", "unassigned_private_use", "combining_mark", "tags_block", "variation_selector",
      "line_separator", "nul", "invalid_utf8", "escape_imitation", "look_alike"};
  const auto check = [&](const auto& cases) {
    for (const auto& c : cases) {
      if (c.expect != corpus::Expect::shown || !escaping.contains(c.case_class)) continue;
      INFO(c.source << " case " << c.name);
      CHECK_FALSE(c.fragments(false).empty());
      CHECK_FALSE(c.fragments(true).empty());
    }
  };
  check(corpus::load_failures());
  check(corpus::load_cells());
  check(corpus::load_prose());
}

TEST_CASE("the CELLS corpus holds NULL, the empty string and the text NULL as three cases", "[corpus]") {
  const auto cases = corpus::load_cells();
  REQUIRE(has_case(cases, "null-cell"));
  REQUIRE(has_case(cases, "empty-cell"));
  REQUIRE(has_case(cases, "text-null-cell"));
  for (const auto& c : cases) {
    if (c.name == "null-cell") CHECK(c.null);
    if (c.name == "empty-cell") CHECK((!c.null && c.bytes.empty()));
    if (c.name == "text-null-cell") CHECK((!c.null && c.bytes == "NULL"));
  }
}

TEST_CASE("a corpus entry decodes text, base64 and repeat to the exact bytes", "[corpus][format]") {
  const auto text = corpus::parse_failures(failure_line("t", R"("text": "a\u0000b\u202e")"), "t.jsonl");
  REQUIRE(text.size() == 1);
  CHECK(text[0].bytes == std::string("a\0b\xE2\x80\xAE", 6));

  const auto bytes = corpus::parse_failures(failure_line("b", R"("base64": "wK8A/w==")"), "t.jsonl");
  REQUIRE(bytes.size() == 1);
  CHECK(bytes[0].bytes == std::string("\xC0\xAF\x00\xFF", 4));

  const auto repeated = corpus::parse_failures(failure_line("r", R"("text": "ab\n", "repeat": 3)"), "t.jsonl");
  REQUIRE(repeated.size() == 1);
  CHECK(repeated[0].bytes == "ab\nab\nab\n");
}

TEST_CASE("an entry with both text and base64, or neither, is rejected", "[corpus][format]") {
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("both", R"("text": "x", "base64": "/w==")"), "t.jsonl"),
                    Catch::Contains("exactly one of \"text\" and \"base64\"") && Catch::Contains("t.jsonl:1"));
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("neither", R"("note": "no bytes")"), "t.jsonl"),
                    Catch::Contains("exactly one of \"text\" and \"base64\""));
}

TEST_CASE("a duplicate case name is rejected, naming the second occurrence", "[corpus][format]") {
  const std::string two = failure_line("same", R"("text": "a")") + "\n" + failure_line("same", R"("text": "b")") + "\n";
  CHECK_THROWS_WITH(corpus::parse_failures(two, "t.jsonl"), Catch::Contains("t.jsonl:2") && Catch::Contains("duplicate name"));
}

TEST_CASE("an unknown class, field, member, expectation or reason is rejected", "[corpus][format]") {
  CHECK_THROWS_WITH(corpus::parse_failures(R"({"name": "c", "class": "roleline", "fields": ["message"], "text": "x", "expect": "shown"})", "t"),
                    Catch::Contains("unknown class \"roleline\""));
  CHECK_THROWS_WITH(corpus::parse_failures(R"({"name": "f", "class": "role_line", "fields": ["mesage"], "text": "x", "expect": "shown"})", "t"),
                    Catch::Contains("\"mesage\""));
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("m", R"("text": "x", "fieldz": 1)"), "t"), Catch::Contains("unknown member \"fieldz\""));
  CHECK_THROWS_WITH(corpus::parse_failures(R"({"name": "e", "class": "role_line", "fields": ["message"], "text": "x", "expect": "maybe"})", "t"),
                    Catch::Contains("\"expect\""));
  CHECK_THROWS_WITH(corpus::parse_failures(R"({"name": "r", "class": "role_line", "fields": ["message"], "text": "xy", "expect": "refused", "reason": "too_big", "withheld": "x"})", "t"),
                    Catch::Contains("unknown refusal reason \"too_big\""));
  CHECK_THROWS_WITH(corpus::parse_cells(R"({"name": "p", "class": "bidi", "places": ["row"], "text": "x", "expect": "shown"})", "t"),
                    Catch::Contains("\"row\""));
}

TEST_CASE("a text payload in a code field, or a code payload in a text field, is rejected", "[corpus][format]") {
  CHECK_THROWS_WITH(corpus::parse_failures(R"({"name": "a", "class": "role_line", "fields": ["sqlstate"], "text": "x", "expect": "shown"})", "t"),
                    Catch::Contains("code field"));
  CHECK_THROWS_WITH(corpus::parse_failures(R"({"name": "b", "class": "header_field", "fields": ["hint"], "text": "x", "expect": "refused", "reason": "bad_header_field", "withheld": "x"})", "t"),
                    Catch::Contains("not a code field"));
}

TEST_CASE("a refused entry must name its reason and a withheld part of its own bytes", "[corpus][format]") {
  CHECK_THROWS_WITH(corpus::parse_failures(R"({"name": "a", "class": "role_line", "fields": ["message"], "text": "xyz", "expect": "refused", "withheld": "y"})", "t"),
                    Catch::Contains("\"reason\""));
  CHECK_THROWS_WITH(corpus::parse_failures(R"({"name": "b", "class": "role_line", "fields": ["message"], "text": "xyz", "expect": "refused", "reason": "render_budget"})", "t"),
                    Catch::Contains("\"withheld\""));
  CHECK_THROWS_WITH(corpus::parse_failures(R"({"name": "c", "class": "role_line", "fields": ["message"], "text": "xyz", "expect": "refused", "reason": "render_budget", "withheld": "q"})", "t"),
                    Catch::Contains("not part of the entry's bytes"));
  CHECK_THROWS_WITH(corpus::parse_failures(R"({"name": "d", "class": "role_line", "fields": ["message"], "text": "xyz", "expect": "shown", "reason": "render_budget"})", "t"),
                    Catch::Contains("refused entries only"));
}

TEST_CASE("base64 must be canonical and must hold bytes that are not valid UTF-8", "[corpus][format]") {
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("utf8", R"("base64": "aGk=")"), "t"), Catch::Contains("write it as \"text\""));
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("pad", R"("base64": "/w")"), "t"), Catch::Contains("canonical"));
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("alphabet", R"("base64": "_w==")"), "t"), Catch::Contains("canonical"));
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("bits", R"("base64": "/x==")"), "t"), Catch::Contains("canonical"));
}

TEST_CASE("a corpus file holds printable ASCII only, one entry per line", "[corpus][format]") {
  // A raw U+202E inside the JSON string would be invisible to a reviewer.
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("raw", "\"text\": \"a\xE2\x80\xAE\""), "t.jsonl"),
                    Catch::Contains("printable ASCII") && Catch::Contains("t.jsonl:1"));
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("tab", "\"text\":\t\"a\""), "t"), Catch::Contains("printable ASCII"));
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("a", R"("text": "a")") + "\n\n" + failure_line("b", R"("text": "b")"), "t.jsonl"),
                    Catch::Contains("t.jsonl:2") && Catch::Contains("blank line"));
  CHECK_THROWS_WITH(corpus::parse_failures("{\"name\": \"x\",", "t"), Catch::Contains("not JSON"));
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("crlf", R"("text": "a")") + "\r\n", "t"), Catch::Contains("CRLF"));
}

TEST_CASE("a member given twice in one entry is rejected", "[corpus][format]") {
  CHECK_THROWS_WITH(corpus::parse_failures(failure_line("dup", R"("text": "a", "text": "b")"), "t"), Catch::Contains("\"text\" given twice"));
  // Distinct members are fine.
  CHECK_NOTHROW(corpus::parse_failures(failure_line("ok", R"("text": "a", "note": "b")"), "t"));
}

TEST_CASE("a NULL is a cell value only, and has no bytes", "[corpus][format]") {
  const auto cells = corpus::parse_cells(R"({"name": "n", "class": "null_empty", "places": ["cell"], "null": true, "expect": "shown"})", "t");
  REQUIRE(cells.size() == 1);
  CHECK(cells[0].null);
  CHECK_THROWS_WITH(corpus::parse_cells(R"({"name": "n", "class": "null_empty", "places": ["column_name"], "null": true, "expect": "shown"})", "t"),
                    Catch::Contains("a NULL is a cell value only"));
  CHECK_THROWS_WITH(corpus::parse_cells(R"({"name": "n", "class": "null_empty", "places": ["cell"], "null": true, "text": "", "expect": "shown"})", "t"),
                    Catch::Contains("exactly one of"));
  CHECK_THROWS(corpus::parse_failures(R"({"name": "n", "class": "nul", "fields": ["message"], "null": true, "expect": "shown"})", "t"));
}

TEST_CASE("failure_for puts the payload in exactly the named field and filler beside it", "[corpus][builders]") {
  const auto cases = corpus::parse_failures(
      R"({"name": "p", "class": "role_line", "fields": ["message", "detail", "hint", "context", "notice", "statement"], "text": "PAYLOAD", "expect": "shown"})", "t");
  REQUIRE(cases.size() == 1);
  const auto& c = cases[0];

  const auto message = corpus::failure_for(c, corpus::FailureField::message);
  CHECK(bytes_of(message.message) == "PAYLOAD");
  CHECK(bytes_of(message.sqlstate) == "P0001");
  CHECK(bytes_of(message.severity) == "ERROR");
  CHECK(message.detail.empty());
  CHECK(message.notices.empty());

  const auto detail = corpus::failure_for(c, corpus::FailureField::detail);
  CHECK(bytes_of(detail.detail) == "PAYLOAD");
  CHECK(bytes_of(detail.message).find(corpus::filler_marker) != std::string::npos);
  CHECK(bytes_of(corpus::failure_for(c, corpus::FailureField::hint).hint) == "PAYLOAD");
  CHECK(bytes_of(corpus::failure_for(c, corpus::FailureField::context).context) == "PAYLOAD");
  CHECK(bytes_of(corpus::failure_for(c, corpus::FailureField::statement).statement) == "PAYLOAD");

  const auto notice = corpus::failure_for(c, corpus::FailureField::notice);
  REQUIRE(notice.notices.size() == 1);
  CHECK(bytes_of(notice.notices[0].message) == "PAYLOAD");
  CHECK(bytes_of(notice.notices[0].sqlstate) == "00000");

  const auto sqlite = corpus::failure_for(c, corpus::FailureField::message, rawtool::Engine::sqlite);
  CHECK(sqlite.engine == rawtool::Engine::sqlite);
  CHECK(sqlite.sqlstate.empty());
  CHECK(sqlite.severity.empty());
  CHECK(sqlite.sqlite_code == 1);
  CHECK_THROWS_AS(corpus::failure_for(c, corpus::FailureField::sqlstate, rawtool::Engine::sqlite), std::invalid_argument);

  const auto code = corpus::failure_for(c, corpus::FailureField::notice_sqlstate);
  REQUIRE(code.notices.size() == 1);
  CHECK(bytes_of(code.notices[0].sqlstate) == "PAYLOAD");
  CHECK(bytes_of(code.sqlstate) == "P0001");
}

TEST_CASE("rows_for puts a NULL case in as SQL NULL and other cases as exact bytes", "[corpus][builders]") {
  const auto cells = corpus::parse_cells(
      R"({"name": "n", "class": "null_empty", "places": ["cell"], "null": true, "expect": "shown"})"
      "\n"
      R"({"name": "e", "class": "null_empty", "places": ["cell", "column_name", "type_name"], "text": "", "expect": "shown"})",
      "t");
  REQUIRE(cells.size() == 2);
  const auto null_rows = corpus::rows_for(cells[0], corpus::CellPlace::cell);
  REQUIRE(null_rows.rows.size() == 2);
  CHECK_FALSE(null_rows.rows[0][0].has_value());
  REQUIRE(null_rows.rows[1][0].has_value());

  const auto empty_rows = corpus::rows_for(cells[1], corpus::CellPlace::cell);
  REQUIRE(empty_rows.rows[0][0].has_value());
  CHECK(empty_rows.rows[0][0]->empty());
  CHECK(corpus::rows_for(cells[1], corpus::CellPlace::column_name).columns[0].name.empty());
  CHECK(corpus::rows_for(cells[1], corpus::CellPlace::type_name).columns[0].type_name.empty());

  const auto all = corpus::rows_of_cells(cells);
  REQUIRE(all.rows.size() == 2);
  CHECK_FALSE(all.rows[0][0].has_value());
  CHECK(all.rows[1][0].has_value());
}
