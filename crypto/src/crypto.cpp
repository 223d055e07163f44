#include <rawtool/crypto.hpp>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
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

std::optional<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    int value = -1;
    if (c >= 'A' && c <= 'Z') value = c - 'A';
    else if (c >= 'a' && c <= 'z') value = c - 'a' + 26;
    else if (c >= '0' && c <= '9') value = c - '0' + 52;
    else if (c == '-') value = 62;
    else if (c == '_') value = 63;
    if (value < 0) return std::nullopt;
    bits = (bits << 6U) | static_cast<std::uint32_t>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> static_cast<unsigned>(count)) & 0xFFU);
    }
  }
  // The bits left over must be zero: a second spelling of the same bytes is
  // not accepted.
  if ((bits & ((1U << static_cast<unsigned>(count)) - 1U)) != 0) return std::nullopt;
  return out;
}

namespace {

// An owner of an OpenSSL object, freed by its library's function.
template <class T, auto release>
struct Deleter {
  void operator()(T* p) const { release(p); }
};
template <class T, auto release>
using Owned = std::unique_ptr<T, Deleter<T, release>>;

using ParamBuild = Owned<OSSL_PARAM_BLD, OSSL_PARAM_BLD_free>;
using Params = Owned<OSSL_PARAM, OSSL_PARAM_free>;
using Bignum = Owned<BIGNUM, BN_free>;
using KeyContext = Owned<EVP_PKEY_CTX, EVP_PKEY_CTX_free>;
using DigestContext = Owned<EVP_MD_CTX, EVP_MD_CTX_free>;
using EcdsaSig = Owned<ECDSA_SIG, ECDSA_SIG_free>;

Bignum to_bignum(std::string_view bytes) {
  return Bignum(
      BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()), nullptr));
}

// A public key made from OpenSSL parameters, or nullptr.
std::shared_ptr<void> key_from(const char* type, OSSL_PARAM_BLD* build) {
  const Params params(OSSL_PARAM_BLD_to_param(build));
  const KeyContext context(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  if (!params || !context || EVP_PKEY_fromdata_init(context.get()) != 1) return nullptr;
  EVP_PKEY* key = nullptr;
  if (EVP_PKEY_fromdata(context.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) return nullptr;
  std::shared_ptr<void> owned(key, [](void* k) { EVP_PKEY_free(static_cast<EVP_PKEY*>(k)); });
  // A point off the curve (or a malformed RSA key) is refused here rather
  // than at the first signature.
  const KeyContext check(EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) != 1) return nullptr;
  return owned;
}

}  // namespace

std::optional<PublicKey> PublicKey::rsa(std::string_view n, std::string_view e) {
  const auto modulus = base64url_decode(n);
  const auto exponent = base64url_decode(e);
  if (!modulus || !exponent || exponent->empty() || exponent->size() > 8) return std::nullopt;
  const auto bn_n = to_bignum(*modulus);
  const auto bn_e = to_bignum(*exponent);
  if (!bn_n || !bn_e || BN_num_bits(bn_n.get()) < 2048) return std::nullopt;
  const ParamBuild build(OSSL_PARAM_BLD_new());
  if (!build || OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) != 1)
    return std::nullopt;
  auto key = key_from("RSA", build.get());
  if (!key) return std::nullopt;
  return PublicKey(Kind::rsa, std::move(key));
}

std::optional<PublicKey> PublicKey::ec_p256(std::string_view x, std::string_view y) {
  const auto bx = base64url_decode(x);
  const auto by = base64url_decode(y);
  if (!bx || !by || bx->size() != 32 || by->size() != 32) return std::nullopt;
  std::string point = "\x04" + *bx + *by;  // uncompressed SEC 1 point
  static char group[] = "prime256v1";
  const ParamBuild build(OSSL_PARAM_BLD_new());
  if (!build || OSSL_PARAM_BLD_push_utf8_string(build.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(build.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) != 1)
    return std::nullopt;
  auto key = key_from("EC", build.get());
  if (!key) return std::nullopt;
  return PublicKey(Kind::ec_p256, std::move(key));
}

bool PublicKey::verifies(std::string_view data, std::string_view signature) const {
  std::string der;
  if (kind_ == Kind::ec_p256) {
    // JWS carries R || S, 32 bytes each; OpenSSL verifies the DER form.
    if (signature.size() != 64) return false;
    EcdsaSig sig(ECDSA_SIG_new());
    auto r = to_bignum(signature.substr(0, 32));
    auto s = to_bignum(signature.substr(32));
    if (!sig || !r || !s || ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1) return false;
    (void)r.release();  // owned by sig now
    (void)s.release();
    unsigned char* out = nullptr;
    const int size = i2d_ECDSA_SIG(sig.get(), &out);
    if (size <= 0) return false;
    der.assign(reinterpret_cast<const char*>(out), static_cast<std::size_t>(size));
    OPENSSL_free(out);
    signature = der;
  }
  const DigestContext context(EVP_MD_CTX_new());
  auto* key = static_cast<EVP_PKEY*>(key_.get());
  if (!context || EVP_DigestVerifyInit(context.get(), nullptr, EVP_sha256(), nullptr, key) != 1) return false;
  return EVP_DigestVerify(context.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                          reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
}

}  // namespace rawtool::crypto
