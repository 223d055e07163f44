#pragma once

// Watches one library call from the command line while it runs: SIGINT and
// SIGTERM cancel it on the server, and on a terminal a progress line on
// stderr shows a statement that runs past a second.

#include <rawtool/tool.hpp>

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <signal.h>

namespace rawtool::cli {

/// True when stderr is a terminal that wants more than plain lines: not when
/// NO_COLOR is set (to anything) or TERM is "dumb".
[[nodiscard]] bool stderr_wants_progress();

/// The progress line for a call `elapsed_ms` into it (rawtool's words only).
[[nodiscard]] std::string progress_line(std::string_view command, std::int64_t elapsed_ms, std::uint64_t rows_read,
                                        std::uint64_t max_rows);

/// One call watched from the command line. While it lives, SIGINT and SIGTERM
/// are blocked in every thread but its own, which waits for them with
/// sigtimedwait: no code runs in a signal handler. The first signal cancels
/// the call (Cancellation::cancel: the call's stop, which holds at whatever
/// step the call is; the driver sends the server one cancel and ends a
/// backend that ignores it). A second
/// signal ends the process at once (exit status 128 + the signal), saying so
/// in one line. When `show_progress`, a line on stderr shows the elapsed time,
/// the rows read so far and the row cap once the call has run a second, and
/// is cleared when the call ends. Construct before the call, from the thread
/// that makes it, before any other thread is started by the call.
class CallWatch {
public:
  CallWatch(std::string_view command, Cancellation& cancellation, const CallProgress& progress, bool show_progress);
  /// Stops watching (as stop()).
  ~CallWatch();
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

  /// Ends the watch: joins the thread, clears the progress line, and takes any
  /// signal that came after the call returned as interrupting it too. Then
  /// restores the signal mask. Idempotent.
  void stop();

  /// The signal that interrupted the call (SIGINT or SIGTERM), if one did.
  /// Meaningful after stop().
  [[nodiscard]] std::optional<int> interrupted_by() const noexcept;

private:
  void run();
  void draw(std::string_view line);
  void clear_line();

  std::string command_;
  Cancellation& cancellation_;
  const CallProgress& progress_;
  bool show_progress_;
  sigset_t signals_{};
  sigset_t previous_mask_{};
  std::atomic<bool> stopping_{false};
  std::atomic<int> signal_{0};
  bool line_shown_ = false;  ///< the watch thread's, until it is joined
  bool stopped_ = false;
  std::thread thread_;
};

/// A reply, or the signal that interrupted the call that made it.
struct WatchedReply {
  Reply reply;
  std::optional<int> interrupted_by;
};

/// Makes one call (`call` with `options` plus a cancellation and a progress
/// of the watch's own) under a CallWatch. The progress line is shown when
/// stderr_wants_progress() and the operator log is not stderr (its lines
/// would run into it).
WatchedReply watched_call(std::string_view command, const LogConfig& log, CallOptions options,
                          const std::function<Reply(const CallOptions&)>& call);

/// The one line, in rawtool's words, that says a call was interrupted and
/// what became of its statement, read from the reply's structured half.
[[nodiscard]] std::string interruption_line(std::string_view command, int signo, const Reply& reply);

/// 128 + the signal: the exit status of a command a signal interrupted.
[[nodiscard]] inline int interrupted_exit_status(int signo) noexcept { return 128 + signo; }

/// "SIGINT" or "SIGTERM".
[[nodiscard]] std::string_view signal_name(int signo) noexcept;

}  // namespace rawtool::cli
