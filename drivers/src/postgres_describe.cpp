// describe() and the names of column and parameter types on a PostgreSQL
// connection. Describe prepares, describes and plans a statement without
// running it, in a READ ONLY transaction that is rolled back; it shares
// nothing with the statement pipeline but the connection, and the type names
// it asks for are the same cache the pipeline's rows are named from.
#include "detail/postgres_driver.hpp"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rawtool::detail {
namespace {

/// The statement_timeout describe plans under; its round trips wait that and
/// a grace.
constexpr std::chrono::milliseconds describe_timeout{10000};

}  // namespace

bool PostgresDriver::name_types(std::vector<Column>& columns, const std::vector<Oid>& oids, Clock::time_point deadline) {
  std::vector<Oid> unknown;
  for (Oid oid : oids) {
    if (!type_names_.contains(oid) && std::find(unknown.begin(), unknown.end(), oid) == unknown.end()) {
      unknown.push_back(oid);
    }
  }
  const bool ask = !unknown.empty() && PQstatus(conn_) == CONNECTION_OK;
  if (ask) {
    std::string list = "{";
    for (Oid oid : unknown) list += fmt::format("{}{}", list.size() > 1 ? "," : "", oid);
    list += "}";
    const char* values[] = {list.c_str()};
    const Result result = round_trip(
        conn_,
        Command{.text = "SELECT oid, format_type(oid, NULL) FROM pg_catalog.pg_type WHERE oid = ANY($1::oid[])", .values = values},
        deadline);
    if (PQresultStatus(result.get()) == PGRES_TUPLES_OK) {
      for (int row = 0; row < PQntuples(result.get()); ++row) {
        Oid oid = 0;
        const char* text = PQgetvalue(result.get(), row, 0);
        std::from_chars(text, text + std::strlen(text), oid);
        type_names_[oid] = Untrusted(PQgetvalue(result.get(), row, 1),
                                     static_cast<std::size_t>(PQgetlength(result.get(), row, 1)));
      }
    }
  }
  for (std::size_t c = 0; c < columns.size() && c < oids.size(); ++c) {
    const auto found = type_names_.find(oids[c]);
    if (found != type_names_.end()) columns[c].type_name = found->second;
  }
  return ask;
}

std::variant<StatementShape, Failure, Refusal, Unavailable> PostgresDriver::describe(std::string_view sql,
                                                                                     std::span<const Parameter> params,
                                                                                     AccessMode /*mode*/) {
  // Read-only or not, nothing here runs the statement, so the mode changes
  // nothing: the transaction is READ ONLY and rolled back either way.
  guard_kept_ = false;
  auto bound = bind_parameters(sql, params);
  if (auto* refusal = std::get_if<Refusal>(&bound)) return std::move(*refusal);
  const std::vector<Oid>& types = std::get<BoundParameters>(bound).types;
  if (auto unavailable = connect()) return std::move(*unavailable);
  const std::string text(sql);
  // Every statement here is the unnamed one. A pooler that tracks named
  // statements (PgBouncer from 1.21 with max_prepared_statements, on by
  // default from 1.22) renames them on the server, where SQL cannot find them
  // by their name, and keeps them there after the session deallocates them.
  constexpr const char* unnamed = "";
  const auto command_ok = [](const Result& result) { return PQresultStatus(result.get()) == PGRES_COMMAND_OK; };
  // Planning can evaluate IMMUTABLE functions; the timeout bounds them, and
  // the client waits that long and a grace for each answer.
  const Clock::time_point deadline = Clock::now() + describe_timeout + client_grace;
  const auto exec = [&](const char* query) { return round_trip(conn_, query, deadline); };
  const std::string set_timeout = fmt::format("SET LOCAL statement_timeout = {}", describe_timeout.count());
  if (!command_ok(exec("BEGIN READ ONLY")) || !command_ok(exec(set_timeout.c_str()))) {
    return broken_connection();
  }
  // Prepared statements outlive a rollback: both go with it, in one message,
  // so that a transaction pooler, which may hand the session's next message
  // to another server connection once the rollback leaves it idle, cannot
  // leave the statements behind on this one.
  const auto end = [&]() -> bool {
    return command_ok(exec("ROLLBACK; DEALLOCATE ALL")) && PQtransactionStatus(conn_) == PQTRANS_IDLE;
  };
  const auto failed = [&](const Result& result) -> std::variant<StatementShape, Failure, Refusal, Unavailable> {
    if (lost() || result == nullptr || PQresultStatus(result.get()) != PGRES_FATAL_ERROR) return broken_connection();
    std::uint64_t fields_bytes = 0;  // describe keeps no connection for its size
    Failure failure = failure_of(result.get(), Limits{}, 0, fields_bytes);
    if (!end()) return broken_connection();
    return failure;
  };

  // With the types execute sends: what fails here fails there.
  Result prepared = round_trip(conn_, Command{.text = text.c_str(), .prepare = unnamed, .types = types}, deadline);
  if (!command_ok(prepared)) return failed(prepared);
  Result described = round_trip(conn_, Command{.describe = unnamed}, deadline);
  if (PQresultStatus(described.get()) != PGRES_COMMAND_OK) return failed(described);
  StatementShape shape;
  // The types given, and more when the statement uses a higher $n.
  const int typed_count = PQnparams(described.get());
  shape.parameter_count = static_cast<std::size_t>(typed_count);
  std::vector<Oid> typed(static_cast<std::size_t>(typed_count));
  for (int i = 0; i < typed_count; ++i) typed[static_cast<std::size_t>(i)] = PQparamtype(described.get(), i);

  // What the server makes of the placeholders on its own: the highest number
  // used, and the type it infers for each (named below).
  std::vector<Oid> inferred;
  Result savepoint = exec("SAVEPOINT rawtool_untyped");
  if (!command_ok(savepoint)) return failed(savepoint);
  Result untyped = round_trip(conn_, Command{.text = text.c_str(), .prepare = unnamed}, deadline);
  if (command_ok(untyped)) {
    Result untyped_described = round_trip(conn_, Command{.describe = unnamed}, deadline);
    if (PQresultStatus(untyped_described.get()) == PGRES_COMMAND_OK) {
      shape.parameter_count = static_cast<std::size_t>(PQnparams(untyped_described.get()));
      for (int i = 0; i < PQnparams(untyped_described.get()); ++i) inferred.push_back(PQparamtype(untyped_described.get(), i));
    }
  }
  // A statement whose placeholder types the server cannot tell on its own
  // fails here ($1 alone in a select list); the typed prepare above counts.
  if (!command_ok(exec("ROLLBACK TO SAVEPOINT rawtool_untyped"))) return broken_connection();

  // The plan, with the types above and every parameter NULL, shows whether
  // it modifies a table. The statement parsed alone above as one statement,
  // so after this prefix it is EXPLAIN's statement, nothing else; one that
  // EXPLAIN does not take (a utility command) is a syntax error there.
  constexpr std::string_view explain_prefix = "EXPLAIN (FORMAT JSON) ";
  const std::string explain = std::string(explain_prefix) + text;
  const std::vector<const char*> nulls(typed.size(), nullptr);
  Result plan_savepoint = exec("SAVEPOINT rawtool_plan");
  if (!command_ok(plan_savepoint)) return failed(plan_savepoint);
  Result plan = round_trip(conn_, Command{.text = explain.c_str(), .values = nulls, .one_statement = true, .types = typed},
                           deadline);
  const bool utility = PQresultStatus(plan.get()) == PGRES_FATAL_ERROR &&
                       std::string_view(PQresultErrorField(plan.get(), PG_DIAG_SQLSTATE) != nullptr
                                            ? PQresultErrorField(plan.get(), PG_DIAG_SQLSTATE)
                                            : "") == "42601";
  if (utility) {
    if (!command_ok(exec("ROLLBACK TO SAVEPOINT rawtool_plan"))) return broken_connection();
  } else if (PQresultStatus(plan.get()) != PGRES_TUPLES_OK || PQntuples(plan.get()) != 1) {
    auto failure = failed(plan);
    // A position is the statement's, not the prefixed text's.
    if (auto* f = std::get_if<Failure>(&failure); f != nullptr && f->position && *f->position > static_cast<std::int64_t>(explain_prefix.size())) {
      *f->position -= static_cast<std::int64_t>(explain_prefix.size());
    }
    return failure;
  }
  // The server reads its own JSON: no plan at all is a utility command.
  const char* plan_text[] = {utility ? "[{}]" : PQgetvalue(plan.get(), 0, 0)};
  Result effect = round_trip(conn_,
                             Command{.text = "SELECT CASE WHEN NOT jsonb_path_exists($1::jsonb, '$[0].Plan') THEN 'command' "
                                             "WHEN jsonb_path_exists($1::jsonb, 'strict $.**.\"Node Type\" ? (@ == "
                                             "\"ModifyTable\")') THEN 'writes' ELSE 'reads' END",
                                     .values = plan_text},
                             deadline);
  if (PQresultStatus(effect.get()) != PGRES_TUPLES_OK || PQntuples(effect.get()) != 1) return failed(effect);
  const std::string_view effect_name = PQgetvalue(effect.get(), 0, 0);
  shape.effect = effect_name == "writes"    ? StatementShape::Effect::writes
                 : effect_name == "command" ? StatementShape::Effect::command
                                            : StatementShape::Effect::reads;

  std::vector<Column> named(inferred.size());
  name_types(named, inferred, deadline);
  for (const Column& column : named) shape.inferred_types.push_back(column.type_name);
  if (!end()) return broken_connection();
  return shape;
}
}  // namespace rawtool::detail
