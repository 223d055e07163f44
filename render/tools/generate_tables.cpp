// Build-time generator of the renderer's data tables, from the files Debian
// ships (unicode-data, postgresql-N, libsqlite3-dev), so that the escape set
// and the code names follow the data rather than a hand-written list.
//
//   generate_tables <DerivedGeneralCategory.txt> <DerivedCoreProperties.txt>
//                   <UnicodeData.txt> <EastAsianWidth.txt> <errcodes.txt>
//                   <sqlite3.h> <output.cpp>
//
// Emits one C++ source defining what render/src/detail/tables.hpp declares:
//  - a two-level table giving each code point its class (plain, escape,
//    combining mark): stage 1 maps cp >> 7 to a block, stage 2 holds the
//    distinct 128-entry blocks;
//  - a table of the same shape giving each code point the terminal columns it
//    takes (for the table layout): 2 for East Asian Wide and Fullwidth, 0 for
//    the non-spacing and enclosing marks (Mn, Me), 1 for the rest;
//  - SQLSTATE -> condition name, sorted by code;
//  - SQLite extended result code -> macro name, sorted by code.
// Any parse problem is fatal: a table built from half a file would be wrong
// without saying so.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr std::uint32_t code_space = 0x110000;
constexpr std::uint32_t block_bits = 7;
constexpr std::uint32_t block_size = 1u << block_bits;

enum : std::uint8_t { plain = 0, escape = 1, combining = 2 };

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "generate_tables: " << what << '\n';
  std::exit(1);
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot read " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

struct RangeValue {
  std::uint32_t first;
  std::uint32_t last;
  std::string value;
};

// Parses UCD lines "XXXX..YYYY ; Value # comment" (or a single code point).
std::vector<RangeValue> read_ucd(const std::string& path) {
  std::vector<RangeValue> out;
  for (const auto& raw : read_lines(path)) {
    std::string line = raw.substr(0, raw.find('#'));
    if (trim(line).empty()) continue;
    const auto semi = line.find(';');
    if (semi == std::string::npos) fail(path + ": no ';' in line: " + raw);
    const std::string range = trim(line.substr(0, semi));
    const std::string value = trim(line.substr(semi + 1));
    const auto dots = range.find("..");
    char* end = nullptr;
    const auto first = static_cast<std::uint32_t>(std::strtoul(range.c_str(), &end, 16));
    std::uint32_t last = first;
    if (dots != std::string::npos) last = static_cast<std::uint32_t>(std::strtoul(range.c_str() + dots + 2, &end, 16));
    if (last < first || last >= code_space) fail(path + ": bad range in line: " + raw);
    out.push_back({first, last, value});
  }
  if (out.empty()) fail(path + ": no data");
  return out;
}

// The letters, marks and symbols that render as blank though no property says
// so: in UnicodeData.txt, a character of general category L*, M* or S* whose
// name's last word is BLANK or FILLER (U+2800 BRAILLE PATTERN BLANK, the
// Hangul fillers U+115F U+1160 U+3164 U+FFA0, U+13441 EGYPTIAN HIEROGLYPH FULL
// BLANK, ...). "BLANK SYMBOL" (U+2422, a visible glyph) and the gap-filler
// punctuation (P*, drawn as marks) do not match. Ranges the file gives as
// "<..., First>"/"<..., Last>" pairs have no names of their own and never match.
std::vector<std::uint32_t> read_blank_names(const std::string& path) {
  std::vector<std::uint32_t> out;
  for (const auto& line : read_lines(path)) {
    if (line.empty()) continue;
    const auto name_at = line.find(';');
    const auto category_at = line.find(';', name_at + 1);
    if (name_at == std::string::npos || category_at == std::string::npos || line.size() < category_at + 3)
      fail(path + ": unexpected line: " + line);
    char* end = nullptr;
    const auto cp = static_cast<std::uint32_t>(std::strtoul(line.c_str(), &end, 16));
    if (end != line.c_str() + name_at || cp >= code_space) fail(path + ": bad code point in line: " + line);
    const std::string name = line.substr(name_at + 1, category_at - name_at - 1);
    const char major = line[category_at + 1];
    if (major != 'L' && major != 'M' && major != 'S') continue;
    const auto space = name.rfind(' ');
    const std::string last_word = space == std::string::npos ? name : name.substr(space + 1);
    if (last_word == "BLANK" || last_word == "FILLER") out.push_back(cp);
  }
  return out;
}

struct Sqlstate {
  std::string code;
  std::string name;
};

std::vector<Sqlstate> read_errcodes(const std::string& path) {
  std::vector<Sqlstate> out;
  const std::regex code_line(R"(^([0-9A-Z]{5})\s+([EWS])\s+(ERRCODE_[A-Z0-9_]+)(\s+([a-z0-9_]+))?\s*$)");
  for (const auto& line : read_lines(path)) {
    if (line.empty() || line[0] == '#' || line.rfind("Section:", 0) == 0) continue;
    std::smatch m;
    if (!std::regex_match(line, m, code_line)) fail(path + ": unexpected line: " + line);
    std::string name = m[5].str();
    if (name.empty()) {
      // A few codes have no PL/pgSQL condition name; the macro's tail names them.
      name = m[3].str().substr(std::string("ERRCODE_").size());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    }
    out.push_back({m[1].str(), name});
  }
  std::sort(out.begin(), out.end(), [](const Sqlstate& a, const Sqlstate& b) { return a.code < b.code; });
  // The same code may be listed twice (an alias); keep the first name.
  out.erase(std::unique(out.begin(), out.end(), [](const Sqlstate& a, const Sqlstate& b) { return a.code == b.code; }), out.end());
  if (out.size() < 100) fail(path + ": too few SQLSTATE codes");
  return out;
}

struct SqliteCode {
  long code;
  std::string name;
};

// The result codes are the #define lines from "#define SQLITE_OK" up to the
// first open-flag define; values are plain integers or (SQLITE_BASE | (n<<8)).
std::vector<SqliteCode> read_sqlite_codes(const std::string& path) {
  const std::regex plain_define(R"(^#define\s+(SQLITE_[A-Z0-9_]+)\s+(\d+)\b.*$)");
  const std::regex extended_define(R"(^#define\s+(SQLITE_[A-Z0-9_]+)\s+\(\s*(SQLITE_[A-Z0-9_]+)\s*\|\s*\(\s*(\d+)\s*<<\s*8\s*\)\s*\).*$)");
  std::map<std::string, long> values;
  std::vector<SqliteCode> out;
  bool inside = false;
  for (const auto& line : read_lines(path)) {
    if (!inside) {
      if (line.rfind("#define SQLITE_OK ", 0) == 0) inside = true;
      else continue;
    }
    if (line.rfind("#define SQLITE_OPEN_", 0) == 0) break;
    if (line.rfind("#define ", 0) != 0) continue;
    std::smatch m;
    if (std::regex_match(line, m, plain_define)) {
      values[m[1].str()] = std::stol(m[2].str());
    } else if (std::regex_match(line, m, extended_define)) {
      const auto base = values.find(m[2].str());
      if (base == values.end()) fail(path + ": extended code before its base: " + line);
      values[m[1].str()] = base->second | (std::stol(m[3].str()) << 8);
    } else {
      fail(path + ": unexpected result-code define: " + line);
    }
  }
  for (const auto& [name, code] : values) out.push_back({code, name});
  std::sort(out.begin(), out.end(), [](const SqliteCode& a, const SqliteCode& b) { return a.code < b.code || (a.code == b.code && a.name < b.name); });
  out.erase(std::unique(out.begin(), out.end(), [](const SqliteCode& a, const SqliteCode& b) { return a.code == b.code; }), out.end());
  if (out.size() < 50) fail(path + ": too few SQLite result codes");
  return out;
}

}  // namespace

// Writes `values` (one byte a code point) as NAME_stage1, which maps cp >> 7
// to a block, and NAME_stage2, the distinct 128-entry blocks: equal blocks
// share one entry.
void write_two_stage(std::ostringstream& out, const std::string& name, const std::vector<std::uint8_t>& values) {
  std::vector<std::string> blocks;
  std::map<std::string, std::size_t> block_index;
  std::vector<std::size_t> stage1;
  for (std::uint32_t start = 0; start < code_space; start += block_size) {
    std::string block(values.begin() + start, values.begin() + start + block_size);
    auto [it, inserted] = block_index.emplace(block, blocks.size());
    if (inserted) blocks.push_back(block);
    stage1.push_back(it->second);
  }
  if (blocks.size() > 0xFFFF) fail("too many distinct blocks in " + name);
  out << "const std::uint16_t " << name << "_stage1[" << stage1.size() << "] = {";
  for (std::size_t i = 0; i < stage1.size(); ++i) out << (i % 24 == 0 ? "\n  " : "") << stage1[i] << ',';
  out << "\n};\n\nconst std::uint8_t " << name << "_stage2[" << blocks.size() * block_size << "] = {";
  for (const auto& block : blocks) {
    out << "\n ";
    for (char v : block) out << ' ' << static_cast<int>(v) << ',';
  }
  out << "\n};\n\n";
}

int main(int argc, char** argv) {
  if (argc != 8)
    fail("usage: generate_tables <DerivedGeneralCategory.txt> <DerivedCoreProperties.txt> <UnicodeData.txt> <EastAsianWidth.txt> "
         "<errcodes.txt> <sqlite3.h> <out.cpp>");

  // Escaped: from DerivedGeneralCategory.txt, Cc Cf Co Cn Cs Zl Zp and Zs but
  // U+0020 (an unlisted code point is unassigned, Cn); from
  // DerivedCoreProperties.txt, Default_Ignorable_Code_Point; from
  // UnicodeData.txt, the blank-rendering letters and symbols (read_blank_names).
  std::vector<std::uint8_t> cls(code_space, escape);
  std::vector<bool> seen(code_space, false);
  // Terminal columns: East Asian Wide and Fullwidth take two, then the
  // non-spacing and enclosing marks none (a few are listed as W), the rest one.
  std::vector<std::uint8_t> width(code_space, 1);
  for (const auto& r : read_ucd(argv[4])) {
    if (r.value != "W" && r.value != "F") continue;
    for (std::uint32_t cp = r.first; cp <= r.last; ++cp) width[cp] = 2;
  }
  for (const auto& r : read_ucd(argv[1])) {
    const std::string& gc = r.value;
    if (gc == "Mn" || gc == "Me")
      for (std::uint32_t cp = r.first; cp <= r.last; ++cp) width[cp] = 0;
    std::uint8_t c = plain;
    if (gc == "Cc" || gc == "Cf" || gc == "Co" || gc == "Cn" || gc == "Zl" || gc == "Zp" || gc == "Zs" || gc == "Cs") c = escape;
    else if (gc == "Mn" || gc == "Mc" || gc == "Me") c = combining;
    for (std::uint32_t cp = r.first; cp <= r.last; ++cp) {
      cls[cp] = c;
      seen[cp] = true;
    }
  }
  cls[0x20] = plain;  // the one space that stays as it is
  std::size_t ignorable = 0;
  for (const auto& r : read_ucd(argv[2])) {
    if (r.value != "Default_Ignorable_Code_Point") continue;
    for (std::uint32_t cp = r.first; cp <= r.last; ++cp) cls[cp] = escape;
    ignorable += r.last - r.first + 1;
  }
  if (ignorable < 1000) fail(std::string(argv[2]) + ": Default_Ignorable_Code_Point missing");
  const auto blanks = read_blank_names(argv[3]);
  if (blanks.size() < 5) fail(std::string(argv[3]) + ": too few BLANK/FILLER names");
  for (auto cp : blanks) cls[cp] = escape;
  // Sanity checks on facts the renderer's contract names.
  const std::array<std::uint32_t, 13> must_escape{0x7F, 0x85, 0x9B, 0xAD, 0x200B, 0x202E, 0x2028, 0x2029, 0x2800, 0x3164, 0xE0001, 0xFE0F, 0xF0000};
  for (auto cp : must_escape)
    if (cls[cp] != escape) fail("code point " + std::to_string(cp) + " is not in the escape set: wrong input files?");
  if (cls[0x301] != combining || cls[0xE9] != plain || cls[0x4E2D] != plain || cls[0x1F600] != plain)
    fail("unexpected classes for U+0301/U+00E9/U+4E2D/U+1F600: wrong input files?");
  if (width['a'] != 1 || width[0xE9] != 1 || width[0x301] != 0 || width[0x4E2D] != 2 || width[0xFF21] != 2 || width[0x1F600] != 2)
    fail("unexpected widths for a/U+00E9/U+0301/U+4E2D/U+FF21/U+1F600: wrong input files?");

  const auto sqlstates = read_errcodes(argv[5]);
  const auto sqlite_codes = read_sqlite_codes(argv[6]);

  std::ostringstream out;
  out << "// Generated by render/tools/generate_tables.cpp at build time. Do not edit.\n"
      << "// Sources: " << argv[1] << ", " << argv[2] << ", " << argv[3] << ", " << argv[4] << ", " << argv[5] << ", " << argv[6] << "\n"
      << "#include \"detail/tables.hpp\"\n\nnamespace rawtool::render::detail {\n\n";
  write_two_stage(out, "unicode", cls);
  write_two_stage(out, "display_width", width);
  out << "const SqlstateName sqlstate_names[" << sqlstates.size() << "] = {\n";
  for (const auto& s : sqlstates) out << "  {\"" << s.code << "\", \"" << s.name << "\"},\n";
  out << "};\nconst std::size_t sqlstate_name_count = " << sqlstates.size() << ";\n\n";
  out << "const SqliteCodeName sqlite_code_names[" << sqlite_codes.size() << "] = {\n";
  for (const auto& s : sqlite_codes) out << "  {" << s.code << ", \"" << s.name << "\"},\n";
  out << "};\nconst std::size_t sqlite_code_name_count = " << sqlite_codes.size() << ";\n\n}  // namespace rawtool::render::detail\n";

  const std::string text = out.str();
  std::ofstream file(argv[7], std::ios::binary | std::ios::trunc);
  if (!file || !(file << text)) fail(std::string("cannot write ") + argv[7]);
  return 0;
}
