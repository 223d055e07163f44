#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace rawtool::detail {

/// Pragmas that only read, whatever their argument (a table or index name).
inline constexpr std::array<std::string_view, 20> read_only_pragmas{
    "table_info",    "table_xinfo",   "table_list",       "index_list",     "index_info",
    "index_xinfo",   "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check",
    "collation_list", "function_list", "module_list",     "pragma_list",    "database_list",
    "compile_options", "data_version", "page_count",      "freelist_count", "stats"};

/// Pragmas that read when given no argument and write when given one.
inline constexpr std::array<std::string_view, 12> readable_setting_pragmas{
    "user_version", "application_id", "schema_version", "page_size",   "encoding",      "journal_mode",
    "auto_vacuum",  "foreign_keys",   "cache_size",     "query_only",  "synchronous",   "max_page_count"};

/// Pragmas that, given an argument, change a setting of the whole process
/// rather than of the connection: refused in every mode.
inline constexpr std::array<std::string_view, 4> process_wide_pragmas{"hard_heap_limit", "soft_heap_limit",
                                                                      "temp_store_directory", "data_store_directory"};

/// Functions no statement may call: they reach the filesystem or load code.
inline constexpr std::array<std::string_view, 5> denied_functions{"load_extension", "readfile", "writefile", "edit",
                                                                  "fts3_tokenizer"};

/// True when `name` is in `list`, ignoring ASCII case as SQLite does.
template <std::size_t N>
bool name_in(std::string_view name, const std::array<std::string_view, N>& list) {
  return std::any_of(list.begin(), list.end(), [&](std::string_view entry) {
    return entry.size() == name.size() &&
           std::equal(entry.begin(), entry.end(), name.begin(), [](char a, char b) {
             return a == (b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
           });
  });
}

}  // namespace rawtool::detail
