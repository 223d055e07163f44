#pragma once

// A call's statement and parameters as libpq takes them. Private to the
// PostgreSQL driver: execute sends them, describe prepares with their types,
// so both bind them here, the one place that says what libpq cannot take and
// which Parameter becomes which type.

#include <rawtool/driver.hpp>

#include <libpq-fe.h>

#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rawtool::detail {

/// Parameters as libpq takes them: text with a type, or NULL. Values are
/// never spliced into the statement. `values` points into `texts`, which a
/// move keeps in place and a copy does not: never copied.
struct BoundParameters {
  std::vector<std::string> texts;
  std::vector<const char*> values;
  std::vector<Oid> types;
};

/// `params` bound: integers as int8, numbers as float8, booleans as bool, text
/// and NULL untyped (the server infers them). A Refusal for a statement `sql`
/// or a text parameter holding a NUL byte: libpq takes C strings, so it would
/// be cut short.
std::variant<BoundParameters, Refusal> bind_parameters(std::string_view sql, std::span<const Parameter> params);

}  // namespace rawtool::detail
