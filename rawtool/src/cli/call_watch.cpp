#include "cli/call_watch.hpp"

#include "cli/output.hpp"

#include <rawtool/render/escape.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace rawtool::cli {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// How often the watch looks at the call: the progress line's refresh.
constexpr milliseconds tick{100};
/// A statement shows a progress line once it has run this long.
constexpr milliseconds progress_after{1000};

/// "1234567" as "1,234,567".
std::string grouped(std::uint64_t value) {
  std::string digits = std::to_string(value);
  for (auto i = static_cast<std::ptrdiff_t>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

std::size_t terminal_columns() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 0;
}

}  // namespace

bool stderr_wants_progress() {
  if (::isatty(STDERR_FILENO) != 1) return false;
  if (std::getenv("NO_COLOR") != nullptr) return false;  // NOLINT(concurrency-mt-unsafe): read before threads start
  const char* term = std::getenv("TERM");                 // NOLINT(concurrency-mt-unsafe)
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

std::string progress_line(std::string_view command, std::int64_t elapsed_ms, std::uint64_t rows_read,
                          std::uint64_t max_rows) {
  std::string line = "rawtool: ";
  line += command;
  line += ": running ";
  line += std::to_string(elapsed_ms / 1000);
  line += '.';
  line += std::to_string((elapsed_ms % 1000) / 100);
  line += " s, ";
  line += grouped(rows_read);
  line += rows_read == 1 ? " row read so far" : " rows read so far";
  if (max_rows > 0) {
    line += " (row cap ";
    line += grouped(max_rows);
    line += ')';
  }
  return line;
}

std::string_view signal_name(int signo) noexcept {
  switch (signo) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

CallWatch::CallWatch(std::string_view command, Cancellation& cancellation, const CallProgress& progress,
                     bool show_progress)
    : command_(command), cancellation_(cancellation), progress_(progress), show_progress_(show_progress) {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  // Blocked here, so in every thread started from now on; only the watch
  // thread takes them, with sigtimedwait.
  pthread_sigmask(SIG_BLOCK, &signals_, &previous_mask_);
  thread_ = std::thread([this] { run(); });
}

CallWatch::~CallWatch() { stop(); }

void CallWatch::stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  clear_line();
  // A signal that came after the call returned interrupted the command all
  // the same: the reply is not shown.
  const timespec now{0, 0};
  siginfo_t info{};
  for (int signo = 0; (signo = sigtimedwait(&signals_, &info, &now)) > 0;) {
    int expected = 0;
    signal_.compare_exchange_strong(expected, signo);
  }
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
  if (signal_.load() != 0 && ::isatty(STDERR_FILENO) == 1) {
    // The terminal echoed the Ctrl-C ("^C") where the cursor was: the line
    // that says what happened starts on a line of its own.
    const char* term = std::getenv("TERM");  // NOLINT(concurrency-mt-unsafe): the watch thread has ended
    write_all(STDERR_FILENO, term != nullptr && std::strcmp(term, "dumb") == 0 ? "\n" : "\r\x1b[K");
  }
}

std::optional<int> CallWatch::interrupted_by() const noexcept {
  const int signo = signal_.load();
  if (signo == 0) return std::nullopt;
  return signo;
}

void CallWatch::run() {
  const auto watch_started = Clock::now();
  std::string shown;
  while (!stopping_.load()) {
    const timespec wait{0, std::chrono::duration_cast<std::chrono::nanoseconds>(tick).count()};
    siginfo_t info{};
    const int signo = sigtimedwait(&signals_, &info, &wait);
    const auto now = Clock::now();
    if (signo > 0) {
      if (signal_.load() != 0) {
        // Asked twice: the user does not want to wait for the server.
        clear_line();
        write_all(STDERR_FILENO, "rawtool: " + command_ + ": interrupted again by " + std::string(signal_name(signo)) +
                                     "; exiting without waiting for the server\n");
        ::_exit(interrupted_exit_status(signo));
      }
      signal_.store(signo);
      // The call's stop: it holds from now on, whatever step the call is at.
      cancellation_.cancel();
      if (line_shown_) draw("rawtool: " + command_ + ": cancelling the statement (" + std::string(signal_name(signo)) + ")");
      continue;
    }
    if (signal_.load() != 0) continue;
    if (!show_progress_ || progress_.phase() != CallProgress::Phase::running) continue;
    const auto started = progress_.started() > watch_started ? progress_.started() : watch_started;
    const auto elapsed = std::chrono::duration_cast<milliseconds>(now - started);
    if (elapsed < progress_after) continue;
    std::string line = progress_line(command_, elapsed.count(), progress_.rows_read(), progress_.max_rows());
    if (line != shown) {
      draw(line);
      shown = std::move(line);
    }
  }
}

void CallWatch::draw(std::string_view line) {
  // One line that never wraps, or the carriage return could not take it back.
  const std::size_t columns = terminal_columns();
  if (columns > 1 && line.size() >= columns) line = line.substr(0, columns - 1);
  std::string text = "\r";
  text += line;
  text += "\x1b[K";
  write_all(STDERR_FILENO, text);
  line_shown_ = true;
}

void CallWatch::clear_line() {
  if (!line_shown_) return;
  write_all(STDERR_FILENO, "\r\x1b[K");
  line_shown_ = false;
}

WatchedReply watched_call(std::string_view command, const LogConfig& log, CallOptions options,
                          const std::function<Reply(const CallOptions&)>& call) {
  Cancellation cancellation;
  CallProgress progress;
  options.cancellation = &cancellation;
  options.progress = &progress;
  const bool log_on_stderr = log.destination.value_or(LogDestination::standard_error) == LogDestination::standard_error;
  CallWatch watch(command, cancellation, progress, stderr_wants_progress() && !log_on_stderr);
  WatchedReply watched{call(options), std::nullopt};
  watch.stop();
  watched.interrupted_by = watch.interrupted_by();
  return watched;
}

std::string interruption_line(std::string_view command, int signo, const Reply& reply) {
  std::string line = "rawtool: ";
  line += command;
  line += ": interrupted by ";
  line += signal_name(signo);
  const nlohmann::json& s = reply.structured();
  const auto member = [&](const char* name) {
    return s.contains(name) && s.at(name).is_string() ? s.at(name).get<std::string>() : std::string();
  };
  if (member("kind") == "refusal" && member("reason") == "cancelled") {
    // The refusal's explanation is rawtool's own words (a Trusted text);
    // escaped all the same, as everything read back from a reply is.
    line += ": ";
    render::append_escaped(line, Untrusted(member("explanation")), render::EscapeContext::line, render::RenderOptions{});
  } else if (member("kind") == "certified_status" && member("status") == "refused") {
    line += "; the call was cancelled";
  } else {
    line += "; the statement had already ended, and its reply is not shown";
  }
  line += '\n';
  return line;
}

}  // namespace rawtool::cli
