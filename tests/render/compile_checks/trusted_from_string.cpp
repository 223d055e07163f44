#include "prelude.hpp"

int main() {
  const rawtool::Trusted words = outside_text();
  std::cout << words;
}
