#include <rawtool/driver.hpp>

namespace rawtool {

std::string_view access_mode_name(AccessMode mode) noexcept {
  switch (mode) {
    case AccessMode::read_only: return "read_only";
    case AccessMode::read_write: return "read_write";
  }
  return "unknown";
}

}  // namespace rawtool
