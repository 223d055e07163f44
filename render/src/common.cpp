#include "detail/common.hpp"

#include <rawtool/crypto.hpp>

#include "detail/tables.hpp"
#include "detail/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace rawtool::render::detail {


std::string fresh_nonce() { return crypto::random_hex(contract::nonce_hex_digits / 2); }

bool valid_sqlstate(std::string_view code) noexcept { return contract::is_sqlstate(code); }

bool valid_severity(std::string_view severity) noexcept {
  static constexpr std::array<std::string_view, 8> known{"ERROR", "FATAL", "PANIC", "WARNING", "NOTICE", "DEBUG", "INFO", "LOG"};
  return std::find(known.begin(), known.end(), severity) != known.end();
}

double elapsed_ms(const Provenance& provenance) { return static_cast<double>(provenance.elapsed.count()) / 1000.0; }

std::string elapsed_ms_text(const Provenance& provenance) { return fmt::format("{:.3f}", elapsed_ms(provenance)); }

std::string path_text(const Provenance& provenance) {
  if (provenance.path == PathKind::raw) return std::string(contract::raw_path_text);
  return fmt::format("{}{}@{}", contract::certified_path_word, provenance.certified_name.str(),
                     provenance.catalog_hash.view().substr(0, contract::certified_hash_digits));
}

void add_provenance(nlohmann::json& object, const Provenance& provenance) {
  nlohmann::json p = {
      {"engine", std::string(engine_name(provenance.engine))},
      {"database", provenance.database_label.str()},
      {"elapsed_ms", elapsed_ms(provenance)},
  };
  if (provenance.path == PathKind::raw) {
    p["path"] = "raw";
    object["raw_provenance"] = std::move(p);
  } else {
    p["query"] = provenance.certified_name.str();
    p["catalog_sha256"] = provenance.catalog_hash.str();
    object["certified_provenance"] = std::move(p);
  }
}

bool is_label_line(std::string_view line) noexcept { return contract::is_label_line(line); }

namespace {
std::size_t count_occurrences(std::string_view text, std::string_view needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}
}  // namespace

Trusted self_check(std::string_view text, const std::vector<NonceUse>& nonces) {
  if (!text.empty() && text.back() != '\n') return Literal("the text does not end with a line feed");
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t line_start = 0;
  std::size_t line_number = 1;
  for (std::size_t i = 0; i < n;) {
    if (i == line_start) {
      const auto lf = text.find('\n', i);
      if (!contract::begins_with_known_prefix(text.substr(i, lf - i))) return Trusted::format("line {} does not begin with a prefix the renderer writes", line_number);
    }
    const unsigned char b = p[i];
    if (b == '\n') {
      line_start = ++i;
      ++line_number;
      continue;
    }
    if (b < 0x80) {
      if (b < 0x20 || b == 0x7F) return Trusted::format("line {} holds a raw control byte", line_number);
      ++i;
      continue;
    }
    char32_t cp = 0;
    const std::size_t len = decode_utf8(p + i, n - i, cp);
    if (len == 0) return Trusted::format("line {} is not valid UTF-8", line_number);
    const auto cls = code_point_class(cp);
    if (cls == CodePointClass::escape) return Trusted::format("line {} holds a raw code point of the escape set", line_number);
    if (cls == CodePointClass::combining && i == line_start + contract::quote_prefix.size() &&
        text.substr(line_start, contract::quote_prefix.size()) == contract::quote_prefix)
      return Trusted::format("line {} opens its quote with a combining mark", line_number);
    i += len;
  }
  for (const auto& [nonce, expected] : nonces)
    if (count_occurrences(text, nonce) != expected) return Literal("a nonce occurs outside its markers");
  return {};
}

}  // namespace rawtool::render::detail
