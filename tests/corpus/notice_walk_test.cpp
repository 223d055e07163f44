// render_rows over the FAILURE corpus's notice payloads: a statement that
// succeeds can raise the same hostile notices as one that fails, so every case
// listed for a notice field is rendered beside rows, in both modes, on both
// surfaces. Beside rows nothing is refused for a notice: a code that fails its
// grammar is quoted as data rather than shown in a line rawtool writes.
#include "walk_support.hpp"

#include "oracle.hpp"

#include <rawtool/corpus.hpp>
#include <rawtool/render/rows.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

namespace corpus = rawtool::corpus;
namespace walk = rawtool::test::walk;
using rawtool::Engine;
using rawtool::Untrusted;

namespace {

bool is_notice_field(corpus::FailureField field) {
  return field == corpus::FailureField::notice || field == corpus::FailureField::notice_severity || field == corpus::FailureField::notice_sqlstate;
}

rawtool::Rows rows_with_notices(std::vector<rawtool::Notice> notices) {
  rawtool::Rows rows;
  rows.columns = {rawtool::Column{Untrusted(std::string("n")), Untrusted(std::string("int4"))}};
  rows.rows = {{rawtool::Cell(Untrusted(std::string("1")))}};
  rows.bytes = 2;
  rows.notices = std::move(notices);
  return rows;
}

// The label the payload is quoted under, and the structured member that carries it.
std::pair<std::string, std::string> where_shown(corpus::FailureField field) {
  if (field == corpus::FailureField::notice_severity) return {"notice 1 unrecognised severity", "severity"};
  if (field == corpus::FailureField::notice_sqlstate) return {"notice 1 unrecognised sqlstate", "sqlstate"};
  return {"notice 1 message", "message"};
}

}  // namespace

TEST_CASE("every FAILURE notice payload beside rows is shown exactly inside the notice markers and never at column 0", "[corpus][rows][notice]") {
  std::size_t walked = 0;
  for (const auto& c : corpus::load_failures()) {
    for (const auto field : c.fields) {
      if (!is_notice_field(field)) continue;
      for (const auto& options : walk::both_modes()) {
        const auto failure = corpus::failure_for(c, field, Engine::postgresql);
        const auto rendered = rawtool::render::render_rows(rows_with_notices(failure.notices), walk::raw_provenance(Engine::postgresql), options);
        INFO(c.source << " case " << c.name << ", field " << corpus::field_name(field) << ", ascii_only " << options.ascii_only);
        REQUIRE_FALSE(rendered.refused());
        const auto problems = rawtool::test::text_surface_problems(rendered.text());
        for (const auto& problem : problems) INFO(problem);
        CHECK(problems.empty());

        // A code that passed its grammar stands in rawtool's own line; anything else is quoted.
        const auto [label, member] = where_shown(field);
        const auto fields = rawtool::test::quoted_fields(rendered.text());
        const auto header_at = rendered.text().find("\nrawtool: notice 1 of 1");
        REQUIRE(header_at != std::string::npos);
        const std::string header = rendered.text().substr(header_at + 1, rendered.text().find('\n', header_at + 1) - header_at - 1);
        // The code stands in the header as "; severity=NOTICE" or "; sqlstate=01000 (warning)".
        const std::string shown = "; " + member + "=" + c.bytes;
        const auto shown_at = header.find(shown);
        const bool code_in_header = field != corpus::FailureField::notice && shown_at != std::string::npos &&
                                    (shown_at + shown.size() == header.size() || header[shown_at + shown.size()] == ';' ||
                                     header[shown_at + shown.size()] == ' ');
        if (!code_in_header) {
          const auto exact = std::count_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == label && f.second == c.bytes; });
          CHECK(exact == 1);
        }
        const auto& notices = rendered.structured().at("notices");
        REQUIRE(notices.size() == 1);
        CHECK(rawtool::test::json_bytes(notices.at(0).at(member)) == c.bytes);
        CHECK(walk::structured_round_trip_problem(rendered.structured()).empty());
        ++walked;
      }
    }
  }
  CHECK(walked >= 100);
}
