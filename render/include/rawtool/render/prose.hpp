#pragma once

#include <rawtool/render/options.hpp>
#include <rawtool/untrusted.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace rawtool::render {

/// Appends catalog prose (a description written by the catalog's author) under
/// `label`, honouring options.catalog_prose: quoted per line with "> " inside
/// named boundaries, or a line saying it was omitted.
void append_prose(std::string& out, std::string_view label, const Untrusted& prose, const RenderOptions& options);

/// The structured form of catalog prose: to_json(prose), or null when omitted.
nlohmann::json prose_json(const Untrusted& prose, const RenderOptions& options);

}  // namespace rawtool::render
