#include "detail/cells.hpp"

#include "detail/common.hpp"
#include "detail/escape.hpp"
#include "detail/untrusted_access.hpp"

#include <fmt/format.h>

namespace rawtool::render::detail {

void append_cell(std::string& out, const Cell& cell, bool ascii_only) {
  if (!cell) {
    out += "NULL";
    return;
  }
  out += '"';
  escape_bytes(out, UntrustedAccess::bytes(*cell), EscapeContext::cell, ascii_only);
  out += '"';
}

std::string left_out_text(const Rows& rows) {
  // Named with its value and setting, so that the agent can page and the
  // operator knows what to raise.
  const std::string why = rows.truncation == Truncation::row_cap
                              ? fmt::format("the row cap, max_rows={} (limits.max_rows), was reached", rows.cap)
                              : fmt::format("the next row would have passed the byte cap, max_bytes={} (limits.max_bytes)", rows.cap);
  return fmt::format("{}left out: {} row{} read but not shown (truncation={}: {}); {}\n", contract::own_prefix, rows.rows_withheld, rows.rows_withheld == 1 ? "" : "s",
                     truncation_name(rows.truncation), why,
                     rows.more_unread ? "more rows may exist that were never read" : "no rows remained unread");
}

nlohmann::json truncation_json(const Rows& rows) {
  nlohmann::json truncation = {
      {"reason", std::string(truncation_name(rows.truncation))}, {"rows_withheld", rows.rows_withheld}, {"more_unread", rows.more_unread}};
  if (rows.truncation != Truncation::none) {
    truncation["cap"] = rows.cap;
    truncation["setting"] = rows.truncation == Truncation::row_cap ? "limits.max_rows" : "limits.max_bytes";
  }
  return truncation;
}

}  // namespace rawtool::render::detail
