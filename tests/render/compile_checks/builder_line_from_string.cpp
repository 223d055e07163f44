#include "prelude.hpp"

int main() {
  rawtool::render::ReplyBuilder reply{rawtool::render::RenderOptions{}};
  reply.line(outside_text());
  std::cout << std::move(reply).finish(nlohmann::json::object()).text();
}
