#include <rawtool/render/bytes.hpp>

#include "detail/utf8.hpp"

#include <cstdint>

namespace rawtool::render {

std::optional<std::size_t> first_invalid_utf8(std::string_view bytes) noexcept {
  const std::size_t offset = detail::invalid_utf8_offset(bytes);
  if (offset == std::string_view::npos) return std::nullopt;
  return offset;
}

bool is_valid_utf8(std::string_view bytes) noexcept { return detail::is_valid_utf8(bytes); }

std::optional<std::size_t> code_point_count(std::string_view bytes) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t count = 0;
  for (std::size_t i = 0; i < bytes.size(); ++count) {
    char32_t cp = 0;
    const std::size_t length = detail::decode_utf8(p + i, bytes.size() - i, cp);
    if (length == 0) return std::nullopt;
    i += length;
  }
  return count;
}

std::string encode_base64(std::string_view bytes) {
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

namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  if (text.size() % 4 != 0) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    std::size_t pad = 0;
    if (last) {
      if (text[i + 3] == '=') pad = 1;
      if (pad == 1 && text[i + 2] == '=') pad = 2;
    }
    std::uint32_t group = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      int v = 0;
      if (k >= 4 - pad) {
        v = 0;
      } else {
        v = base64_value(text[i + k]);
        if (v < 0) {
          return std::nullopt;
        }
      }
      group = (group << 6) | static_cast<std::uint32_t>(v);
    }
    if ((pad == 1 && (group & 0xFFu) != 0) || (pad == 2 && (group & 0xFFFFu) != 0)) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>((group >> 16) & 0xFFu));
    if (pad < 2) out.push_back(static_cast<char>((group >> 8) & 0xFFu));
    if (pad < 1) out.push_back(static_cast<char>(group & 0xFFu));
  }
  return out;
}

}  // namespace rawtool::render
