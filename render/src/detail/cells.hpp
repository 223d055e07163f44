#pragma once

// The pieces of a table that rows and schema replies share: one cell, and
// what a cap left out, on both surfaces.

#include <rawtool/outcome.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace rawtool::render::detail {

/// NULL bare, anything else escaped in the cell context between double quotes.
void append_cell(std::string& out, const Cell& cell, bool ascii_only);

/// "rawtool: left out: N rows read but not shown (truncation=...: why); ..."
/// for a result a cap cut short.
std::string left_out_text(const Rows& rows);

/// The structured "truncation" member: reason, rows_withheld, more_unread,
/// and for a result a cap cut short, the cap's value and setting
/// ("cap": 100, "setting": "limits.max_rows").
nlohmann::json truncation_json(const Rows& rows);

}  // namespace rawtool::render::detail
