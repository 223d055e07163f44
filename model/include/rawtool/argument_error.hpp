#pragma once

#include <rawtool/trusted.hpp>
#include <rawtool/untrusted.hpp>

#include <optional>
#include <string_view>

namespace rawtool {

/// Which rule a caller's argument broke. The set is closed; each member has a
/// stable name an agent can act on.
enum class ArgumentRule {
  missing,            ///< a required argument was not given (or was null)
  type,               ///< the value is not of the declared type or form
  minimum,            ///< below the declared minimum
  maximum,            ///< above the declared maximum
  enum_value,         ///< not one of the allowed values ("enum")
  max_length,         ///< longer than the declared number of characters
  unknown_parameter,  ///< a name that is not a declared parameter
  unknown_database,   ///< a database label no configured database has
  not_found,          ///< names an object this role cannot use or that does not exist
};

/// The rule's stable name: "missing", "type", "minimum", "maximum", "enum",
/// "max_length", "unknown_parameter", "unknown_database", "not_found".
constexpr std::string_view argument_rule_name(ArgumentRule rule) noexcept {
  switch (rule) {
    case ArgumentRule::missing: return "missing";
    case ArgumentRule::type: return "type";
    case ArgumentRule::minimum: return "minimum";
    case ArgumentRule::maximum: return "maximum";
    case ArgumentRule::enum_value: return "enum";
    case ArgumentRule::max_length: return "max_length";
    case ArgumentRule::unknown_parameter: return "unknown_parameter";
    case ArgumentRule::unknown_database: return "unknown_database";
    case ArgumentRule::not_found: return "not_found";
  }
  return "unknown";
}

/// A caller's argument that does not fit, said in rawtool's words. These are
/// the caller's own inputs, never database text; still, a value echoed back
/// (an unknown parameter's name, a label that matched nothing) is the caller's
/// bytes and travels as Untrusted, shown only through the renderer.
struct ArgumentError {
  /// The argument's name as declared (a parameter of a pinned query, an
  /// argument of a tool); empty for an unknown parameter, whose name is the
  /// caller's and is carried in `given` instead.
  Label argument;
  ArgumentRule rule = ArgumentRule::type;
  /// What the rule asks, e.g. "must be at most 100" (the argument's name is
  /// not repeated in it).
  Trusted explanation;
  /// The caller's value or name, echoed back escaped; absent when echoing it
  /// would add nothing.
  std::optional<Untrusted> given;
};

}  // namespace rawtool
