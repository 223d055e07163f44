// The one way out: through the renderer. This must compile, or the harness
// proves nothing by the other checks failing.
#include "prelude.hpp"

int main() {
  const rawtool::Untrusted value = sample_untrusted();
  std::string out;
  rawtool::render::append_escaped(out, value, rawtool::render::EscapeContext::line, rawtool::render::RenderOptions{});
  std::cout << fmt::format("{}", out) << value.size() << '\n';
}
