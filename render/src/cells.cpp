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
  const std::string_view why = rows.truncation == Truncation::row_cap ? "the row cap was reached" : "the next row would have passed the byte cap";
  return fmt::format("{}left out: {} row{} read but not shown (truncation={}: {}); {}\n", contract::own_prefix, rows.rows_withheld, rows.rows_withheld == 1 ? "" : "s",
                     truncation_name(rows.truncation), why,
                     rows.more_unread ? "more rows may exist that were never read" : "no rows remained unread");
}

}  // namespace rawtool::render::detail
