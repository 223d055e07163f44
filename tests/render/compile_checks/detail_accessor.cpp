// The accessor lives in render/src, which is on no other target's include path.
#include "prelude.hpp"
#include "detail/untrusted_access.hpp"

int main() {
  const rawtool::Untrusted value = sample_untrusted();
  std::cout << rawtool::render::detail::UntrustedAccess::bytes(value);
}
