#pragma once

// What a later caller can ask a SQLite connection about the calls made on it
// before: for the tests that check a connection goes back as a fresh one.

#include "untrusted_bytes.hpp"

#include <rawtool/driver.hpp>

#include <fmt/format.h>

#include <string>
#include <variant>
#include <vector>

namespace rawtool::test {

/// An outcome as a line of text, to compare what two connections answer.
inline std::string answer(const Outcome& outcome) {
  if (const auto* rows = std::get_if<Rows>(&outcome)) {
    std::string text = "rows:";
    for (const auto& row : rows->rows) {
      for (const auto& value : row) text += value ? "[" + bytes_of(*value) + "]" : "NULL";
      text += ";";
    }
    return text;
  }
  if (const auto* failure = std::get_if<Failure>(&outcome)) {
    return fmt::format("failure {}: {}", failure->sqlite_code.value_or(0), bytes_of(failure->message));
  }
  if (const auto* refusal = std::get_if<Refusal>(&outcome)) {
    return fmt::format("refused: {}", refusal_reason_name(refusal->reason));
  }
  return "unavailable";
}

/// The questions: the whole temp schema; which of the rows `t` was made with
/// (x starting "file ") this connection reads under that name (rows a call
/// wrote would differ between a :memory: database and a fresh one); rowid
/// and change counts; attached databases; the functions, modules and
/// collations it knows; settings; whether a savepoint or a transaction is
/// open. Each is a read, so asking
/// leaves the connection as it is (BEGIN's transaction ends with its call).
inline const std::vector<std::string>& sqlite_session_probes() {
  static const std::vector<std::string> probes = {
      "SELECT group_concat(type || ' ' || name || ' ON ' || tbl_name, '; ') FROM temp.sqlite_schema",
      "SELECT count(*), group_concat(x) FROM t WHERE x LIKE 'file %'",
      "SELECT last_insert_rowid(), changes(), total_changes()",
      "SELECT group_concat(name) FROM pragma_database_list",
      "SELECT count(*) FROM pragma_function_list",
      "SELECT count(*) FROM pragma_module_list",
      "SELECT count(*) FROM pragma_collation_list",
      "SELECT 'a' LIKE 'A'",
      "PRAGMA foreign_keys",
      "PRAGMA cache_size",
      "PRAGMA synchronous",
      "PRAGMA query_only",
      "PRAGMA recursive_triggers",
      "PRAGMA temp_store",
      "PRAGMA locking_mode",
      "PRAGMA defer_foreign_keys",
      "RELEASE s",
      "BEGIN",
  };
  return probes;
}

/// Each probe's answer from `driver`, as a caller in `mode`, one call each.
inline std::vector<std::string> sqlite_session_answers(Driver& driver, AccessMode mode) {
  std::vector<std::string> answers;
  for (const std::string& probe : sqlite_session_probes()) {
    answers.push_back(probe + " -> " + answer(driver.execute(probe, {}, Limits{}, mode)));
  }
  return answers;
}

}  // namespace rawtool::test
