#include <rawtool/corpus.hpp>

#include <rawtool/render/bytes.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <utility>

namespace rawtool::corpus {
namespace {

using nlohmann::json;
using namespace std::string_view_literals;

constexpr std::array failure_class_list{
    "line_forgery_lf"sv,  "line_forgery_cr"sv,  "line_forgery_crlf"sv, "forged_marker"sv,
    "forged_trailer"sv,   "role_line"sv,        "json_breakout"sv,     "ansi_csi"sv,
    "ansi_osc"sv,         "ansi_dcs"sv,         "c1_csi"sv,            "bidi"sv,
    "zero_width"sv,       "default_ignorable"sv, "unassigned_private_use"sv, "combining_mark"sv,
    "tags_block"sv,       "variation_selector"sv, "line_separator"sv,   "nul"sv,
    "invalid_utf8"sv,     "escape_imitation"sv, "long_line"sv,         "many_lines"sv,
    "correction"sv,       "look_alike"sv,       "ordinary_text"sv,     "header_field"sv,
};

constexpr std::array cell_class_list{
    "null_empty"sv,       "binary"sv,           "line_forgery_lf"sv,   "line_forgery_cr"sv,
    "line_forgery_crlf"sv, "forged_marker"sv,   "forged_trailer"sv,    "role_line"sv,
    "json_breakout"sv,    "ansi_csi"sv,         "ansi_osc"sv,          "c1_csi"sv,
    "bidi"sv,             "zero_width"sv,       "default_ignorable"sv, "unassigned_private_use"sv,
    "combining_mark"sv,   "tags_block"sv,       "variation_selector"sv, "line_separator"sv,
    "nul"sv,              "invalid_utf8"sv,     "escape_imitation"sv,  "long_line"sv,
    "correction"sv,       "look_alike"sv,       "ordinary_text"sv,
};

constexpr std::array prose_class_list{
    "ordinary_text"sv,    "line_forgery_lf"sv,  "line_forgery_cr"sv,   "line_forgery_crlf"sv,
    "forged_marker"sv,    "forged_trailer"sv,   "role_line"sv,         "json_breakout"sv,
    "ansi_csi"sv,         "ansi_osc"sv,         "bidi"sv,              "zero_width"sv,
    "combining_mark"sv,   "tags_block"sv,       "variation_selector"sv, "line_separator"sv,
    "nul"sv,              "invalid_utf8"sv,     "escape_imitation"sv,  "long_line"sv,
    "correction"sv,       "look_alike"sv,
};

constexpr std::array escape_class_list{
    "role_escalation"sv,     "two_phase_commit"sv,  "transaction_ending"sv,      "cancellation_swallowing"sv,
    "resource_exhaustion"sv, "non_transactional_effect"sv, "server_files"sv,     "disguised_write"sv,
    "stacked_statements"sv,  "session_persistence"sv, "file_creation"sv,         "pragma_write"sv,
};

constexpr std::array session_state_class_list{
    "temp_schema"sv, "transaction"sv, "setting"sv, "attached_database"sv, "registered_code"sv, "session_counters"sv,
};

constexpr std::array text_fields{FailureField::message, FailureField::detail, FailureField::hint,
                                 FailureField::context, FailureField::notice};
constexpr std::array code_fields{FailureField::severity, FailureField::sqlstate, FailureField::notice_severity,
                                 FailureField::notice_sqlstate};
constexpr std::array all_fields{FailureField::message,  FailureField::detail,          FailureField::hint,
                                FailureField::context,  FailureField::notice,          FailureField::statement,
                                FailureField::severity, FailureField::sqlstate,        FailureField::notice_severity,
                                FailureField::notice_sqlstate};
constexpr std::array all_places{CellPlace::cell, CellPlace::column_name, CellPlace::type_name};
constexpr std::array text_places{CellPlace::cell, CellPlace::column_name};
constexpr std::array cell_only{CellPlace::cell};

constexpr std::array all_reasons{
    RefusalReason::empty_statement, RefusalReason::multiple_statements, RefusalReason::read_only,
    RefusalReason::not_permitted,   RefusalReason::limit,               RefusalReason::bad_header_field,
    RefusalReason::render_budget,   RefusalReason::self_check_failed,   RefusalReason::cancelled,
    RefusalReason::timeout,         RefusalReason::internal,
};

// Repetition exists for long and many-line cases; past this a file is wrong, not hostile.
constexpr std::int64_t max_repeat = 1'000'000;

enum class Collection { failure, cells, prose };

std::span<const std::string_view> classes_of(Collection collection) noexcept {
  switch (collection) {
    case Collection::failure: return failure_class_list;
    case Collection::cells: return cell_class_list;
    case Collection::prose: return prose_class_list;
  }
  return {};
}

bool contains(std::span<const std::string_view> set, std::string_view value) {
  return std::find(set.begin(), set.end(), value) != set.end();
}

class EntryReader {
public:
  EntryReader(Collection collection, std::string source) : collection_(collection), source_(std::move(source)) {}

  [[noreturn]] void fail(std::string_view what) const {
    std::string message = source_;
    if (!name_.empty()) message += ": entry \"" + name_ + "\"";
    message += ": ";
    message += what;
    throw CorpusError(message);
  }

  void read_common(const json& entry, Case& c, std::span<const std::string_view> allowed_keys) {
    if (!entry.is_object()) fail("an entry must be a JSON object");
    for (const auto& item : entry.items()) {
      if (!contains(allowed_keys, item.key())) fail("unknown member \"" + item.key() + "\"");
    }
    c.source = source_;
    c.name = required_string(entry, "name");
    name_ = c.name;
    const bool name_ok = !c.name.empty() && std::all_of(c.name.begin(), c.name.end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
    });
    if (!name_ok) fail("a name is lower-case letters, digits, '-' and '_'");

    c.case_class = required_string(entry, "class");
    if (!contains(classes_of(collection_), c.case_class)) fail("unknown class \"" + c.case_class + "\"");

    const std::string expect = required_string(entry, "expect");
    if (expect == "shown") {
      c.expect = Expect::shown;
    } else if (expect == "refused") {
      c.expect = Expect::refused;
    } else {
      fail("\"expect\" is \"shown\" or \"refused\", not \"" + expect + "\"");
    }

    if (entry.contains("reason")) {
      if (c.expect != Expect::refused) fail("\"reason\" belongs to refused entries only");
      const std::string reason = required_string(entry, "reason");
      for (const auto r : all_reasons) {
        if (refusal_reason_name(r) == reason) c.reason = r;
      }
      if (!c.reason) fail("unknown refusal reason \"" + reason + "\"");
    } else if (c.expect == Expect::refused) {
      fail("a refused entry names its \"reason\"");
    }

    c.must_contain = string_list(entry, "must_contain");
    c.must_contain_unicode = string_list(entry, "must_contain_unicode");
    c.must_contain_ascii_only = string_list(entry, "must_contain_ascii_only");
    if (c.expect == Expect::refused &&
        !(c.must_contain.empty() && c.must_contain_unicode.empty() && c.must_contain_ascii_only.empty())) {
      fail("a refused entry shows nothing, so it has no \"must_contain\"");
    }
    if (entry.contains("note")) c.note = required_string(entry, "note");
  }

  // The bytes: exactly one of "text" and "base64" (or "null" where allowed), then "repeat".
  void read_bytes(const json& entry, Case& c, bool null_allowed, bool& is_null) {
    const bool has_text = entry.contains("text");
    const bool has_base64 = entry.contains("base64");
    const bool has_null = null_allowed && entry.contains("null");
    const int encodings = int{has_text} + int{has_base64} + int{has_null};
    if (encodings != 1) {
      fail(null_allowed ? "exactly one of \"text\", \"base64\" and \"null\" is required"
                        : "exactly one of \"text\" and \"base64\" is required");
    }
    is_null = false;
    if (has_null) {
      if (!entry.at("null").is_boolean() || !entry.at("null").get<bool>()) fail("\"null\" can only be true");
      if (entry.contains("repeat")) fail("a NULL cannot be repeated");
      is_null = true;
      return;
    }
    if (has_text) {
      c.bytes = required_string(entry, "text");
    } else {
      auto decoded = render::decode_base64(required_string(entry, "base64"));
      if (!decoded) fail("\"base64\" is not canonical, padded base64");
      if (render::is_valid_utf8(*decoded)) fail("\"base64\" holds valid UTF-8: write it as \"text\"");
      c.bytes = std::move(*decoded);
      c.valid_utf8 = false;
    }
    if (entry.contains("repeat")) {
      const json& repeat = entry.at("repeat");
      if (!repeat.is_number_integer()) fail("\"repeat\" is an integer");
      const auto times = repeat.get<std::int64_t>();
      if (times < 2 || times > max_repeat) fail("\"repeat\" is between 2 and 1000000");
      if (c.bytes.empty()) fail("repeating nothing gives nothing");
      std::string unit = std::move(c.bytes);
      c.bytes.clear();
      c.bytes.reserve(unit.size() * static_cast<std::size_t>(times));
      for (std::int64_t k = 0; k < times; ++k) c.bytes += unit;
    }
  }

  void read_withheld(const json& entry, Case& c) {
    if (entry.contains("withheld")) {
      if (c.expect != Expect::refused) fail("\"withheld\" belongs to refused entries only");
      c.withheld = required_string(entry, "withheld");
      if (c.withheld.empty()) fail("\"withheld\" is not empty");
      if (c.bytes.find(c.withheld) == std::string::npos) fail("\"withheld\" is not part of the entry's bytes");
    } else if (c.expect == Expect::refused) {
      fail("a refused entry names a distinctive part of its bytes in \"withheld\"");
    }
  }

  template <typename Value, typename Parse>
  std::vector<Value> name_list(const json& entry, const char* key, Parse parse) {
    if (!entry.contains(key)) fail(std::string("\"") + key + "\" is required");
    const json& list = entry.at(key);
    if (!list.is_array() || list.empty()) fail(std::string("\"") + key + "\" is a non-empty array");
    std::vector<Value> out;
    for (const auto& item : list) {
      if (!item.is_string()) fail(std::string("\"") + key + "\" holds strings");
      const auto name = item.get<std::string>();
      const auto value = parse(name);
      if (!value) fail(std::string("unknown ") + key + " entry \"" + name + "\"");
      if (std::find(out.begin(), out.end(), *value) != out.end()) fail("\"" + name + "\" is listed twice");
      out.push_back(*value);
    }
    return out;
  }

private:
  std::string required_string(const json& entry, const char* key) {
    if (!entry.contains(key)) fail(std::string("\"") + key + "\" is required");
    const json& value = entry.at(key);
    if (!value.is_string()) fail(std::string("\"") + key + "\" is a string");
    return value.get<std::string>();
  }

  std::vector<std::string> string_list(const json& entry, const char* key) {
    std::vector<std::string> out;
    if (!entry.contains(key)) return out;
    const json& list = entry.at(key);
    if (!list.is_array() || list.empty()) fail(std::string("\"") + key + "\" is a non-empty array");
    for (const auto& item : list) {
      if (!item.is_string() || item.get_ref<const std::string&>().empty()) {
        fail(std::string("\"") + key + "\" holds non-empty strings");
      }
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  Collection collection_;
  std::string source_;
  std::string name_;
};

// Splits JSON Lines text into (line number, line) and parses each line on its
// own, rejecting what would make the file ambiguous to a reader: bytes outside
// printable ASCII (anything else is written as a \u escape), blank lines, and
// a member given twice.
template <typename Each>
void for_each_entry(std::string_view jsonl, std::string_view source, Each each) {
  std::size_t line_number = 0;
  std::size_t start = 0;
  while (start < jsonl.size()) {
    ++line_number;
    std::size_t end = jsonl.find('\n', start);
    if (end == std::string_view::npos) end = jsonl.size();
    const std::string_view line = jsonl.substr(start, end - start);
    start = end + 1;
    const std::string where = std::string(source) + ":" + std::to_string(line_number);
    if (line.empty()) throw CorpusError(where + ": blank line (one entry per line, nothing else)");
    if (line.back() == '\r') throw CorpusError(where + ": CRLF line ending (the files use LF only)");
    for (const char ch : line) {
      const auto byte = static_cast<unsigned char>(ch);
      if (byte < 0x20 || byte > 0x7E) {
        throw CorpusError(where + ": byte outside printable ASCII; write it as a \\u escape or use \"base64\"");
      }
    }
    std::vector<std::set<std::string>> keys_by_depth;
    const json::parser_callback_t reject_duplicate_keys = [&](int depth, json::parse_event_t event, json& parsed) {
      const auto level = static_cast<std::size_t>(depth);
      if (event == json::parse_event_t::object_start) {
        if (keys_by_depth.size() <= level + 1) keys_by_depth.resize(level + 2);
        keys_by_depth[level + 1].clear();
      } else if (event == json::parse_event_t::key) {
        if (keys_by_depth.size() <= level) keys_by_depth.resize(level + 1);
        if (!keys_by_depth[level].insert(parsed.get<std::string>()).second) {
          throw CorpusError(where + ": member \"" + parsed.get<std::string>() + "\" given twice");
        }
      }
      return true;
    };
    json entry;
    try {
      entry = json::parse(line, reject_duplicate_keys);
    } catch (const json::exception& e) {
      throw CorpusError(where + ": not JSON: " + e.what());
    }
    each(entry, where);
  }
}

template <typename C>
void reject_duplicate_names(const std::vector<C>& cases) {
  std::set<std::string_view> seen;
  for (const auto& c : cases) {
    if (!seen.insert(c.name).second) throw CorpusError(c.source + ": entry \"" + c.name + "\": duplicate name");
  }
}

// Reads what escape and session-state entries share: no member outside `keys`,
// a name, a class of `classes` and an engine. `fail` and `string_of` are the
// parser's own, so its messages name the entry once its name is read.
template <typename C, typename Fail, typename StringOf>
void read_name_class_engine(const json& entry, std::span<const std::string_view> keys,
                            std::span<const std::string_view> classes, C& c, const Fail& fail,
                            const StringOf& string_of) {
  if (!entry.is_object()) fail("an entry must be a JSON object");
  for (const auto& item : entry.items())
    if (!contains(keys, item.key())) fail("unknown member \"" + item.key() + "\"");
  c.name = string_of("name");
  if (!std::all_of(c.name.begin(), c.name.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
      }))
    fail("a name is lower-case letters, digits, '-' and '_'");
  c.case_class = string_of("class");
  if (!contains(classes, c.case_class)) fail("unknown class \"" + c.case_class + "\"");
  const std::string engine = string_of("engine");
  if (engine == "postgresql") c.engine = Engine::postgresql;
  else if (engine == "sqlite") c.engine = Engine::sqlite;
  else fail("\"engine\" is \"postgresql\" or \"sqlite\"");
}

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw CorpusError(file.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

Untrusted filler(std::string_view what) {
  return Untrusted(std::string(filler_marker) + " " + std::string(what));
}

}  // namespace

std::string_view field_name(FailureField field) noexcept {
  switch (field) {
    case FailureField::message: return "message";
    case FailureField::detail: return "detail";
    case FailureField::hint: return "hint";
    case FailureField::context: return "context";
    case FailureField::notice: return "notice";
    case FailureField::statement: return "statement";
    case FailureField::severity: return "severity";
    case FailureField::sqlstate: return "sqlstate";
    case FailureField::notice_severity: return "notice_severity";
    case FailureField::notice_sqlstate: return "notice_sqlstate";
  }
  return "unknown";
}

std::string_view place_name(CellPlace place) noexcept {
  switch (place) {
    case CellPlace::cell: return "cell";
    case CellPlace::column_name: return "column_name";
    case CellPlace::type_name: return "type_name";
  }
  return "unknown";
}

std::optional<FailureField> parse_field(std::string_view name) noexcept {
  for (const auto field : all_fields) {
    if (field_name(field) == name) return field;
  }
  return std::nullopt;
}

std::optional<CellPlace> parse_place(std::string_view name) noexcept {
  for (const auto place : all_places) {
    if (place_name(place) == name) return place;
  }
  return std::nullopt;
}

bool is_code_field(FailureField field) noexcept {
  return std::find(code_fields.begin(), code_fields.end(), field) != code_fields.end();
}

std::vector<std::string> Case::fragments(bool ascii_only) const {
  std::vector<std::string> out = must_contain;
  const auto& by_mode = ascii_only ? must_contain_ascii_only : must_contain_unicode;
  out.insert(out.end(), by_mode.begin(), by_mode.end());
  return out;
}

std::span<const std::string_view> failure_classes() noexcept { return failure_class_list; }
std::span<const std::string_view> cell_classes() noexcept { return cell_class_list; }
std::span<const std::string_view> prose_classes() noexcept { return prose_class_list; }

std::span<const FailureField> required_fields(std::string_view failure_class) {
  if (failure_class == "header_field") return code_fields;
  return text_fields;
}

std::span<const CellPlace> required_places(std::string_view cell_class) {
  if (cell_class == "null_empty" || cell_class == "binary") return cell_only;
  return text_places;
}

std::filesystem::path directory() { return std::filesystem::path(RAWTOOL_CORPUS_DIR); }

std::vector<FailureCase> parse_failures(std::string_view jsonl, std::string_view source) {
  static constexpr std::array keys{"name"sv,         "class"sv,    "fields"sv, "text"sv,
                                   "base64"sv,       "repeat"sv,   "expect"sv, "reason"sv,
                                   "withheld"sv,     "must_contain"sv, "must_contain_unicode"sv,
                                   "must_contain_ascii_only"sv, "note"sv};
  std::vector<FailureCase> out;
  for_each_entry(jsonl, source, [&](const json& entry, const std::string& where) {
    EntryReader reader(Collection::failure, where);
    FailureCase c;
    reader.read_common(entry, c, keys);
    bool is_null = false;
    reader.read_bytes(entry, c, false, is_null);
    reader.read_withheld(entry, c);
    c.fields = reader.name_list<FailureField>(entry, "fields", parse_field);
    const bool header = c.case_class == "header_field";
    for (const auto field : c.fields) {
      if (is_code_field(field) != header) {
        reader.fail(std::string("field \"") + std::string(field_name(field)) +
                    (header ? "\" is not a code field; header_field cases go in severity and sqlstate fields"
                            : "\" is a code field; only header_field cases go there"));
      }
    }
    out.push_back(std::move(c));
  });
  reject_duplicate_names(out);
  return out;
}

std::vector<CellCase> parse_cells(std::string_view jsonl, std::string_view source) {
  static constexpr std::array keys{"name"sv,         "class"sv,    "places"sv, "text"sv,
                                   "base64"sv,       "null"sv,     "repeat"sv, "expect"sv,
                                   "reason"sv,       "withheld"sv, "must_contain"sv,
                                   "must_contain_unicode"sv, "must_contain_ascii_only"sv, "note"sv};
  std::vector<CellCase> out;
  for_each_entry(jsonl, source, [&](const json& entry, const std::string& where) {
    EntryReader reader(Collection::cells, where);
    CellCase c;
    reader.read_common(entry, c, keys);
    reader.read_bytes(entry, c, true, c.null);
    reader.read_withheld(entry, c);
    c.places = reader.name_list<CellPlace>(entry, "places", parse_place);
    if (c.null && c.places != std::vector<CellPlace>{CellPlace::cell}) {
      reader.fail("a NULL is a cell value only: \"places\" is [\"cell\"]");
    }
    out.push_back(std::move(c));
  });
  reject_duplicate_names(out);
  return out;
}

std::vector<ProseCase> parse_prose(std::string_view jsonl, std::string_view source) {
  static constexpr std::array keys{"name"sv,         "class"sv,    "text"sv,     "base64"sv,
                                   "repeat"sv,       "expect"sv,   "reason"sv,   "withheld"sv,
                                   "must_contain"sv, "must_contain_unicode"sv, "must_contain_ascii_only"sv,
                                   "note"sv};
  std::vector<ProseCase> out;
  for_each_entry(jsonl, source, [&](const json& entry, const std::string& where) {
    EntryReader reader(Collection::prose, where);
    ProseCase c;
    reader.read_common(entry, c, keys);
    bool is_null = false;
    reader.read_bytes(entry, c, false, is_null);
    reader.read_withheld(entry, c);
    out.push_back(std::move(c));
  });
  reject_duplicate_names(out);
  return out;
}

std::span<const std::string_view> escape_classes() noexcept { return escape_class_list; }

std::vector<EscapeCase> parse_escapes(std::string_view jsonl, std::string_view source) {
  static constexpr std::array keys{"name"sv,   "class"sv,  "engine"sv,  "setup"sv, "sql"sv, "teardown"sv,
                                   "expect"sv, "reason"sv, "outcome"sv, "statement_timeout_ms"sv, "note"sv};
  std::vector<EscapeCase> cases;
  for_each_entry(jsonl, source, [&](const json& entry, const std::string& where) {
    EscapeCase c;
    c.source = where;
    const auto fail = [&](std::string_view what) -> void {
      throw CorpusError(where + (c.name.empty() ? "" : ": entry \"" + c.name + "\"") + ": " + std::string(what));
    };
    const auto string_of = [&](const char* key) {
      if (!entry.contains(key) || !entry.at(key).is_string() || entry.at(key).get_ref<const std::string&>().empty())
        fail(std::string("\"") + key + "\" is a non-empty string");
      return entry.at(key).get<std::string>();
    };
    const auto list_of = [&](const char* key) {
      std::vector<std::string> out;
      if (!entry.contains(key)) return out;
      const json& list = entry.at(key);
      if (!list.is_array() || list.empty()) fail(std::string("\"") + key + "\" is a non-empty array");
      for (const auto& item : list) {
        if (!item.is_string() || item.get_ref<const std::string&>().empty())
          fail(std::string("\"") + key + "\" holds non-empty strings");
        out.push_back(item.get<std::string>());
      }
      return out;
    };
    read_name_class_engine(entry, keys, escape_class_list, c, fail, string_of);
    c.setup = list_of("setup");
    c.sql = string_of("sql");
    c.teardown = list_of("teardown");
    const std::string expect = string_of("expect");
    if (expect == "refused") c.expect = EscapeExpect::refused;
    else if (expect == "contained") c.expect = EscapeExpect::contained;
    else fail("\"expect\" is \"refused\" or \"contained\"");
    if (entry.contains("reason")) {
      if (c.expect != EscapeExpect::refused) fail("\"reason\" belongs to refused entries only");
      const std::string reason = string_of("reason");
      for (const auto r : all_reasons)
        if (refusal_reason_name(r) == reason) c.reason = r;
      if (!c.reason) fail("unknown refusal reason \"" + reason + "\"");
    }
    if (entry.contains("outcome")) {
      if (c.expect != EscapeExpect::contained) fail("\"outcome\" belongs to contained entries only");
      const std::string outcome = string_of("outcome");
      if (outcome == "rows") c.outcome = EscapeOutcome::rows;
      else if (outcome == "failure") c.outcome = EscapeOutcome::failure;
      else if (outcome == "refusal") c.outcome = EscapeOutcome::refusal;
      else fail("\"outcome\" is \"rows\", \"failure\" or \"refusal\"");
    }
    if (entry.contains("statement_timeout_ms")) {
      const json& value = entry.at("statement_timeout_ms");
      if (!value.is_number_integer() || value.get<std::int64_t>() < 1 || value.get<std::int64_t>() > 60000)
        fail("\"statement_timeout_ms\" is an integer from 1 to 60000");
      c.statement_timeout_ms = value.get<std::int64_t>();
    }
    if (entry.contains("note")) c.note = string_of("note");
    cases.push_back(std::move(c));
  });
  reject_duplicate_names(cases);
  return cases;
}

std::span<const std::string_view> session_state_classes() noexcept { return session_state_class_list; }

std::vector<SessionStateCase> parse_session_states(std::string_view jsonl, std::string_view source) {
  static constexpr std::array keys{"name"sv, "class"sv, "engine"sv, "leave"sv, "note"sv};
  std::vector<SessionStateCase> cases;
  for_each_entry(jsonl, source, [&](const json& entry, const std::string& where) {
    SessionStateCase c;
    c.source = where;
    const auto fail = [&](std::string_view what) -> void {
      throw CorpusError(where + (c.name.empty() ? "" : ": entry \"" + c.name + "\"") + ": " + std::string(what));
    };
    const auto string_of = [&](const char* key) {
      if (!entry.contains(key) || !entry.at(key).is_string() || entry.at(key).get_ref<const std::string&>().empty())
        fail(std::string("\"") + key + "\" is a non-empty string");
      return entry.at(key).get<std::string>();
    };
    read_name_class_engine(entry, keys, session_state_class_list, c, fail, string_of);
    if (!entry.contains("leave") || !entry.at("leave").is_array() || entry.at("leave").empty())
      fail("\"leave\" is a non-empty array");
    for (const auto& item : entry.at("leave")) {
      if (!item.is_string() || item.get_ref<const std::string&>().empty()) fail("\"leave\" holds non-empty strings");
      c.leave.push_back(item.get<std::string>());
    }
    if (entry.contains("note")) c.note = string_of("note");
    cases.push_back(std::move(c));
  });
  reject_duplicate_names(cases);
  return cases;
}

std::vector<SessionStateCase> load_session_states(const std::filesystem::path& file) {
  return parse_session_states(read_file(file), file.filename().string());
}

std::vector<EscapeCase> load_escapes(const std::filesystem::path& file) {
  return parse_escapes(read_file(file), file.filename().string());
}

std::vector<FailureCase> load_failures(const std::filesystem::path& file) {
  return parse_failures(read_file(file), file.filename().string());
}

std::vector<CellCase> load_cells(const std::filesystem::path& file) {
  return parse_cells(read_file(file), file.filename().string());
}

std::vector<ProseCase> load_prose(const std::filesystem::path& file) {
  return parse_prose(read_file(file), file.filename().string());
}

Untrusted payload(const Case& c) { return Untrusted(c.bytes); }

Failure failure_for(const FailureCase& c, FailureField field, Engine engine) {
  Failure failure;
  failure.engine = engine;
  if (engine == Engine::postgresql) {
    failure.severity = Untrusted(std::string_view("ERROR"));
    failure.sqlstate = Untrusted(std::string_view("P0001"));
  } else {
    if (is_code_field(field)) {
      throw std::invalid_argument("SQLite failures have no severity or SQLSTATE to place a payload in");
    }
    failure.sqlite_code = 1;  // SQLITE_ERROR
  }
  failure.message = filler("primary message");

  const bool has_notice = field == FailureField::notice || field == FailureField::notice_severity ||
                          field == FailureField::notice_sqlstate;
  if (has_notice) {
    Notice notice;
    notice.severity = Untrusted(std::string_view("NOTICE"));
    notice.sqlstate = Untrusted(std::string_view("00000"));
    notice.message = filler("notice");
    failure.notices.push_back(std::move(notice));
  }

  Untrusted value = payload(c);
  switch (field) {
    case FailureField::message: failure.message = std::move(value); break;
    case FailureField::detail: failure.detail = std::move(value); break;
    case FailureField::hint: failure.hint = std::move(value); break;
    case FailureField::context: failure.context = std::move(value); break;
    case FailureField::notice: failure.notices.front().message = std::move(value); break;
    case FailureField::statement: failure.statement = std::move(value); break;
    case FailureField::severity: failure.severity = std::move(value); break;
    case FailureField::sqlstate: failure.sqlstate = std::move(value); break;
    case FailureField::notice_severity: failure.notices.front().severity = std::move(value); break;
    case FailureField::notice_sqlstate: failure.notices.front().sqlstate = std::move(value); break;
  }
  return failure;
}

Rows rows_for(const CellCase& c, CellPlace place) {
  Rows rows;
  Column column{Untrusted(std::string_view("value")), Untrusted(std::string_view("text"))};
  Cell first = filler("cell");
  switch (place) {
    case CellPlace::cell:
      if (c.null) {
        first = std::nullopt;
      } else {
        first = payload(c);
      }
      break;
    case CellPlace::column_name: column.name = payload(c); break;
    case CellPlace::type_name: column.type_name = payload(c); break;
  }
  rows.bytes = column.name.size() + (first ? first->size() : 0);
  rows.columns.push_back(std::move(column));
  rows.rows.push_back({std::move(first)});
  Cell second = filler("row after the case");
  rows.bytes += second->size();
  rows.rows.push_back({std::move(second)});
  return rows;
}

Rows rows_of_cells(std::span<const CellCase> cases) {
  Rows rows;
  rows.columns.push_back(Column{Untrusted(std::string_view("value")), Untrusted(std::string_view("text"))});
  rows.bytes = rows.columns.front().name.size();
  for (const auto& c : cases) {
    if (std::find(c.places.begin(), c.places.end(), CellPlace::cell) == c.places.end()) continue;
    Cell cell;
    if (!c.null) cell = payload(c);
    rows.bytes += cell ? cell->size() : 0;
    rows.rows.push_back({std::move(cell)});
  }
  return rows;
}

}  // namespace rawtool::corpus
