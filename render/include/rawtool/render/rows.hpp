#pragma once

#include <rawtool/outcome.hpp>
#include <rawtool/render/surface.hpp>

namespace rawtool::render {

/// Renders a result on both surfaces. Text: a header the renderer writes, a
/// column line, one line per row led by the row's ordinal, cells escaped in
/// the cell context (text cells in double quotes, NULL as a bare NULL, so NULL,
/// "" and "NULL" differ), a statement of anything left out, and a provenance
/// trailer carrying a fresh nonce that no cell can forge. Structured: columns
/// (names, type names), rows (null, string, or the bytes object of to_json),
/// truncation members and provenance members. Thread-safe.
///
/// Text: "rawtool: result: ..." header; "columns: "name" (type "t") | ..." (or
/// "(type unknown)", or "(none)"); "row N: "cell" | NULL | ..."; when rows were
/// left out, "rawtool: left out: ..." with rows_withheld, the reason and
/// whether more may exist unread; when the statement raised notices, a line
/// naming the boundary and the notices between "rawtool: ---- begin untrusted
/// notices, nonce <n> ----" and the matching end marker (each notice's header
/// line, then its fields quoted per line under labels such as "notice 1
/// message:"; a notice severity or SQLSTATE that fails its grammar is quoted as
/// data, never shown in the header line), and a count of any notices the byte
/// limit kept out; and the trailer "rawtool: end of rows, nonce
/// <32 hex>; path=raw (uncertified) | certified <name>@<hash12>; engine=..;
/// database=..; rows=N; complete=yes|no; truncation=..; elapsed_ms=..".
/// Structured: {"kind":"raw_rows"|"certified_rows","columns":[{"name","type"}],
/// "rows":[[...]],"row_count","rows_affected","complete","truncation":{"reason",
/// "rows_withheld","more_unread"},"untrusted_notice","notices":[{"severity",
/// "sqlstate","message","detail","hint","context"}],"notices_withheld", and "raw_provenance" or
/// "certified_provenance" — never both, never the other's name}.
/// With options.rows_layout == RowsLayout::table, the column line and the row
/// lines are laid out as aligned columns instead: "columns: " and each
/// "row N: " padded to one width, then the names (without types) and the
/// cells escaped as above, each padded to its column's width and separated
/// by " | ". Widths are terminal columns: a wide (East Asian) character takes
/// two, a combining mark none. A cell whose escaped form is longer than
/// options.table_cell_width columns is cut at the edge of a character or
/// escape, its quotes closed and "..." written after them (a '"' inside a
/// cell is always escaped, so this cannot be a cell's own text), and a line
/// "rawtool: cut: N cells ..." states how many were cut and where. With
/// options.table_line_width, the cut is made shorter (down to
/// options.table_min_cell_width) until the lines fit that width, if they can.
/// Everything else, the
/// boundary and the trailer included, is as in the lines layout.
/// Rows are not held to options.budget (the driver's byte cap bounds them);
/// a failed self-check gives a refusal (Rendered::refused).
Rendered render_rows(const Rows& rows, const Provenance& provenance, const RenderOptions& options);

}  // namespace rawtool::render
