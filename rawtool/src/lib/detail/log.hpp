#pragma once

// The operator log's writer, shared by the library and the MCP server: one
// JSON object per line with stable members first, one write per line, to a
// file, syslog, stderr or an embedder's sink.

#include <rawtool/log.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace rawtool {
class Tool;
}

namespace rawtool::detail {

/// One operator log. Thread-safe: write() may be called from many threads at
/// once, and each line reaches its destination whole, in one call: write(2)
/// on a file opened with O_APPEND (so processes appending to one file do not
/// interleave lines), one syslog(3) call, or write(2) on stderr under a
/// process-wide lock.
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

  /// The line write() writes, without its newline: {"ts","level","component",
  /// "event","pid"} and then `members`; when that passes max_log_line_bytes, a
  /// "log_record_too_large" line in its place. Exposed for tests.
  static std::string format_line(std::chrono::system_clock::time_point when, LogLevel level,
                                 std::string_view component, std::string_view event, const nlohmann::json& members);

private:
  struct Destination;
  OperatorLog(LogLevel level, std::unique_ptr<Destination> destination);

  LogLevel level_;
  std::unique_ptr<Destination> destination_;
};

/// "2025-06-01T12:34:56.123456Z": RFC 3339, UTC, microseconds.
std::string rfc3339_utc(std::chrono::system_clock::time_point when);

/// What library code outside tool.cpp may reach inside a Tool.
struct ToolInternals {
  /// The Tool's operator log, for the MCP server's own events. Lives as long
  /// as the Tool.
  static const OperatorLog& log(const Tool& tool) noexcept;
};

}  // namespace rawtool::detail
