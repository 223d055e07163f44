#pragma once

// Strict reading of operator-written JSON (configuration, catalog): every
// problem is a ConfigError naming the field, unknown keys are errors, numbers
// have ranges, and the operator's values are never copied into a message.

#include <rawtool/config.hpp>

#include <rawtool/trusted.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace rawtool::detail {

[[noreturn]] inline void fail(const std::string& field, const std::string& problem) {
  throw ConfigError(field, problem);
}

/// `prefix.key`, or `key` when the prefix is empty.
inline std::string member_field(const std::string& prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  // "catalog:" introduces the catalog's own fields: "catalog: queries".
  if (prefix.back() == ':') return prefix + " " + std::string(key);
  return prefix + "." + std::string(key);
}

/// An operator's key, shown only when it is plainly an identifier.
inline std::string shown_key(std::string_view key) {
  bool plain = !key.empty() && key.size() <= 64;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    plain = plain && ok;
  }
  return plain ? std::string(key) : std::string("(a key that is not a plain identifier)");
}

inline Literal json_kind_words(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a fractional number";
    default: return "an unsupported value";
  }
}

inline const char* json_kind(const nlohmann::json& value) { return json_kind_words(value).view().data(); }

inline void require_object(const nlohmann::json& value, const std::string& field) {
  if (!value.is_object()) fail(field, std::string("must be a JSON object, not ") + json_kind(value));
}

/// Every key of `object` must be one of `known`.
inline void reject_unknown_keys(const nlohmann::json& object, std::initializer_list<std::string_view> known,
                                const std::string& prefix) {
  for (const auto& item : object.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || item.key() == k;
    if (!found) {
      std::string allowed;
      for (std::string_view k : known) {
        if (!allowed.empty()) allowed += ", ";
        allowed += k;
      }
      fail(member_field(prefix, shown_key(item.key())), "unknown key (allowed here: " + allowed + ")");
    }
  }
}

inline bool read_bool(const nlohmann::json& value, const std::string& field) {
  if (!value.is_boolean()) fail(field, std::string("must be true or false, not ") + json_kind(value));
  return value.get<bool>();
}

inline std::string read_string(const nlohmann::json& value, const std::string& field) {
  if (!value.is_string()) fail(field, std::string("must be a string, not ") + json_kind(value));
  return value.get<std::string>();
}

/// An integer in [minimum, maximum]; fractional numbers, booleans and strings are errors.
inline std::int64_t read_integer(const nlohmann::json& value, const std::string& field, std::int64_t minimum,
                                 std::int64_t maximum) {
  std::string range = "an integer from " + std::to_string(minimum) + " to " + std::to_string(maximum);
  if (value.is_number_unsigned()) {
    auto v = value.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(maximum)) fail(field, "must be " + range);
    if (static_cast<std::int64_t>(v) < minimum) fail(field, "must be " + range);
    return static_cast<std::int64_t>(v);
  }
  if (!value.is_number_integer()) fail(field, "must be " + range + ", not " + json_kind(value));
  auto v = value.get<std::int64_t>();
  if (v < minimum || v > maximum) fail(field, "must be " + range);
  return v;
}

}  // namespace rawtool::detail
