#pragma once

// A strict reader for the small subset of YAML the docker/ compose files use,
// so that a ctest test can check them on a machine without Docker or a YAML
// library. Anything outside the subset is an error, never a guess:
//   block mappings (key: value, key: followed by a more-indented block),
//   block sequences (- value, - key: value ...), comments, blank lines,
//   plain, 'single-quoted' and "double-quoted" scalars on one line,
//   flow sequences of scalars ([a, "b"]) and the empty flow mapping {}.
// Rejected: tabs in indentation, anchors, aliases, tags, block scalars (| >),
// multi-line scalars, complex keys, documents markers, duplicate keys.
// Scalars come back as JSON strings; no type resolution.

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string_view>

namespace rawtool::test {

class YamlError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Parses `text`; throws YamlError naming the line.
nlohmann::json parse_yaml_subset(std::string_view text);

}  // namespace rawtool::test
