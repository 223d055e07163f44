#include <rawtool/render/status.hpp>

#include "detail/common.hpp"
#include "detail/draft.hpp"
#include "detail/escape.hpp"
#include "detail/notices.hpp"

#include <rawtool/render/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace rawtool::render {

namespace {

std::string_view explanation(Status status) {
  switch (status) {
    case Status::invalid_arguments: return "the parameters do not match the query's declared parameters";
    case Status::not_found: return "no certified query has that name";
    case Status::timeout: return "the query ran past its time limit and was stopped";
    case Status::unavailable: return "the database could not be reached";
    case Status::execution_failed: return "the database reported an error while running the query";
    case Status::refused: return "rawtool declined to run the query";
  }
  return "unknown status";
}

// A log reference is the tool's own token; anything else is a caller's bug.
void check_reference(std::string_view reference) {
  if (!contract::is_log_reference(reference))
    throw std::invalid_argument("render_status: a log reference must match ^[A-Za-z0-9._:-]{1,128}$");
}

// "rawtool: argument NAME: EXPLANATION (rule=RULE)", and what the caller gave,
// quoted under a label. Both halves.
void append_argument(std::string& t, nlohmann::json& structured, const ArgumentError& argument, const RenderOptions& options) {
  const std::string_view rule = argument_rule_name(argument.rule);
  const bool named = !argument.argument.empty();
  t += fmt::format("{}argument {}: {} (rule={})\n", contract::own_prefix, named ? argument.argument.view() : std::string_view("not declared"),
                   argument.explanation.view(), rule);
  nlohmann::json member = {{"name", named ? nlohmann::json(argument.argument.str()) : nlohmann::json(nullptr)},
                           {"rule", std::string(rule)},
                           {"explanation", argument.explanation.str()}};
  if (argument.given) {
    detail::append_field(t, named ? "value given" : "name given", *argument.given, options);
    member["given"] = to_json(*argument.given);
  }
  structured["argument"] = std::move(member);
}

}  // namespace

std::string_view status_name(Status status) noexcept {
  switch (status) {
    case Status::invalid_arguments: return "invalid_arguments";
    case Status::not_found: return "not_found";
    case Status::timeout: return "timeout";
    case Status::unavailable: return "unavailable";
    case Status::execution_failed: return "execution_failed";
    case Status::refused: return "refused";
  }
  return "unknown";
}

namespace {

// A status reply, unsealed, so that an argument error can add its lines.
// An empty `log_reference` is a reply that withholds nothing (an argument
// error): it names no reference; callers with one check it first. An
// unavailable status says its cause.
detail::Draft status_draft(Status status, const Provenance& provenance, std::string_view log_reference,
                           UnavailableCause cause = UnavailableCause::unknown) {
  const bool referenced = !log_reference.empty();
  detail::Draft r;
  const std::string_view own = contract::own_prefix;
  const bool caused = status == Status::unavailable && cause != UnavailableCause::unknown;
  std::string said(explanation(status));
  if (caused) said += fmt::format(": {}", unavailable_cause_text(cause).view());
  r.text = fmt::format("{}certified query failed; status={}{}; query={}{}\n", own, status_name(status),
                       caused ? fmt::format("; cause={}", unavailable_cause_name(cause)) : std::string(),
                       provenance.certified_name.str(),
                       referenced ? fmt::format("; reference={}", log_reference) : std::string());
  r.text += referenced ? fmt::format("{}{}. The certified path shows no database text; an operator can find the details "
                                     "in the operator log under the reference.\n",
                                     own, said)
                       : fmt::format("{}{}.\n", own, said);
  r.text += fmt::format("{}end of reply; path={}; engine={}; database={}; elapsed_ms={}\n", own, detail::path_text(provenance),
                        engine_name(provenance.engine), provenance.database_label.str(), detail::elapsed_ms_text(provenance));
  r.structured = {
      {"kind", "certified_status"},
      {"status", std::string(status_name(status))},
      {"explanation", said},
  };
  if (referenced) r.structured["reference"] = std::string(log_reference);
  if (caused) r.structured["cause"] = std::string(unavailable_cause_name(cause));
  detail::add_provenance(r.structured, provenance);
  if (auto problem = detail::self_check(r.text, {}); !problem.empty())
    throw std::invalid_argument("render_status: the provenance holds text rawtool cannot show (" + problem.str() + ")");
  return r;
}

}  // namespace

Rendered render_status(Status status, const Provenance& provenance, std::string_view log_reference) {
  check_reference(log_reference);
  return status_draft(status, provenance, log_reference).seal();
}

Rendered render_unavailable(const Provenance& provenance, std::string_view log_reference, UnavailableCause cause) {
  check_reference(log_reference);
  return status_draft(Status::unavailable, provenance, log_reference, cause).seal();
}

Rendered render_status(const Provenance& provenance, const ArgumentError& argument, const RenderOptions& options) {
  detail::Draft r = status_draft(Status::invalid_arguments, provenance, {});
  // The argument lines go before the trailer, the reply's last line.
  const auto trailer = r.text.rfind(contract::own_prefix);
  std::string argument_text;
  append_argument(argument_text, r.structured, argument, options);
  r.text.insert(trailer, argument_text);
  if (auto problem = detail::self_check(r.text, {}); !problem.empty())
    return render_refusal(Refusal{RefusalReason::self_check_failed,
                                  Trusted::format("the argument error failed rawtool's own check ({}); it is not shown", problem)},
                          provenance);
  return std::move(r).seal();
}

Rendered render_argument_error(const Label& tool, const ArgumentError& argument, const RenderOptions& options) {
  detail::Draft r;
  r.text = fmt::format("{}invalid argument; tool={}; rule={}\n", contract::own_prefix, tool.str(), argument_rule_name(argument.rule));
  r.structured = {{"kind", "argument_error"}, {"tool", tool.str()}};
  append_argument(r.text, r.structured, argument, options);
  r.text += fmt::format("{}nothing ran; correct the argument and call {} again.\n", contract::own_prefix, tool.str());
  if (auto problem = detail::self_check(r.text, {}); !problem.empty()) {
    // Only a caller's bug can get here (rawtool's own words broke a line).
    throw std::invalid_argument("render_argument_error: the text failed rawtool's own check (" + problem.str() + ")");
  }
  return std::move(r).seal();
}

Rendered render_refusal(const Refusal& refusal, const Provenance& provenance) {
  detail::Draft r;
  r.refused = true;
  std::string& t = r.text;
  t = fmt::format("{}refused; reason={}; path={}; engine={}; database={}\n", contract::own_prefix, refusal_reason_name(refusal.reason), detail::path_text(provenance),
                  engine_name(provenance.engine), provenance.database_label.str());
  // The explanation is rawtool's own text; it is still escaped, so that a
  // mistake upstream cannot put a raw control or a line of its own here.
  detail::quote_lines(t, refusal.explanation.view(), contract::own_prefix, false);
  r.structured = {
      {"kind", "refusal"},
      {"reason", std::string(refusal_reason_name(refusal.reason))},
      {"explanation", refusal.explanation.str()},
  };
  detail::add_provenance(r.structured, provenance);
  return std::move(r).seal();
}

}  // namespace rawtool::render
