#include <rawtool/crypto.hpp>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace rawtool::crypto {

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4U];
    out += digits[b & 0x0FU];
  }
  return out;
}

Sha256::Sha256() : context_(EVP_MD_CTX_new()) {
  if (context_ == nullptr || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(context_), EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(context_));
    throw std::runtime_error("rawtool: SHA-256 is unavailable");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(context_)); }

void Sha256::update(std::string_view bytes) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(context_), bytes.data(), bytes.size()) != 1)
    throw std::runtime_error("rawtool: SHA-256 failed");
}

void Sha256::update_field(std::string_view bytes) {
  std::array<char, 8> length{};
  auto n = static_cast<std::uint64_t>(bytes.size());
  for (std::size_t i = 0; i < 8; ++i) length[7 - i] = static_cast<char>(static_cast<unsigned char>((n >> (8 * i)) & 0xFFU));
  update(std::string_view(length.data(), length.size()));
  update(bytes);
}

std::string Sha256::hex_digest() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(context_), digest.data(), &size) != 1)
    throw std::runtime_error("rawtool: SHA-256 failed");
  return to_hex(std::string_view(reinterpret_cast<const char*>(digest.data()), size));
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.hex_digest();
}

std::string random_hex(std::size_t count) {
  std::vector<unsigned char> bytes(count);
  if (count > 0 && RAND_bytes(bytes.data(), static_cast<int>(count)) != 1)
    throw std::runtime_error("rawtool: the random number generator failed");
  return to_hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace rawtool::crypto
