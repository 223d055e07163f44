#pragma once

#include <rawtool/outcome.hpp>
#include <rawtool/render/surface.hpp>

#include <cstdint>
#include <vector>

namespace rawtool::render {

/// One column a pinned schema statement returns, named in rawtool's words.
struct SchemaColumn {
  Literal name;  ///< ^[a-z][a-z_]*$, e.g. "row_estimate"
  /// Prose (a comment, a definition): quoted per line under a label of its
  /// own instead of standing in a cell, since it can hold any number of lines.
  bool prose = false;
};

/// One part of a schema reply: the rows one of rawtool's pinned statements
/// returned. Every cell is the database's (identifiers, type names, defaults
/// and comments can all be written by anyone with CREATE or COMMENT), so each
/// is rendered as untrusted content.
struct SchemaSection {
  Literal name;  ///< ^[a-z][a-z_]*$: "schemas", "objects", "table", "columns", "constraints", "indexes"
  std::vector<SchemaColumn> columns;
  Rows rows;  ///< as many cells per row as `columns`; the caps it states are stated again
};

/// What describe_schema found: either the objects the connected role can use
/// (one page of them), or one table's details.
struct SchemaReply {
  enum class Scope { objects, table };
  Scope scope = Scope::objects;
  std::vector<SchemaSection> sections;
  /// Objects scope: the page. `more` is true when objects past this page exist
  /// (or may: a section cut short by a cap).
  std::uint64_t offset = 0;
  std::uint64_t page_size = 0;
  bool more = false;
};

/// Renders a schema reply on both surfaces, the way rows are rendered: a
/// header in rawtool's words that says the listing is what the connected
/// role can use and names the boundary; the sections between markers
/// carrying a fresh nonce ("rawtool: ---- begin untrusted schema, nonce N
/// ----"), each as "rawtool: section NAME: N rows", a "columns: " line and
/// "row N: " lines of escaped cells, each prose cell quoted per line under a
/// label "<column> of row N:"; what a cap left out; the trailer "rawtool: end
/// of schema, nonce N; path=...; engine=..; database=..; objects=N;
/// complete=yes|no; next_offset=N|none; elapsed_ms=..".
///
/// A table scope whose "table" section is empty found nothing: the reply says
/// so (found=false) and is an error. Structured: {"kind":"schema","scope",
/// "found","untrusted_notice","sections":{NAME:{"complete","truncation":{...},
/// "rows":[{COLUMN: value|null}]}},"page":{"offset","page_size","returned",
/// "more","next_offset"}, provenance}. A failed self-check is a refusal.
Rendered render_schema(const SchemaReply& reply, const Provenance& provenance, const RenderOptions& options);

}  // namespace rawtool::render
