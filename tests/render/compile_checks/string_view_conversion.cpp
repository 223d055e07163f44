#include "prelude.hpp"

int main() {
  const rawtool::Untrusted value = sample_untrusted();
  std::string_view s = value;
  std::cout << s;
}
