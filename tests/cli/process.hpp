#pragma once

// Runs the real `rawtool` binary as a child process, the way a person or a
// gateway does, and collects everything it wrote.

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace rawtool::test {

struct RunOptions {
  std::string stdin_bytes;
  /// Keep stdin open after stdin_bytes (RunningRawtool::close_stdin ends it);
  /// by default it is closed once they are written.
  bool keep_stdin_open = false;
  /// Variables to set (a value) or remove (nullopt) in the child's environment.
  std::vector<std::pair<std::string, std::optional<std::string>>> env;
  /// Give the child a pseudo-terminal as stdout instead of a pipe.
  bool stdout_is_terminal = false;
  /// Give the child a pseudo-terminal as stderr instead of a pipe, as its
  /// controlling terminal (the child leads a session of its own): a Ctrl-C
  /// typed there (RunningRawtool::type) interrupts it as at a shell. Output
  /// post-processing is off, so its bytes arrive as written.
  bool stderr_is_terminal = false;
  /// With stderr_is_terminal: stdin is that terminal too (stdin_bytes are not sent).
  bool stdin_is_terminal = false;
  /// A program that starts the binary: the child runs these words (found on
  /// PATH), then the binary's path and the arguments. Empty: the binary runs
  /// directly.
  std::vector<std::string> launcher;
  /// The child's working folder; empty: the test's.
  std::filesystem::path working_folder;
};

struct RunResult {
  int exit_status = -1;  ///< the exit status, or -1 when killed by a signal
  int term_signal = 0;   ///< the signal that killed it, or 0
  std::string out;
  std::string err;
};

/// The path of the rawtool binary in this build tree.
std::filesystem::path rawtool_binary();

/// A rawtool process that a test acts on while it runs. Its output is read
/// while the test waits; the destructor kills it if it still runs.
class RunningRawtool {
public:
  RunningRawtool(const std::vector<std::string>& args, const RunOptions& options);
  ~RunningRawtool();
  RunningRawtool(const RunningRawtool&) = delete;
  RunningRawtool& operator=(const RunningRawtool&) = delete;

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  /// What it wrote so far (out and err; exit_status is -1 until it ends).
  [[nodiscard]] const RunResult& so_far() const noexcept { return result_; }
  /// Reads its output until `done(so_far())` holds (true) or `timeout` passes
  /// or it ends without it (false).
  bool wait_for(const std::function<bool(const RunResult&)>& done, std::chrono::milliseconds timeout);
  /// Writes to its stdin (which must be open).
  void write_stdin(std::string_view bytes);
  void close_stdin();
  /// Bytes typed on its terminal (stderr_is_terminal): "\x03" is Ctrl-C.
  void type(std::string_view keys);
  void signal(int signo);
  /// Reads until it exits (killed after `timeout`) and returns everything.
  RunResult finish(std::chrono::seconds timeout = std::chrono::seconds(120));

private:
  /// One poll of the pipes, at most `wait` long. False once every output is closed.
  bool pump(std::chrono::milliseconds wait);

  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int terminal_fd_ = -1;  ///< the master of the stderr terminal, for typing
  bool out_is_terminal_ = false;
  bool err_is_terminal_ = false;
  std::string pending_stdin_;
  bool close_stdin_when_written_ = true;
  bool exited_ = false;
  int wait_status_ = 0;
  RunResult result_;
};

/// Runs rawtool with `args`; kills it after 120 s.
RunResult run_rawtool(const std::vector<std::string>& args, const RunOptions& options = {});

/// A fresh empty folder under the system temp folder, removed on destruction.
class ScratchFolder {
public:
  ScratchFolder();
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

private:
  std::filesystem::path path_;
};

/// Options for a child that sees no database from the test's environment
/// (RAWTOOL_DATABASE_URL and the PG* variables removed, NO_COLOR too, and each
/// of `also_removed`) and keeps its default operator log under `state_home`
/// (XDG_STATE_HOME), never in the home of whoever runs the tests.
RunOptions isolated_env(const std::filesystem::path& state_home, std::initializer_list<const char*> also_removed = {});

/// Writes `text` to `file`.
void write_file(const std::filesystem::path& file, std::string_view text);

}  // namespace rawtool::test
