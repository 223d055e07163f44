#pragma once

// The operator log: where rawtool writes what an operator may read and an
// agent must not (a certified failure's complaint under its reference, a raw
// reply the renderer withheld, a connection's complaint), and how much.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
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

/// One operator log: a Tool's (Tool::log), which a server built over the
/// Tool writes its own events to as well, as rawtool's MCP server does. Every
/// line is one JSON object with the stable members first ("ts", "level",
/// "component", "event", "pid"), then the event's own.
///
/// Thread-safe: write() may be called from many threads at once, and each
/// line reaches its destination whole, in one call: write(2) on a file opened
/// with O_APPEND (so processes appending to one file do not interleave
/// lines), one syslog(3) call, or write(2) on stderr under a process-wide lock.
class OperatorLog {
public:
  /// Opens what `config` names (stderr when it names nothing), or hands every
  /// line to `sink` instead when one is given (config.level still applies).
  /// Throws ConfigError naming "log.path" when the file cannot be opened for
  /// appending or a file destination has no path, and naming
  /// "log.destination" for syslog when nothing listens at /dev/log.
  static std::shared_ptr<OperatorLog> open(const LogConfig& config, LogSink sink = {});

  ~OperatorLog();
  OperatorLog(const OperatorLog&) = delete;
  OperatorLog& operator=(const OperatorLog&) = delete;

  /// True when a line at `level` is written.
  [[nodiscard]] bool enabled(LogLevel level) const noexcept { return level <= level_; }

  /// Writes one line, unless `level` is below the configured one. `members`
  /// is a JSON object of the event's own members (or null for none); any of
  /// the stable members' names in it are ignored. Untrusted text in it must
  /// have come through render::to_log_json. Never throws: a line that cannot
  /// be written is reported on stderr in rawtool's words, without its members.
  void write(LogLevel level, std::string_view component, std::string_view event,
             const nlohmann::json& members) const noexcept;

private:
  struct Destination;
  OperatorLog(LogLevel level, std::unique_ptr<Destination> destination);

  LogLevel level_;
  std::unique_ptr<Destination> destination_;
};

}  // namespace rawtool
