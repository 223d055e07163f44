#include <rawtool/arguments.hpp>

#include <rawtool/render/bytes.hpp>

#include "lib/detail/json_fields.hpp"

#include <optional>
#include <utility>

namespace rawtool {

namespace {

ArgumentError argument_problem(Label argument, ArgumentRule rule, Literal explanation) {
  return argument_error(std::move(argument), rule, Trusted(explanation));
}
ArgumentError argument_problem(Label argument, ArgumentRule rule, Trusted explanation) {
  return argument_error(std::move(argument), rule, std::move(explanation));
}

// A name the caller gives: UTF-8 text without NUL, at most name_max_length
// characters.
std::optional<ArgumentError> check_name(const Label& argument, const std::string& text) {
  const auto length = render::code_point_count(text);
  if (!length || text.find('\0') != std::string::npos)
    return argument_problem(argument, ArgumentRule::type, "must be UTF-8 text without NUL characters");
  if (*length > SchemaRequest::name_max_length)
    return argument_problem(argument, ArgumentRule::max_length,
                            Trusted::format("must be at most {} characters long", SchemaRequest::name_max_length));
  return std::nullopt;
}

std::optional<ArgumentError> check_page(const SchemaRequest& request) {
  if (request.limit < 1) return argument_problem(Label("limit"), ArgumentRule::minimum, "must be at least 1");
  if (request.limit > SchemaRequest::limit_max)
    return argument_problem(Label("limit"), ArgumentRule::maximum, Trusted::format("must be at most {}", SchemaRequest::limit_max));
  if (request.offset > SchemaRequest::offset_max)
    return argument_problem(Label("offset"), ArgumentRule::maximum, Trusted::format("must be at most {}", SchemaRequest::offset_max));
  return std::nullopt;
}

}  // namespace

ArgumentError argument_error(Label argument, ArgumentRule rule, Trusted explanation) {
  ArgumentError error;
  error.argument = std::move(argument);
  error.rule = rule;
  error.explanation = std::move(explanation);
  return error;
}

std::optional<ArgumentError> check_schema_request(const SchemaRequest& request) {
  for (const auto& [name, text] : {std::pair{Label("schema"), &request.schema}, std::pair{Label("table"), &request.table},
                                   std::pair{Label("pattern"), &request.pattern}})
    if (auto problem = check_name(name, *text)) return problem;
  return check_page(request);
}

ArgumentError argument_type_error(const Label& argument, Literal expected, const nlohmann::json& value) {
  return argument_problem(argument, ArgumentRule::type, Trusted::format("must be {}, not {}", expected, detail::json_kind_words(value)));
}

std::variant<SchemaArguments, ArgumentError> schema_arguments_from_json(const nlohmann::json& arguments) {
  SchemaArguments out;
  if (arguments.is_null()) return out;
  if (!arguments.is_object()) return argument_type_error(Label("arguments"), "a JSON object", arguments);
  struct TextMember {
    Label name;
    std::string* target;
  };
  const TextMember texts[] = {{Label("database"), &out.database},
                              {Label("schema"), &out.request.schema},
                              {Label("table"), &out.request.table},
                              {Label("pattern"), &out.request.pattern}};
  struct NumberMember {
    Label name;
    std::uint64_t* target;
  };
  const NumberMember numbers[] = {{Label("offset"), &out.request.offset}, {Label("limit"), &out.request.limit}};
  for (const auto& item : arguments.items()) {
    bool known = false;
    for (const auto& member : texts) known = known || member.name.view() == item.key();
    for (const auto& member : numbers) known = known || member.name.view() == item.key();
    if (!known) {
      ArgumentError error = argument_problem(Label(), ArgumentRule::unknown_parameter,
                                             "an argument was given that describe_schema does not take; it takes database, "
                                             "schema, table, pattern, offset and limit");
      error.given = Untrusted(item.key());
      return error;
    }
  }
  for (const auto& member : texts) {
    const auto it = arguments.find(member.name.view());
    if (it == arguments.end() || it->is_null()) continue;
    if (!it->is_string()) return argument_type_error(member.name, "a string", *it);
    *member.target = it->get<std::string>();
  }
  for (const auto& member : numbers) {
    const auto it = arguments.find(member.name.view());
    if (it == arguments.end() || it->is_null()) continue;
    if (!it->is_number_integer()) return argument_type_error(member.name, "an integer", *it);
    if (it->is_number_unsigned()) {
      *member.target = it->get<std::uint64_t>();
    } else {
      const auto value = it->get<std::int64_t>();
      if (value < 0)
        return argument_problem(member.name, ArgumentRule::minimum,
                                member.name.view() == "limit" ? Literal("must be at least 1") : Literal("must be at least 0"));
      *member.target = static_cast<std::uint64_t>(value);
    }
  }
  if (auto problem = check_schema_request(out.request)) return *problem;
  return out;
}

}  // namespace rawtool
