#include <rawtool/driver.hpp>

#include <libpq-fe.h>

#include <string>

namespace rawtool {

std::variant<StatementShape, Failure, Refusal, Unavailable> Driver::describe(std::string_view, std::span<const Parameter>,
                                                                             AccessMode) {
  return Refusal{RefusalReason::not_permitted, Literal("This driver cannot prepare a statement without running it.")};
}

std::string_view access_mode_name(AccessMode mode) noexcept {
  switch (mode) {
    case AccessMode::read_only: return "read_only";
    case AccessMode::read_write: return "read_write";
  }
  return "unknown";
}

std::optional<Refusal> statement_size_refusal(std::string_view sql, const Limits& limits) {
  if (sql.size() <= limits.max_statement_bytes) return std::nullopt;
  return Refusal{RefusalReason::limit,
                 Trusted::format("The statement is {} bytes, over max_statement_bytes={} (limits.max_statement_bytes).",
                                 sql.size(), limits.max_statement_bytes)};
}

std::string_view hazard_kind_name(HazardKind kind) noexcept {
  switch (kind) {
    case HazardKind::superuser: return "superuser";
    case HazardKind::server_files: return "server_files";
    case HazardKind::server_program: return "server_program";
    case HazardKind::replication: return "replication";
    case HazardKind::signal_any_backend: return "signal_any_backend";
    case HazardKind::server_state_function: return "server_state_function";
    case HazardKind::server_file_function: return "server_file_function";
    case HazardKind::logical_message: return "logical_message";
    case HazardKind::remote_connection: return "remote_connection";
    case HazardKind::foreign_server: return "foreign_server";
    case HazardKind::signal_same_role: return "signal_same_role";
    case HazardKind::transaction_ids: return "transaction_ids";
    case HazardKind::shared_role: return "shared_role";
    case HazardKind::prepared_transactions: return "prepared_transactions";
    case HazardKind::connection_limit: return "connection_limit";
    case HazardKind::database_owner: return "database_owner";
    case HazardKind::schema_owner: return "schema_owner";
    case HazardKind::table_owner: return "table_owner";
    case HazardKind::sequence_owner: return "sequence_owner";
    case HazardKind::function_owner: return "function_owner";
    case HazardKind::maintain: return "maintain";
    case HazardKind::security_definer: return "security_definer";
    case HazardKind::server_log: return "server_log";
  }
  return "unknown";
}

std::span<const HazardKind> hazard_kinds() noexcept {
  static constexpr HazardKind all[] = {
      HazardKind::superuser,         HazardKind::server_files,          HazardKind::server_program,
      HazardKind::replication,       HazardKind::signal_any_backend,    HazardKind::server_state_function,
      HazardKind::server_file_function, HazardKind::logical_message,    HazardKind::remote_connection,
      HazardKind::foreign_server,    HazardKind::signal_same_role,      HazardKind::transaction_ids,
      HazardKind::shared_role,       HazardKind::prepared_transactions, HazardKind::database_owner,
      HazardKind::schema_owner,      HazardKind::table_owner,           HazardKind::sequence_owner,
      HazardKind::function_owner,    HazardKind::maintain,              HazardKind::security_definer,
      HazardKind::server_log,
  };
  return all;
}

std::optional<HazardKind> hazard_kind_from_name(std::string_view name) noexcept {
  for (const HazardKind kind : hazard_kinds())
    if (hazard_kind_name(kind) == name) return kind;
  return std::nullopt;
}

namespace {

bool starts_with(std::string_view text, std::string_view prefix) noexcept {
  return text.substr(0, prefix.size()) == prefix;
}

bool opens_with_keyword(std::string_view text) {
  const auto start = text.find_first_not_of(" \t\n\r\f\v");
  if (start == std::string_view::npos) return false;
  const auto end = text.find_first_of(" \t\n\r\f\v=", start);
  if (end == std::string_view::npos) return false;
  const auto equals = text.find_first_not_of(" \t\n\r\f\v", end);
  if (equals == std::string_view::npos || text[equals] != '=') return false;
  const std::string_view word = text.substr(start, end - start);
  PQconninfoOption* defaults = PQconndefaults();
  if (defaults == nullptr) return false;
  bool known = false;
  for (const PQconninfoOption* option = defaults; option->keyword != nullptr; ++option) known = known || word == option->keyword;
  PQconninfoFree(defaults);
  return known;
}

}  // namespace

LibpqForm libpq_form(std::string_view target) {
  if (starts_with(target, "postgresql://") || starts_with(target, "postgres://")) return LibpqForm::url;
  // libpq reads a C string: a NUL would hide the rest of the target from it.
  if (target.find('\0') != std::string_view::npos) return LibpqForm::none;
  const std::string text(target);
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(text.c_str(), &error);
  PQfreemem(error);
  // A string libpq cannot parse is still its own when it opens with one of its
  // keywords and '=' ("host=db dbname"): libpq names the fault when it
  // connects, as for a malformed URL, instead of a SQLite file of that name.
  if (options == nullptr) return opens_with_keyword(text) ? LibpqForm::keywords : LibpqForm::none;
  // Only the keywords the string sets have a value: an empty or blank string
  // parses, but names nothing, and is no connection string.
  bool sets_one = false;
  for (const PQconninfoOption* option = options; option->keyword != nullptr; ++option) sets_one = sets_one || option->val != nullptr;
  PQconninfoFree(options);
  return sets_one ? LibpqForm::keywords : LibpqForm::none;
}

std::unique_ptr<Driver> make_driver(std::string_view target, AccessMode mode) {
  if (libpq_form(target) != LibpqForm::none) return make_postgres_driver(std::string(target));
  if (starts_with(target, "sqlite://")) return make_sqlite_driver(std::string(target.substr(9)), mode);
  if (starts_with(target, "sqlite:")) return make_sqlite_driver(std::string(target.substr(7)), mode);
  return make_sqlite_driver(std::string(target), mode);
}

}  // namespace rawtool
