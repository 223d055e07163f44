#include "process.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
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

RunResult run_rawtool(const std::vector<std::string>& args, const RunOptions& options) {
  std::array<int, 2> in_pipe{};
  std::array<int, 2> out_pipe{};
  std::array<int, 2> err_pipe{};
  if (::pipe(in_pipe.data()) != 0 || ::pipe(err_pipe.data()) != 0) fail("pipe");
  int out_master = -1;
  std::string out_slave_name;
  if (options.stdout_is_terminal) {
    out_master = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (out_master < 0 || ::grantpt(out_master) != 0 || ::unlockpt(out_master) != 0) fail("posix_openpt");
    const char* name = ::ptsname(out_master);
    if (name == nullptr) fail("ptsname");
    out_slave_name = name;
  } else if (::pipe(out_pipe.data()) != 0) {
    fail("pipe");
  }

  const std::string binary = rawtool_binary().string();
  std::vector<std::string> argv_storage = options.launcher;
  argv_storage.push_back(binary);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    ::dup2(in_pipe[0], STDIN_FILENO);
    if (options.stdout_is_terminal) {
      const int slave = ::open(out_slave_name.c_str(), O_RDWR | O_NOCTTY);
      if (slave < 0) ::_exit(127);
      ::dup2(slave, STDOUT_FILENO);
    } else {
      ::dup2(out_pipe[1], STDOUT_FILENO);
    }
    ::dup2(err_pipe[1], STDERR_FILENO);
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    for (const auto& [name, value] : options.env) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
    if (options.launcher.empty()) {
      ::execv(binary.c_str(), argv.data());
    } else {
      ::execvp(argv.front(), argv.data());
    }
    ::_exit(127);
  }

  ::close(in_pipe[0]);
  ::close(err_pipe[1]);
  int out_fd = out_master;
  if (!options.stdout_is_terminal) {
    ::close(out_pipe[1]);
    out_fd = out_pipe[0];
  }
  int in_fd = in_pipe[1];
  set_nonblocking(in_fd);
  set_nonblocking(out_fd);
  set_nonblocking(err_pipe[0]);
  // A pipe to a child that stopped reading must not kill the test.
  ::signal(SIGPIPE, SIG_IGN);

  RunResult result;
  std::size_t written = 0;
  if (options.stdin_bytes.empty()) {
    ::close(in_fd);
    in_fd = -1;
  }
  int err_fd = err_pipe[0];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool child_done = false;
  int wait_status = 0;
  while (out_fd >= 0 || err_fd >= 0 || in_fd >= 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      break;
    }
    std::array<pollfd, 3> fds{{{in_fd, POLLOUT, 0}, {out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}}};
    const int ready = ::poll(fds.data(), fds.size(), 100);
    if (ready < 0 && errno != EINTR) fail("poll");
    if (in_fd >= 0 && (fds[0].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      const ssize_t n = ::write(in_fd, options.stdin_bytes.data() + written, options.stdin_bytes.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if (n < 0 && errno != EAGAIN && errno != EINTR) written = options.stdin_bytes.size();
      if (written == options.stdin_bytes.size()) {
        ::close(in_fd);
        in_fd = -1;
      }
    }
    std::array<char, 65536> buffer{};
    for (std::size_t k = 1; k <= 2; ++k) {
      int& fd = k == 1 ? out_fd : err_fd;
      std::string& sink = k == 1 ? result.out : result.err;
      if (fd < 0 || (fds[k].revents & (POLLIN | POLLERR | POLLHUP)) == 0) continue;
      const ssize_t n = ::read(fd, buffer.data(), buffer.size());
      if (n > 0) {
        sink.append(buffer.data(), static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        // A pseudo-terminal reports EIO once the child has closed its side.
        ::close(fd);
        fd = -1;
      }
    }
    if (!child_done && options.stdout_is_terminal && err_fd < 0) {
      // The terminal's master never sees end of file while we hold it; stop
      // once the child has exited and the terminal is drained.
      if (::waitpid(pid, &wait_status, WNOHANG) == pid) {
        child_done = true;
      }
      if (child_done && (fds[1].revents & POLLIN) == 0) {
        ::close(out_fd);
        out_fd = -1;
      }
    }
  }
  for (int fd : {in_fd, out_fd, err_fd}) {
    if (fd >= 0) ::close(fd);
  }
  if (!child_done && ::waitpid(pid, &wait_status, 0) != pid) fail("waitpid");
  result.exit_status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return result;
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

}  // namespace rawtool::test
