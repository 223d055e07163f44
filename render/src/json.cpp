#include <rawtool/render/json.hpp>

#include <rawtool/render/bytes.hpp>

#include "detail/untrusted_access.hpp"
#include "detail/utf8.hpp"

namespace rawtool::render {


nlohmann::json to_json(const Untrusted& value) {
  const std::string_view bytes = detail::UntrustedAccess::bytes(value);
  if (detail::is_valid_utf8(bytes)) return std::string(bytes);
  return nlohmann::json{{"encoding", "base64"}, {"invalid_utf8", true}, {"base64", encode_base64(bytes)}};
}

std::string dump(const nlohmann::json& value) {
  // ensure_ascii writes every code point from U+007F up (and every control) as
  // a \u escape; strict makes a string that is not UTF-8 an error rather than
  // a silent U+FFFD.
  return value.dump(-1, ' ', true, nlohmann::json::error_handler_t::strict);
}

}  // namespace rawtool::render
