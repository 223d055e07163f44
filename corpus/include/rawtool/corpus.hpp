#pragma once

// The hostile corpus, read from corpus/*.jsonl at run time. Every surface's
// tests walk it: load a collection, build the value a case describes
// (failure_for, rows_for, prose_of), render it, and hold the result to the
// case's expectation. See corpus/README.md for the file format.
//
//   for (const auto& c : rawtool::corpus::load_failures())
//     for (auto field : c.fields) {
//       rawtool::Failure failure = rawtool::corpus::failure_for(c, field);
//       ... render, then check c.expect, c.reason, c.withheld, c.fragments(ascii_only)
//     }

#include <rawtool/outcome.hpp>
#include <rawtool/untrusted.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rawtool::corpus {

/// A corpus file that breaks the format: the message names the file, the line
/// and (when known) the entry, and says what is wrong.
class CorpusError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// What a correct render does with a case.
enum class Expect {
  shown,    ///< rendered, losslessly: the exact bytes come back from the escaped text
  refused,  ///< refused with `reason`; none of the bytes appear in either half
};

/// Where a FAILURE payload is placed. The first six are untrusted text fields;
/// the last four are codes that the renderer grammar-checks before it writes
/// them in a line of its own.
enum class FailureField {
  message,
  detail,
  hint,
  context,
  notice,     ///< the message of one NOTICE raised before the failure
  statement,  ///< the caller's statement, shown under its own label
  severity,
  sqlstate,
  notice_severity,
  notice_sqlstate,
};

/// Where a CELLS payload is placed.
enum class CellPlace {
  cell,         ///< a cell of the first row
  column_name,  ///< the name of the only column
  type_name,    ///< the type name of the only column
};

/// The stable names used in the files ("notice_sqlstate", "column_name").
std::string_view field_name(FailureField field) noexcept;
std::string_view place_name(CellPlace place) noexcept;
std::optional<FailureField> parse_field(std::string_view name) noexcept;
std::optional<CellPlace> parse_place(std::string_view name) noexcept;

/// True for the code fields (severity, sqlstate and the notice's two).
bool is_code_field(FailureField field) noexcept;

/// One entry of any collection, decoded.
struct Case {
  std::string name;        ///< unique within its collection
  std::string case_class;  ///< one of the collection's classes
  /// The decoded bytes ("text" or "base64", repeated "repeat" times). Empty for a NULL cell.
  std::string bytes;
  /// False when the bytes came from "base64": the loader checks those are not valid UTF-8.
  bool valid_utf8 = true;
  Expect expect = Expect::shown;
  std::optional<RefusalReason> reason;  ///< set exactly when expect is refused
  /// A distinctive part of `bytes` that a refusal must not contain (refused cases only).
  std::string withheld;
  std::vector<std::string> must_contain;             ///< in the escaped text surface, in every mode
  std::vector<std::string> must_contain_unicode;     ///< ... when ascii_only is off
  std::vector<std::string> must_contain_ascii_only;  ///< ... when ascii_only is on
  std::string note;
  std::string source;  ///< "failure.jsonl:12", for messages

  /// The fragments the escaped text surface must contain in the given mode.
  [[nodiscard]] std::vector<std::string> fragments(bool ascii_only) const;
};

struct FailureCase : Case {
  std::vector<FailureField> fields;  ///< each field the payload is placed in, one render per field
};

struct CellCase : Case {
  std::vector<CellPlace> places;  ///< each place the payload is put, one render per place
  bool null = false;              ///< SQL NULL (then places is exactly {cell})
};

struct ProseCase : Case {};

/// The closed sets of classes, in the order the README lists them.
std::span<const std::string_view> failure_classes() noexcept;
std::span<const std::string_view> cell_classes() noexcept;
std::span<const std::string_view> prose_classes() noexcept;

/// The fields every FAILURE class must be placed in, by some entry: the five
/// text fields message, detail, hint, context and notice; for header_field the
/// four code fields.
std::span<const FailureField> required_fields(std::string_view failure_class);

/// The places every CELLS class must be put in: cell and column_name (cell
/// only for null_empty and binary).
std::span<const CellPlace> required_places(std::string_view cell_class);

/// The directory holding failure.jsonl, cells.jsonl and prose.jsonl: the
/// source tree's corpus/ folder.
std::filesystem::path directory();

/// Read and validate a whole collection. Throws CorpusError on the first
/// problem; never returns a partial list.
std::vector<FailureCase> load_failures(const std::filesystem::path& file = directory() / "failure.jsonl");
std::vector<CellCase> load_cells(const std::filesystem::path& file = directory() / "cells.jsonl");
std::vector<ProseCase> load_prose(const std::filesystem::path& file = directory() / "prose.jsonl");

/// The same from text already in memory; `source` names it in messages.
std::vector<FailureCase> parse_failures(std::string_view jsonl, std::string_view source);
std::vector<CellCase> parse_cells(std::string_view jsonl, std::string_view source);
std::vector<ProseCase> parse_prose(std::string_view jsonl, std::string_view source);

/// Every byte the builders below put beside a payload contains this marker,
/// so a refusal can be checked for leaking the filler as well as the payload.
inline constexpr std::string_view filler_marker = "corpus-filler";

/// A failure with the payload in `field` and filler (containing
/// filler_marker) in the message when the payload is not the message.
/// PostgreSQL failures carry severity ERROR and SQLSTATE P0001 unless the
/// payload replaces one; a notice, when present, has severity NOTICE and
/// SQLSTATE 00000. Engine::sqlite gives SQLite's shape instead: no severity or
/// SQLSTATE, extended code 1 (SQLITE_ERROR); code fields then throw
/// std::invalid_argument.
Failure failure_for(const FailureCase& c, FailureField field, Engine engine = Engine::postgresql);

/// One column ("value", type "text") and two rows: the case's cell, then a
/// filler row, so a forged row has a real one after it. For column_name and
/// type_name the payload replaces the column's name or type name and the
/// cells are filler.
Rows rows_for(const CellCase& c, CellPlace place);

/// Every case that has the cell place, as one result: one column, one row per
/// case, in file order.
Rows rows_of_cells(std::span<const CellCase> cases);

/// The payload as an untrusted value (for prose, the description itself).
Untrusted payload(const Case& c);

/// READ_ONLY (escapes.jsonl): statements that try to leave something behind
/// from read-only mode, or to take more than the limits allow. The walk runs
/// each as a fresh login role with ordinary write grants, after `setup` (run
/// with full rights), and checks that nothing lasting changed.
enum class EscapeExpect {
  refused,    ///< the driver refuses it (with `reason`, when given)
  contained,  ///< it may run or fail, and nothing lasting changes
};

/// The outcome an escape case must have, when it names one.
enum class EscapeOutcome { rows, failure, refusal };

struct EscapeCase {
  std::string name;
  std::string case_class;
  Engine engine = Engine::postgresql;
  /// Run before, with full rights, in order. "{role}" stands for the walk's
  /// login role and "{file}" for a scratch path that must not exist after.
  std::vector<std::string> setup;
  std::string sql;  ///< the statement, with the same placeholders
  std::vector<std::string> teardown;
  EscapeExpect expect = EscapeExpect::contained;
  std::optional<RefusalReason> reason;   ///< refused entries only
  std::optional<EscapeOutcome> outcome;  ///< contained entries only
  std::optional<std::int64_t> statement_timeout_ms;
  std::string note;
  std::string source;
};

std::span<const std::string_view> escape_classes() noexcept;
std::vector<EscapeCase> load_escapes(const std::filesystem::path& file = directory() / "escapes.jsonl");
std::vector<EscapeCase> parse_escapes(std::string_view jsonl, std::string_view source);

/// SESSION_STATE (session_state.jsonl): statements that leave something on
/// a connection, the kind a later caller on the same pooled connection could
/// meet (a temp table named as a real one, a trigger, an open transaction, a
/// setting, a rowid). The walk runs `leave`, one call per statement, on a
/// driver, then asks that driver and a fresh one the same questions: the
/// answers must match.
struct SessionStateCase {
  std::string name;
  std::string case_class;
  Engine engine = Engine::sqlite;
  std::vector<std::string> leave;  ///< one call each, in order; each may be refused or fail
  std::string note;
  std::string source;
};

std::span<const std::string_view> session_state_classes() noexcept;
std::vector<SessionStateCase> load_session_states(const std::filesystem::path& file = directory() /
                                                                                    "session_state.jsonl");
std::vector<SessionStateCase> parse_session_states(std::string_view jsonl, std::string_view source);

}  // namespace rawtool::corpus
