#include "untrusted_bytes.hpp"

#include "detail/untrusted_access.hpp"

namespace rawtool::test {

std::string bytes_of(const Untrusted& value) {
  return std::string(render::detail::UntrustedAccess::bytes(value));
}

}  // namespace rawtool::test
