#pragma once

// Runs the real `rawtool` binary as a child process, the way a person or a
// gateway does, and collects everything it wrote.

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rawtool::test {

struct RunOptions {
  std::string stdin_bytes;
  /// Variables to set (a value) or remove (nullopt) in the child's environment.
  std::vector<std::pair<std::string, std::optional<std::string>>> env;
  /// Give the child a pseudo-terminal as stdout instead of a pipe.
  bool stdout_is_terminal = false;
  /// A program that starts the binary: the child runs these words (found on
  /// PATH), then the binary's path and the arguments. Empty: the binary runs
  /// directly.
  std::vector<std::string> launcher;
};

struct RunResult {
  int exit_status = -1;  ///< the exit status, or -1 when killed by a signal
  std::string out;
  std::string err;
};

/// The path of the rawtool binary in this build tree.
std::filesystem::path rawtool_binary();

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

/// Writes `text` to `file`.
void write_file(const std::filesystem::path& file, std::string_view text);

}  // namespace rawtool::test
