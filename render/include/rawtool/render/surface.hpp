#pragma once

#include <rawtool/outcome.hpp>
#include <rawtool/render/options.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace rawtool::render {

/// Both halves of one reply: the text surface an agent reads and the
/// structured surface a program reads. Every untrusted byte in either half has
/// been through the renderer.
struct Rendered {
  std::string text;
  nlohmann::json structured;
  /// True when the renderer refused to show the reply (grammar, budget or
  /// self-check); `text` and `structured` then describe the refusal only.
  bool refused = false;
};

/// Which path produced a reply. The two paths share no discriminant value.
enum class PathKind { raw, certified };

/// Facts the tool itself knows about a reply, shown as provenance. Each name
/// is a Label: validated against its grammar, so it can stand in a line
/// rawtool writes.
struct Provenance {
  PathKind path = PathKind::raw;
  Label certified_name;  ///< certified path only
  Label catalog_hash;    ///< certified path only: hex SHA-256 of the catalog file
  Engine engine = Engine::postgresql;
  Label database_label;
  std::chrono::microseconds elapsed{0};
};

}  // namespace rawtool::render
