#pragma once

#include <cstddef>

namespace rawtool::render {

/// How catalog prose (query descriptions, parameter descriptions) is carried.
enum class CatalogProse {
  quoted,   ///< shown, quoted per line as untrusted content (the default)
  omitted,  ///< left out of every surface, stated as omitted
};

/// How the text surface lays out a result's rows.
enum class RowsLayout {
  lines,  ///< one "row N:" line per row, cells separated by " | " (the default; every surface's)
  table,  ///< aligned columns for a person at a terminal, wide cells cut (see render_rows)
};

/// Operator-controlled rendering settings. Plain value; copy freely.
struct RenderOptions {
  /// Escape every code point from U+0080 up, for operators who fear look-alikes.
  bool ascii_only = false;
  /// Largest text-surface rendering of a failure, in bytes; over it the
  /// renderer refuses rather than shortening.
  std::size_t budget = 16 * 1024;
  /// Show the caller's statement inside the quoted failure, under its own label.
  bool show_statement = true;
  CatalogProse catalog_prose = CatalogProse::quoted;
  /// The text surface's layout of rows; the structured surface is the same for both.
  RowsLayout rows_layout = RowsLayout::lines;
  /// RowsLayout::table: the most terminal columns of a cell's escaped form
  /// shown between its quotes; a longer one is cut there, and the cut is stated.
  std::size_t table_cell_width = 40;
  /// RowsLayout::table: the terminal's width in columns, 0 when unknown. When
  /// a line would be wider, cells are cut shorter than table_cell_width (to
  /// no fewer than table_min_cell_width columns) until the lines fit.
  std::size_t table_line_width = 0;
  std::size_t table_min_cell_width = 8;
  /// Brief frames, for a reader who pays for every word (the MCP server): a
  /// result's first and last lines shortened, the boundary said in one clause
  /// (contract.hpp's *_brief), and catalog prose quoted under one notice per
  /// listing instead of markers per entry. The long form of the boundary is
  /// then the reader's to be told once (the MCP server's instructions).
  bool brief = false;
};

}  // namespace rawtool::render
