#include "mcp_process.hpp"

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace rawtool::test {

namespace {

using nlohmann::json;

int remaining_ms(McpProcess::Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - McpProcess::Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// Every line on the server's stdout must be one compact JSON-RPC 2.0 message
// in ASCII: stdout carries protocol messages only.
json check_protocol_line(const std::string& line) {
  INFO("stdout line: " << line.substr(0, 400));
  const bool ascii = std::all_of(line.begin(), line.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  REQUIRE(ascii);
  json message = json::parse(line, nullptr, false);
  REQUIRE_FALSE(message.is_discarded());
  REQUIRE(is_protocol_message(message));
  return message;
}

}  // namespace

std::filesystem::path rawtool_binary() { return RAWTOOL_MCP_BINARY; }

void make_sqlite_database(const std::filesystem::path& file, std::string_view sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, std::string(sql).c_str(), nullptr, nullptr, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  INFO(message);
  REQUIRE(rc == SQLITE_OK);
}

McpProcess::McpProcess(const std::filesystem::path& config) {
  log_file_ = config;
  log_file_ += ".stderr." + std::to_string(reinterpret_cast<std::uintptr_t>(this));
  const McpChild child = spawn_mcp_server(rawtool_binary(), config, log_file_);
  pid_ = child.pid;
  in_ = child.to_server;
  out_ = child.from_server;
  ::fcntl(in_, F_SETFL, ::fcntl(in_, F_GETFL) | O_NONBLOCK);
}

McpProcess::~McpProcess() {
  if (in_ >= 0) ::close(in_);
  if (pid_ > 0 && !status_) {
    if (!wait_exit(std::chrono::seconds(3))) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  if (out_ >= 0) ::close(out_);
  std::error_code ignored;
  std::filesystem::remove(log_file_, ignored);
}

void McpProcess::send_line(std::string_view line) {
  std::string data(line);
  data.push_back('\n');
  std::string_view rest = data;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!rest.empty()) {
    const ssize_t wrote = ::write(in_, rest.data(), rest.size());
    if (wrote > 0) {
      rest.remove_prefix(static_cast<std::size_t>(wrote));
      continue;
    }
    REQUIRE((wrote < 0 && (errno == EAGAIN || errno == EINTR)));
    REQUIRE(Clock::now() < deadline);
    // The server may be writing to us while we write to it: keep its output moving.
    std::array<pollfd, 2> fds{pollfd{in_, POLLOUT, 0}, pollfd{out_, POLLIN, 0}};
    ::poll(fds.data(), fds.size(), 100);
    if ((fds[1].revents & (POLLIN | POLLHUP)) != 0) pump(Clock::now());
  }
}

void McpProcess::send(const json& message) { send_line(message.dump()); }

bool McpProcess::pump(Clock::time_point deadline) {
  for (;;) {
    pollfd fd{out_, POLLIN, 0};
    const int ready = ::poll(&fd, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    std::array<char, 65536> chunk{};
    const ssize_t got = ::read(out_, chunk.data(), chunk.size());
    if (got <= 0) return false;
    buffer_.append(chunk.data(), static_cast<std::size_t>(got));
    bool any = false;
    for (auto newline = buffer_.find('\n'); newline != std::string::npos; newline = buffer_.find('\n')) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      inbox_.push_back(check_protocol_line(line));
      lines_.push_back(std::move(line));
      any = true;
    }
    if (any) return true;
  }
}

std::optional<json> McpProcess::read(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (inbox_.empty()) {
    if (!pump(deadline)) return std::nullopt;
  }
  json message = std::move(inbox_.front());
  inbox_.erase(inbox_.begin());
  return message;
}

std::optional<json> McpProcess::read_response(const json& id, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
      // Same id on the wire: equal and of the same kind (the parser keeps
      // non-negative integers unsigned, which serialises identically).
      if (it->contains("id") && (*it)["id"] == id && (*it)["id"].is_string() == id.is_string()) {
        json message = std::move(*it);
        inbox_.erase(it);
        return message;
      }
    }
    if (!pump(deadline)) return std::nullopt;
  }
}

std::vector<json> McpProcess::drain(std::chrono::milliseconds quiet) {
  while (pump(Clock::now() + quiet)) {
  }
  std::vector<json> all = std::move(inbox_);
  inbox_.clear();
  return all;
}

json McpProcess::request(const json& id, std::string_view method, const json& params,
                         std::chrono::milliseconds timeout) {
  send(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  auto response = read_response(id, timeout);
  INFO("no response to " << method << " within " << timeout.count() << " ms; server log:\n" << log());
  REQUIRE(response.has_value());
  return *response;
}

json McpProcess::initialize(std::string_view version) {
  const json response =
      request("init", "initialize",
              {{"protocolVersion", version}, {"capabilities", json::object()}, {"clientInfo", {{"name", "rawtool-test"}, {"version", "1"}}}});
  INFO(response.dump());
  REQUIRE(response.contains("result"));
  send(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  return response["result"];
}

json McpProcess::call_tool(std::string_view name, const json& arguments, std::chrono::milliseconds timeout) {
  static int next_id = 1000;
  const json response = request(++next_id, "tools/call", {{"name", name}, {"arguments", arguments}}, timeout);
  INFO(response.dump().substr(0, 2000));
  REQUIRE(response.contains("result"));
  return response["result"];
}

void McpProcess::close_input() {
  if (in_ >= 0) ::close(in_);
  in_ = -1;
}

std::optional<int> McpProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      status_ = exit_code(status);
      return status_;
    }
    // Keep the server's stdout drained so it never blocks on a full pipe.
    if (!pump(Clock::now() + std::chrono::milliseconds(10))) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (Clock::now() >= deadline) return std::nullopt;
  }
}

std::string McpProcess::log() const {
  std::ifstream in(log_file_, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace rawtool::test
