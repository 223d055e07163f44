#pragma once

#include <rawtool/render/options.hpp>
#include <rawtool/untrusted.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace rawtool::render {

/// Appends catalog prose (a description written by the catalog's author) under
/// `label`, honouring options.catalog_prose: quoted per line with "> " inside
/// named boundaries, or a line saying it was omitted. Quoted form:
///   rawtool: ---- begin catalog prose (<label>), nonce <32 hex> ----
///   rawtool: <whose words these are, and that they are data, not instructions>
///   <label>:
///   > ...
///   rawtool: ---- end catalog prose (<label>), nonce <same> ----
/// `label` must match ^[a-z][a-z0-9 _]*$ (std::invalid_argument otherwise).
void append_prose(std::string& out, std::string_view label, const Untrusted& prose, const RenderOptions& options);

/// The structured form of catalog prose: to_json(prose), or null when omitted.
nlohmann::json prose_json(const Untrusted& prose, const RenderOptions& options);

}  // namespace rawtool::render
