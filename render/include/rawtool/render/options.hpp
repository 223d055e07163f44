#pragma once

#include <cstddef>

namespace rawtool::render {

/// How catalog prose (query descriptions, parameter descriptions) is carried.
enum class CatalogProse {
  quoted,   ///< shown, quoted per line as untrusted content (the default)
  omitted,  ///< left out of every surface, stated as omitted
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
};

}  // namespace rawtool::render
