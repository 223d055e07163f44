#include "walk_support.hpp"

#include "oracle.hpp"

#include <rawtool/render/escape.hpp>
#include <rawtool/render/json.hpp>

namespace rawtool::test::walk {

render::Provenance raw_provenance(Engine engine) {
  render::Provenance provenance;
  provenance.path = render::PathKind::raw;
  provenance.engine = engine;
  provenance.database_label = "corpus";
  return provenance;
}

std::array<render::RenderOptions, 2> both_modes() {
  render::RenderOptions unicode;
  unicode.ascii_only = false;
  render::RenderOptions ascii = unicode;
  ascii.ascii_only = true;
  return {unicode, ascii};
}

std::string visible(std::string_view bytes) {
  std::string out;
  render::RenderOptions options;
  options.ascii_only = true;
  render::append_escaped(out, Untrusted(bytes), render::EscapeContext::cell, options);
  return out;
}

std::string structured_round_trip_problem(const nlohmann::json& structured) {
  const std::string serialised = render::dump(structured);
  for (const char ch : serialised) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte > 0x7E) return "dump() wrote a byte outside printable ASCII";
  }
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(serialised);
  } catch (const nlohmann::json::exception& e) {
    return std::string("dump() output does not parse: ") + e.what();
  }
  if (parsed != structured) return "dump() output parses to a different value";
  return {};
}

bool json_mentions(const nlohmann::json& value, std::string_view needle) {
  if (value.is_string()) return value.get_ref<const std::string&>().find(needle) != std::string::npos;
  if (value.is_object()) {
    if (const auto bytes = json_bytes(value); bytes && bytes->find(needle) != std::string::npos) return true;
    for (const auto& item : value.items()) {
      if (item.key().find(needle) != std::string::npos || json_mentions(item.value(), needle)) return true;
    }
    return false;
  }
  if (value.is_array()) {
    for (const auto& item : value)
      if (json_mentions(item, needle)) return true;
  }
  return false;
}

}  // namespace rawtool::test::walk
