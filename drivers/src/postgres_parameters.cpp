// Binding a call's parameters for libpq. See detail/postgres_parameters.hpp.
#include "detail/postgres_parameters.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <type_traits>

namespace rawtool::detail {
namespace {

constexpr Oid int8_oid = 20;
constexpr Oid bool_oid = 16;
constexpr Oid float8_oid = 701;

}  // namespace

std::variant<BoundParameters, Refusal> bind_parameters(std::string_view sql, std::span<const Parameter> params) {
  if (sql.find('\0') != std::string_view::npos) {
    return Refusal(RefusalReason::not_permitted, "A PostgreSQL statement cannot contain a NUL byte.");
  }
  BoundParameters bound;
  bound.texts.resize(params.size());
  bound.values.resize(params.size());
  bound.types.resize(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (const auto* text = std::get_if<std::string>(&params[i]); text != nullptr && text->find('\0') != std::string::npos) {
      return Refusal(RefusalReason::not_permitted, "A PostgreSQL text parameter cannot contain a NUL byte.");
    }
    std::visit(
        [&](const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::monostate>) {
            bound.values[i] = nullptr;
            return;
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            bound.texts[i] = fmt::format("{}", value);
            bound.types[i] = int8_oid;
          } else if constexpr (std::is_same_v<T, double>) {
            bound.texts[i] = fmt::format("{}", value);
            bound.types[i] = float8_oid;
          } else if constexpr (std::is_same_v<T, bool>) {
            bound.texts[i] = value ? "true" : "false";
            bound.types[i] = bool_oid;
          } else {
            bound.texts[i] = value;
          }
          bound.values[i] = bound.texts[i].c_str();
        },
        params[i]);
  }
  return bound;
}

}  // namespace rawtool::detail
