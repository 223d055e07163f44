#include "prelude.hpp"

int main() {
  const rawtool::Trusted words = rawtool::Trusted::format("the server said {}", std::string_view(outside_text()));
  std::cout << words;
}
