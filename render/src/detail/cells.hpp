#pragma once

// The pieces of a table on the text surface that rows and schema replies
// share: one cell, and the line that states what a cap left out.

#include <rawtool/outcome.hpp>

#include <string>

namespace rawtool::render::detail {

/// NULL bare, anything else escaped in the cell context between double quotes.
void append_cell(std::string& out, const Cell& cell, bool ascii_only);

/// "rawtool: left out: N rows read but not shown (truncation=...: why); ..."
/// for a result a cap cut short.
std::string left_out_text(const Rows& rows);

}  // namespace rawtool::render::detail
