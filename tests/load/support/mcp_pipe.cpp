#include "mcp_pipe.hpp"

#include "mcp_stdio.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace rawtool::reliability {

namespace {

using nlohmann::json;

std::atomic<unsigned> pipes_started{0};

}  // namespace

std::optional<std::uint64_t> proc_status_kib(pid_t pid, std::string_view field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream value(line.substr(prefix.size()));
    std::uint64_t kib = 0;
    if (value >> kib) return kib;
    return std::nullopt;
  }
  return std::nullopt;
}

McpPipe::McpPipe(const std::filesystem::path& binary, const std::filesystem::path& config) {
  log_file_ = config;
  log_file_ += ".stderr." + std::to_string(::getpid()) + "." + std::to_string(pipes_started.fetch_add(1));
  const test::McpChild child = test::spawn_mcp_server(binary, config, log_file_);
  pid_ = child.pid;
  in_ = child.to_server;
  out_ = child.from_server;
  reader_ = std::thread([this] { read_loop(); });
}

McpPipe::~McpPipe() {
  close_input();
  if (!wait_exit(std::chrono::seconds(5))) {
    ::kill(pid_, SIGKILL);
    wait_exit(std::chrono::seconds(5));
  }
  if (reader_.joinable()) reader_.join();
  if (out_ >= 0) ::close(out_);
  std::error_code ignored;
  std::filesystem::remove(log_file_, ignored);
}

void McpPipe::read_loop() {
  std::string buffer;
  std::array<char, 65536> chunk{};
  for (;;) {
    const ssize_t got = ::read(out_, chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    buffer.append(chunk.data(), static_cast<std::size_t>(got));
    std::size_t start = 0;
    for (auto newline = buffer.find('\n', start); newline != std::string::npos; newline = buffer.find('\n', start)) {
      std::string line = buffer.substr(start, newline - start);
      start = newline + 1;
      json message = json::parse(line, nullptr, false);
      std::lock_guard lock(mutex_);
      if (message.is_discarded() || !test::is_protocol_message(message)) {
        ++violations_;
        continue;
      }
      if (message.contains("id") && message["id"].is_number_integer()) {
        const auto id = message["id"].get<std::int64_t>();
        responses_[id] = Response{std::move(line), std::move(message)};
        arrived_.notify_all();
      }
    }
    buffer.erase(0, start);
  }
  std::lock_guard lock(mutex_);
  if (!buffer.empty()) ++violations_;  // a last line without its LF
  eof_ = true;
  arrived_.notify_all();
}

void McpPipe::send(const json& message) {
  std::string line = message.dump();
  line.push_back('\n');
  std::lock_guard lock(write_mutex_);
  if (in_ < 0) throw std::runtime_error("the server's input is closed");
  std::string_view rest = line;
  while (!rest.empty()) {
    const ssize_t wrote = ::write(in_, rest.data(), rest.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) throw std::runtime_error("cannot write to the server");
    rest.remove_prefix(static_cast<std::size_t>(wrote));
  }
}

std::int64_t McpPipe::next_id() {
  std::lock_guard lock(mutex_);
  return next_id_++;
}

std::optional<Response> McpPipe::wait_response(std::int64_t id, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const bool found = arrived_.wait_for(lock, timeout, [&] { return responses_.count(id) != 0 || eof_; });
  auto it = responses_.find(id);
  if (!found || it == responses_.end()) return std::nullopt;
  Response response = std::move(it->second);
  responses_.erase(it);
  return response;
}

std::optional<Response> McpPipe::request(std::int64_t id, std::string_view method, const json& params,
                                         std::chrono::milliseconds timeout) {
  send(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  return wait_response(id, timeout);
}

void McpPipe::initialize() {
  const auto id = next_id();
  const auto response = request(id, "initialize",
                                {{"protocolVersion", "2025-11-25"},
                                 {"capabilities", json::object()},
                                 {"clientInfo", {{"name", "rawtool-reliability"}, {"version", "1"}}}},
                                std::chrono::seconds(30));
  if (!response || !response->message.contains("result")) throw std::runtime_error("initialize was not answered");
  send(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
}

std::optional<Response> McpPipe::call_tool(std::string_view name, const json& arguments,
                                           std::chrono::milliseconds timeout) {
  return request(next_id(), "tools/call", {{"name", name}, {"arguments", arguments}}, timeout);
}

void McpPipe::close_input() {
  std::lock_guard lock(write_mutex_);
  if (in_ >= 0) ::close(in_);
  in_ = -1;
}

std::optional<int> McpPipe::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard lock(write_mutex_);
      if (status_) return status_;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = test::exit_code(status);
        return status_;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool McpPipe::running() { return !wait_exit(std::chrono::milliseconds(0)).has_value(); }

std::size_t McpPipe::protocol_violations() const {
  std::lock_guard lock(mutex_);
  return violations_;
}

std::size_t McpPipe::unclaimed() const {
  std::lock_guard lock(mutex_);
  return responses_.size();
}

std::string McpPipe::log() const {
  std::ifstream in(log_file_, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace rawtool::reliability
