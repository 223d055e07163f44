// The generated tables, pinned against facts of the Unicode Character
// Database, errcodes.txt and sqlite3.h that the renderer's contract names,
// and the escape set against the oracle's own reading of the Unicode data files.
#include "detail/tables.hpp"
#include "oracle.hpp"

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

using rawtool::render::detail::code_point_class;
using rawtool::render::detail::CodePointClass;
using rawtool::test::code_point_rule;
using rawtool::test::CodePointRule;

TEST_CASE("the escape set holds the categories and properties the contract names", "[render][tables]") {
  const char32_t escape[] = {
      0x00, 0x1F, 0x7F, 0x80, 0x85, 0x9B, 0x9F,  // Cc
      0xAD, 0x200B, 0x200E, 0x202A, 0x202E, 0x2066, 0x2069, 0xFEFF, 0xE0001, 0xE0020, 0xE007F,  // Cf
      0xE000, 0xF8FF, 0xF0000, 0x10FFFD,  // Co
      0x0378, 0xFFFE, 0xFFFF, 0x10FFFF,   // Cn
      0x2028, 0x2029,                     // Zl, Zp
      0xA0, 0x2000, 0x200A, 0x3000,       // Zs other than U+0020
      0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0xFE00, 0xFE0F, 0xE0100, 0xE01EF, 0x180B,  // Default_Ignorable
  };
  for (char32_t cp : escape) {
    INFO("U+" << std::hex << static_cast<unsigned>(cp));
    CHECK(code_point_class(cp) == CodePointClass::escape);
    CHECK(code_point_rule(cp) == CodePointRule::escaped);
  }
  CHECK(code_point_class(0x110000) == CodePointClass::escape);
}

TEST_CASE("letters, marks and symbols that render as blank are in the escape set, their visible neighbours are not", "[render][tables]") {
  // Named "... BLANK" or "... FILLER" in UnicodeData.txt: U+2800 BRAILLE
  // PATTERN BLANK, the Hangul fillers, the Egyptian full and half blanks, the
  // Khitan small script filler (a mark, so escaped even inside a line).
  for (char32_t cp : {char32_t{0x2800}, char32_t{0x115F}, char32_t{0x1160}, char32_t{0x3164}, char32_t{0xFFA0}, char32_t{0x13441}, char32_t{0x13442},
                      char32_t{0x16FE4}}) {
    INFO("U+" << std::hex << static_cast<unsigned>(cp));
    CHECK(code_point_class(cp) == CodePointClass::escape);
    CHECK(code_point_rule(cp) == CodePointRule::escaped);
  }
  // U+2801 BRAILLE PATTERN DOTS-1, U+2422 BLANK SYMBOL and U+2423 OPEN BOX
  // are drawn; U+A8F9 DEVANAGARI GAP FILLER is punctuation with a glyph.
  for (char32_t cp : {char32_t{0x2801}, char32_t{0x28FF}, char32_t{0x2422}, char32_t{0x2423}, char32_t{0xA8F9}, char32_t{0x13443}}) {
    INFO("U+" << std::hex << static_cast<unsigned>(cp));
    CHECK(code_point_class(cp) == CodePointClass::plain);
    CHECK(code_point_rule(cp) == CodePointRule::copied);
  }
}

TEST_CASE("ordinary text and the plain space are not in the escape set", "[render][tables]") {
  for (char32_t cp : {char32_t{0x20}, char32_t{0x41}, char32_t{0x7E}, char32_t{0xE9}, char32_t{0x0416}, char32_t{0x4E2D}, char32_t{0x1F600},
                      char32_t{0x1F3F4}, char32_t{0xFF1E}, char32_t{0x05D0}, char32_t{0x0627}}) {
    INFO("U+" << std::hex << static_cast<unsigned>(cp));
    CHECK(code_point_class(cp) == CodePointClass::plain);
    CHECK(code_point_rule(cp) == CodePointRule::copied);
  }
}

TEST_CASE("combining marks are classed apart", "[render][tables]") {
  for (char32_t cp : {char32_t{0x0300}, char32_t{0x0301}, char32_t{0x20DD}, char32_t{0x0903}, char32_t{0x1AB0}}) {
    INFO("U+" << std::hex << static_cast<unsigned>(cp));
    CHECK(code_point_class(cp) == CodePointClass::combining);
    CHECK(code_point_rule(cp) == CodePointRule::escaped_at_start);
  }
}

TEST_CASE("the generated escape set and the oracle's reading of the Unicode data files agree on every code point", "[render][tables]") {
  // The oracle parses DerivedGeneralCategory.txt and DerivedCoreProperties.txt
  // itself, so a generator that misreads them, or a table built from other
  // files, fails here.
  std::string disagreements;
  std::size_t count = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const CodePointRule expected = code_point_rule(cp);
    const CodePointClass actual = code_point_class(cp);
    const bool agree = (expected == CodePointRule::copied && actual == CodePointClass::plain) ||
                       (expected == CodePointRule::escaped && actual == CodePointClass::escape) ||
                       (expected == CodePointRule::escaped_at_start && actual == CodePointClass::combining);
    if (agree) continue;
    ++count;
    if (count <= 20) {
      std::ostringstream line;
      line << "\nU+" << std::hex << std::uppercase << static_cast<unsigned>(cp) << ": table class " << static_cast<int>(actual) << ", oracle rule "
           << static_cast<int>(expected);
      disagreements += line.str();
    }
  }
  INFO("the first disagreements:" << disagreements);
  CHECK(count == 0);
}

TEST_CASE("SQLSTATE and SQLite code names come from the engines' own lists", "[render][tables]") {
  CHECK(rawtool::render::detail::sqlstate_condition("22P02") == "invalid_text_representation");
  CHECK(rawtool::render::detail::sqlstate_condition("23505") == "unique_violation");
  CHECK(rawtool::render::detail::sqlstate_condition("P0001") == "raise_exception");
  CHECK(rawtool::render::detail::sqlstate_condition("ZZ999").empty());
  CHECK(rawtool::render::detail::sqlite_code_name(1) == "SQLITE_ERROR");
  CHECK(rawtool::render::detail::sqlite_code_name(275) == "SQLITE_CONSTRAINT_CHECK");
  CHECK(rawtool::render::detail::sqlite_code_name(2067) == "SQLITE_CONSTRAINT_UNIQUE");
  CHECK(rawtool::render::detail::sqlite_code_name(0x7777).empty());
}
