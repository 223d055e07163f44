#pragma once

// A client for end-to-end tests: starts `rawtool mcp --config FILE` with
// pipes on stdin and stdout (stderr to a file), writes request lines and
// reads response lines with a deadline. Every line the server writes on stdout
// is checked to be one JSON-RPC 2.0 message; anything else fails the test.

#include "mcp_stdio.hpp"
#include "pg_url.hpp"
#include "temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace rawtool::test {

/// The rawtool binary under test.
std::filesystem::path rawtool_binary();

/// Creates a SQLite database file at `file` by running `sql` (a script).
void make_sqlite_database(const std::filesystem::path& file, std::string_view sql);

class McpProcess {
public:
  using Clock = std::chrono::steady_clock;

  /// Starts `rawtool mcp --config <config>`.
  explicit McpProcess(const std::filesystem::path& config);
  ~McpProcess();
  McpProcess(const McpProcess&) = delete;
  McpProcess& operator=(const McpProcess&) = delete;

  /// Writes `line` and a LF.
  void send_line(std::string_view line);
  void send(const nlohmann::json& message);
  /// Sends a request with `id` and returns its response (other messages
  /// received meanwhile are kept for read()).
  nlohmann::json request(const nlohmann::json& id, std::string_view method,
                         const nlohmann::json& params = nlohmann::json::object(),
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));
  /// initialize + notifications/initialized; returns the initialize result.
  nlohmann::json initialize(std::string_view version = "2025-11-25");
  /// tools/call and its response's result (fails the test on a JSON-RPC error).
  nlohmann::json call_tool(std::string_view name, const nlohmann::json& arguments,
                           std::chrono::milliseconds timeout = std::chrono::seconds(30));

  /// The next message, or nullopt when none arrives before the timeout.
  std::optional<nlohmann::json> read(std::chrono::milliseconds timeout);
  /// The response to `id`, or nullopt on timeout; others are kept.
  std::optional<nlohmann::json> read_response(const nlohmann::json& id, std::chrono::milliseconds timeout);
  /// Every message received so far and not yet taken.
  std::vector<nlohmann::json> drain(std::chrono::milliseconds quiet);

  /// Closes the server's stdin.
  void close_input();
  /// Waits for exit; returns the exit status, or nullopt on timeout.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);
  /// Everything the server wrote to stderr so far.
  [[nodiscard]] std::string log() const;
  /// Every raw line the server wrote to stdout so far.
  [[nodiscard]] const std::vector<std::string>& stdout_lines() const noexcept { return lines_; }

private:
  bool pump(Clock::time_point deadline);

  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::filesystem::path log_file_;
  std::string buffer_;
  std::vector<std::string> lines_;
  std::vector<nlohmann::json> inbox_;
  std::optional<int> status_;
};

}  // namespace rawtool::test
