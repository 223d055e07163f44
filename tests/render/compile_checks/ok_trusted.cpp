#include "prelude.hpp"

// rawtool's own words: literals, validated labels, numbers and trusted text.
int main() {
  const auto label = rawtool::Label::parse("shop");
  rawtool::Trusted words = rawtool::Trusted::format("database {} refused {} of {} calls; {}", *label, 3, 4.5,
                                                    rawtool::Trusted(rawtool::Literal("again")));
  words += " Done.";
  const rawtool::Refusal refusal{rawtool::RefusalReason::limit, "The statement is too long."};
  std::cout << words << refusal.explanation << '\n';
}
