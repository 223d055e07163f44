#pragma once

#include <rawtool/outcome.hpp>
#include <rawtool/render/options.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace rawtool::render {

namespace detail {
struct Draft;
}

/// Both halves of one reply: the text surface an agent reads and the
/// structured surface a program reads. Every untrusted byte in either half has
/// been through the renderer: only the renderer makes one with content (its
/// render_* functions and ReplyBuilder), so whoever holds a Rendered holds
/// what the renderer wrote. A default-made one is empty.
class Rendered {
public:
  Rendered() = default;

  [[nodiscard]] const std::string& text() const noexcept { return text_; }
  [[nodiscard]] const nlohmann::json& structured() const noexcept { return structured_; }
  /// True when the renderer refused to show the reply (grammar, budget or
  /// self-check); text() and structured() then describe the refusal only.
  [[nodiscard]] bool refused() const noexcept { return refused_; }

private:
  friend struct detail::Draft;
  Rendered(std::string text, nlohmann::json structured, bool refused)
      : text_(std::move(text)), structured_(std::move(structured)), refused_(refused) {}

  std::string text_;
  nlohmann::json structured_;
  bool refused_ = false;
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
