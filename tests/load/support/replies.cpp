#include "replies.hpp"

#include <fmt/format.h>

namespace rawtool::reliability {

Answer answer_of_mcp(const std::string& line, const nlohmann::json& message) {
  Answer answer;
  answer.wire = line;
  if (!message.contains("result")) return answer;
  const auto& result = message["result"];
  if (result.contains("content") && result["content"].is_array() && !result["content"].empty()) {
    answer.text = result["content"][0].value("text", "");
  }
  answer.structured = result.value("structuredContent", nlohmann::json());
  answer.is_error = result.value("isError", false);
  return answer;
}

std::string kind_of(const Answer& answer) {
  if (!answer.structured.is_object()) return {};
  return answer.structured.value("kind", "");
}

std::string canary(unsigned client, unsigned call) { return fmt::format("cnry{:03}x{:05}q", client, call); }

std::set<std::string> canaries_in(std::string_view text) {
  constexpr std::size_t length = 4 + 3 + 1 + 5 + 1;
  const auto digits = [&](std::size_t from, std::size_t count) {
    for (std::size_t i = from; i < from + count; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
    }
    return true;
  };
  std::set<std::string> found;
  for (auto at = text.find("cnry"); at != std::string_view::npos; at = text.find("cnry", at + 1)) {
    if (at + length > text.size()) break;
    if (digits(at + 4, 3) && text[at + 7] == 'x' && digits(at + 8, 5) && text[at + 13] == 'q') {
      found.emplace(text.substr(at, length));
    }
  }
  return found;
}

}  // namespace rawtool::reliability
