#pragma once

// The operator log: where rawtool writes what an operator may read and an
// agent must not (a certified failure's complaint under its reference, a raw
// reply the renderer withheld, a connection's complaint), and how much.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string_view>

namespace rawtool {

/// How much is logged. Each level includes the ones before it. Every event a
/// reply's reference (or withheld_sha256) points at is logged at `error`, so
/// no level setting drops a line a caller was told to look for.
enum class LogLevel {
  error,  ///< events a reply points at; internal errors
  warn,   ///< something odd that did not fail a call (a client's stray message)
  info,   ///< the MCP server starting and stopping (the default level)
  debug,  ///< one line per call: path, database, outcome, time
};

/// "error", "warn", "info" or "debug".
std::string_view log_level_name(LogLevel level) noexcept;
/// The level named `name` (as log_level_name writes it), or nullopt.
std::optional<LogLevel> log_level_from_name(std::string_view name) noexcept;

/// Where log lines go.
enum class LogDestination {
  file,            ///< appended to `LogConfig::path`, one write(2) per line
  syslog,          ///< syslog(3), identity "rawtool", facility LOG_USER
  standard_error,  ///< the process's stderr, one write(2) per line
};

/// "file", "syslog" or "stderr".
std::string_view log_destination_name(LogDestination destination) noexcept;

/// The configuration file's "log" object.
struct LogConfig {
  /// Not set: the program that opens the Tool decides. The library writes to
  /// stderr; the command line's query, certified and catalog write to a file
  /// under $XDG_STATE_HOME/rawtool (or ~/.local/state/rawtool); rawtool mcp
  /// writes to stderr, which MCP hosts keep in their own log.
  std::optional<LogDestination> destination;
  /// The file, for LogDestination::file: absolute once parsed (relative paths
  /// resolve against the configuration file's folder). Opened with O_APPEND,
  /// created with mode 0600 when missing.
  std::filesystem::path path;
  LogLevel level = LogLevel::info;
};

/// Receives one complete log line (a JSON object serialised with render::dump,
/// no trailing newline, at most max_log_line_bytes). Called from the thread
/// that logs; may be called from many threads at once. If it throws, the line
/// goes to stderr instead.
using LogSink = std::function<void(std::string_view line)>;

/// The longest line rawtool writes to the log, without its newline. Every
/// untrusted member of a record is bounded (render::to_log_json); a record
/// that would still be longer is replaced by one that says so (event
/// "log_record_too_large", keeping its reference) rather than cut.
inline constexpr std::size_t max_log_line_bytes = 65535;

}  // namespace rawtool
