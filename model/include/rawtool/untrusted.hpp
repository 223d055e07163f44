#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rawtool {

namespace render::detail {
struct UntrustedAccess;
}

/// Bytes that came from outside rawtool: database text, cells, column and type
/// names, catalog prose. Anyone can make one; only code in render/ can read the
/// bytes back out (through render::detail::UntrustedAccess), so splicing
/// untrusted text into output without the renderer does not compile: there is
/// no conversion to a string, no stream operator and no fmt formatter.
///
/// The bytes are arbitrary: NUL, invalid UTF-8 and control bytes are carried
/// exactly. Value type; copies are independent; not synchronised.
class Untrusted {
public:
  Untrusted() = default;
  explicit Untrusted(std::string bytes) noexcept : bytes_(std::move(bytes)) {}
  explicit Untrusted(std::string_view bytes) : bytes_(bytes) {}
  /// Copies `size` bytes from `data`; a null `data` with size 0 is the empty value.
  Untrusted(const char* data, std::size_t size) : bytes_(data == nullptr ? std::string() : std::string(data, size)) {}

  /// The length in bytes. Sizes are not content: limits may be checked anywhere.
  [[nodiscard]] std::size_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] bool empty() const noexcept { return bytes_.empty(); }

  friend bool operator==(const Untrusted&, const Untrusted&) = default;

private:
  friend struct render::detail::UntrustedAccess;
  std::string bytes_;
};

}  // namespace rawtool
