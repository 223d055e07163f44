// append_prose and prose_json over the whole PROSE corpus, with catalog_prose
// quoted and omitted, and ascii_only off and on.
#include "walk_support.hpp"

#include "oracle.hpp"

#include <rawtool/corpus.hpp>
#include <rawtool/render/prose.hpp>

#include <catch2/catch.hpp>

#include <functional>
#include <string>

namespace corpus = rawtool::corpus;
namespace walk = rawtool::test::walk;
using rawtool::render::CatalogProse;
using rawtool::render::RenderOptions;

namespace {

struct Walked {
  const corpus::ProseCase& c;
  std::string_view label;
  const RenderOptions& options;
  const std::string& text;
  const nlohmann::json& structured;
};

void walk_prose(CatalogProse mode, const std::function<void(const Walked&)>& check) {
  const auto cases = corpus::load_prose();
  REQUIRE_FALSE(cases.empty());
  for (const auto& c : cases) {
    for (const std::string_view label : {"description", "parameter start_day"}) {
      for (auto options : walk::both_modes()) {
        options.catalog_prose = mode;
        std::string text;
        rawtool::render::append_prose(text, label, corpus::payload(c), options);
        const nlohmann::json structured = rawtool::render::prose_json(corpus::payload(c), options);
        INFO(c.source << " case " << c.name << ", label " << label << ", ascii_only " << options.ascii_only);
        check(Walked{c, label, options, text, structured});
      }
    }
  }
}

}  // namespace

TEST_CASE("quoted catalog prose keeps untrusted bytes off column 0 and raw invisible code points off the text surface", "[corpus][prose]") {
  walk_prose(CatalogProse::quoted, [](const Walked& w) {
    const auto problems = rawtool::test::text_surface_problems(w.text);
    for (const auto& problem : problems) INFO(problem);
    CHECK(problems.empty());
  });
}

TEST_CASE("quoted catalog prose decodes from the text surface to its exact bytes under its label", "[corpus][prose]") {
  walk_prose(CatalogProse::quoted, [](const Walked& w) {
    const auto fields = rawtool::test::quoted_fields(w.text);
    REQUIRE(fields.size() == 1);
    CHECK(fields[0].first == w.label);
    CHECK(fields[0].second == w.c.bytes);
    for (const auto& fragment : w.c.fragments(w.options.ascii_only)) {
      INFO("fragment " << walk::visible(fragment));
      CHECK(w.text.find(fragment) != std::string::npos);
    }
  });
}

TEST_CASE("quoted catalog prose is carried exactly on the structured surface", "[corpus][prose]") {
  walk_prose(CatalogProse::quoted, [](const Walked& w) {
    const std::string problem = walk::structured_round_trip_problem(w.structured);
    INFO(problem);
    CHECK(problem.empty());
    CHECK(rawtool::test::json_bytes(w.structured) == std::optional<std::string>(w.c.bytes));
    CHECK(w.structured.is_string() == w.c.valid_utf8);
  });
}

TEST_CASE("omitted catalog prose shows none of its bytes on either surface and says it was omitted", "[corpus][prose]") {
  walk_prose(CatalogProse::omitted, [](const Walked& w) {
    const auto problems = rawtool::test::text_surface_problems(w.text);
    for (const auto& problem : problems) INFO(problem);
    CHECK(problems.empty());
    CHECK(rawtool::test::quoted_fields(w.text).empty());
    REQUIRE(w.c.bytes.size() >= 8);
    // The whole payload, and its opening words on their own.
    CHECK(w.text.find(w.c.bytes) == std::string::npos);
    CHECK(w.text.find(w.c.bytes.substr(0, 8)) == std::string::npos);
    CHECK(w.text.find("omitted") != std::string::npos);
    CHECK(w.structured.is_null());
  });
}
