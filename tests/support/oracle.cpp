#include "oracle.hpp"

#include <rawtool/render/contract.hpp>

#include <openssl/evp.h>

// Written independently of render/, so that a bug there is not mirrored
// here: the escape set is read from the Unicode data files (not from the
// table render/tools/generate_tables.cpp makes of them), and the UTF-8
// decoding and the grammar parsing are the oracle's own.

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <map>
#include <stdexcept>
#include <vector>

namespace rawtool::test {

namespace contract = rawtool::render::contract;

namespace {

// The files' lines are "CODE[..CODE] ; VALUE # comment". Calls
// each(first, last, value) for every such line of `path`.
template <typename Each>
void read_ucd_ranges(const char* path, Each each) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string("oracle: cannot read the Unicode data file ") + path);
  const auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
  };
  const auto code_point = [&](std::string_view hex) {
    if (hex.empty() || hex.size() > 6) throw std::runtime_error(std::string("oracle: a malformed code point in ") + path);
    char32_t cp = 0;
    for (const char c : hex) {
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) throw std::runtime_error(std::string("oracle: a malformed code point in ") + path);
      cp = cp * 16 + static_cast<char32_t>(d);
    }
    if (cp > 0x10FFFF) throw std::runtime_error(std::string("oracle: a code point past U+10FFFF in ") + path);
    return cp;
  };
  for (std::string line; std::getline(in, line);) {
    std::string_view data = line;
    data = trim(data.substr(0, data.find('#')));
    if (data.empty()) continue;
    const auto semicolon = data.find(';');
    if (semicolon == std::string_view::npos) throw std::runtime_error(std::string("oracle: a line without ';' in ") + path);
    const std::string_view range = trim(data.substr(0, semicolon));
    const auto dots = range.find("..");
    const char32_t first = code_point(range.substr(0, dots));
    const char32_t last = dots == std::string_view::npos ? first : code_point(range.substr(dots + 2));
    each(first, last, trim(data.substr(semicolon + 1)));
  }
}

#if !defined(RAWTOOL_TEST_UCD_GENERAL_CATEGORY) || !defined(RAWTOOL_TEST_UCD_CORE_PROPERTIES) || !defined(RAWTOOL_TEST_UCD_UNICODE_DATA)
#error "the build names the Unicode data files (RAWTOOL_TEST_UCD_GENERAL_CATEGORY, RAWTOOL_TEST_UCD_CORE_PROPERTIES, RAWTOOL_TEST_UCD_UNICODE_DATA)"
#endif

// UnicodeData.txt's lines are "CODE;NAME;CATEGORY;..." Calls each(cp, name,
// category) for every line.
template <typename Each>
void read_unicode_data(const char* path, Each each) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string("oracle: cannot read the Unicode data file ") + path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::vector<std::string_view> fields;
    std::string_view rest = line;
    for (std::size_t at; fields.size() < 3 && (at = rest.find(';')) != std::string_view::npos; rest.remove_prefix(at + 1)) fields.push_back(rest.substr(0, at));
    if (fields.size() < 3 || fields[0].empty() || fields[0].size() > 6) throw std::runtime_error(std::string("oracle: a malformed line in ") + path);
    char32_t cp = 0;
    for (const char c : fields[0]) {
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) throw std::runtime_error(std::string("oracle: a malformed code point in ") + path);
      cp = cp * 16 + static_cast<char32_t>(d);
    }
    if (cp > 0x10FFFF) throw std::runtime_error(std::string("oracle: a code point past U+10FFFF in ") + path);
    each(cp, fields[1], fields[2]);
  }
}

// The rule of every code point, from the grammar's definition.
std::vector<CodePointRule> load_rules() {
  // A code point the file does not list is unassigned (Cn), which is escaped.
  std::vector<CodePointRule> rules(0x110000, CodePointRule::escaped);
  read_ucd_ranges(RAWTOOL_TEST_UCD_GENERAL_CATEGORY, [&](char32_t first, char32_t last, std::string_view category) {
    static const std::array<std::string_view, 7> escaped = {"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"};
    for (char32_t cp = first; cp <= last; ++cp) {
      if (std::find(escaped.begin(), escaped.end(), category) != escaped.end() || (category == "Zs" && cp != 0x20))
        rules[cp] = CodePointRule::escaped;
      else if (category == "Mn" || category == "Mc" || category == "Me")
        rules[cp] = CodePointRule::escaped_at_start;
      else
        rules[cp] = CodePointRule::copied;
    }
  });
  read_ucd_ranges(RAWTOOL_TEST_UCD_CORE_PROPERTIES, [&](char32_t first, char32_t last, std::string_view property) {
    if (property != "Default_Ignorable_Code_Point") return;
    for (char32_t cp = first; cp <= last; ++cp) rules[cp] = CodePointRule::escaped;
  });
  // Letters, marks and symbols that render as blank: those named "... BLANK"
  // or "... FILLER".
  read_unicode_data(RAWTOOL_TEST_UCD_UNICODE_DATA, [&](char32_t cp, std::string_view name, std::string_view category) {
    if (category.empty() || (category[0] != 'L' && category[0] != 'M' && category[0] != 'S')) return;
    const auto space = name.rfind(' ');
    const std::string_view last_word = space == std::string_view::npos ? name : name.substr(space + 1);
    if (last_word == "BLANK" || last_word == "FILLER") rules[cp] = CodePointRule::escaped;
  });
  return rules;
}

// Strict UTF-8 (RFC 3629 table 3-7), by explicit byte ranges.
std::size_t utf8_sequence(std::string_view s, std::size_t i, char32_t& cp) {
  auto at = [&](std::size_t k) -> unsigned { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0x100u; };
  auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
  const unsigned b0 = at(0);
  if (b0 <= 0x7F) {
    cp = b0;
    return 1;
  }
  if (in(b0, 0xC2, 0xDF) && in(at(1), 0x80, 0xBF)) {
    cp = ((b0 & 0x1F) << 6) | (at(1) & 0x3F);
    return 2;
  }
  const bool three = (b0 == 0xE0 && in(at(1), 0xA0, 0xBF)) || (in(b0, 0xE1, 0xEC) && in(at(1), 0x80, 0xBF)) ||
                     (b0 == 0xED && in(at(1), 0x80, 0x9F)) || (in(b0, 0xEE, 0xEF) && in(at(1), 0x80, 0xBF));
  if (three && in(at(2), 0x80, 0xBF)) {
    cp = ((b0 & 0x0F) << 12) | ((at(1) & 0x3F) << 6) | (at(2) & 0x3F);
    return 3;
  }
  const bool four = (b0 == 0xF0 && in(at(1), 0x90, 0xBF)) || (in(b0, 0xF1, 0xF3) && in(at(1), 0x80, 0xBF)) || (b0 == 0xF4 && in(at(1), 0x80, 0x8F));
  if (four && in(at(2), 0x80, 0xBF) && in(at(3), 0x80, 0xBF)) {
    cp = ((b0 & 0x07) << 18) | ((at(1) & 0x3F) << 12) | ((at(2) & 0x3F) << 6) | (at(3) & 0x3F);
    return 4;
  }
  return 0;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int upper_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool starts_with_combining_mark(std::string_view s) {
  char32_t cp = 0;
  return !s.empty() && utf8_sequence(s, 0, cp) != 0 && code_point_rule(cp) == CodePointRule::escaped_at_start;
}

std::string upper_hex_digits(std::uint32_t value, int digits) {
  std::string s;
  for (int k = digits - 1; k >= 0; --k) s.push_back("0123456789ABCDEF"[(value >> (4 * k)) & 0xF]);
  return s;
}

bool is_lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_label(std::string_view line) { return contract::is_label_line(line); }

// "row 12: " -> the rest of the line; nullopt if `line` is not a row line.
std::optional<std::string_view> row_body(std::string_view line) {
  if (!line.starts_with(contract::row_prefix)) return std::nullopt;
  std::size_t i = contract::row_prefix.size();
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
  if (i == contract::row_prefix.size() || line.substr(i, contract::row_number_end.size()) != contract::row_number_end) {
    return std::nullopt;
  }
  return line.substr(i + contract::row_number_end.size());
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto lf = text.find('\n', start);
    if (lf == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, lf - start));
    start = lf + 1;
  }
  return lines;
}

// Reads one double-quoted cell at s[pos]; advances pos past the closing quote.
std::string read_quoted(std::string_view s, std::size_t& pos) {
  if (pos >= s.size() || s[pos] != '"') throw std::runtime_error("expected an opening double quote");
  std::size_t j = pos + 1;
  while (j < s.size() && s[j] != '"') j += s[j] == '\\' ? std::size_t{2} : std::size_t{1};
  if (j >= s.size()) throw std::runtime_error("unterminated quoted cell");
  const std::string_view body = s.substr(pos + 1, j - pos - 1);
  if (starts_with_combining_mark(body)) throw std::runtime_error("a cell opens with a raw combining mark");
  auto decoded = decode_escapes(body);
  if (!decoded) throw std::runtime_error("a cell does not decode");
  pos = j + 1;
  return *decoded;
}

bool read_separator(std::string_view s, std::size_t& pos, render::RowsLayout layout = render::RowsLayout::lines) {
  if (layout == render::RowsLayout::table) {
    // A table pads a cell to its column's width and marks a cut cell with
    // "..." after its closing quote.
    if (s.substr(pos, 3) == "...") pos += 3;
    const auto padded_to = s.find_first_not_of(' ', pos);
    if (padded_to == std::string_view::npos) {
      if (pos != s.size()) throw std::runtime_error("a table line ends in spaces");
      return false;
    }
    if (padded_to > pos && s.substr(padded_to - 1, contract::cell_separator.size()) == contract::cell_separator) {
      pos = padded_to - 1;
    }
  }
  if (pos == s.size()) return false;
  if (s.substr(pos, contract::cell_separator.size()) != contract::cell_separator) throw std::runtime_error("expected \" | \" between cells");
  pos += contract::cell_separator.size();
  return true;
}

std::vector<std::optional<std::string>> parse_row(std::string_view body, render::RowsLayout layout = render::RowsLayout::lines) {
  std::vector<std::optional<std::string>> cells;
  std::size_t pos = 0;
  const bool table = layout == render::RowsLayout::table;
  if (table) pos = std::min(body.size(), body.find_first_not_of(' '));  // the line prefix's padding
  if (pos == body.size()) return cells;
  do {
    if (body.substr(pos, 4) == "NULL" &&
        (pos + 4 == body.size() || body.substr(pos + 4, contract::cell_separator.size()) == contract::cell_separator ||
         (table && body[pos + 4] == ' '))) {
      cells.emplace_back(std::nullopt);
      pos += 4;
    } else {
      cells.emplace_back(read_quoted(body, pos));
    }
  } while (read_separator(body, pos, layout));
  return cells;
}

std::vector<std::string> parse_columns(std::string_view body, render::RowsLayout layout = render::RowsLayout::lines) {
  std::vector<std::string> names;
  std::size_t pos = 0;
  if (layout == render::RowsLayout::table) {
    // Names only, padded like cells; the line prefix is padded too.
    pos = std::min(body.size(), body.find_first_not_of(' '));
    if (body.substr(pos) == "(none)") return names;
    do names.push_back(read_quoted(body, pos));
    while (read_separator(body, pos, layout));
    return names;
  }
  if (body == "(none)") return names;
  do {
    names.push_back(read_quoted(body, pos));
    if (body.substr(pos, 15) == " (type unknown)") {
      pos += 15;
    } else if (body.substr(pos, 7) == " (type ") {
      pos += 7;
      (void)read_quoted(body, pos);
      if (pos >= body.size() || body[pos] != ')') throw std::runtime_error("expected ')' after a column type");
      ++pos;
    } else {
      throw std::runtime_error("expected a column type");
    }
  } while (read_separator(body, pos));
  return names;
}

// The nonce a marker line carries: "nonce " followed by its hex digits.
std::optional<std::string> marker_nonce(std::string_view line) {
  constexpr std::string_view word = "nonce ";
  const auto at = line.find(word);
  if (at == std::string_view::npos || line.size() < at + word.size() + contract::nonce_hex_digits) return std::nullopt;
  const auto nonce = line.substr(at + word.size(), contract::nonce_hex_digits);
  if (!is_lower_hex(nonce)) return std::nullopt;
  return std::string(nonce);
}

std::size_t occurrences(std::string_view text, std::string_view needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

}  // namespace

CodePointRule code_point_rule(char32_t cp) {
  static const std::vector<CodePointRule> rules = load_rules();
  return rules.at(cp);
}

std::string reference_escape(std::string_view bytes, render::EscapeContext context, bool ascii_only) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b < 0x80) {
      switch (b) {
        case '\\': out += "\\\\"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case '\n': out += "\\n"; break;
        case '"': out += context == render::EscapeContext::cell ? "\\\"" : "\""; break;
        default:
          // One byte appended as it is, without a string made for it: the
          // render tests compare tens of thousands of inputs with this.
          if (b < 0x20 || b == 0x7F)
            out += "\\x" + upper_hex_digits(b, 2);
          else
            out += static_cast<char>(b);
      }
      ++i;
      continue;
    }
    char32_t cp = 0;
    const std::size_t length = utf8_sequence(bytes, i, cp);
    if (length == 0) {
      out += "\\x" + upper_hex_digits(b, 2);
      ++i;
      continue;
    }
    const CodePointRule rule = code_point_rule(cp);
    if (ascii_only || rule == CodePointRule::escaped || (rule == CodePointRule::escaped_at_start && i == 0))
      out += "\\u{" + upper_hex_digits(static_cast<std::uint32_t>(cp), cp > 0xFFFFF ? 6 : cp > 0xFFFF ? 5 : 4) + "}";
    else
      out.append(bytes.substr(i, length));
    i += length;
  }
  return out;
}

std::string reference_quote(std::string_view bytes, std::string_view prefix, bool ascii_only) {
  std::string out;
  for (;;) {
    const std::size_t lf = bytes.find('\n');
    out.append(prefix);
    out += reference_escape(bytes.substr(0, lf), render::EscapeContext::line, ascii_only);
    out += '\n';
    if (lf == std::string_view::npos) return out;
    bytes.remove_prefix(lf + 1);
  }
}

std::optional<std::string> decode_escapes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\\') {
      if (i + 1 >= s.size()) return std::nullopt;
      const char kind = s[i + 1];
      switch (kind) {
        case '\\': out.push_back('\\'); i += 2; continue;
        case 't': out.push_back('\t'); i += 2; continue;
        case 'r': out.push_back('\r'); i += 2; continue;
        case 'n': out.push_back('\n'); i += 2; continue;
        case '"': out.push_back('"'); i += 2; continue;
        case 'x': {
          if (i + 4 > s.size()) return std::nullopt;
          const int hi = upper_hex(s[i + 2]);
          const int lo = upper_hex(s[i + 3]);
          if (hi < 0 || lo < 0) return std::nullopt;
          out.push_back(static_cast<char>(hi * 16 + lo));
          i += 4;
          continue;
        }
        case 'u': {
          if (i + 2 >= s.size() || s[i + 2] != '{') return std::nullopt;
          std::size_t j = i + 3;
          char32_t cp = 0;
          while (j < s.size() && s[j] != '}') {
            const int d = upper_hex(s[j]);
            if (d < 0 || j - (i + 3) >= 6) return std::nullopt;
            cp = cp * 16 + static_cast<char32_t>(d);
            ++j;
          }
          const std::size_t digits = j - (i + 3);
          if (j >= s.size() || digits < 4) return std::nullopt;
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
          append_utf8(out, cp);
          i = j + 1;
          continue;
        }
        default: return std::nullopt;
      }
    }
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x80) {
      if (b < 0x20 || b == 0x7F) return std::nullopt;
      out.push_back(c);
      ++i;
      continue;
    }
    char32_t cp = 0;
    const std::size_t len = utf8_sequence(s, i, cp);
    if (len == 0 || code_point_rule(cp) == CodePointRule::escaped) return std::nullopt;
    out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

std::vector<std::string> text_surface_problems(std::string_view text, render::RowsLayout layout) {
  std::vector<std::string> problems;
  if (!text.empty() && text.back() != '\n') problems.emplace_back("the text does not end with a line feed");

  for (std::size_t i = 0, line = 1; i < text.size();) {
    char32_t cp = 0;
    const std::size_t len = utf8_sequence(text, i, cp);
    if (len == 0) {
      problems.push_back("line " + std::to_string(line) + ": invalid UTF-8");
      ++i;
      continue;
    }
    if (cp == '\n') {
      ++line;
    } else if (cp < 0x20 || cp == 0x7F || code_point_rule(cp) == CodePointRule::escaped) {
      problems.push_back("line " + std::to_string(line) + ": raw code point U+" + std::to_string(static_cast<std::uint32_t>(cp)) + " of the escape set");
    }
    i += len;
  }

  std::map<std::string, std::size_t> marker_uses;
  std::vector<std::string> open_markers;
  const auto lines = split_lines(text);
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const std::string_view line = lines[n];
    const std::string where = "line " + std::to_string(n + 1) + ": ";
    try {
      if (line.starts_with(contract::own_prefix)) {
        const bool begin = line.starts_with(contract::begin_marker_prefix);
        const bool end = line.starts_with(contract::end_marker_prefix);
        const bool trailer = line.starts_with(contract::rows_trailer_prefix) || line.starts_with(contract::schema_trailer_prefix);
        if (begin || end || trailer) {
          const auto nonce = marker_nonce(line);
          if (!nonce) {
            problems.push_back(where + "a marker without a well-formed nonce");
            continue;
          }
          ++marker_uses[*nonce];
          if (begin) open_markers.push_back(*nonce);
          if (end) {
            if (open_markers.empty() || open_markers.back() != *nonce) problems.push_back(where + "a closing marker whose nonce does not match the opening one");
            else open_markers.pop_back();
          }
        }
      } else if (line.starts_with(contract::quote_prefix)) {
        const auto body = line.substr(contract::quote_prefix.size());
        if (starts_with_combining_mark(body)) problems.push_back(where + "a quoted line opens with a raw combining mark");
        if (!decode_escapes(body)) problems.push_back(where + "a quoted line does not decode");
      } else if (line.starts_with(contract::columns_prefix)) {
        (void)parse_columns(line.substr(contract::columns_prefix.size()), layout);
      } else if (auto body = row_body(line)) {
        (void)parse_row(*body, layout);
      } else if (!is_label(line)) {
        problems.push_back(where + "begins with bytes the renderer did not choose");
      }
    } catch (const std::exception& e) {
      problems.push_back(where + e.what());
    }
  }
  if (!open_markers.empty()) problems.emplace_back("an opening marker has no closing marker");
  for (const auto& [nonce, uses] : marker_uses)
    if (occurrences(text, nonce) != uses) problems.push_back("nonce " + nonce + " appears outside its markers");
  return problems;
}

std::vector<std::pair<std::string, std::string>> quoted_fields(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> fields;
  bool in_field = false;
  bool first_line = true;
  for (const auto line : split_lines(text)) {
    if (is_label(line)) {
      fields.emplace_back(std::string(line.substr(0, line.size() - 1)), std::string());
      in_field = true;
      first_line = true;
    } else if (in_field && line.starts_with(contract::quote_prefix)) {
      auto decoded = decode_escapes(line.substr(contract::quote_prefix.size()));
      if (!decoded) throw std::runtime_error("a quoted line does not decode");
      if (!first_line) fields.back().second.push_back('\n');
      fields.back().second += *decoded;
      first_line = false;
    } else {
      in_field = false;
    }
  }
  return fields;
}

std::vector<std::vector<std::optional<std::string>>> row_cells(std::string_view text, render::RowsLayout layout) {
  std::vector<std::vector<std::optional<std::string>>> rows;
  for (const auto line : split_lines(text))
    if (auto body = row_body(line)) rows.push_back(parse_row(*body, layout));
  return rows;
}

std::vector<std::string> column_names(std::string_view text, render::RowsLayout layout) {
  for (const auto line : split_lines(text))
    if (line.starts_with(contract::columns_prefix)) return parse_columns(line.substr(contract::columns_prefix.size()), layout);
  throw std::runtime_error("no columns line");
}

std::optional<std::string> json_bytes(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_object() || value.size() != 3 || value.value("encoding", "") != "base64" || value.value("invalid_utf8", false) != true ||
      !value.contains("base64") || !value["base64"].is_string())
    return std::nullopt;
  // Decoded by OpenSSL, not by render's own decoder: the check must not share
  // a mistake with the encoder it checks.
  const auto& text = value["base64"].get_ref<const std::string&>();
  const auto first_pad = text.find('=');
  if (text.size() % 4 != 0 ||
      text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != std::string::npos ||
      (first_pad != std::string::npos &&
       (first_pad + 2 < text.size() || text.find_first_not_of('=', first_pad) != std::string::npos))) {
    return std::nullopt;  // padding only at the very end, at most two
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int decoded = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (decoded < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding's bytes as zeros: take them off.
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  out.resize(static_cast<std::size_t>(decoded) - padding);
  return out;
}

}  // namespace rawtool::test
