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
Rendered render_rows(const Rows& rows, const Provenance& provenance, const RenderOptions& options);

}  // namespace rawtool::render
