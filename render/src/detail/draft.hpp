#pragma once

#include <rawtool/render/surface.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <utility>

namespace rawtool::render::detail {

/// A reply while the renderer writes it. Private to render/: sealing it is
/// the one way a Rendered gets content.
struct Draft {
  std::string text;
  nlohmann::json structured;
  bool refused = false;

  [[nodiscard]] Rendered seal() && { return Rendered(std::move(text), std::move(structured), refused); }
};

}  // namespace rawtool::render::detail
