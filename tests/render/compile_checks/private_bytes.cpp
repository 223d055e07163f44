#include "prelude.hpp"

int main() {
  const rawtool::Untrusted value = sample_untrusted();
  std::cout << value.bytes_;
}
