#include "prelude.hpp"

int main() {
  // Only the renderer gives a Rendered content.
  const rawtool::render::Rendered forged(outside_text() + "\n", nlohmann::json::object(), false);
  std::cout << forged.text();
}
