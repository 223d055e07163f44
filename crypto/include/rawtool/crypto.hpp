#pragma once

// SHA-256 and random hex digits (OpenSSL), for digests and tokens rawtool
// writes in its own lines: lower-case hex throughout; and the signature check
// of a JSON Web Token, for OAuth access tokens.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rawtool::crypto {

/// Incremental SHA-256. Throws std::runtime_error when OpenSSL fails.
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  /// The length of `bytes` as 8 bytes big-endian, then the bytes: a sequence
  /// of such fields hashes unambiguously.
  void update_field(std::string_view bytes);
  /// 64 lower-case hex digits; the hasher is spent afterwards.
  std::string hex_digest();

private:
  void* context_;
};

/// Lower-case hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

/// `count` bytes from OpenSSL's CSPRNG as 2 * count lower-case hex digits.
/// Throws std::runtime_error when the generator fails.
std::string random_hex(std::size_t count);

/// Lower-case hex of `bytes`.
std::string to_hex(std::string_view bytes);

/// The bytes of base64url text (RFC 4648 section 5) without padding, as JSON
/// Web Tokens and Keys carry them; nullopt for any other character, for
/// padding, or for a length no encoding has.
std::optional<std::string> base64url_decode(std::string_view text);

/// A public signing key from a JSON Web Key's members (RFC 7518 section 6),
/// each base64url: RSA from its modulus and exponent (2048 bits at least), or
/// an EC key on P-256 from its coordinates. Copies share the key.
class PublicKey {
public:
  enum class Kind { rsa, ec_p256 };
  /// nullopt when the members do not make a key of that kind, or an RSA
  /// modulus is shorter than 2048 bits.
  static std::optional<PublicKey> rsa(std::string_view n, std::string_view e);
  static std::optional<PublicKey> ec_p256(std::string_view x, std::string_view y);

  Kind kind() const { return kind_; }

  /// Whether `signature` signs `data` under this key: RSASSA-PKCS1-v1_5 with
  /// SHA-256 for an RSA key (JWS "RS256"), ECDSA with SHA-256 for a P-256
  /// key, the signature as the 64 bytes R || S (JWS "ES256").
  bool verifies(std::string_view data, std::string_view signature) const;

private:
  PublicKey(Kind kind, std::shared_ptr<void> key) : kind_(kind), key_(std::move(key)) {}
  Kind kind_;
  std::shared_ptr<void> key_;  // EVP_PKEY
};

}  // namespace rawtool::crypto
