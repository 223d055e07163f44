#pragma once

// The escape grammar over plain byte views, for the renderer's own use.

#include <rawtool/render/escape.hpp>

#include <string>
#include <string_view>

namespace rawtool::render::detail {

/// Appends the escaped form of `bytes` (see rawtool/render/escape.hpp). The
/// first code point of `bytes` counts as the start of a line or cell.
void escape_bytes(std::string& out, std::string_view bytes, EscapeContext context, bool ascii_only);

/// Appends `bytes` split on LF, each line as `prefix` + escaped line + LF.
void quote_lines(std::string& out, std::string_view bytes, std::string_view prefix, bool ascii_only);

}  // namespace rawtool::render::detail
