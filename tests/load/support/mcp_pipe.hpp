#pragma once

// A thread-safe client for `rawtool mcp --config FILE` over pipes, for load,
// fault and soak runs. Unlike the end-to-end tests' client it asserts nothing
// itself (so benchmarks and worker threads can use it): a reader thread takes
// every line the server writes, files responses by id, and counts any line
// that is not one JSON-RPC 2.0 message; callers wait for their own id.

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <sys/types.h>

namespace rawtool::reliability {

/// One response line as it arrived, and its parsed form.
struct Response {
  std::string line;
  nlohmann::json message;
};

/// Kibibytes from /proc/<pid>/status for `field` ("VmRSS", "VmHWM"), or
/// nullopt when the process or the field is gone.
std::optional<std::uint64_t> proc_status_kib(pid_t pid, std::string_view field);

class McpPipe {
public:
  /// Starts `binary mcp --config config`; stderr goes to `config` + ".stderr.<n>".
  /// Throws std::runtime_error when it cannot be started.
  McpPipe(const std::filesystem::path& binary, const std::filesystem::path& config);
  /// Closes stdin, waits a few seconds for the server to exit, then kills it.
  ~McpPipe();
  McpPipe(const McpPipe&) = delete;
  McpPipe& operator=(const McpPipe&) = delete;

  /// Sends one request. Thread-safe. Throws when the server's input is closed.
  void send(const nlohmann::json& message);
  /// Sends a request and waits for the response with the same integer id.
  /// nullopt on timeout. Thread-safe.
  std::optional<Response> request(std::int64_t id, std::string_view method, const nlohmann::json& params,
                                  std::chrono::milliseconds timeout);
  /// Waits for the response to `id` (a request already sent). nullopt on timeout.
  std::optional<Response> wait_response(std::int64_t id, std::chrono::milliseconds timeout);
  /// initialize + notifications/initialized; throws when it is not answered.
  void initialize();
  /// tools/call with a fresh id. nullopt on timeout.
  std::optional<Response> call_tool(std::string_view name, const nlohmann::json& arguments,
                                    std::chrono::milliseconds timeout);
  /// A fresh request id, unique within this client.
  std::int64_t next_id();

  /// Closes the server's stdin; the server then finishes and exits.
  void close_input();
  /// The exit status (128 + signal when killed), or nullopt while running after `timeout`.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);
  [[nodiscard]] bool running();

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  /// Lines on stdout that were not one JSON-RPC 2.0 message.
  [[nodiscard]] std::size_t protocol_violations() const;
  /// Responses received whose id nobody has taken (yet).
  [[nodiscard]] std::size_t unclaimed() const;
  /// Everything the server wrote on stderr so far.
  [[nodiscard]] std::string log() const;

private:
  void read_loop();

  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::filesystem::path log_file_;
  std::thread reader_;

  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<std::int64_t, Response> responses_;  // guarded by mutex_
  std::size_t violations_ = 0;                  // guarded by mutex_
  bool eof_ = false;                            // guarded by mutex_
  std::int64_t next_id_ = 1;                    // guarded by mutex_

  std::mutex write_mutex_;
  std::optional<int> status_;  // guarded by write_mutex_
};

}  // namespace rawtool::reliability
