#include <rawtool/render/failure.hpp>

#include "detail/common.hpp"
#include "detail/draft.hpp"
#include "detail/escape.hpp"
#include "detail/notices.hpp"
#include "detail/tables.hpp"
#include "detail/untrusted_access.hpp"

#include <rawtool/render/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

namespace rawtool::render {

namespace {

using detail::UntrustedAccess;

std::string_view bytes(const Untrusted& value) { return UntrustedAccess::bytes(value); }

using detail::Field;
using detail::append_field;
using detail::notice_fields;

// A prose field of the failure, with the name a driver gives it when the
// engine sent it empty.
struct ProseField {
  std::string_view label;
  std::string_view member;
  const Untrusted* value;
  FailureField field;
};

// The failure's own untrusted prose fields, in the order they are shown.
std::array<ProseField, 10> prose_fields(const Failure& f) {
  return {{
      {"message", "message", &f.message, FailureField::message},
      {"detail", "detail", &f.detail, FailureField::detail},
      {"hint", "hint", &f.hint, FailureField::hint},
      {"context", "context", &f.context, FailureField::context},
      {"internal query", "internal_query", &f.internal_query, FailureField::internal_query},
      {"schema", "schema", &f.schema, FailureField::schema},
      {"table", "table", &f.table, FailureField::table},
      {"column", "column", &f.column, FailureField::column},
      {"datatype", "datatype", &f.datatype, FailureField::datatype},
      {"constraint", "constraint", &f.constraint, FailureField::constraint},
  }};
}

// Whether the engine sent `field` with no text, rather than not at all.
bool sent_empty(const Failure& f, FailureField field) { return std::find(f.sent_empty.begin(), f.sent_empty.end(), field) != f.sent_empty.end(); }

// Why a header field cannot be shown, in the tool's own words; empty when all pass.
std::string header_problem(const Failure& f) {
  if (!f.sqlstate.empty() && !detail::valid_sqlstate(bytes(f.sqlstate))) return "the failure's SQLSTATE does not match ^[0-9A-Z]{5}$";
  if (!f.severity.empty() && !detail::valid_severity(bytes(f.severity))) return "the failure's severity is not one of ERROR FATAL PANIC WARNING NOTICE DEBUG INFO LOG";
  if (f.sqlite_code && detail::sqlite_code_name(*f.sqlite_code).empty()) return "the failure's SQLite result code is not one sqlite3.h defines";
  for (std::size_t i = 0; i < f.notices.size(); ++i) {
    const Notice& n = f.notices[i];
    if (!n.sqlstate.empty() && !detail::valid_sqlstate(bytes(n.sqlstate))) return fmt::format("the SQLSTATE of notice {} does not match ^[0-9A-Z]{{5}}$", i + 1);
    if (!n.severity.empty() && !detail::valid_severity(bytes(n.severity)))
      return fmt::format("the severity of notice {} is not one of ERROR FATAL PANIC WARNING NOTICE DEBUG INFO LOG", i + 1);
  }
  return {};
}

// "22P02 (invalid_text_representation)"; only for a code that passed its grammar.
std::string sqlstate_text(std::string_view code) {
  const auto condition = detail::sqlstate_condition(code);
  return fmt::format("{} ({})", code, condition.empty() ? std::string_view("unknown condition") : condition);
}

nlohmann::json condition_json(std::string_view code) {
  const auto condition = detail::sqlstate_condition(code);
  if (condition.empty()) return "unknown condition";
  return std::string(condition);
}

std::size_t shown_untrusted_bytes(const Failure& f, const RenderOptions& options) {
  std::size_t total = 0;
  if (f.withheld) {
    total += static_cast<std::size_t>(f.withheld->bytes);
  } else {
    for (const auto& field : prose_fields(f)) total += field.value->size();
  }
  total += detail::notice_bytes(f.notices);
  if (options.show_statement) total += f.statement.size();
  return total;
}

// Bytes of the failure's own text a rendering shows: its prose fields and,
// when asked, the statement. Notices are not among them: they give way to the
// failure's own fields within the render budget.
std::size_t own_untrusted_bytes(const Failure& f, const RenderOptions& options) {
  std::size_t total = 0;
  for (const auto& field : prose_fields(f)) total += field.value->size();
  if (options.show_statement) total += f.statement.size();
  return total;
}

// A count of none is left out of the header; a count not known is not, since
// a reader would take its absence for none.
std::string rows_before_failure_field(const Failure& f) {
  if (!f.rows_before_failure) return "; rows_before_failure=unknown";
  if (*f.rows_before_failure == 0) return {};
  return fmt::format("; rows_before_failure={}", *f.rows_before_failure);
}

nlohmann::json rows_before_failure_json(const Failure& f) {
  return f.rows_before_failure ? nlohmann::json(*f.rows_before_failure) : nlohmann::json(nullptr);
}

Rendered refuse(const Failure& f, const Provenance& provenance, const RenderOptions& options, RefusalReason reason, std::string why,
                std::optional<std::size_t> rendered_bytes) {
  const std::size_t untrusted_bytes = shown_untrusted_bytes(f, options);
  const std::string digest = withheld_sha256(f);
  const std::string_view code = bytes(f.sqlstate);
  const bool code_ok = !code.empty() && detail::valid_sqlstate(code);

  detail::Draft r;
  r.refused = true;
  std::string& t = r.text;
  t += fmt::format("{}the database's reply to your statement is withheld: {}.\n", contract::own_prefix, why);
  t += fmt::format("{}refusal; reason={}; path={}; engine={}; database={}", contract::own_prefix, refusal_reason_name(reason), detail::path_text(provenance),
                   engine_name(provenance.engine), provenance.database_label.str());
  if (code_ok) t += fmt::format("; sqlstate={}", sqlstate_text(code));
  t += fmt::format("; untrusted_bytes={}; rendered_bytes={}; budget={}; withheld_sha256={}", untrusted_bytes,
                   rendered_bytes ? fmt::format("{}", *rendered_bytes) : std::string("not rendered"), options.budget, digest);
  t += rows_before_failure_field(f);
  t += '\n';
  t += contract::own_prefix;
  t += f.withheld ? "none of the reply's text is shown, shortened or cleaned up; the operator log holds the start of each field "
                    "and the digest of all of it under withheld_sha256.\n"
                  : "none of the reply's text is shown, shortened or cleaned up; the operator log holds it under withheld_sha256.\n";

  nlohmann::json& s = r.structured;
  s = {
      {"kind", "refusal"},
      {"reason", std::string(refusal_reason_name(reason))},
      {"explanation", why},
      {"engine", std::string(engine_name(f.engine))},
      {"sqlstate", code_ok ? nlohmann::json(std::string(code)) : nlohmann::json(nullptr)},
      {"condition", code_ok ? condition_json(code) : nlohmann::json(nullptr)},
      {"untrusted_bytes", untrusted_bytes},
      {"rendered_bytes", rendered_bytes ? nlohmann::json(*rendered_bytes) : nlohmann::json(nullptr)},
      {"budget", options.budget},
      {"withheld_sha256", digest},
      {"rows_before_failure", rows_before_failure_json(f)},
  };
  detail::add_provenance(s, provenance);
  return std::move(r).seal();
}

}  // namespace

std::string withheld_sha256(const Failure& f) {
  if (f.withheld) return f.withheld->sha256;  // the driver kept too little to hash: it hashed the full fields
  detail::Sha256 h;
  h.update_field(bytes(f.severity));
  h.update_field(bytes(f.sqlstate));
  for (const auto& field : prose_fields(f)) h.update_field(bytes(*field.value));
  h.update_field(bytes(f.statement));
  detail::hash_notices(h, f.notices);
  return h.hex_digest();
}

Rendered render_failure(const Failure& f, const Provenance& provenance, const RenderOptions& options) {
  if (provenance.path != PathKind::raw)
    return refuse(f, provenance, options, RefusalReason::internal, "a certified query's failure never shows database text", std::nullopt);
  if (auto problem = header_problem(f); !problem.empty())
    return refuse(f, provenance, options, RefusalReason::bad_header_field, problem + ", so it cannot stand in a line rawtool writes", std::nullopt);
  if (f.withheld)
    return refuse(f, provenance, options, RefusalReason::limit,
                  fmt::format("the reply's text is {} bytes, more than the connection keeps (its max_bytes limit), and rawtool does not "
                              "shorten replies",
                              f.withheld->bytes),
                  std::nullopt);
  // Escaping never shortens: when the failure's own bytes alone pass the
  // budget, the rendering would too, and rendering it would only cost time and
  // memory. Notices do not count here: they give way to the failure's own
  // fields, and those past the budget are counted instead of shown.
  if (own_untrusted_bytes(f, options) > options.budget)
    return refuse(f, provenance, options, RefusalReason::render_budget,
                  fmt::format("the reply's text alone is over the render budget of {} bytes, and rawtool does not shorten replies", options.budget),
                  std::nullopt);

  const std::string nonce = detail::fresh_nonce();
  const std::string_view code = bytes(f.sqlstate);
  // The lines rawtool writes before the untrusted block, with `not_shown`
  // notices left out for the budget.
  const auto head = [&](std::size_t not_shown) {
    std::string h = fmt::format("{}raw query failed; engine={}; database={}", contract::own_prefix, engine_name(f.engine), provenance.database_label.str());
    if (!code.empty()) h += fmt::format("; sqlstate={}", sqlstate_text(code));
    if (f.sqlite_code) h += fmt::format("; sqlite_code={} ({})", *f.sqlite_code, detail::sqlite_code_name(*f.sqlite_code));
    if (!f.severity.empty()) h += fmt::format("; severity={}", bytes(f.severity));
    if (f.position)
      h += fmt::format("; position={} ({})", *f.position, f.engine == Engine::sqlite ? "0-based byte offset" : "1-based character");
    if (f.internal_position) h += fmt::format("; internal_position={}", *f.internal_position);
    if (!f.notices.empty()) h += fmt::format("; notices={}", f.notices.size());
    if (f.notices_withheld != 0) h += fmt::format("; notices_withheld={}", f.notices_withheld);
    if (not_shown != 0) h += fmt::format("; notices_not_shown={}", not_shown);
    h += rows_before_failure_field(f);
    h += '\n';
    if (!f.rows_before_failure) {
      h += fmt::format("{}how many rows the statement made before it failed is not known: it failed inside a batch of rows, and a batch that "
                       "fails sends none of its rows.\n",
                       contract::own_prefix);
    } else if (*f.rows_before_failure != 0) {
      h += fmt::format("{}the statement sent {} row{} before it failed; rows that come before a failure are counted, not shown.\n", contract::own_prefix,
                       *f.rows_before_failure, *f.rows_before_failure == 1 ? "" : "s");
    }
    if (f.notices_withheld != 0)
      h += fmt::format("{}{} more notice{} the statement raised {} not kept: {} would have passed the byte limit.\n", contract::own_prefix, f.notices_withheld,
                       f.notices_withheld == 1 ? "" : "s", f.notices_withheld == 1 ? "was" : "were", f.notices_withheld == 1 ? "it" : "they");
    if (not_shown != 0)
      h += fmt::format("{}left out: {} more notice{} not shown: showing {} would have passed the render budget of {} bytes, and the failure's own "
                       "fields come first.\n",
                       contract::own_prefix, not_shown, not_shown == 1 ? "" : "s", not_shown == 1 ? "it" : "them", options.budget);
    h += contract::own_prefix;
    h += options.brief ? contract::failure_boundary_brief : contract::failure_boundary;
    h += '\n';
    h += contract::begin_marker(contract::database_reply_block, nonce);
    return h;
  };

  std::string own;
  for (const auto& field : prose_fields(f)) {
    if (!field.value->empty()) {
      append_field(own, field.label, *field.value, options);
    } else if (sent_empty(f, field.field)) {
      own += field.label;
      own += ":\n";
      own += contract::sent_empty_marker;
      own += '\n';
    }
  }
  std::string statement;
  if (options.show_statement && !f.statement.empty()) append_field(statement, "statement", f.statement, options);
  const std::string end = contract::end_marker(contract::database_reply_block, nonce);

  // The notices, in order, as many as the budget leaves room for: all of
  // them when they fit, else those that fit beside the line that counts the
  // rest (sized for the most notices it could count).
  std::string notices;
  std::vector<std::size_t> notice_ends;
  const std::size_t fixed = own.size() + statement.size() + end.size();
  const auto room_beside = [&](std::size_t head_size) { return options.budget > fixed + head_size ? options.budget - fixed - head_size : 0; };
  const std::size_t room_for_all = room_beside(head(0).size());
  for (std::size_t i = 0; i < f.notices.size() && notices.size() <= room_for_all; ++i) {
    detail::append_notice(notices, f.notices, i, options);
    notice_ends.push_back(notices.size());
  }
  std::size_t shown = f.notices.size();
  if (notices.size() > room_for_all) {
    const std::size_t room = room_beside(head(f.notices.size()).size());
    shown = 0;
    while (shown < notice_ends.size() && notice_ends[shown] <= room) ++shown;
    notices.resize(shown == 0 ? 0 : notice_ends[shown - 1]);
  }
  const std::size_t not_shown = f.notices.size() - shown;

  detail::Draft r;
  std::string& t = r.text;
  t = head(not_shown);
  t.reserve(t.size() + own.size() + notices.size() + statement.size() + end.size());
  t += own;
  t += notices;
  t += statement;
  t += end;

  if (t.size() > options.budget)
    return refuse(f, provenance, options, RefusalReason::render_budget,
                  fmt::format("the rendering would be {} bytes, over the render budget of {} bytes, and rawtool does not shorten replies", t.size(),
                              options.budget),
                  t.size());
  if (auto problem = detail::self_check(t, {{nonce, 2}}); !problem.empty())
    return refuse(f, provenance, options, RefusalReason::self_check_failed, "the rendered text failed rawtool's own check (" + problem.str() + ")", t.size());

  nlohmann::json& s = r.structured;
  s = {
      {"kind", "raw_failure"},
      {"path", "raw"},
      {"engine", std::string(engine_name(f.engine))},
      {"sqlstate", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::string(code))},
      {"condition", code.empty() ? nlohmann::json(nullptr) : condition_json(code)},
      {"severity", f.severity.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::string(bytes(f.severity)))},
      {"sqlite_code", f.sqlite_code ? nlohmann::json(*f.sqlite_code) : nlohmann::json(nullptr)},
      {"sqlite_code_name", f.sqlite_code ? nlohmann::json(std::string(detail::sqlite_code_name(*f.sqlite_code))) : nlohmann::json(nullptr)},
      {"position", f.position ? nlohmann::json(*f.position) : nlohmann::json(nullptr)},
      {"internal_position", f.internal_position ? nlohmann::json(*f.internal_position) : nlohmann::json(nullptr)},
      {"untrusted_notice", contract::failure_boundary_structured},
  };
  nlohmann::json untrusted = nlohmann::json::object();
  for (const auto& field : prose_fields(f))
    if (!field.value->empty() || sent_empty(f, field.field)) untrusted[std::string(field.member)] = to_json(*field.value);
  if (options.show_statement && !f.statement.empty()) untrusted["statement"] = to_json(f.statement);
  untrusted["notices"] = detail::notices_json(f.notices, shown);
  s["untrusted"] = std::move(untrusted);
  s["notices_withheld"] = f.notices_withheld;
  if (not_shown != 0) s["notices_not_shown"] = not_shown;
  s["rows_before_failure"] = rows_before_failure_json(f);
  detail::add_provenance(s, provenance);
  return std::move(r).seal();
}

nlohmann::json failure_log_record(const Failure& f) {
  // Every untrusted member is bounded (to_log_json), and so is the number of
  // notices, so that a record stays a few tens of KiB whatever the database
  // sent; withheld_sha256 still covers every byte of every field and notice
  // (the driver's digest of the whole fields, for a failure it withheld).
  nlohmann::json record = {
      {"engine", std::string(engine_name(f.engine))},
      {"severity", to_log_json(f.severity)},
      {"sqlstate", to_log_json(f.sqlstate)},
      {"sqlite_code", f.sqlite_code ? nlohmann::json(*f.sqlite_code) : nlohmann::json(nullptr)},
      {"position", f.position ? nlohmann::json(*f.position) : nlohmann::json(nullptr)},
      {"internal_position", f.internal_position ? nlohmann::json(*f.internal_position) : nlohmann::json(nullptr)},
      {"statement", to_log_json(f.statement)},
      {"withheld_sha256", withheld_sha256(f)},
      {"notices_withheld", f.notices_withheld},
      {"rows_before_failure", rows_before_failure_json(f)},
  };
  // A failure the driver withheld for its size holds only the start of each
  // field: "withheld" gives the size and digest of the whole fields.
  if (f.withheld) record["withheld"] = {{"bytes", f.withheld->bytes}, {"sha256", f.withheld->sha256}, {"prefix_bytes_per_field", Failure::failure_prefix_bytes}};
  for (const auto& field : prose_fields(f)) record[std::string(field.member)] = to_log_json(*field.value);
  nlohmann::json notices = nlohmann::json::array();
  const std::size_t logged = std::min(f.notices.size(), log_notices_kept);
  for (std::size_t i = 0; i < logged; ++i) {
    const Notice& n = f.notices[i];
    nlohmann::json item = {{"severity", to_log_json(n.severity)}, {"sqlstate", to_log_json(n.sqlstate)}};
    for (const auto& field : notice_fields(n)) item[std::string(field.member)] = to_log_json(*field.value);
    notices.push_back(std::move(item));
  }
  record["notices"] = std::move(notices);
  record["notices_not_logged"] = f.notices.size() - logged;
  return record;
}

}  // namespace rawtool::render
