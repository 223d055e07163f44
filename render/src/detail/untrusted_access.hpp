#pragma once

#include <rawtool/untrusted.hpp>

#include <string_view>

namespace rawtool::render::detail {

/// The one way to read an Untrusted's bytes. This header is private to
/// render/ (and the test support library): it is not installed and not on the
/// include path of any other target.
struct UntrustedAccess {
  static std::string_view bytes(const Untrusted& value) noexcept { return value.bytes_; }
};

}  // namespace rawtool::render::detail
