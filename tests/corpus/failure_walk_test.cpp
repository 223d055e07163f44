// render_failure over the whole FAILURE corpus: every case, in every field it
// lists, from both engines where the field exists there, with ascii_only off
// and on, on the text and the structured surface.
#include "walk_support.hpp"

#include "oracle.hpp"

#include <rawtool/corpus.hpp>
#include <rawtool/render/failure.hpp>
#include <rawtool/render/json.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <string>

namespace corpus = rawtool::corpus;
namespace walk = rawtool::test::walk;
using rawtool::Engine;
using rawtool::render::Rendered;
using rawtool::render::RenderOptions;

namespace {

struct Walked {
  const corpus::FailureCase& c;
  corpus::FailureField field;
  Engine engine;
  const RenderOptions& options;
  const Rendered& rendered;
};

// Renders every (case, field, engine, mode) and hands each result to `check`
// with a description of where it came from already in the test's context.
void walk_failures(const std::function<void(const Walked&)>& check, RenderOptions base = {}) {
  const auto cases = corpus::load_failures();
  REQUIRE(cases.size() >= 60);
  for (const auto& c : cases) {
    for (const auto field : c.fields) {
      for (const auto engine : {Engine::postgresql, Engine::sqlite}) {
        if (engine == Engine::sqlite && corpus::is_code_field(field)) continue;  // SQLite sends no such codes
        for (auto options : walk::both_modes()) {
          options.show_statement = base.show_statement;
          options.budget = base.budget;
          const Rendered rendered =
              rawtool::render::render_failure(corpus::failure_for(c, field, engine), walk::raw_provenance(engine), options);
          INFO(c.source << " case " << c.name << ", field " << corpus::field_name(field) << ", engine "
                        << rawtool::engine_name(engine) << ", ascii_only " << options.ascii_only);
          check(Walked{c, field, engine, options, rendered});
        }
      }
    }
  }
}

// The label render_failure writes above a field's quoted lines.
std::string label_of(corpus::FailureField field) {
  if (field == corpus::FailureField::notice) return "notice 1 message";
  return std::string(corpus::field_name(field));
}

// The field's member on the structured surface, under "untrusted".
const nlohmann::json* untrusted_member(const nlohmann::json& structured, corpus::FailureField field) {
  if (!structured.contains("untrusted")) return nullptr;
  const auto& untrusted = structured.at("untrusted");
  if (field == corpus::FailureField::notice) {
    if (!untrusted.contains("notices") || untrusted.at("notices").empty()) return nullptr;
    const auto& notice = untrusted.at("notices").at(0);
    return notice.contains("message") ? &notice.at("message") : nullptr;
  }
  const std::string member(corpus::field_name(field));
  return untrusted.contains(member) ? &untrusted.at(member) : nullptr;
}

}  // namespace

TEST_CASE("each FAILURE case is shown or refused as the corpus expects, with the expected reason", "[corpus][failure]") {
  walk_failures([](const Walked& w) {
    const bool expect_refused = w.c.expect == corpus::Expect::refused;
    CHECK(w.rendered.refused() == expect_refused);
    if (w.rendered.refused() && expect_refused) {
      REQUIRE(w.c.reason.has_value());
      CHECK(w.rendered.structured().value("kind", "") == "refusal");
      CHECK(w.rendered.structured().value("reason", "") == rawtool::refusal_reason_name(*w.c.reason));
    }
  });
}

TEST_CASE("no FAILURE rendering puts untrusted bytes at column 0 or a raw control or invisible code point on the text surface",
          "[corpus][failure]") {
  walk_failures([](const Walked& w) {
    const auto problems = rawtool::test::text_surface_problems(w.rendered.text());
    for (const auto& problem : problems) INFO(problem);
    CHECK(problems.empty());
  });
}

TEST_CASE("a shown FAILURE field decodes from the text surface to its exact bytes under its own label", "[corpus][failure]") {
  walk_failures([](const Walked& w) {
    if (w.rendered.refused()) return;
    const auto fields = rawtool::test::quoted_fields(w.rendered.text());
    const std::string label = label_of(w.field);
    const auto labelled = std::count_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == label; });
    const auto exact = std::count_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == label && f.second == w.c.bytes; });
    CHECK(labelled == 1);
    CHECK(exact == 1);
    // The filler message beside a payload comes back under its own label, untouched.
    if (w.field != corpus::FailureField::message) {
      const auto message = std::find_if(fields.begin(), fields.end(), [](const auto& f) { return f.first == "message"; });
      REQUIRE(message != fields.end());
      CHECK(message->second.starts_with(corpus::filler_marker));
    }
  });
}

TEST_CASE("a shown FAILURE text surface carries each escaped fragment the case names", "[corpus][failure]") {
  std::size_t checked = 0;
  walk_failures([&](const Walked& w) {
    if (w.rendered.refused()) return;
    for (const auto& fragment : w.c.fragments(w.options.ascii_only)) {
      INFO("fragment " << walk::visible(fragment));
      CHECK(w.rendered.text().find(fragment) != std::string::npos);
      ++checked;
    }
  });
  CHECK(checked > 100);
}

TEST_CASE("the structured FAILURE surface survives dump and parse and carries each field's exact bytes", "[corpus][failure]") {
  walk_failures([](const Walked& w) {
    const std::string problem = walk::structured_round_trip_problem(w.rendered.structured());
    INFO(problem);
    CHECK(problem.empty());
    if (w.rendered.refused()) return;
    const nlohmann::json* member = untrusted_member(w.rendered.structured(), w.field);
    REQUIRE(member != nullptr);
    const auto carried = rawtool::test::json_bytes(*member);
    REQUIRE(carried.has_value());
    CHECK(*carried == w.c.bytes);
    // Valid UTF-8 travels as a string, anything else as the marked base64 object.
    CHECK(member->is_string() == w.c.valid_utf8);
  });
}

TEST_CASE("a refused FAILURE shows none of the withheld bytes or the filler beside them on either surface", "[corpus][failure]") {
  std::size_t refusals = 0;
  walk_failures([&](const Walked& w) {
    if (!w.rendered.refused()) return;
    ++refusals;
    INFO("withheld " << walk::visible(w.c.withheld));
    REQUIRE_FALSE(w.c.withheld.empty());
    CHECK(w.rendered.text().find(w.c.withheld) == std::string::npos);
    CHECK(w.rendered.text().find(corpus::filler_marker) == std::string::npos);
    CHECK_FALSE(walk::json_mentions(w.rendered.structured(), w.c.withheld));
    CHECK_FALSE(walk::json_mentions(w.rendered.structured(), corpus::filler_marker));
    CHECK(rawtool::test::quoted_fields(w.rendered.text()).empty());
  });
  CHECK(refusals > 0);
}

TEST_CASE("with show_statement off, a statement payload reaches neither surface", "[corpus][failure]") {
  RenderOptions hidden;
  hidden.show_statement = false;
  std::size_t checked = 0;
  walk_failures(
      [&](const Walked& w) {
        if (w.field != corpus::FailureField::statement) return;
        ++checked;
        // The budget counts only what is shown, so a statement too long to show no longer refuses.
        CHECK_FALSE(w.rendered.refused());
        if (w.rendered.refused()) return;
        const auto fields = rawtool::test::quoted_fields(w.rendered.text());
        CHECK(std::none_of(fields.begin(), fields.end(), [](const auto& f) { return f.first == "statement"; }));
        CHECK_FALSE(w.rendered.structured().at("untrusted").contains("statement"));
      },
      hidden);
  CHECK(checked > 0);
}

TEST_CASE("a case refused for budget is shown exactly once the budget allows it", "[corpus][failure]") {
  RenderOptions roomy;
  roomy.budget = 1024 * 1024;
  std::size_t budget_cases = 0;
  walk_failures(
      [&](const Walked& w) {
        if (w.c.reason != rawtool::RefusalReason::render_budget) return;
        ++budget_cases;
        // The refusal was about size, not content: the same bytes render losslessly.
        CHECK_FALSE(w.rendered.refused());
        if (w.rendered.refused()) return;
        const auto problems = rawtool::test::text_surface_problems(w.rendered.text());
        CHECK(problems.empty());
        const auto fields = rawtool::test::quoted_fields(w.rendered.text());
        const std::string label = label_of(w.field);
        CHECK(std::count_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == label && f.second == w.c.bytes; }) == 1);
      },
      roomy);
  CHECK(budget_cases > 0);
}

TEST_CASE("the FAILURE log record carries each field exactly, or a bounded prefix with its size, as one line of ASCII",
          "[corpus][failure][log]") {
  const auto cases = corpus::load_failures();
  std::size_t bounded = 0;
  for (const auto& c : cases) {
    for (const auto field : c.fields) {
      for (const auto engine : {Engine::postgresql, Engine::sqlite}) {
        if (engine == Engine::sqlite && corpus::is_code_field(field)) continue;
        INFO(c.source << " case " << c.name << ", field " << corpus::field_name(field));
        const nlohmann::json record = rawtool::render::failure_log_record(corpus::failure_for(c, field, engine));
        const std::string problem = walk::structured_round_trip_problem(record);
        INFO(problem);
        CHECK(problem.empty());
        CHECK(rawtool::render::dump(record).size() < 48 * 1024);
        const nlohmann::json* member = nullptr;
        if (field == corpus::FailureField::notice) {
          member = &record.at("notices").at(0).at("message");
        } else if (field == corpus::FailureField::notice_severity) {
          member = &record.at("notices").at(0).at("severity");
        } else if (field == corpus::FailureField::notice_sqlstate) {
          member = &record.at("notices").at(0).at("sqlstate");
        } else {
          member = &record.at(std::string(corpus::field_name(field)));
        }
        if (member->is_object() && member->contains("truncated")) {
          ++bounded;
          const auto kept = member->at("kept_bytes").get<std::size_t>();
          CHECK(member->at("bytes") == c.bytes.size());
          CHECK(rawtool::test::json_bytes(member->at("prefix")) == c.bytes.substr(0, kept));
        } else {
          CHECK(rawtool::test::json_bytes(*member) == c.bytes);
        }
      }
    }
  }
  CHECK(bounded > 0);  // the corpus's long cases reach the bound
}

TEST_CASE("a case refused for budget, raised as a notice, is left out and counted while the failure's own fields are shown",
          "[corpus][failure][notice]") {
  // The corpus lists these cases without the notice field: there they are
  // not refused. Each is put in a notice here, on both engines and in both modes.
  std::size_t budget_cases = 0;
  for (const auto& c : corpus::load_failures()) {
    if (c.reason != rawtool::RefusalReason::render_budget) continue;
    ++budget_cases;
    for (const auto engine : {Engine::postgresql, Engine::sqlite}) {
      for (const auto& options : walk::both_modes()) {
        const rawtool::Failure failure = corpus::failure_for(c, corpus::FailureField::notice, engine);
        const Rendered r = rawtool::render::render_failure(failure, walk::raw_provenance(engine), options);
        INFO(c.name << ", engine " << rawtool::engine_name(engine) << ", ascii_only " << options.ascii_only);
        REQUIRE_FALSE(r.refused());
        CHECK(rawtool::test::text_surface_problems(r.text()).empty());
        const auto fields = rawtool::test::quoted_fields(r.text());
        CHECK(std::none_of(fields.begin(), fields.end(), [](const auto& f) { return f.first.starts_with("notice"); }));
        CHECK(std::count_if(fields.begin(), fields.end(), [](const auto& f) { return f.first == "message"; }) == 1);
        CHECK(r.structured().at("notices_not_shown") == 1);
        CHECK(r.structured().at("untrusted").at("notices").empty());
        CHECK(r.text().find("\nrawtool: left out: 1 more notice not shown: ") != std::string::npos);
        CHECK(r.text().find(c.withheld) == std::string::npos);
      }
    }
  }
  CHECK(budget_cases > 0);
}
