#include "cli/failure_input.hpp"

#include <rawtool/render/bytes.hpp>
#include <rawtool/render/escape.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rawtool::cli {

namespace {

using json = nlohmann::json;

/// A member name from the input, shown in an error message: it came from
/// outside, so it goes through the renderer's escaper (cell context, ASCII
/// only, in double quotes) and long names are not shown at all.
std::string describe_name(std::string_view name) {
  constexpr std::size_t longest_shown = 64;
  if (name.size() > longest_shown) {
    return "(a name of " + std::to_string(name.size()) + " bytes)";
  }
  render::RenderOptions options;
  options.ascii_only = true;
  std::string out = "\"";
  render::append_escaped(out, Untrusted(name), render::EscapeContext::cell, options);
  out += '"';
  return out;
}

[[noreturn]] void fail(const std::string& where, const std::string& problem) {
  throw InputError(where.empty() ? problem : where + ": " + problem);
}

std::string member_path(const std::string& parent, std::string_view name) {
  return parent.empty() ? std::string(name) : parent + "." + std::string(name);
}

Untrusted text_field(const json& value, const std::string& where) {
  if (value.is_null()) {
    return {};
  }
  if (value.is_string()) {
    return Untrusted(value.get_ref<const std::string&>());
  }
  if (!value.is_object()) {
    fail(where, std::string("must be a JSON string or {\"base64\": \"...\"}, not ") + value.type_name());
  }
  const json* encoded = nullptr;
  for (const auto& [key, member] : value.items()) {
    if (key == "base64") {
      encoded = &member;
    } else if (key == "encoding") {
      if (!member.is_string() || member.get_ref<const std::string&>() != "base64") {
        fail(member_path(where, "encoding"), "must be \"base64\"");
      }
    } else if (key == "invalid_utf8") {
      if (!member.is_boolean()) {
        fail(member_path(where, "invalid_utf8"), "must be true or false");
      }
    } else {
      fail(where, "unknown member " + describe_name(key) + " (expected base64)");
    }
  }
  if (encoded == nullptr) {
    fail(where, "an object here must have a base64 member");
  }
  if (!encoded->is_string()) {
    fail(member_path(where, "base64"), std::string("must be a JSON string, not ") + encoded->type_name());
  }
  auto bytes = render::decode_base64(encoded->get_ref<const std::string&>());
  if (!bytes) {
    fail(member_path(where, "base64"),
         "is not valid base64 (standard alphabet, padded to a multiple of 4, no whitespace)");
  }
  return Untrusted(std::move(*bytes));
}

std::int64_t integer_field(const json& value, const std::string& where, std::int64_t min, std::int64_t max) {
  std::int64_t n = 0;
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(where, "is out of range");
    }
    n = static_cast<std::int64_t>(u);
  } else if (value.is_number_integer()) {
    n = value.get<std::int64_t>();
  } else {
    fail(where, std::string("must be an integer, not ") + value.type_name());
  }
  if (n < min || n > max) {
    fail(where, "is out of range");
  }
  return n;
}

std::optional<std::int64_t> optional_integer(const json& value, const std::string& where, std::int64_t min,
                                             std::int64_t max) {
  if (value.is_null()) {
    return std::nullopt;
  }
  return integer_field(value, where, min, max);
}

Notice notice_field(const json& value, const std::string& where) {
  if (!value.is_object()) {
    fail(where, std::string("must be a JSON object, not ") + value.type_name());
  }
  Notice notice;
  const std::array<std::pair<std::string_view, Untrusted Notice::*>, 6> fields{{
      {"severity", &Notice::severity},
      {"sqlstate", &Notice::sqlstate},
      {"message", &Notice::message},
      {"detail", &Notice::detail},
      {"hint", &Notice::hint},
      {"context", &Notice::context},
  }};
  for (const auto& [key, member] : value.items()) {
    bool known = false;
    for (const auto& [name, field] : fields) {
      if (key == name) {
        notice.*field = text_field(member, member_path(where, name));
        known = true;
        break;
      }
    }
    if (!known) {
      fail(where, "unknown member " + describe_name(key));
    }
  }
  return notice;
}

Engine engine_field(const json& value, std::string_view name) {
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    if (s == "postgresql") return Engine::postgresql;
    if (s == "sqlite") return Engine::sqlite;
  }
  fail(std::string(name), "must be \"postgresql\" or \"sqlite\"");
}

/// Rejects a member given twice in any object: a reader that keeps the first
/// and one that keeps the last would otherwise see different failures.
class DuplicateCheck {
public:
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys_.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys_.empty()) keys_.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys_.empty() && !keys_.back().insert(parsed.get<std::string>()).second) {
          throw InputError("member " + describe_name(parsed.get<std::string>()) + " is given twice");
        }
        break;
      default:
        break;
    }
    return true;
  }

private:
  std::vector<std::set<std::string>> keys_;
};

json parse_json(std::string_view input) {
  if (input.size() > max_failure_input_bytes) {
    fail("", "input is larger than " + std::to_string(max_failure_input_bytes) + " bytes");
  }
  if (auto bad = render::first_invalid_utf8(input)) {
    fail("", "input is not UTF-8 (byte " + std::to_string(*bad + 1) +
                 "); JSON text must be UTF-8, so give bytes that are not as {\"base64\": \"...\"}");
  }
  if (input.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    fail("", "input is empty; expected one JSON object");
  }
  auto check = std::make_shared<DuplicateCheck>();
  try {
    return json::parse(input, [check](int depth, json::parse_event_t event, json& parsed) {
      return (*check)(depth, event, parsed);
    });
  } catch (const json::parse_error& e) {
    // e.what() quotes the input around the error; say where, in our own words.
    const std::size_t at = e.byte;
    if (at > 1 && at - 1 <= input.size() && json::accept(input.substr(0, at - 1))) {
      fail("", "trailing characters after the JSON value (byte " + std::to_string(at) +
                   "); expected exactly one JSON object");
    }
    fail("", "input is not valid JSON (syntax error at byte " + std::to_string(at) + ")");
  } catch (const json::exception&) {
    fail("", "input is not valid JSON");
  }
}

}  // namespace

Failure parse_failure_input(std::string_view input) {
  const json doc = parse_json(input);
  if (!doc.is_object()) {
    fail("", std::string("expected a JSON object, got ") + doc.type_name());
  }
  Failure failure;
  const std::array<std::pair<std::string_view, Untrusted Failure::*>, 13> text_fields{{
      {"severity", &Failure::severity},
      {"sqlstate", &Failure::sqlstate},
      {"message", &Failure::message},
      {"detail", &Failure::detail},
      {"hint", &Failure::hint},
      {"context", &Failure::context},
      {"statement", &Failure::statement},
      {"internal_query", &Failure::internal_query},
      {"schema", &Failure::schema},
      {"table", &Failure::table},
      {"column", &Failure::column},
      {"datatype", &Failure::datatype},
      {"constraint", &Failure::constraint},
  }};
  // The prose fields, for telling a field sent empty from one not sent.
  struct ProseField {
    std::string_view name;
    FailureField field;
    Untrusted Failure::*member;
  };
  const std::array<ProseField, 10> prose_fields{{
      {"message", FailureField::message, &Failure::message},
      {"detail", FailureField::detail, &Failure::detail},
      {"hint", FailureField::hint, &Failure::hint},
      {"context", FailureField::context, &Failure::context},
      {"internal_query", FailureField::internal_query, &Failure::internal_query},
      {"schema", FailureField::schema, &Failure::schema},
      {"table", FailureField::table, &Failure::table},
      {"column", FailureField::column, &Failure::column},
      {"datatype", FailureField::datatype, &Failure::datatype},
      {"constraint", FailureField::constraint, &Failure::constraint},
  }};
  constexpr auto int64_min = std::numeric_limits<std::int64_t>::min();
  constexpr auto int64_max = std::numeric_limits<std::int64_t>::max();
  std::optional<Engine> engine;
  for (const auto& [key, value] : doc.items()) {
    if (key == "engine" || key == "driver") {
      const Engine e = engine_field(value, key);
      if (engine && *engine != e) {
        fail(key, "disagrees with the other of engine and driver");
      }
      engine = e;
      continue;
    }
    if (key == "code") {
      if (!value.is_null()) {
        failure.sqlite_code = static_cast<int>(
            integer_field(value, key, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
      }
      continue;
    }
    if (key == "position") {
      failure.position = optional_integer(value, key, int64_min, int64_max);
      continue;
    }
    if (key == "internal_position") {
      failure.internal_position = optional_integer(value, key, int64_min, int64_max);
      continue;
    }
    if (key == "notices_withheld") {
      if (!value.is_null()) {
        failure.notices_withheld = static_cast<std::uint64_t>(integer_field(value, key, 0, int64_max));
      }
      continue;
    }
    if (key == "notices") {
      if (value.is_null()) {
        continue;
      }
      if (!value.is_array()) {
        fail(key, std::string("must be a JSON array, not ") + value.type_name());
      }
      for (std::size_t i = 0; i < value.size(); ++i) {
        failure.notices.push_back(notice_field(value[i], "notices[" + std::to_string(i) + "]"));
      }
      continue;
    }
    bool known = false;
    for (const auto& [name, field] : text_fields) {
      if (key == name) {
        failure.*field = text_field(value, std::string(name));
        known = true;
        break;
      }
    }
    // null is a field not sent; a field given with no text was sent empty.
    for (const auto& prose : prose_fields) {
      if (key == prose.name && !value.is_null() && (failure.*prose.member).empty()) failure.sent_empty.push_back(prose.field);
    }
    if (!known) {
      fail("", "unknown member " + describe_name(key));
    }
  }
  if (!engine) {
    fail("", "missing member engine (\"postgresql\" or \"sqlite\"; \"driver\" is accepted too)");
  }
  failure.engine = *engine;
  return failure;
}

}  // namespace rawtool::cli
