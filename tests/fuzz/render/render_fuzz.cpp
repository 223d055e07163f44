// libFuzzer target on the renderer: builds a Failure, a Rows and loose values
// from the input, renders them, and checks the oracle's invariants: a render
// either holds every text-surface invariant and carries every value back
// exactly (text and structured), or it is an explicit refusal showing none of
// the text; a loose value escapes and quotes to exactly what the oracle's
// reference definition of the grammar writes. Any violation aborts, so
// libFuzzer keeps the input.

#include <rawtool/render/escape.hpp>
#include <rawtool/render/failure.hpp>
#include <rawtool/render/json.hpp>
#include <rawtool/render/rows.hpp>

#include "oracle.hpp"
#include "untrusted_bytes.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

using rawtool::Untrusted;
using rawtool::test::bytes_of;

[[noreturn]] void violated(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "render invariant violated: %s %s\n", what, detail.c_str());
  std::abort();
}

void expect(bool ok, const char* what, const std::string& detail = {}) {
  if (!ok) violated(what, detail);
}

// Codes are picked so that most are well formed (and render) and some are not
// (and must be refused).
std::string pick_code(FuzzedDataProvider& in, const std::vector<std::string>& good) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return {};
    case 1: return in.ConsumeRandomLengthString(8);
    default: return good[in.ConsumeIntegralInRange<std::size_t>(0, good.size() - 1)];
  }
}

// The header-field grammars, written out here so the fuzzer's oracle does not
// lean on the renderer's own check.
bool well_formed_sqlstate(const std::string& code) {
  if (code.size() != 5) return false;
  for (const char c : code)
    if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'))) return false;
  return true;
}

bool well_formed_severity(const std::string& severity) {
  for (const char* known : {"ERROR", "FATAL", "PANIC", "WARNING", "NOTICE", "DEBUG", "INFO", "LOG"})
    if (severity == known) return true;
  return false;
}

const std::vector<std::string> sqlstates = {"22P02", "23505", "P0001", "ZZ999", "00000", "XX000"};
const std::vector<std::string> severities = {"ERROR", "FATAL", "NOTICE", "WARNING", "LOG", "INFO", "DEBUG", "PANIC"};

void check_failure(FuzzedDataProvider& in, const rawtool::render::RenderOptions& options) {
  rawtool::Failure f;
  f.engine = in.ConsumeBool() ? rawtool::Engine::postgresql : rawtool::Engine::sqlite;
  f.severity = Untrusted(pick_code(in, severities));
  f.sqlstate = Untrusted(pick_code(in, sqlstates));
  if (in.ConsumeBool()) f.sqlite_code = in.ConsumeBool() ? 275 : in.ConsumeIntegral<int>();
  if (in.ConsumeBool()) f.position = in.ConsumeIntegral<std::int64_t>();
  f.message = Untrusted(in.ConsumeRandomLengthString(512));
  f.detail = Untrusted(in.ConsumeRandomLengthString(256));
  f.hint = Untrusted(in.ConsumeRandomLengthString(256));
  f.context = Untrusted(in.ConsumeRandomLengthString(128));
  f.constraint = Untrusted(in.ConsumeRandomLengthString(32));
  f.statement = Untrusted(in.ConsumeRandomLengthString(256));
  const int notices = in.ConsumeIntegralInRange<int>(0, 3);
  for (int i = 0; i < notices; ++i) {
    rawtool::Notice n;
    n.severity = Untrusted(pick_code(in, severities));
    n.sqlstate = Untrusted(pick_code(in, sqlstates));
    n.message = Untrusted(in.ConsumeRandomLengthString(128));
    n.hint = Untrusted(in.ConsumeRandomLengthString(64));
    f.notices.push_back(n);
  }
  // The log record: every field exact, or a prefix of it within the bound
  // with its whole size (512 bytes of control characters pass the bound).
  const auto record = rawtool::render::failure_log_record(f);
  expect(rawtool::render::dump(record).size() < 48 * 1024, "a log record over 48 KiB");
  for (const auto& [member, value] : {std::pair<const char*, const Untrusted*>{"message", &f.message},
                                      {"detail", &f.detail}, {"statement", &f.statement}}) {
    const auto& logged = record.at(member);
    const std::string bytes = bytes_of(*value);
    if (logged.is_object() && logged.contains("truncated")) {
      const auto kept = logged.at("kept_bytes").get<std::size_t>();
      expect(logged.at("bytes") == bytes.size() && kept < bytes.size(), "a bounded log member's sizes", member);
      expect(rawtool::test::json_bytes(logged.at("prefix")) == bytes.substr(0, kept), "a bounded log member's prefix",
             member);
      expect(rawtool::render::dump(logged.at("prefix")).size() <= rawtool::render::log_text_bound,
             "a bounded log member over the bound", member);
    } else {
      expect(rawtool::test::json_bytes(logged) == bytes, "a log member's bytes", member);
    }
  }

  rawtool::render::Provenance provenance;
  provenance.engine = f.engine;
  provenance.database_label = "fuzz";
  const auto r = rawtool::render::render_failure(f, provenance, options);
  const auto problems = rawtool::test::text_surface_problems(r.text());
  expect(problems.empty(), "failure text surface:", problems.empty() ? "" : problems.front());
  const auto fields = rawtool::test::quoted_fields(r.text());
  if (r.refused()) {
    expect(r.structured().at("kind") == "refusal", "a refusal's kind");
    expect(fields.empty(), "a refusal shows a quoted field");
    expect(r.text().find("\n> ") == std::string::npos, "a refusal shows a quoted line");
    expect(r.structured().at("withheld_sha256") == rawtool::render::withheld_sha256(f), "a refusal's hash");
    expect(!r.structured().contains("untrusted"), "a refusal carries untrusted members");
    return;
  }
  expect(r.text().size() <= options.budget, "a rendering over budget was not refused");
  // The expected fields, in the renderer's order.
  std::vector<std::pair<std::string, std::string>> expected;
  auto want = [&](const char* label, const Untrusted& v) {
    if (!v.empty()) expected.emplace_back(label, bytes_of(v));
  };
  want("message", f.message);
  want("detail", f.detail);
  want("hint", f.hint);
  want("context", f.context);
  want("constraint", f.constraint);
  // Notices give way to the failure's own fields: those past the budget are
  // the last ones, counted in the header and in notices_not_shown.
  const auto wire = nlohmann::json::parse(rawtool::render::dump(r.structured()));
  const std::size_t not_shown = wire.value("notices_not_shown", std::size_t{0});
  expect(not_shown <= f.notices.size() && (not_shown == 0 || wire.at("notices_not_shown") != 0), "notices_not_shown's count");
  const std::size_t shown = f.notices.size() - not_shown;
  const std::string header = r.text().substr(0, r.text().find('\n')) + ";";
  expect((not_shown != 0) == (header.find("; notices_not_shown=" + std::to_string(not_shown) + ";") != std::string::npos),
         "the header's count of notices not shown");
  for (std::size_t i = 0; i < shown; ++i) {
    const std::string prefix = "notice " + std::to_string(i + 1) + " ";
    if (!f.notices[i].message.empty()) expected.emplace_back(prefix + "message", bytes_of(f.notices[i].message));
    if (!f.notices[i].hint.empty()) expected.emplace_back(prefix + "hint", bytes_of(f.notices[i].hint));
  }
  if (options.show_statement) want("statement", f.statement);
  expect(fields == expected, "the quoted fields do not carry the values back");

  expect(wire.at("kind") == "raw_failure", "a failure's kind");
  const auto& untrusted = wire.at("untrusted");
  for (const auto& [label, bytes] : expected) {
    if (label.starts_with("notice ")) continue;
    expect(rawtool::test::json_bytes(untrusted.at(label)) == bytes, "structured field", label);
  }
  expect(untrusted.at("notices").size() == shown, "structured notices beside notices_not_shown");
  for (std::size_t i = 0; i < shown; ++i)
    if (!f.notices[i].message.empty())
      expect(rawtool::test::json_bytes(untrusted.at("notices").at(i).at("message")) == bytes_of(f.notices[i].message), "structured notice");
}

void check_rows(FuzzedDataProvider& in, const rawtool::render::RenderOptions& options) {
  rawtool::Rows rows;
  const auto columns = in.ConsumeIntegralInRange<std::size_t>(0, 4);
  for (std::size_t c = 0; c < columns; ++c)
    rows.columns.push_back({Untrusted(in.ConsumeRandomLengthString(24)), Untrusted(in.ConsumeRandomLengthString(12))});
  const auto count = in.ConsumeIntegralInRange<std::size_t>(0, 5);
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<rawtool::Cell> row;
    for (std::size_t c = 0; c < columns; ++c) {
      if (in.ConsumeIntegralInRange<int>(0, 4) == 0) row.emplace_back(std::nullopt);
      else row.emplace_back(Untrusted(in.ConsumeRandomLengthString(64)));
    }
    rows.rows.push_back(std::move(row));
  }
  rows.truncation = static_cast<rawtool::Truncation>(in.ConsumeIntegralInRange<int>(0, 2));
  rows.rows_withheld = in.ConsumeIntegral<std::uint32_t>();
  rows.more_unread = in.ConsumeBool();
  const int notices = in.ConsumeIntegralInRange<int>(0, 2);
  for (int i = 0; i < notices; ++i) {
    rawtool::Notice n;
    n.severity = Untrusted(pick_code(in, severities));
    n.sqlstate = Untrusted(pick_code(in, sqlstates));
    n.message = Untrusted(in.ConsumeRandomLengthString(128));
    n.detail = Untrusted(in.ConsumeRandomLengthString(64));
    rows.notices.push_back(n);
  }
  rows.notices_withheld = in.ConsumeIntegralInRange<std::uint64_t>(0, 3);
  rawtool::render::Provenance provenance;
  provenance.database_label = "fuzz";
  const auto r = rawtool::render::render_rows(rows, provenance, options);
  expect(!r.refused(), "rows were refused");
  const auto problems = rawtool::test::text_surface_problems(r.text());
  expect(problems.empty(), "rows text surface:", problems.empty() ? "" : problems.front());
  const auto cells = rawtool::test::row_cells(r.text());
  expect(cells.size() == rows.rows.size(), "row count");
  for (std::size_t i = 0; i < cells.size(); ++i) {
    expect(cells[i].size() == rows.rows[i].size(), "cell count");
    for (std::size_t c = 0; c < cells[i].size(); ++c) {
      const auto& cell = rows.rows[i][c];
      expect(cell.has_value() == cells[i][c].has_value(), "NULL-ness of a cell");
      if (cell) expect(bytes_of(*cell) == *cells[i][c], "a cell's bytes");
    }
  }
  const auto names = rawtool::test::column_names(r.text());
  expect(names.size() == rows.columns.size(), "column count");
  for (std::size_t c = 0; c < names.size(); ++c) expect(names[c] == bytes_of(rows.columns[c].name), "a column name");
  // Beside rows a notice code that fails its grammar is quoted as data, never refused.
  std::vector<std::pair<std::string, std::string>> expected;
  for (std::size_t i = 0; i < rows.notices.size(); ++i) {
    const rawtool::Notice& n = rows.notices[i];
    const std::string prefix = "notice " + std::to_string(i + 1) + " ";
    if (!n.severity.empty() && !well_formed_severity(bytes_of(n.severity))) expected.emplace_back(prefix + "unrecognised severity", bytes_of(n.severity));
    if (!n.sqlstate.empty() && !well_formed_sqlstate(bytes_of(n.sqlstate))) expected.emplace_back(prefix + "unrecognised sqlstate", bytes_of(n.sqlstate));
    if (!n.message.empty()) expected.emplace_back(prefix + "message", bytes_of(n.message));
    if (!n.detail.empty()) expected.emplace_back(prefix + "detail", bytes_of(n.detail));
  }
  expect(rawtool::test::quoted_fields(r.text()) == expected, "the notices' quoted fields do not carry the values back");
  const auto wire = nlohmann::json::parse(rawtool::render::dump(r.structured()));
  expect(wire.at("notices").size() == rows.notices.size(), "structured notice count");
  expect(wire.at("notices_withheld") == rows.notices_withheld, "structured notices_withheld");
  for (std::size_t i = 0; i < rows.notices.size(); ++i) {
    const auto& item = wire.at("notices").at(i);
    const rawtool::Notice& n = rows.notices[i];
    expect(n.sqlstate.empty() ? item.at("sqlstate").is_null() : rawtool::test::json_bytes(item.at("sqlstate")) == bytes_of(n.sqlstate), "structured notice sqlstate");
    if (!n.message.empty()) expect(rawtool::test::json_bytes(item.at("message")) == bytes_of(n.message), "structured notice message");
  }
  for (std::size_t i = 0; i < rows.rows.size(); ++i)
    for (std::size_t c = 0; c < rows.rows[i].size(); ++c) {
      const auto& cell = rows.rows[i][c];
      const auto& value = wire.at("rows").at(i).at(c);
      if (!cell) expect(value.is_null(), "structured NULL");
      else expect(rawtool::test::json_bytes(value) == bytes_of(*cell), "structured cell");
    }
}

void check_escape(FuzzedDataProvider& in, const rawtool::render::RenderOptions& options) {
  const std::string bytes = in.ConsumeRandomLengthString(1024);
  for (auto context : {rawtool::render::EscapeContext::line, rawtool::render::EscapeContext::cell}) {
    std::string out;
    rawtool::render::append_escaped(out, Untrusted(bytes), context, options);
    expect(out.find('\n') == std::string::npos, "an escaped value holds a raw LF");
    expect(rawtool::test::decode_escapes(out) == bytes, "decode(escape(x)) != x");
    if (options.ascii_only)
      for (char c : out) expect(static_cast<unsigned char>(c) < 0x80, "ascii-only output holds a non-ASCII byte");
    expect(out == rawtool::test::reference_escape(bytes, context, options.ascii_only), "escaping differs from the reference definition");
  }
  // Quoted lines, under prefixes from empty to longer than 16 bytes.
  for (const char* prefix : {"> ", "", "fifteen bytes: ", "a prefix of more than sixteen bytes: "}) {
    std::string quoted;
    rawtool::render::append_quoted_lines(quoted, Untrusted(bytes), prefix, options);
    expect(quoted == rawtool::test::reference_quote(bytes, prefix, options.ascii_only), "quoting differs from the reference definition");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  rawtool::render::RenderOptions options;
  options.ascii_only = in.ConsumeBool();
  options.show_statement = in.ConsumeBool();
  options.budget = in.ConsumeBool() ? 16 * 1024 : in.ConsumeIntegralInRange<std::size_t>(0, 4096);
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: check_failure(in, options); break;
    case 1: check_rows(in, options); break;
    default: check_escape(in, options); break;
  }
  return 0;
}
