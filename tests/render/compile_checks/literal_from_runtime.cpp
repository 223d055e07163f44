#include "prelude.hpp"

int main() {
  const std::string text = outside_text();
  const rawtool::Literal words(text.c_str());
  std::cout << words.view();
}
