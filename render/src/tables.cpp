#include "detail/tables.hpp"

#include <algorithm>

namespace rawtool::render::detail {

std::string_view sqlstate_condition(std::string_view code) noexcept {
  const auto* first = sqlstate_names;
  const auto* last = sqlstate_names + sqlstate_name_count;
  const auto* it = std::lower_bound(first, last, code, [](const SqlstateName& entry, std::string_view c) { return std::string_view(entry.code, 5) < c; });
  if (it == last || std::string_view(it->code, 5) != code) return {};
  return it->name;
}

std::string_view sqlite_code_name(long code) noexcept {
  const auto* first = sqlite_code_names;
  const auto* last = sqlite_code_names + sqlite_code_name_count;
  const auto* it = std::lower_bound(first, last, code, [](const SqliteCodeName& entry, long c) { return entry.code < c; });
  if (it == last || it->code != code) return {};
  return it->name;
}

}  // namespace rawtool::render::detail
