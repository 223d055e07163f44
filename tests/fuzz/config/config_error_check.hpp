#pragma once

// The invariants of the configuration and catalog loaders' errors, shared by
// their fuzz targets: an error is a ConfigError, it names a field, and its
// words are rawtool's own. Any violation aborts, so libFuzzer keeps the input.

#include <rawtool/config.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace rawtool::fuzz {

[[noreturn]] inline void violated(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "loader invariant violated: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

/// The bytes rawtool's own error wording uses: field names, indexes, plain
/// identifiers, and its fixed phrases (among them the ${NAME} syntax it
/// explains). A byte outside it can only have come
/// from the input.
inline bool own_wording_byte(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case ' ': case '.': case ',': case ':': case ';': case '_': case '-': case '(': case ')':
    case '[': case ']': case '{': case '}': case '"': case '*': case '$': case '\'':
      return true;
    default:
      return false;
  }
}

inline void check_config_error(const ConfigError& error) {
  const std::string_view what = error.what();
  if (error.field().empty()) violated("an error names no field", what);
  if (what.substr(0, error.field().size() + 2) != error.field() + ": ") {
    violated("an error does not begin with its field", what);
  }
  for (char c : what) {
    if (!own_wording_byte(static_cast<unsigned char>(c))) violated("an error carries a byte rawtool's wording never uses", what);
  }
}

/// Runs `load`; an exception other than ConfigError is a violation, and a
/// ConfigError must pass check_config_error. True when `load` succeeded.
template <typename Load>
bool loads_or_names_field(Load&& load) {
  try {
    load();
    return true;
  } catch (const ConfigError& error) {
    check_config_error(error);
  } catch (const std::exception& e) {
    violated("an exception that is not a ConfigError", e.what());
  } catch (...) {
    violated("an exception that is not a std::exception");
  }
  return false;
}

/// The same document with every string value replaced by a marker no grammar
/// accepts and no error may repeat ('@' is outside rawtool's wording): values
/// then fail their checks on purpose, and the errors must still not echo them.
inline nlohmann::json with_marked_strings(nlohmann::json value, int& counter) {
  if (value.is_string()) return "@v" + std::to_string(counter++) + "@";
  if (value.is_object() || value.is_array()) {
    for (auto& item : value) item = with_marked_strings(std::move(item), counter);
  }
  return value;
}

}  // namespace rawtool::fuzz
