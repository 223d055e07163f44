#include "detail/common.hpp"

#include "detail/tables.hpp"
#include "detail/utf8.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace rawtool::render::detail {

namespace {
constexpr char lower_hex[] = "0123456789abcdef";

std::string to_hex(const unsigned char* p, std::size_t n) {
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(lower_hex[p[i] >> 4]);
    out.push_back(lower_hex[p[i] & 0xF]);
  }
  return out;
}

}  // namespace

std::string fresh_nonce() {
  std::array<unsigned char, 16> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) throw std::runtime_error("rawtool: the random generator failed");
  return to_hex(bytes.data(), bytes.size());
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("rawtool: SHA-256 is unavailable");
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(std::string_view bytes) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size()) != 1) throw std::runtime_error("rawtool: SHA-256 failed");
}

void Sha256::update_field(std::string_view bytes) {
  std::array<char, 8> length{};
  auto n = static_cast<std::uint64_t>(bytes.size());
  for (std::size_t i = 0; i < 8; ++i) length[7 - i] = static_cast<char>(static_cast<unsigned char>((n >> (8 * i)) & 0xFF));
  update(std::string_view(length.data(), length.size()));
  update(bytes);
}

std::string Sha256::hex_digest() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), digest.data(), &size) != 1) throw std::runtime_error("rawtool: SHA-256 failed");
  return to_hex(digest.data(), size);
}

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
