#include "prelude.hpp"

int main() {
  const rawtool::Refusal refusal{rawtool::RefusalReason::internal, outside_text()};
  std::cout << refusal.explanation;
}
