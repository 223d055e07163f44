// render_rows over the whole CELLS corpus: every case in every place it lists
// (cell, column name, type name), with ascii_only off and on, on the text and
// the structured surface; then all cells together in one result.
#include "walk_support.hpp"

#include "oracle.hpp"

#include <rawtool/corpus.hpp>
#include <rawtool/render/rows.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace corpus = rawtool::corpus;
namespace walk = rawtool::test::walk;
using rawtool::Engine;
using rawtool::render::Rendered;
using rawtool::render::RenderOptions;

namespace {

struct Walked {
  const corpus::CellCase& c;
  corpus::CellPlace place;
  const RenderOptions& options;
  const Rendered& rendered;
};

void walk_cells(const std::function<void(const Walked&)>& check) {
  const auto cases = corpus::load_cells();
  REQUIRE_FALSE(cases.empty());
  for (const auto& c : cases) {
    for (const auto place : c.places) {
      for (const auto& options : walk::both_modes()) {
        const Rendered rendered = rawtool::render::render_rows(corpus::rows_for(c, place), walk::raw_provenance(Engine::sqlite), options);
        INFO(c.source << " case " << c.name << ", place " << corpus::place_name(place) << ", ascii_only " << options.ascii_only);
        check(Walked{c, place, options, rendered});
      }
    }
  }
}

// The single column's type name as the text surface shows it, decoded:
// `columns: "<name>" (type "<type>")` is the whole line.
std::optional<std::string> shown_type_name(std::string_view text) {
  const auto start = text.find("\ncolumns: ");
  if (start == std::string_view::npos) return std::nullopt;
  const auto end = text.find('\n', start + 1);
  const std::string_view line = text.substr(start + 1, end - start - 1);
  const auto open = line.find(" (type \"");
  if (open == std::string_view::npos || !line.ends_with("\")")) return std::nullopt;
  // Cell escaping turns every '"' inside a name into \", so the first ` (type "` ends the name.
  return rawtool::test::decode_escapes(line.substr(open + 8, line.size() - open - 8 - 2));
}

std::optional<std::string> expected_cell(const corpus::CellCase& c) {
  if (c.null) return std::nullopt;
  return c.bytes;
}

}  // namespace

TEST_CASE("no rows rendering of a CELLS case puts untrusted bytes at column 0 or a raw control or invisible code point on the text surface",
          "[corpus][rows]") {
  walk_cells([](const Walked& w) {
    const auto problems = rawtool::test::text_surface_problems(w.rendered.text());
    for (const auto& problem : problems) INFO(problem);
    CHECK(problems.empty());
    CHECK(w.rendered.refused() == (w.c.expect == corpus::Expect::refused));
  });
}

TEST_CASE("every CELLS payload decodes from the text surface to its exact bytes in its place, and the row after it is intact",
          "[corpus][rows]") {
  walk_cells([](const Walked& w) {
    if (w.rendered.refused()) return;
    const auto rows = rawtool::test::row_cells(w.rendered.text());
    const auto names = rawtool::test::column_names(w.rendered.text());
    REQUIRE(rows.size() == 2);
    REQUIRE(rows[0].size() == 1);
    REQUIRE(rows[1].size() == 1);
    REQUIRE(names.size() == 1);
    REQUIRE(rows[1][0].has_value());
    CHECK(rows[1][0]->starts_with(corpus::filler_marker));
    switch (w.place) {
      case corpus::CellPlace::cell:
        CHECK(rows[0][0] == expected_cell(w.c));
        CHECK(names[0] == "value");
        break;
      case corpus::CellPlace::column_name:
        CHECK(names[0] == w.c.bytes);
        break;
      case corpus::CellPlace::type_name: {
        const auto type = shown_type_name(w.rendered.text());
        REQUIRE(type.has_value());
        CHECK(*type == w.c.bytes);
        CHECK(names[0] == "value");
        break;
      }
    }
  });
}

TEST_CASE("a shown CELLS text surface carries each escaped fragment the case names", "[corpus][rows]") {
  std::size_t checked = 0;
  walk_cells([&](const Walked& w) {
    if (w.rendered.refused()) return;
    for (const auto& fragment : w.c.fragments(w.options.ascii_only)) {
      INFO("fragment " << walk::visible(fragment));
      CHECK(w.rendered.text().find(fragment) != std::string::npos);
      ++checked;
    }
  });
  CHECK(checked > 20);
}

TEST_CASE("the structured rows surface survives dump and parse and carries each CELLS payload exactly", "[corpus][rows]") {
  walk_cells([](const Walked& w) {
    const std::string problem = walk::structured_round_trip_problem(w.rendered.structured());
    INFO(problem);
    CHECK(problem.empty());
    if (w.rendered.refused()) return;
    const auto& s = w.rendered.structured();
    REQUIRE(s.contains("rows"));
    REQUIRE(s.contains("columns"));
    const nlohmann::json* value = nullptr;
    switch (w.place) {
      case corpus::CellPlace::cell: value = &s.at("rows").at(0).at(0); break;
      case corpus::CellPlace::column_name: value = &s.at("columns").at(0).at("name"); break;
      case corpus::CellPlace::type_name: value = &s.at("columns").at(0).at("type"); break;
    }
    if (w.c.null) {
      CHECK(value->is_null());
      return;
    }
    const auto carried = rawtool::test::json_bytes(*value);
    REQUIRE(carried.has_value());
    CHECK(*carried == w.c.bytes);
    CHECK(value->is_string() == w.c.valid_utf8);
    const auto after = rawtool::test::json_bytes(s.at("rows").at(1).at(0));
    REQUIRE(after.has_value());
    CHECK(after->starts_with(corpus::filler_marker));
  });
}

TEST_CASE("NULL, the empty string and the text NULL stay three different things on both surfaces", "[corpus][rows]") {
  const auto cases = corpus::load_cells();
  std::vector<corpus::CellCase> three;
  for (const std::string_view name : {"null-cell", "empty-cell", "text-null-cell"}) {
    const auto found = std::find_if(cases.begin(), cases.end(), [&](const auto& c) { return c.name == name; });
    REQUIRE(found != cases.end());
    three.push_back(*found);
  }
  for (const auto& options : walk::both_modes()) {
    INFO("ascii_only " << options.ascii_only);
    const Rendered rendered = rawtool::render::render_rows(corpus::rows_of_cells(three), walk::raw_provenance(Engine::postgresql), options);
    const auto rows = rawtool::test::row_cells(rendered.text());
    REQUIRE(rows.size() == 3);
    CHECK_FALSE(rows[0][0].has_value());
    CHECK(rows[1][0] == std::optional<std::string>(""));
    CHECK(rows[2][0] == std::optional<std::string>("NULL"));
    // The row lines themselves differ once their ordinals are set aside.
    CHECK(rendered.text().find("row 1: NULL\n") != std::string::npos);
    CHECK(rendered.text().find("row 2: \"\"\n") != std::string::npos);
    CHECK(rendered.text().find("row 3: \"NULL\"\n") != std::string::npos);

    const auto& data = rendered.structured().at("rows");
    CHECK(data.at(0).at(0).is_null());
    CHECK(data.at(1).at(0) == "");
    CHECK(data.at(2).at(0) == "NULL");
  }
}

TEST_CASE("every CELLS case survives in one result beside all the others", "[corpus][rows]") {
  const auto cases = corpus::load_cells();
  std::vector<std::optional<std::string>> expected;
  std::vector<bool> valid_utf8;
  for (const auto& c : cases) {
    if (std::find(c.places.begin(), c.places.end(), corpus::CellPlace::cell) == c.places.end()) continue;
    expected.push_back(expected_cell(c));
    valid_utf8.push_back(c.valid_utf8);
  }
  REQUIRE(expected.size() > 20);
  for (const auto& options : walk::both_modes()) {
    INFO("ascii_only " << options.ascii_only);
    const Rendered rendered = rawtool::render::render_rows(corpus::rows_of_cells(cases), walk::raw_provenance(Engine::postgresql), options);
    REQUIRE_FALSE(rendered.refused());
    const auto problems = rawtool::test::text_surface_problems(rendered.text());
    for (const auto& problem : problems) INFO(problem);
    CHECK(problems.empty());

    const auto rows = rawtool::test::row_cells(rendered.text());
    REQUIRE(rows.size() == expected.size());
    const auto& data = rendered.structured().at("rows");
    REQUIRE(data.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      INFO("row " << i + 1);
      REQUIRE(rows[i].size() == 1);
      CHECK(rows[i][0] == expected[i]);
      if (expected[i]) {
        CHECK(rawtool::test::json_bytes(data.at(i).at(0)) == expected[i]);
        CHECK(data.at(i).at(0).is_string() == valid_utf8[i]);
      } else {
        CHECK(data.at(i).at(0).is_null());
      }
    }
  }
}

TEST_CASE("in the table layout every CELLS payload keeps the text surface's invariants and decodes to its exact bytes",
          "[corpus][rows][table]") {
  const auto cases = corpus::load_cells();
  REQUIRE_FALSE(cases.empty());
  for (const auto& c : cases) {
    for (const auto place : c.places) {
      if (place == corpus::CellPlace::type_name) continue;  // the table shows no type names
      for (RenderOptions options : walk::both_modes()) {
        options.rows_layout = rawtool::render::RowsLayout::table;
        options.table_cell_width = std::size_t{1} << 30;  // nothing cut: every byte must come back
        const Rendered rendered = rawtool::render::render_rows(corpus::rows_for(c, place), walk::raw_provenance(Engine::sqlite), options);
        INFO(c.source << " case " << c.name << ", place " << corpus::place_name(place) << ", ascii_only " << options.ascii_only);
        const auto problems = rawtool::test::text_surface_problems(rendered.text(), options.rows_layout);
        for (const auto& problem : problems) INFO(problem);
        CHECK(problems.empty());
        CHECK(rendered.refused() == (c.expect == corpus::Expect::refused));
        if (rendered.refused()) continue;
        const auto rows = rawtool::test::row_cells(rendered.text(), options.rows_layout);
        const auto names = rawtool::test::column_names(rendered.text(), options.rows_layout);
        REQUIRE(rows.size() == 2);
        REQUIRE(names.size() == 1);
        if (place == corpus::CellPlace::cell) CHECK(rows[0].at(0) == expected_cell(c));
        if (place == corpus::CellPlace::column_name) CHECK(names[0] == c.bytes);
        REQUIRE(rows[1].at(0).has_value());
        CHECK(rows[1][0]->starts_with(corpus::filler_marker));
      }
    }
  }
}
