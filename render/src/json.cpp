#include <rawtool/render/json.hpp>

#include <rawtool/render/bytes.hpp>

#include "detail/common.hpp"
#include "detail/untrusted_access.hpp"
#include "detail/utf8.hpp"

#include <algorithm>

namespace rawtool::render {

namespace {

// Characters dump() writes for one code point inside a JSON string: ensure_ascii
// turns every control and everything from U+007F up into \u escapes (a
// surrogate pair above U+FFFF).
std::size_t dumped_chars(char32_t cp) noexcept {
  switch (cp) {
    case U'"':
    case U'\\':
    case U'\b':
    case U'\f':
    case U'\n':
    case U'\r':
    case U'\t':
      return 2;
    default:
      break;
  }
  if (cp <= 0x1F) return 6;
  if (cp < 0x7F) return 1;
  if (cp <= 0xFFFF) return 6;
  return 12;
}

// `kept`, moved back to the start of a well-formed UTF-8 sequence that would
// otherwise straddle it.
std::size_t cut_outside_sequence(const unsigned char* p, std::size_t n, std::size_t kept) noexcept {
  if (kept >= n) return n;
  for (std::size_t back = 1; back <= 3 && back <= kept; ++back) {
    const std::size_t j = kept - back;
    if (p[j] < 0x80) return kept;                 // ASCII: no sequence reaches past it
    if ((p[j] & 0xC0) == 0x80) continue;          // a continuation byte: look further back
    char32_t cp = 0;
    const std::size_t len = detail::decode_utf8(p + j, n - j, cp);
    return len != 0 && j + len > kept ? j : kept;  // a lead byte
  }
  return kept;
}

}  // namespace

nlohmann::json to_json(const Untrusted& value) {
  const std::string_view bytes = detail::UntrustedAccess::bytes(value);
  if (detail::is_valid_utf8(bytes)) return std::string(bytes);
  return nlohmann::json{{"encoding", "base64"}, {"invalid_utf8", true}, {"base64", encode_base64(bytes)}};
}

nlohmann::json to_log_json(const Untrusted& value, std::size_t bound) {
  const std::string_view bytes = detail::UntrustedAccess::bytes(value);
  // Every byte costs at least one character, so only a value this short can fit whole.
  if (bytes.size() <= bound) {
    nlohmann::json whole = to_json(value);
    if (dump(whole).size() <= bound) return whole;
  }

  // The longest prefix that fits as a JSON string, walking code points.
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t used = 2;  // the quotes
  std::size_t kept = 0;
  bool invalid = false;
  while (kept < n) {
    char32_t cp = p[kept];
    const std::size_t len = p[kept] < 0x80 ? 1 : detail::decode_utf8(p + kept, n - kept, cp);
    if (len == 0) {
      invalid = true;
      break;
    }
    const std::size_t cost = dumped_chars(cp);
    if (used + cost > bound) break;
    used += cost;
    kept += len;
  }
  if (invalid) {
    // The bytes at `kept` are not UTF-8: a prefix that reaches them is carried
    // as base64, 4 characters per 3 bytes inside the base64 object, when that
    // keeps more than the UTF-8 run before them.
    static const std::size_t base64_overhead =
        dump(nlohmann::json{{"encoding", "base64"}, {"invalid_utf8", true}, {"base64", ""}}).size();
    const std::size_t room = bound > base64_overhead ? bound - base64_overhead : 0;
    const std::size_t as_base64 = cut_outside_sequence(p, n, std::min(n, room / 4 * 3));
    kept = std::max(kept, as_base64);
  }

  detail::Sha256 hash;
  hash.update(bytes);
  return nlohmann::json{{"truncated", true},
                        {"bytes", n},
                        {"sha256", hash.hex_digest()},
                        {"kept_bytes", kept},
                        {"prefix", to_json(Untrusted(bytes.substr(0, kept)))}};
}

std::string dump(const nlohmann::json& value) {
  // ensure_ascii writes every code point from U+007F up (and every control) as
  // a \u escape; strict makes a string that is not UTF-8 an error rather than
  // a silent U+FFFD.
  return value.dump(-1, ' ', true, nlohmann::json::error_handler_t::strict);
}

}  // namespace rawtool::render
