#include <rawtool/outcome.hpp>

namespace rawtool {

std::string_view engine_name(Engine engine) noexcept {
  switch (engine) {
    case Engine::postgresql: return "postgresql";
    case Engine::sqlite: return "sqlite";
  }
  return "unknown";
}

std::string_view truncation_name(Truncation truncation) noexcept {
  switch (truncation) {
    case Truncation::none: return "none";
    case Truncation::row_cap: return "row_cap";
    case Truncation::byte_cap: return "byte_cap";
  }
  return "unknown";
}

std::string_view refusal_reason_name(RefusalReason reason) noexcept {
  switch (reason) {
    case RefusalReason::empty_statement: return "empty_statement";
    case RefusalReason::multiple_statements: return "multiple_statements";
    case RefusalReason::read_only: return "read_only";
    case RefusalReason::not_permitted: return "not_permitted";
    case RefusalReason::limit: return "limit";
    case RefusalReason::bad_header_field: return "bad_header_field";
    case RefusalReason::render_budget: return "render_budget";
    case RefusalReason::self_check_failed: return "self_check_failed";
    case RefusalReason::cancelled: return "cancelled";
    case RefusalReason::timeout: return "timeout";
    case RefusalReason::internal: return "internal";
  }
  return "unknown";
}

}  // namespace rawtool
