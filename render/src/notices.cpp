#include "detail/notices.hpp"

#include "detail/common.hpp"
#include "detail/escape.hpp"
#include "detail/tables.hpp"
#include "detail/untrusted_access.hpp"

#include <rawtool/render/json.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace rawtool::render::detail {

namespace {

std::string_view bytes(const Untrusted& value) { return UntrustedAccess::bytes(value); }

bool severity_shown(const Notice& n) { return !n.severity.empty() && valid_severity(bytes(n.severity)); }
bool sqlstate_shown(const Notice& n) { return !n.sqlstate.empty() && valid_sqlstate(bytes(n.sqlstate)); }

}  // namespace

std::array<Field, 4> notice_fields(const Notice& n) {
  return {{
      {"message", "message", &n.message},
      {"detail", "detail", &n.detail},
      {"hint", "hint", &n.hint},
      {"context", "context", &n.context},
  }};
}

void append_field(std::string& t, std::string_view label, const Untrusted& value, const RenderOptions& options) {
  t += label;
  t += ":\n";
  quote_lines(t, bytes(value), contract::quote_prefix, options.ascii_only);
}

std::size_t notice_bytes(const std::vector<Notice>& notices) {
  std::size_t total = 0;
  for (const auto& n : notices) {
    for (const auto& field : notice_fields(n)) total += field.value->size();
    if (!n.severity.empty() && !severity_shown(n)) total += n.severity.size();
    if (!n.sqlstate.empty() && !sqlstate_shown(n)) total += n.sqlstate.size();
  }
  return total;
}

void append_notice(std::string& t, const std::vector<Notice>& notices, std::size_t i, const RenderOptions& options) {
  const Notice& n = notices[i];
  t += fmt::format("{}notice {} of {}", contract::own_prefix, i + 1, notices.size());
  if (severity_shown(n)) t += fmt::format("; severity={}", bytes(n.severity));
  if (sqlstate_shown(n)) {
    const auto condition = sqlstate_condition(bytes(n.sqlstate));
    t += fmt::format("; sqlstate={} ({})", bytes(n.sqlstate), condition.empty() ? std::string_view("unknown condition") : condition);
  }
  t += '\n';
  if (!n.severity.empty() && !severity_shown(n)) append_field(t, fmt::format("notice {} unrecognised severity", i + 1), n.severity, options);
  if (!n.sqlstate.empty() && !sqlstate_shown(n)) append_field(t, fmt::format("notice {} unrecognised sqlstate", i + 1), n.sqlstate, options);
  for (const auto& field : notice_fields(n))
    if (!field.value->empty()) append_field(t, fmt::format("notice {} {}", i + 1, field.label), *field.value, options);
}

void append_notices(std::string& t, const std::vector<Notice>& notices, const RenderOptions& options) {
  for (std::size_t i = 0; i < notices.size(); ++i) append_notice(t, notices, i, options);
}

nlohmann::json notices_json(const std::vector<Notice>& notices, std::size_t count) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < std::min(count, notices.size()); ++i) {
    const Notice& n = notices[i];
    nlohmann::json item = {
        {"severity", n.severity.empty() ? nlohmann::json(nullptr) : to_json(n.severity)},
        {"sqlstate", n.sqlstate.empty() ? nlohmann::json(nullptr) : to_json(n.sqlstate)},
    };
    for (const auto& field : notice_fields(n))
      if (!field.value->empty()) item[std::string(field.member)] = to_json(*field.value);
    out.push_back(std::move(item));
  }
  return out;
}

void hash_notices(Sha256& h, const std::vector<Notice>& notices) {
  for (const auto& n : notices) {
    h.update_field(bytes(n.severity));
    h.update_field(bytes(n.sqlstate));
    for (const auto& field : notice_fields(n)) h.update_field(bytes(*field.value));
  }
}

}  // namespace rawtool::render::detail
