#include "lib/detail/log.hpp"

#include <rawtool/config.hpp>
#include <rawtool/render/json.hpp>

#include "lib/detail/crypto.hpp"

#include <array>
#include <cerrno>
#include <ctime>
#include <mutex>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

namespace rawtool {

std::string_view log_level_name(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::error: return "error";
    case LogLevel::warn: return "warn";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
  }
  return "error";
}

std::optional<LogLevel> log_level_from_name(std::string_view name) noexcept {
  for (LogLevel level : {LogLevel::error, LogLevel::warn, LogLevel::info, LogLevel::debug}) {
    if (log_level_name(level) == name) return level;
  }
  return std::nullopt;
}

std::string_view log_destination_name(LogDestination destination) noexcept {
  switch (destination) {
    case LogDestination::file: return "file";
    case LogDestination::syslog: return "syslog";
    case LogDestination::standard_error: return "stderr";
  }
  return "stderr";
}

namespace {

constexpr std::array<std::string_view, 5> stable_members = {"ts", "level", "component", "event", "pid"};

// Writes all of `bytes` to `fd`; the errno of the failure, or 0.
int write_all(int fd, std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    const ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return 0;
}

std::mutex& stderr_mutex() {
  static std::mutex mutex;
  return mutex;
}

int write_stderr_line(std::string_view line_with_newline) noexcept {
  std::lock_guard lock(stderr_mutex());
  return write_all(STDERR_FILENO, line_with_newline);
}

// A reference or digest member as rawtool wrote it (short, lower-case hex and
// '-'), or an empty string: anything else is not repeated.
std::string reference_member(const nlohmann::json& members, const char* key) {
  if (!members.is_object() || !members.contains(key)) return {};
  const nlohmann::json& value = members.at(key);
  if (!value.is_string()) return {};
  const auto& text = value.get_ref<const std::string&>();
  if (text.empty() || text.size() > 80) return {};
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-')) return {};
  }
  return text;
}

// A line that did not reach the log, reported in rawtool's words: which event
// and which reference, never its members.
void report_lost_line(std::string_view event, const nlohmann::json& members, std::string_view why) noexcept {
  try {
    std::string text = "rawtool: a line of the operator log was lost (event ";
    text += event;
    for (const char* key : {"reference", "withheld_sha256"}) {
      const std::string value = reference_member(members, key);
      if (value.empty()) continue;
      text += "; ";
      text += key;
      text += ' ';
      text += value;
    }
    text += "): ";
    text += why;
    text += '\n';
    (void)write_stderr_line(text);
  } catch (...) {
    (void)write_stderr_line("rawtool: a line of the operator log was lost\n");
  }
}

int syslog_priority(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::error: return LOG_ERR;
    case LogLevel::warn: return LOG_WARNING;
    case LogLevel::info: return LOG_INFO;
    case LogLevel::debug: return LOG_DEBUG;
  }
  return LOG_ERR;
}

}  // namespace

struct OperatorLog::Destination {
  LogDestination kind = LogDestination::standard_error;
  int fd = -1;  // the file, for LogDestination::file
  LogSink sink;

  ~Destination() {
    if (fd >= 0) ::close(fd);
  }

  // Returns an empty string on success, else why the line was lost.
  std::string deliver(LogLevel level, std::string& line) const {
    if (sink) {
      try {
        sink(line);
        return {};
      } catch (...) {
        // A sink that fails must not lose the line a reply's reference points at.
      }
      line.push_back('\n');
      const int error = write_stderr_line(line);
      return error == 0 ? std::string() : "the log sink failed and stderr could not be written";
    }
    switch (kind) {
      case LogDestination::syslog:
        // The line is ASCII (render::dump escapes the rest) and is data, never the format.
        ::syslog(syslog_priority(level), "%s", line.c_str());
        return {};
      case LogDestination::file: {
        // One write(2) on O_APPEND puts the line at the end whole. Only a
        // short write (a full disk, a signal) is continued, and only then can
        // another appender's line come between the two parts.
        line.push_back('\n');
        const int error = write_all(fd, line);
        if (error == 0) return {};
        return "the log file could not be written (" + std::generic_category().message(error) + ")";
      }
      case LogDestination::standard_error: {
        line.push_back('\n');
        const int error = write_stderr_line(line);
        return error == 0 ? std::string() : "stderr could not be written";
      }
    }
    return "no destination";
  }
};

std::string detail::rfc3339_utc(std::chrono::system_clock::time_point when) {
  const auto since_epoch = when.time_since_epoch();
  const auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since_epoch - seconds).count();
  const std::time_t t = static_cast<std::time_t>(seconds.count());
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  std::array<char, 40> buffer{};
  const int n = std::snprintf(buffer.data(), buffer.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", utc.tm_year + 1900,
                              utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(micros));
  return std::string(buffer.data(), n > 0 ? static_cast<std::size_t>(n) : 0);
}

std::shared_ptr<OperatorLog> OperatorLog::open(const LogConfig& config, LogSink sink) {
  auto destination = std::make_unique<Destination>();
  destination->kind = config.destination.value_or(LogDestination::standard_error);
  if (sink) {
    destination->sink = std::move(sink);
  } else if (destination->kind == LogDestination::file) {
    if (config.path.empty()) throw ConfigError("log.path", "is required when log.destination is \"file\"");
    const int fd = ::open(config.path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
      const int error = errno;
      throw ConfigError("log.path",
                        "cannot be opened for appending (" + std::generic_category().message(error) + ")");
    }
    destination->fd = fd;
  } else if (destination->kind == LogDestination::syslog) {
    // syslog(3) drops a line silently when nothing listens; say so at start instead.
    struct stat socket_info {};
    if (::stat(_PATH_LOG, &socket_info) != 0 || !S_ISSOCK(socket_info.st_mode)) {
      throw ConfigError("log.destination",
                        "is syslog, but " _PATH_LOG " is not a socket here: no syslog daemon or journal listens");
    }
    static std::once_flag opened;
    // The identity must outlive every syslog() call: a literal does.
    std::call_once(opened, [] { ::openlog("rawtool", LOG_PID | LOG_NDELAY, LOG_USER); });
  }
  return std::shared_ptr<OperatorLog>(new OperatorLog(config.level, std::move(destination)));
}

OperatorLog::OperatorLog(LogLevel level, std::unique_ptr<Destination> destination)
    : level_(level), destination_(std::move(destination)) {}

OperatorLog::~OperatorLog() = default;

std::string detail::format_log_line(std::chrono::system_clock::time_point when, LogLevel level,
                                    std::string_view component, std::string_view event, const nlohmann::json& members) {
  const std::string ts = rfc3339_utc(when);
  const std::string pid = std::to_string(static_cast<long long>(::getpid()));
  // The stable members first, in a fixed order, then the event's own.
  auto compose = [&](std::string_view name, const nlohmann::json& own) {
    std::string line = "{\"ts\":\"" + ts + "\",\"level\":\"" + std::string(log_level_name(level)) +
                       "\",\"component\":" + render::dump(nlohmann::json(component)) +
                       ",\"event\":" + render::dump(nlohmann::json(name)) + ",\"pid\":" + pid;
    const std::string body = own.is_object() ? render::dump(own) : std::string("{}");
    if (body.size() > 2) {
      line += ',';
      line.append(body, 1, body.size() - 2);
    }
    line += '}';
    return line;
  };

  std::string line;
  bool reserved = false;
  if (members.is_object()) {
    for (std::string_view key : stable_members) reserved = reserved || members.contains(key);
  }
  if (reserved) {
    nlohmann::json own = members;
    for (std::string_view key : stable_members) own.erase(std::string(key));
    line = compose(event, own);
  } else {
    line = compose(event, members);
  }
  if (line.size() <= max_log_line_bytes) return line;

  // Only a record built without render::to_log_json gets here. Its size and
  // digest are kept, and the reference a reply may point at; nothing is cut.
  nlohmann::json stand_in = {{"original_event", std::string(event)},
                             {"bytes", line.size()},
                             {"sha256", sha256_hex(line)},
                             {"explanation", "the record was larger than the longest log line and is not written"}};
  for (const char* key : {"reference", "withheld_sha256"}) {
    if (std::string value = reference_member(members, key); !value.empty()) stand_in[key] = std::move(value);
  }
  return compose("log_record_too_large", stand_in);
}

void OperatorLog::write(LogLevel level, std::string_view component, std::string_view event,
                        const nlohmann::json& members) const noexcept {
  if (!enabled(level)) return;
  try {
    std::string line = detail::format_log_line(std::chrono::system_clock::now(), level, component, event, members);
    const std::string problem = destination_->deliver(level, line);
    if (!problem.empty()) report_lost_line(event, members, problem);
  } catch (const std::bad_alloc&) {
    report_lost_line(event, members, "out of memory");
  } catch (...) {
    // render::dump refuses a string that is not UTF-8: a record built without
    // render::to_json / to_log_json. A broken invariant, reported as such.
    report_lost_line(event, members, "the record could not be serialised");
  }
}

}  // namespace rawtool
