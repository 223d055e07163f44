#pragma once

// The renderer's data tables, generated at build time from the Unicode
// Character Database, PostgreSQL's errcodes.txt and sqlite3.h (see
// render/tools/generate_tables.cpp). Private to render/ and test support.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rawtool::render::detail {

/// What the escape grammar does with a code point.
enum class CodePointClass : std::uint8_t {
  plain = 0,      ///< copied as it is
  escape = 1,     ///< always escaped: Cc Cf Co Cn Cs Zl Zp, Zs but U+0020, Default_Ignorable_Code_Point,
                  ///< L*/M*/S* named "... BLANK"/"... FILLER" in UnicodeData.txt
  combining = 2,  ///< a combining mark (Mn Mc Me): escaped at the start of a line or cell only
};

extern const std::uint16_t unicode_stage1[0x110000 >> 7];
extern const std::uint8_t unicode_stage2[];

/// The class of `cp`, which must be at most U+10FFFF. Two loads, no branch on
/// the data: this sits on the renderer's per-character path.
inline CodePointClass code_point_class_of_scalar(char32_t cp) noexcept {
  const std::size_t block = unicode_stage1[cp >> 7];
  return static_cast<CodePointClass>(unicode_stage2[(block << 7) | (cp & 0x7F)]);
}

/// The class of `cp`; anything past U+10FFFF is `escape`.
inline CodePointClass code_point_class(char32_t cp) noexcept {
  if (cp > 0x10FFFF) return CodePointClass::escape;
  return code_point_class_of_scalar(cp);
}

extern const std::uint16_t display_width_stage1[0x110000 >> 7];
extern const std::uint8_t display_width_stage2[];

/// The terminal columns `cp` takes when shown as it is: 2 for East Asian Wide
/// and Fullwidth, 0 for non-spacing and enclosing marks, else 1. Anything
/// past U+10FFFF is 1 (it is escaped, never shown as it is).
inline std::size_t display_width(char32_t cp) noexcept {
  if (cp > 0x10FFFF) return 1;
  const std::size_t block = display_width_stage1[cp >> 7];
  return display_width_stage2[(block << 7) | (cp & 0x7F)];
}

struct SqlstateName {
  char code[6];
  const char* name;
};
extern const SqlstateName sqlstate_names[];
extern const std::size_t sqlstate_name_count;

struct SqliteCodeName {
  long code;
  const char* name;
};
extern const SqliteCodeName sqlite_code_names[];
extern const std::size_t sqlite_code_name_count;

/// The condition name of a SQLSTATE PostgreSQL defines ("invalid_text_representation"),
/// or an empty view when the code is not in errcodes.txt.
std::string_view sqlstate_condition(std::string_view code) noexcept;

/// The macro name of an SQLite (extended) result code ("SQLITE_CONSTRAINT_CHECK"),
/// or an empty view when sqlite3.h defines no such code.
std::string_view sqlite_code_name(long code) noexcept;

}  // namespace rawtool::render::detail
