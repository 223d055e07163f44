#pragma once

// What the three corpus walks share: the render settings they try, safe
// descriptions of hostile bytes for test messages, and checks on the
// structured surface.

#include <rawtool/render/options.hpp>
#include <rawtool/render/surface.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <string>
#include <string_view>

namespace rawtool::test::walk {

/// Provenance of a raw-path reply from the given engine.
render::Provenance raw_provenance(Engine engine);

/// Default options with ascii_only off and on: every walk renders in both.
std::array<render::RenderOptions, 2> both_modes();

/// `bytes` escaped by the renderer, so a test message never prints a hostile
/// byte to the terminal that shows the test log.
std::string visible(std::string_view bytes);

/// Problems with the serialised structured surface: dump() must give
/// printable ASCII only, and parse back to the same value. Empty when sound.
std::string structured_round_trip_problem(const nlohmann::json& structured);

/// True when `needle` occurs anywhere in `value`: inside a string, a key, or
/// the bytes a base64 object carries.
bool json_mentions(const nlohmann::json& value, std::string_view needle);

}  // namespace rawtool::test::walk
