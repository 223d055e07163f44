#include "mcp_stdio.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace rawtool::test {

McpChild spawn_mcp_server(const std::filesystem::path& binary, const std::filesystem::path& config,
                          const std::filesystem::path& stderr_file) {
  std::array<int, 2> to_child{};
  std::array<int, 2> from_child{};
  if (::pipe2(to_child.data(), O_CLOEXEC) != 0) throw std::runtime_error("cannot make a pipe for the server's stdin");
  if (::pipe2(from_child.data(), O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    throw std::runtime_error("cannot make a pipe for the server's stdout");
  }
  const std::string log = stderr_file.empty() ? std::string("/dev/null") : stderr_file.string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::string program = binary.string();
  std::string command = "mcp";
  std::string flag = "--config";
  std::string config_path = config.string();
  std::array<char*, 5> argv{program.data(), command.data(), flag.data(), config_path.data(), nullptr};
  McpChild child;
  const int rc = ::posix_spawn(&child.pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (rc != 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    throw std::runtime_error("cannot start " + program);
  }
  child.to_server = to_child[1];
  child.from_server = from_child[0];
  return child;
}

bool is_protocol_message(const nlohmann::json& message) {
  if (!message.is_object() || message.value("jsonrpc", "") != "2.0") return false;
  const bool has_id = message.contains("id");
  if (has_id && !message["id"].is_string() && !message["id"].is_number_integer()) return false;
  const bool response = has_id && (message.contains("result") != message.contains("error"));
  const bool notification = !has_id && message.contains("method");
  const bool idless_error = !has_id && message.contains("error");
  return response || notification || idless_error;
}

int exit_code(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

}  // namespace rawtool::test
