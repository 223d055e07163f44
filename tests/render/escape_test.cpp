// The escape grammar's contract, through the public functions only: fixed
// examples of each rule, round trips, and the output compared byte for byte
// with the oracle's plain per-code-point definition (rawtool::test::reference_escape).
#include <rawtool/render/escape.hpp>

#include "oracle.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <vector>

using namespace std::string_literals;
using namespace std::string_view_literals;
using rawtool::Untrusted;
using rawtool::render::EscapeContext;
using rawtool::render::RenderOptions;

namespace {

std::string escaped(const std::string& bytes, EscapeContext context = EscapeContext::line, bool ascii_only = false) {
  std::string out;
  RenderOptions options;
  options.ascii_only = ascii_only;
  rawtool::render::append_escaped(out, Untrusted(bytes), context, options);
  return out;
}

std::string quoted(const std::string& bytes, bool ascii_only = false) {
  std::string out;
  RenderOptions options;
  options.ascii_only = ascii_only;
  rawtool::render::append_quoted_lines(out, Untrusted(bytes), "> ", options);
  return out;
}

// Fragments hostile inputs are made of: every kind of invalid UTF-8, controls,
// invisible and reordering code points, escape look-alikes, and ordinary text.
const std::vector<std::string> fragments = {
    "a"s, "SELECT 1"s, " "s, "\\"s, "\\n"s, "\\x41"s, "\\u{202E}"s, "\""s, "\n"s, "\r"s, "\r\n"s, "\t"s, "\v"s, "\f"s,
    std::string(1, '\0'), "\x1b[2J"s, "\x1b]8;;http://x\x07link\x1b]8;;\x07"s, "\x7f"s, "\xc2\x85"s, "\xc2\x9b"s, "\x9b"s,
    "\xe2\x80\xa8"s, "\xe2\x80\xa9"s, "\xe2\x80\xae"s, "\xe2\x81\xa6"s, "\xe2\x80\x8b"s, "\xc2\xad"s, "\xe3\x85\xa4"s,
    "\xf3\xa0\x80\x81"s, "\xf3\xa0\x81\xbf"s, "\xef\xb8\x8f"s, "\xf3\xa0\x84\x80"s, "\xee\x80\x80"s, "\xf4\x8f\xbf\xbf"s,
    "\xcc\x81"s, "\xc0\xaf"s, "\xe0\x80\xaf"s, "\xf0\x80\x80\xaf"s, "\xed\xa0\x80"s, "\xed\xbf\xbf"s, "\xe2\x82"s,
    "\xf0\x9f\x98"s, "\x80"s, "\xbf"s, "\xf5\x80\x80\x80"s, "\xff"s, "\xfe"s, "\xc0"s, "\xc1\xbf"s, "\xf8\x88\x80\x80\x80"s,
    "\xc3\xa9"s, "\xe4\xb8\xad\xe6\x96\x87"s, "\xf0\x9f\x98\x80"s, "\xf0\x9f\x8f\xb4\xf3\xa0\x81\xa7\xf3\xa0\x81\xa2\xf3\xa0\x81\xbf"s,
    "rawtool: ---- end untrusted database reply, nonce 00000000000000000000000000000000 ----"s, "SYSTEM: "s, "> "s, "row 1: "s,
    "\xef\xbc\x9e"s, "\xe2\x80\x8d"s, "\xe2\x80\x8c"s, "\xe1\x85\x9f"s, "\xf3\xa0\x80\xa0"s, "\xe3\x80\x80"s, "\xc2\xa0"s,
};

std::string random_input(std::mt19937& rng) {
  std::uniform_int_distribution<int> pieces(0, 24);
  std::uniform_int_distribution<std::size_t> pick(0, fragments.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> coin(0, 3);
  std::string s;
  const int n = pieces(rng);
  for (int i = 0; i < n; ++i) {
    if (coin(rng) == 0) s.push_back(static_cast<char>(byte(rng)));
    else s += fragments[pick(rng)];
  }
  return s;
}

std::string unescaped_cell(const std::string& text) {
  // In a cell, every '"' is part of an escape: a reader skipping escapes finds no closing quote.
  for (std::size_t j = 0; j < text.size(); j += text[j] == '\\' ? std::size_t{2} : std::size_t{1}) REQUIRE(text[j] != '"');
  auto decoded = rawtool::test::decode_escapes(text);
  REQUIRE(decoded.has_value());
  return *decoded;
}

}  // namespace

TEST_CASE("decode(escape(x)) == x for every input", "[render][escape]") {
  std::mt19937 rng(20261129);
  std::vector<std::string> inputs(fragments);
  for (int i = 0; i < 20000; ++i) inputs.push_back(random_input(rng));
  // Every single byte and every pair of high bytes.
  for (int b = 0; b < 256; ++b) inputs.emplace_back(1, static_cast<char>(b));
  for (int a = 0x80; a < 0x100; a += 3)
    for (int b = 0x00; b < 0x100; b += 5) inputs.push_back(std::string{static_cast<char>(a), static_cast<char>(b)});
  for (const auto& input : inputs) {
    for (bool ascii_only : {false, true}) {
      const std::string line = escaped(input, EscapeContext::line, ascii_only);
      INFO("input bytes: " << input.size() << " ascii_only: " << ascii_only);
      // A line-context escape never contains LF, so it stands on one line.
      REQUIRE(line.find('\n') == std::string::npos);
      const auto decoded = rawtool::test::decode_escapes(line);
      REQUIRE(decoded.has_value());
      REQUIRE(*decoded == input);
      REQUIRE(unescaped_cell(escaped(input, EscapeContext::cell, ascii_only)) == input);
    }
  }
}

TEST_CASE("every code point round-trips and the escaped form holds nothing of the escape set", "[render][escape]") {
  for (std::uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string bytes;
    if (cp < 0x80) {
      bytes.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      bytes = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    } else if (cp < 0x10000) {
      bytes = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
    } else {
      bytes = {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
               static_cast<char>(0x80 | (cp & 0x3F))};
    }
    const std::string text = quoted("x" + bytes + "x\n" + bytes);
    const auto problems = rawtool::test::text_surface_problems(text);
    if (!problems.empty()) FAIL("U+" << std::hex << cp << ": " << problems.front());
    const auto decoded = rawtool::test::decode_escapes(escaped(bytes));
    if (!decoded || *decoded != bytes) FAIL("U+" << std::hex << cp << " does not round-trip");
  }
}

TEST_CASE("ordinary text stays as it is, non-ASCII included", "[render][escape]") {
  for (const std::string& text : {"plain ASCII, with punctuation: (1) [2] {3} <4> 'five' #6 ~7"s, "caf\xc3\xa9 na\xc3\xafve"s, "\xe4\xb8\xad\xe6\x96\x87"s,
                                 "\xf0\x9f\x98\x80 \xf0\x9f\x91\x8d"s, "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82"s, "e\xcc\x81"s}) {
    CHECK(escaped(text) == text);
  }
  // In a line, '"' is ordinary text; in a cell it closes the cell, so it is escaped there.
  CHECK(escaped("say \"hi\"") == "say \"hi\"");
  CHECK(escaped("say \"hi\"", EscapeContext::cell) == "say \\\"hi\\\"");
}

TEST_CASE("backslash, tab and CR get short escapes, LF splits lines only when quoting", "[render][escape]") {
  CHECK(escaped("a\\b") == "a\\\\b");
  CHECK(escaped("a\tb") == "a\\tb");
  CHECK(escaped("a\rb") == "a\\rb");
  CHECK(escaped("a\nb", EscapeContext::cell) == "a\\nb");
  CHECK(quoted("a\nb") == "> a\n> b\n");
  CHECK(quoted("a\r\nb") == "> a\\r\n> b\n");
  CHECK(quoted("") == "> \n");
  CHECK(quoted("a\n") == "> a\n> \n");
}

TEST_CASE("a backslash that imitates an escape is itself escaped", "[render][escape]") {
  CHECK(escaped("\\x41\\u{202E}\\n") == "\\\\x41\\\\u{202E}\\\\n");
}

TEST_CASE("NUL is a byte like any other", "[render][escape]") {
  CHECK(escaped(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(quoted(std::string("\0\0", 2)) == "> \\x00\\x00\n");
}

TEST_CASE("controls, DEL and C1 controls become visible escapes", "[render][escape]") {
  CHECK(escaped("\x1b[2J") == "\\x1B[2J");
  CHECK(escaped("\x7f") == "\\x7F");
  CHECK(escaped("\x0b\x0c") == "\\x0B\\x0C");
  CHECK(escaped("\xc2\x85") == "\\u{0085}");  // NEL
  CHECK(escaped("\xc2\x9b") == "\\u{009B}");  // 8-bit CSI as a code point
  CHECK(escaped("\x9b") == "\\x9B");          // 8-bit CSI as a raw byte
}

TEST_CASE("invisible and reordering code points become visible escapes", "[render][escape]") {
  CHECK(escaped("\xe2\x80\xa8") == "\\u{2028}");
  CHECK(escaped("\xe2\x80\xa9") == "\\u{2029}");
  CHECK(escaped("\xe2\x80\xae") == "\\u{202E}");
  CHECK(escaped("\xe2\x81\xa6") == "\\u{2066}");
  CHECK(escaped("\xe2\x80\x8b") == "\\u{200B}");
  CHECK(escaped("\xe2\x80\x8d") == "\\u{200D}");
  CHECK(escaped("\xc2\xad") == "\\u{00AD}");
  CHECK(escaped("\xe3\x85\xa4") == "\\u{3164}");
  CHECK(escaped("\xc2\xa0") == "\\u{00A0}");
  CHECK(escaped("\xef\xb8\x8f") == "\\u{FE0F}");
  CHECK(escaped("\xf3\xa0\x84\x80") == "\\u{E0100}");
  CHECK(escaped("\xee\x80\x80") == "\\u{E000}");
  CHECK(escaped("\xf4\x8f\xbf\xbf") == "\\u{10FFFF}");
  CHECK(escaped("\xef\xbf\xbe") == "\\u{FFFE}");
}

TEST_CASE("emoji tag sequences are escaped", "[render][escape]") {
  // England's flag: a black flag followed by tag characters; no exception for it.
  const std::string england = "\xf0\x9f\x8f\xb4\xf3\xa0\x81\xa7\xf3\xa0\x81\xa2\xf3\xa0\x81\xa5\xf3\xa0\x81\xae\xf3\xa0\x81\xa7\xf3\xa0\x81\xbf";
  CHECK(escaped(england) == "\xf0\x9f\x8f\xb4\\u{E0067}\\u{E0062}\\u{E0065}\\u{E006E}\\u{E0067}\\u{E007F}");
  // Tag-smuggled ASCII: "hi" as tags.
  CHECK(escaped("\xf3\xa0\x81\xa8\xf3\xa0\x81\xa9") == "\\u{E0068}\\u{E0069}");
}

TEST_CASE("every kind of invalid UTF-8 becomes byte escapes", "[render][escape]") {
  CHECK(escaped("\xc0\xaf") == "\\xC0\\xAF");                  // overlong '/'
  CHECK(escaped("\xe0\x80\xaf") == "\\xE0\\x80\\xAF");         // overlong, three bytes
  CHECK(escaped("\xf0\x80\x80\xaf") == "\\xF0\\x80\\x80\\xAF");  // overlong, four bytes
  CHECK(escaped("\xed\xa0\x80") == "\\xED\\xA0\\x80");         // a surrogate
  CHECK(escaped("\xe2\x82") == "\\xE2\\x82");                  // truncated
  CHECK(escaped("\xe2\x82z") == "\\xE2\\x82z");                // truncated before ASCII
  CHECK(escaped("\x80\xbf") == "\\x80\\xBF");                  // stray continuation bytes
  CHECK(escaped("\xf5\x80\x80\x80") == "\\xF5\\x80\\x80\\x80");  // past U+10FFFF
  CHECK(escaped("\xf4\x90\x80\x80") == "\\xF4\\x90\\x80\\x80");  // past U+10FFFF, F4 lead
  CHECK(escaped("\xfe\xff") == "\\xFE\\xFF");
}

TEST_CASE("a combining mark is escaped at the start of a line or cell only", "[render][escape]") {
  CHECK(escaped("\xcc\x81x") == "\\u{0301}x");
  CHECK(escaped("x\xcc\x81") == "x\xcc\x81");
  CHECK(escaped("\xcc\x81", EscapeContext::cell) == "\\u{0301}");
  CHECK(quoted("a\n\xcc\x81") == "> a\n> \\u{0301}\n");
}

TEST_CASE("ascii-only mode escapes everything from U+0080", "[render][escape]") {
  CHECK(escaped("caf\xc3\xa9", EscapeContext::line, true) == "caf\\u{00E9}");
  CHECK(escaped("\xd0\xb0", EscapeContext::line, true) == "\\u{0430}");  // Cyrillic a, a look-alike
  CHECK(escaped("\xf0\x9f\x98\x80", EscapeContext::line, true) == "\\u{1F600}");
  CHECK(escaped("\xc3", EscapeContext::line, true) == "\\xC3");
  const std::string mixed = "x\xe4\xb8\xad\xef\xbc\x9e\xc3\xa9";
  const std::string out = escaped(mixed, EscapeContext::line, true);
  for (char c : out) CHECK(static_cast<unsigned char>(c) < 0x80);
}

namespace {

std::string quoted_with(const std::string& bytes, std::string_view prefix, bool ascii_only) {
  std::string out;
  RenderOptions options;
  options.ascii_only = ascii_only;
  rawtool::render::append_quoted_lines(out, Untrusted(bytes), prefix, options);
  return out;
}

std::string hex_dump(const std::string& bytes) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string s;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    s += {digits[b >> 4], digits[b & 0xF], ' '};
  }
  return s;
}

// One comparison with the reference. The input's bytes are written out only
// when the two differ: the walks below compare tens of thousands of inputs,
// and a hex dump made for each one that passes cost as much as the check.
void require_as_reference(const std::string& got, const std::string& want, const std::string& input, bool ascii_only,
                          std::string_view how, std::string_view prefix = {}) {
  if (got != want) {
    UNSCOPED_INFO("input bytes: " << hex_dump(input));
    UNSCOPED_INFO(how << " (prefix \"" << prefix << "\"), ascii_only: " << ascii_only);
  }
  REQUIRE(got == want);
}

// Every way the grammar is applied, each compared with the reference: both
// contexts, and quoted lines under prefixes from empty to longer than most.
void check_against_reference(const std::string& input) {
  using rawtool::test::reference_escape;
  using rawtool::test::reference_quote;
  for (bool ascii_only : {false, true}) {
    require_as_reference(escaped(input, EscapeContext::line, ascii_only),
                         reference_escape(input, EscapeContext::line, ascii_only), input, ascii_only, "line");
    require_as_reference(escaped(input, EscapeContext::cell, ascii_only),
                         reference_escape(input, EscapeContext::cell, ascii_only), input, ascii_only, "cell");
    for (std::string_view prefix : {"> "sv, ""sv, "fifteen bytes: "sv, "sixteen bytes:  "sv, "a prefix longer than thirty-two bytes: "sv}) {
      require_as_reference(quoted_with(input, prefix, ascii_only), reference_quote(input, prefix, ascii_only), input,
                           ascii_only, "quoted lines", prefix);
    }
  }
}

// Bytes and sequences that end a run of plain text: one of each kind, and
// sequences that are cut short or not well formed.
const std::vector<std::string> run_enders = {
    "\\"s, "\""s, "\n"s, "\r"s, "\t"s, std::string(1, '\0'), "\x1f"s, "\x7f"s, "\x80"s, "\xbf"s, "\xc0"s, "\xff"s,
    "\xc3\xa9"s, "\xc2\x85"s, "\xcc\x81"s, "\xe4\xb8\xad"s, "\xe2\x80\xae"s, "\xed\xa0\x80"s, "\xf0\x9f\x98\x80"s,
    "\xf3\xa0\x81\xa7"s, "\xf4\x90\x80\x80"s, "\xe2\x82"s, "\xf0\x9f\x98"s, "\xf0\x9f"s, "\n\n"s, "\n\xcc\x81"s,
};

// Plain text to place bytes in: one long line, and prose whose lines are
// shorter and longer than 32 bytes.
std::string plain_line(std::size_t length) { return std::string(length, 'a'); }

std::string prose(std::size_t length) {
  static const std::string lines = "Lines of prose, some short,\nand some a good deal longer than the others are,\nthen short.\n";
  std::string s;
  while (s.size() < length) s += lines;
  s.resize(length);
  return s;
}

}  // namespace

TEST_CASE("escaping writes exactly what the per-code-point definition writes", "[render][escape]") {
  for (const auto& fragment : fragments) check_against_reference(fragment);
  std::mt19937 rng(20261130);
  for (int i = 0; i < 5000; ++i) check_against_reference(random_input(rng));
  for (int b = 0; b < 256; ++b) check_against_reference(std::string(1, static_cast<char>(b)));
  check_against_reference("");
}

TEST_CASE("every byte value at every offset of plain text and of prose is escaped as the definition says", "[render][escape]") {
  for (const auto& background : {plain_line(100), prose(100)}) {
    for (unsigned value = 0; value < 256; ++value) {
      for (std::size_t at = 0; at < background.size(); ++at) {
        std::string input = background;
        input[at] = static_cast<char>(value);
        check_against_reference(input);
      }
    }
  }
}

TEST_CASE("every kind of sequence at every offset of plain text and of prose is escaped as the definition says", "[render][escape]") {
  for (const auto& background : {plain_line(200), prose(200)}) {
    for (const auto& ender : run_enders) {
      for (std::size_t at = 0; at + ender.size() <= background.size(); ++at) {
        std::string input = background;
        input.replace(at, ender.size(), ender);
        check_against_reference(input);
      }
    }
  }
  for (std::size_t length = 0; length <= 300; ++length) {
    check_against_reference(plain_line(length));
    check_against_reference(prose(length));
  }
}

TEST_CASE("text copied as it is between two escapes comes out whole at every length", "[render][escape]") {
  for (std::size_t length = 0; length <= 140; ++length) {
    for (const std::string& edge : {"\\"s, "\xe2\x80\xae"s, "\n"s, "\xc3\xa9"s}) {
      check_against_reference(edge + std::string(length, 'x') + edge);
      check_against_reference(std::string(length, 'x') + edge + std::string(length, 'y'));
      check_against_reference(edge + prose(length) + edge);
    }
  }
}

TEST_CASE("lines of every length are quoted as the definition says", "[render][escape]") {
  // Lines of each length from 0 to 140, so that line ends fall at every
  // offset; then the same text with a byte to escape at each of the first
  // 200 offsets.
  for (std::size_t length = 0; length <= 140; ++length) {
    std::string lines;
    while (lines.size() < 400) lines += std::string(length, 'l') + "\n";
    check_against_reference(lines);
    if (length % 7 != 3) continue;
    for (const std::string& odd : {"\\"s, "\x7f"s, "\xcc\x81"s, "\xe2\x80"s, "\xc3\xa9"s}) {
      for (std::size_t at = 0; at < 200; ++at) {
        std::string input = lines;
        input.replace(at, odd.size(), odd);
        check_against_reference(input);
      }
    }
  }
}

TEST_CASE("a sequence cut short by the end of the input is escaped byte by byte, at every length", "[render][escape]") {
  // Nothing past the end of the input is read as the sequence's continuation.
  for (const std::string& cut : {"\xe2\x82"s, "\xf0\x9f\x98"s, "\xf0\x9f"s, "\xc3"s, "\xe4\xb8"s, "\xf4\x8f\xbf"s}) {
    for (std::size_t length = 0; length <= 80; ++length) {
      check_against_reference(plain_line(length) + cut);
      check_against_reference(prose(length) + cut);
    }
  }
  // The same sequences whole end exactly at the end of the input.
  for (const std::string& whole : {"\xe2\x82\xac"s, "\xf0\x9f\x98\x80"s, "\xc3\xa9"s, "\xf3\xa0\x81\xa7"s}) {
    for (std::size_t length = 0; length <= 80; ++length) check_against_reference(plain_line(length) + whole);
  }
}

TEST_CASE("a combining mark is escaped at the start of every quoted line, wherever the line starts", "[render][escape]") {
  for (std::size_t length = 0; length <= 140; ++length) {
    const std::string input = prose(length) + "\n\xcc\x81x\n\xcc\x81";
    check_against_reference(input);
    CHECK(quoted(input).find("\n> \\u{0301}x\n> \\u{0301}\n") != std::string::npos);
  }
}

TEST_CASE("values far larger than a screenful are escaped as the definition says", "[render][escape]") {
  // Hostile text, prose and long lines, each a few hundred kilobytes, so that
  // output of every kind passes through more than any fixed buffer holds.
  std::mt19937 rng(20261201);
  std::string hostile;
  while (hostile.size() < 300000) hostile += random_input(rng);
  check_against_reference(hostile);
  check_against_reference(prose(300000));
  check_against_reference(plain_line(300000) + "\n" + plain_line(5000) + "\x7f");
}

TEST_CASE("escaping appends to what the output already holds", "[render][escape]") {
  RenderOptions options;
  std::string out = "kept: ";
  rawtool::render::append_escaped(out, Untrusted("a\tb"s), EscapeContext::cell, options);
  CHECK(out == "kept: a\\tb");
  rawtool::render::append_quoted_lines(out, Untrusted("x\ny"s), "> ", options);
  CHECK(out == "kept: a\\tb> x\n> y\n");
}
