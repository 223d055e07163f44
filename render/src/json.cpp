#include <rawtool/render/json.hpp>

#include "detail/untrusted_access.hpp"
#include "detail/utf8.hpp"

namespace rawtool::render {

namespace {

std::string base64(std::string_view bytes) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = (unsigned{p[i]} << 16) | (unsigned{p[i + 1]} << 8) | p[i + 2];
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
    out.push_back(alphabet[v & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    const unsigned v = unsigned{p[i]} << 16;
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.append("==");
  } else if (rest == 2) {
    const unsigned v = (unsigned{p[i]} << 16) | (unsigned{p[i + 1]} << 8);
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const Untrusted& value) {
  const std::string_view bytes = detail::UntrustedAccess::bytes(value);
  if (detail::is_valid_utf8(bytes)) return std::string(bytes);
  return nlohmann::json{{"encoding", "base64"}, {"invalid_utf8", true}, {"base64", base64(bytes)}};
}

std::string dump(const nlohmann::json& value) {
  // ensure_ascii writes every code point from U+007F up (and every control) as
  // a \u escape; strict makes a string that is not UTF-8 an error rather than
  // a silent U+FFFD.
  return value.dump(-1, ' ', true, nlohmann::json::error_handler_t::strict);
}

}  // namespace rawtool::render
