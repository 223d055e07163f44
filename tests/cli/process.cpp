#include "process.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <tuple>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

namespace rawtool::test {

namespace {

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) fail("fcntl");
}

}  // namespace

std::filesystem::path rawtool_binary() {
  return std::filesystem::path(RAWTOOL_BINARY_DIR) / "rawtool" / "rawtool";
}

namespace {

/// A pseudo-terminal's master, and its slave's name.
std::pair<int, std::string> open_terminal() {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) fail("posix_openpt");
  const char* name = ::ptsname(master);
  if (name == nullptr) fail("ptsname");
  return {master, name};
}

}  // namespace

RunningRawtool::RunningRawtool(const std::vector<std::string>& args, const RunOptions& options)
    : out_is_terminal_(options.stdout_is_terminal),
      err_is_terminal_(options.stderr_is_terminal),
      pending_stdin_(options.stdin_bytes),
      close_stdin_when_written_(!options.keep_stdin_open) {
  std::array<int, 2> in_pipe{};
  std::array<int, 2> out_pipe{-1, -1};
  std::array<int, 2> err_pipe{-1, -1};
  if (::pipe(in_pipe.data()) != 0) fail("pipe");
  std::string out_slave;
  std::string err_slave;
  if (out_is_terminal_) {
    std::tie(out_fd_, out_slave) = open_terminal();
  } else if (::pipe(out_pipe.data()) != 0) {
    fail("pipe");
  }
  if (err_is_terminal_) {
    std::tie(err_fd_, err_slave) = open_terminal();
    terminal_fd_ = err_fd_;
  } else if (::pipe(err_pipe.data()) != 0) {
    fail("pipe");
  }

  const std::string binary = rawtool_binary().string();
  std::vector<std::string> argv_storage = options.launcher;
  argv_storage.push_back(binary);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ < 0) fail("fork");
  if (pid_ == 0) {
    ::dup2(in_pipe[0], STDIN_FILENO);
    if (out_is_terminal_) {
      const int slave = ::open(out_slave.c_str(), O_RDWR | O_NOCTTY);
      if (slave < 0) ::_exit(127);
      ::dup2(slave, STDOUT_FILENO);
    } else {
      ::dup2(out_pipe[1], STDOUT_FILENO);
    }
    if (err_is_terminal_) {
      // A session of its own, whose controlling terminal this is: the line
      // discipline turns a typed Ctrl-C into SIGINT for it, as a shell's does.
      if (::setsid() < 0) ::_exit(127);
      const int slave = ::open(err_slave.c_str(), O_RDWR);
      if (slave < 0) ::_exit(127);
      termios settings{};
      if (::tcgetattr(slave, &settings) == 0) {
        settings.c_oflag &= ~static_cast<tcflag_t>(OPOST);
        ::tcsetattr(slave, TCSANOW, &settings);
      }
      ::dup2(slave, STDERR_FILENO);
      if (options.stdin_is_terminal) ::dup2(slave, STDIN_FILENO);
    } else {
      ::dup2(err_pipe[1], STDERR_FILENO);
    }
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    for (const auto& [name, value] : options.env) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
    if (!options.working_folder.empty() && ::chdir(options.working_folder.c_str()) != 0) ::_exit(127);
    if (options.launcher.empty()) {
      ::execv(binary.c_str(), argv.data());
    } else {
      ::execvp(argv.front(), argv.data());
    }
    ::_exit(127);
  }

  ::close(in_pipe[0]);
  if (!out_is_terminal_) {
    ::close(out_pipe[1]);
    out_fd_ = out_pipe[0];
  }
  if (!err_is_terminal_) {
    ::close(err_pipe[1]);
    err_fd_ = err_pipe[0];
  }
  in_fd_ = in_pipe[1];
  set_nonblocking(in_fd_);
  set_nonblocking(out_fd_);
  set_nonblocking(err_fd_);
  // A pipe to a child that stopped reading must not kill the test.
  ::signal(SIGPIPE, SIG_IGN);
  if (pending_stdin_.empty() && close_stdin_when_written_) close_stdin();
}

RunningRawtool::~RunningRawtool() {
  if (!exited_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  for (int fd : {in_fd_, out_fd_, err_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void RunningRawtool::write_stdin(std::string_view bytes) {
  if (in_fd_ < 0) throw std::logic_error("stdin is closed");
  pending_stdin_.append(bytes);
}

void RunningRawtool::close_stdin() {
  close_stdin_when_written_ = true;
  if (pending_stdin_.empty() && in_fd_ >= 0) {
    ::close(in_fd_);
    in_fd_ = -1;
  }
}

void RunningRawtool::type(std::string_view keys) {
  if (terminal_fd_ < 0) throw std::logic_error("the process has no terminal to type on");
  while (!keys.empty()) {
    const ssize_t n = ::write(terminal_fd_, keys.data(), keys.size());
    if (n < 0 && errno != EINTR && errno != EAGAIN) fail("write to the terminal");
    if (n > 0) keys.remove_prefix(static_cast<std::size_t>(n));
  }
}

void RunningRawtool::signal(int signo) {
  if (!exited_) ::kill(pid_, signo);
}

bool RunningRawtool::pump(std::chrono::milliseconds wait) {
  if (out_fd_ < 0 && err_fd_ < 0) return false;
  std::array<pollfd, 3> fds{{{in_fd_, POLLOUT, 0}, {out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}}};
  if (pending_stdin_.empty()) fds[0].fd = -1;
  const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
  if (ready < 0 && errno != EINTR) fail("poll");
  if (in_fd_ >= 0 && (fds[0].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
    const ssize_t n = ::write(in_fd_, pending_stdin_.data(), pending_stdin_.size());
    if (n > 0) pending_stdin_.erase(0, static_cast<std::size_t>(n));
    if (n < 0 && errno != EAGAIN && errno != EINTR) pending_stdin_.clear();
    if (pending_stdin_.empty() && close_stdin_when_written_) close_stdin();
  }
  std::array<char, 65536> buffer{};
  for (std::size_t k = 1; k <= 2; ++k) {
    int& fd = k == 1 ? out_fd_ : err_fd_;
    std::string& sink = k == 1 ? result_.out : result_.err;
    if (fd < 0 || (fds[k].revents & (POLLIN | POLLERR | POLLHUP)) == 0) continue;
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n > 0) {
      sink.append(buffer.data(), static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      // A pseudo-terminal reports EIO once the child has closed its side.
      if (fd == terminal_fd_) terminal_fd_ = -1;
      ::close(fd);
      fd = -1;
    }
  }
  if (!exited_ && ::waitpid(pid_, &wait_status_, WNOHANG) == pid_) exited_ = true;
  if (exited_) {
    // A terminal's master may not see the end while we hold it: once the
    // child is gone and the terminal is drained, stop reading it.
    for (std::size_t k = 1; k <= 2; ++k) {
      int& fd = k == 1 ? out_fd_ : err_fd_;
      const bool terminal = k == 1 ? out_is_terminal_ : err_is_terminal_;
      if (fd >= 0 && terminal && (fds[k].revents & POLLIN) == 0) {
        if (fd == terminal_fd_) terminal_fd_ = -1;
        ::close(fd);
        fd = -1;
      }
    }
  }
  return out_fd_ >= 0 || err_fd_ >= 0;
}

bool RunningRawtool::wait_for(const std::function<bool(const RunResult&)>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done(result_)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    if (!pump(std::min(left, std::chrono::milliseconds(50))) && exited_) return done(result_);
  }
  return true;
}

RunResult RunningRawtool::finish(std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (pump(std::chrono::milliseconds(100)) || in_fd_ >= 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      break;
    }
    if (out_fd_ < 0 && err_fd_ < 0) break;
  }
  if (in_fd_ >= 0) {
    ::close(in_fd_);
    in_fd_ = -1;
  }
  if (!exited_ && ::waitpid(pid_, &wait_status_, 0) == pid_) exited_ = true;
  if (WIFEXITED(wait_status_)) {
    result_.exit_status = WEXITSTATUS(wait_status_);
  } else if (WIFSIGNALED(wait_status_)) {
    result_.term_signal = WTERMSIG(wait_status_);
  }
  return result_;
}

RunResult run_rawtool(const std::vector<std::string>& args, const RunOptions& options) {
  return RunningRawtool(args, options).finish();
}

ScratchFolder::ScratchFolder() {
  std::string pattern = (std::filesystem::temp_directory_path() / "rawtool-cli-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) fail("mkdtemp");
  path_ = pattern;
}

ScratchFolder::~ScratchFolder() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void write_file(const std::filesystem::path& file, std::string_view text) {
  std::ofstream stream(file, std::ios::binary);
  stream.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!stream) throw std::runtime_error("cannot write " + file.string());
}

RunOptions isolated_env(const std::filesystem::path& state_home, std::initializer_list<const char*> also_removed) {
  RunOptions options;
  for (const char* name : {"RAWTOOL_DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER",
                           "PGSERVICE", "NO_COLOR", "COLUMNS"}) {
    options.env.emplace_back(name, std::nullopt);
  }
  for (const char* name : also_removed) options.env.emplace_back(name, std::nullopt);
  options.env.emplace_back("XDG_STATE_HOME", state_home.string());
  return options;
}

}  // namespace rawtool::test
