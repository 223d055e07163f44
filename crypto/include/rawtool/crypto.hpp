#pragma once

// SHA-256 and random hex digits (OpenSSL), for digests and tokens rawtool
// writes in its own lines: lower-case hex throughout.

#include <cstddef>
#include <string>
#include <string_view>

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

}  // namespace rawtool::crypto
