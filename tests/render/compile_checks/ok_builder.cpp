// The builder's way in: rawtool's words, and untrusted bytes through the
// renderer. This must compile, or the checks beside it prove nothing.
#include "prelude.hpp"

int main() {
  rawtool::render::ReplyBuilder reply{rawtool::render::RenderOptions{}};
  reply.begin_line(rawtool::Trusted::format("value {}: ", 1)).add_quoted(sample_untrusted()).end_line();
  std::cout << std::move(reply).finish(nlohmann::json::object()).text();
}
