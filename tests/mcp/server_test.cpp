// The server loop over a scripted backend: concurrency, cancellation, end of
// input and transport limits, deterministic and without a database.

#include "scripted_backend.hpp"

#include "mcp/line_reader.hpp"
#include "mcp/server.hpp"
#include "mcp/tools.hpp"

#include <rawtool/log.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace {

using nlohmann::json;
using namespace rawtool::mcp::detail;
using rawtool::mcp::test::CapturedLines;
using rawtool::mcp::test::ScriptedBackend;
using namespace std::chrono_literals;

// run_server on a thread, with pipes for its input and output, and an
// operator log that keeps its lines.
class Harness {
public:
  explicit Harness(ServerLimits limits = {}, rawtool::LogLevel level = rawtool::LogLevel::debug) {
    rawtool::LogConfig log_config;
    log_config.level = level;
    log_ = rawtool::OperatorLog::open(log_config, log.sink());
    std::array<int, 2> in{};
    std::array<int, 2> out{};
    REQUIRE(::pipe2(in.data(), O_CLOEXEC) == 0);
    REQUIRE(::pipe2(out.data(), O_CLOEXEC) == 0);
    write_fd_ = in[1];
    read_fd_ = out[0];
    ToolSettings settings;
    description_.version = "test";
    description_.tools = describe_tools(settings);
    description_.instructions = server_instructions(settings);
    server_ = std::thread([this, limits, server_in = in[0], server_out = out[1]] {
      status_ = run_server(backend, description_, server_in, server_out, limits, *log_);
      ::close(server_in);
      ::close(server_out);
      done_ = true;
    });
    send(R"({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
    REQUIRE(read(5s).has_value());
  }

  ~Harness() {
    backend.release();
    close_input();
    if (server_.joinable()) server_.join();
    close_output();
  }

  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  void send(std::string line) {
    line.push_back('\n');
    std::string_view rest = line;
    while (!rest.empty()) {
      const ssize_t wrote = ::write(write_fd_, rest.data(), rest.size());
      REQUIRE(wrote > 0);
      rest.remove_prefix(static_cast<std::size_t>(wrote));
    }
  }

  void call(const json& id, const std::string& sql) {
    send(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", {{"name", "raw_sql"}, {"arguments", {{"sql", sql}}}}}}
             .dump());
  }

  void cancel(const json& id) {
    send(json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", id}}}}.dump());
  }

  std::optional<json> read(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
        json message = json::parse(buffer_.substr(0, newline));
        buffer_.erase(0, newline + 1);
        return message;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd fd{read_fd_, POLLIN, 0};
      if (::poll(&fd, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      std::array<char, 65536> chunk{};
      const ssize_t got = ::read(read_fd_, chunk.data(), chunk.size());
      if (got <= 0) return std::nullopt;
      buffer_.append(chunk.data(), static_cast<std::size_t>(got));
    }
  }

  /// The ids of the next `count` messages, each of which must be a tool
  /// result that is not an error, in the order they arrived.
  std::vector<json> read_results(int count, std::chrono::milliseconds each) {
    std::vector<json> ids;
    for (int i = 0; i < count; ++i) {
      const auto message = read(each);
      REQUIRE(message.has_value());
      REQUIRE((*message)["result"]["isError"] == false);
      ids.push_back((*message)["id"]);
    }
    return ids;
  }

  void close_input() {
    if (write_fd_ >= 0) ::close(write_fd_);
    write_fd_ = -1;
  }

  /// Stops reading the server's output: its next write fails.
  void close_output() {
    if (read_fd_ >= 0) ::close(read_fd_);
    read_fd_ = -1;
  }

  bool wait_done(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done_) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
    server_.join();
    return true;
  }

  ScriptedBackend backend;
  CapturedLines log;

private:
  std::shared_ptr<rawtool::OperatorLog> log_;
  ServerDescription description_;
  std::thread server_;
  int write_fd_ = -1;
  int read_fd_ = -1;
  std::string buffer_;
  std::atomic<bool> done_{false};
  std::atomic<int> status_{-1};
};

ServerLimits limits_with(std::size_t concurrent) {
  ServerLimits limits;
  limits.max_concurrent_calls = concurrent;
  limits.end_of_input_grace = 300ms;
  return limits;
}

std::string request_line(const json& id, const std::string& sql) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", {{"name", "raw_sql"}, {"arguments", {{"sql", sql}}}}}}
      .dump();
}

}  // namespace

TEST_CASE("tool calls run concurrently up to the limit and no further", "[mcp][server]") {
  Harness harness(limits_with(2));
  for (int id = 1; id <= 5; ++id) harness.call(id, std::string("q").append(std::to_string(id)));
  REQUIRE(harness.backend.wait_running(2));
  // The ping is read after the five calls: once it is answered, every call
  // has been accepted, and the three beyond the limit wait for a worker.
  harness.send(R"({"jsonrpc":"2.0","id":"sync","method":"ping"})");
  REQUIRE((*harness.read(2s))["id"] == "sync");
  REQUIRE(harness.backend.started() == 2);
  harness.backend.release();
  std::vector<json> ids = harness.read_results(5, 5s);
  std::sort(ids.begin(), ids.end());
  REQUIRE(ids == std::vector<json>{1, 2, 3, 4, 5});  // each call answered, once
  REQUIRE(harness.backend.peak() == 2);
  REQUIRE(harness.backend.started() == 5);
}

TEST_CASE("ping is answered while every worker is busy", "[mcp][server]") {
  Harness harness(limits_with(1));
  harness.call(1, "slow");
  harness.call(2, "queued");
  REQUIRE(harness.backend.wait_running(1));
  harness.send(R"({"jsonrpc":"2.0","id":"p","method":"ping"})");
  const auto pong = harness.read(2s);
  REQUIRE(pong.has_value());
  REQUIRE((*pong)["id"] == "p");
  REQUIRE((*pong)["result"] == json::object());
}

TEST_CASE("a cancelled running call is stopped and gets no response", "[mcp][server]") {
  Harness harness(limits_with(2));
  harness.call("c", "slow");
  REQUIRE(harness.backend.wait_running(1));
  harness.cancel("c");
  REQUIRE(harness.backend.wait_running(0));
  REQUIRE(harness.backend.cancels() == 1);
  harness.send(R"({"jsonrpc":"2.0","id":"after","method":"ping"})");
  const auto next = harness.read(2s);
  REQUIRE(next.has_value());
  REQUIRE((*next)["id"] == "after");  // nothing for "c" came first
  REQUIRE_FALSE(harness.read(300ms).has_value());
}

TEST_CASE("a cancelled queued call never runs and gets no response", "[mcp][server]") {
  Harness harness(limits_with(1));
  harness.call(1, "first");
  REQUIRE(harness.backend.wait_running(1));
  harness.call(2, "second");
  harness.cancel(2);
  harness.send(R"({"jsonrpc":"2.0","id":"sync","method":"ping"})");
  REQUIRE((*harness.read(2s))["id"] == "sync");
  harness.backend.release();
  const auto answer = harness.read(2s);
  REQUIRE(answer.has_value());
  REQUIRE((*answer)["id"] == 1);
  REQUIRE_FALSE(harness.read(300ms).has_value());
  REQUIRE(harness.backend.started() == 1);
}

TEST_CASE("cancelling an unknown or finished request changes nothing", "[mcp][server]") {
  Harness harness(limits_with(1));
  harness.backend.release();
  harness.call(1, "quick");
  REQUIRE((*harness.read(2s))["id"] == 1);
  harness.cancel(1);
  harness.cancel("never-sent");
  harness.send(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
  REQUIRE((*harness.read(2s))["id"] == 2);
  REQUIRE(harness.backend.cancels() == 0);
}

TEST_CASE("an id still in progress cannot be reused", "[mcp][server]") {
  Harness harness(limits_with(2));
  harness.call(9, "slow");
  REQUIRE(harness.backend.wait_running(1));
  harness.call(9, "again");
  const auto refused = harness.read(2s);
  REQUIRE(refused.has_value());
  REQUIRE((*refused)["id"] == 9);
  REQUIRE((*refused)["error"]["code"] == static_cast<int>(ErrorCode::invalid_request));
  REQUIRE(harness.backend.started() == 1);
}

TEST_CASE("end of input lets accepted calls finish within the grace, and they are answered", "[mcp][server]") {
  ServerLimits limits = limits_with(2);
  limits.end_of_input_grace = 5s;
  Harness harness(limits);
  harness.call(1, "slow");
  REQUIRE(harness.backend.wait_running(1));
  harness.close_input();
  // Released once the server has seen the end of input with the call in flight.
  const auto draining = [&harness] {
    for (const json& record : harness.log.records()) {
      if (record["event"] == "draining") return record["detail"].get<std::string>();
    }
    return std::string();
  };
  const auto seen_by = std::chrono::steady_clock::now() + 5s;
  while (draining().empty()) {
    REQUIRE(std::chrono::steady_clock::now() < seen_by);
    std::this_thread::sleep_for(5ms);
  }
  CHECK(draining() == "end of input; waiting up to 5000 ms for 1 tool call in flight, then cancelling what still runs");
  harness.backend.release();
  const auto answer = harness.read(3s);
  REQUIRE(answer.has_value());
  REQUIRE((*answer)["id"] == 1);
  REQUIRE(harness.wait_done(3s));
}

TEST_CASE("end of input cancels a call that outlives the grace and returns promptly", "[mcp][server]") {
  Harness harness(limits_with(2));  // 300 ms grace
  harness.call(1, "never finishes on its own");
  REQUIRE(harness.backend.wait_running(1));
  const auto closed = std::chrono::steady_clock::now();
  harness.close_input();
  REQUIRE(harness.wait_done(3s));
  REQUIRE(std::chrono::steady_clock::now() - closed < 2s);
  REQUIRE(harness.backend.cancels() == 1);
  REQUIRE_FALSE(harness.read(100ms).has_value());
}

TEST_CASE("a line over the limit is answered without an id and the next line is served", "[mcp][server]") {
  ServerLimits limits = limits_with(1);
  limits.max_line_bytes = 1024;
  Harness harness(limits);
  harness.send(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":")" + std::string(200000, 'a') + "\"}}");
  const auto refused = harness.read(2s);
  REQUIRE(refused.has_value());
  REQUIRE_FALSE(refused->contains("id"));
  REQUIRE((*refused)["error"]["code"] == static_cast<int>(ErrorCode::invalid_request));
  harness.send(R"({"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":")" + std::string(900, 'a') + "\"}}");
  REQUIRE((*harness.read(2s))["id"] == 2);
}

TEST_CASE("a reply over the transport limit is replaced by the backend's refusal", "[mcp][server]") {
  ServerLimits limits = limits_with(1);
  limits.max_reply_bytes = 1000;
  Harness harness(limits);
  harness.call(1, "big");
  const auto answer = harness.read(2s);
  REQUIRE(answer.has_value());
  REQUIRE((*answer)["result"]["isError"] == true);
  REQUIRE((*answer)["result"]["structuredContent"]["reason"] == "limit");
  REQUIRE((*answer)["result"]["content"][0]["text"].get<std::string>().rfind("rawtool: too large: ", 0) == 0);
}

TEST_CASE("a backend that throws gives an internal error without its text, and serving goes on", "[mcp][server]") {
  Harness harness(limits_with(1));
  harness.call(1, "throw");
  const auto answer = harness.read(2s);
  REQUIRE(answer.has_value());
  REQUIRE((*answer)["error"]["code"] == static_cast<int>(ErrorCode::internal_error));
  REQUIRE(answer->dump().find("driver text") == std::string::npos);
  harness.send(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
  REQUIRE((*harness.read(2s))["id"] == 2);
  // The operator log has the event in rawtool's words, and not the exception's.
  bool logged = false;
  for (const json& record : harness.log.records()) {
    logged = logged || (record["event"] == "internal_error" && record["component"] == "mcp" && record["level"] == "error");
  }
  CHECK(logged);
  CHECK(harness.log.all().find("driver text") == std::string::npos);
}

TEST_CASE("the server's own events reach the operator log with their levels, and the level setting filters them",
          "[mcp][server][log]") {
  {
    Harness harness(limits_with(1), rawtool::LogLevel::warn);
    // A response to a request the server never sent is ignored, and logged as odd.
    harness.send(R"({"jsonrpc":"2.0","id":77,"result":{}})");
    harness.send(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
    REQUIRE((*harness.read(2s))["id"] == 2);
    harness.close_input();
    REQUIRE(harness.wait_done(5s));
    const auto records = harness.log.records();
    REQUIRE(records.size() == 1);  // serving and stopped are info: below warn
    CHECK(records[0]["event"] == "ignored");
    CHECK(records[0]["level"] == "warn");
    CHECK(records[0]["component"] == "mcp");
    CHECK(records[0]["detail"] == "a response to a request the server never sent");
  }
  {
    Harness harness(limits_with(1), rawtool::LogLevel::info);
    harness.close_input();
    REQUIRE(harness.wait_done(5s));
    std::vector<std::string> events;
    for (const json& record : harness.log.records()) {
      CHECK(record["level"] == "info");
      events.push_back(record["event"].get<std::string>());
    }
    CHECK(events == std::vector<std::string>{"serving", "stopped"});
  }
}

TEST_CASE("CRLF line ends and blank lines are accepted", "[mcp][server]") {
  Harness harness(limits_with(1));
  harness.send("");
  harness.send("   ");
  harness.send("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\r");
  const auto pong = harness.read(2s);
  REQUIRE(pong.has_value());
  REQUIRE((*pong)["id"] == 3);
}

TEST_CASE("progress is notified only when asked for, and before the response", "[mcp][server]") {
  Harness harness(limits_with(1));
  harness.backend.release();
  harness.send(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"raw_sql","arguments":{"sql":"q"},"_meta":{"progressToken":"tok"}}})");
  const auto progress = harness.read(2s);
  REQUIRE(progress.has_value());
  REQUIRE((*progress)["method"] == "notifications/progress");
  REQUIRE((*progress)["params"]["progressToken"] == "tok");
  REQUIRE((*progress)["params"]["progress"].is_number());
  REQUIRE_FALSE(progress->contains("id"));
  const auto answer = harness.read(2s);
  REQUIRE(answer.has_value());
  REQUIRE((*answer)["id"] == 1);
  harness.call(2, "no token");
  const auto plain = harness.read(2s);
  REQUIRE(plain.has_value());
  REQUIRE((*plain)["id"] == 2);
}

TEST_CASE("the line reader never holds more than the limit of one line", "[mcp][server]") {
  std::array<int, 2> fds{};
  REQUIRE(::pipe2(fds.data(), O_CLOEXEC) == 0);
  std::thread writer([fd = fds[1]] {
    const std::string lines = std::string(3000, 'a') + "\n" + std::string(999, 'b') + "\n" + std::string(1000, 'c') + "\nlast";
    std::string_view rest = lines;
    while (!rest.empty()) {
      const ssize_t wrote = ::write(fd, rest.data(), std::min<std::size_t>(rest.size(), 7));
      if (wrote <= 0) break;
      rest.remove_prefix(static_cast<std::size_t>(wrote));
    }
    ::close(fd);
  });
  rawtool::mcp::detail::LineReader reader(fds[0], 1000, 16);
  std::string line;
  REQUIRE(reader.next(line) == rawtool::mcp::detail::LineReader::Status::oversized);
  REQUIRE(line.capacity() <= 1000);
  REQUIRE(reader.next(line) == rawtool::mcp::detail::LineReader::Status::line);
  REQUIRE(line == std::string(999, 'b'));
  REQUIRE(line.capacity() <= 1000);
  REQUIRE(reader.next(line) == rawtool::mcp::detail::LineReader::Status::line);
  REQUIRE(line == std::string(1000, 'c'));  // exactly the limit is accepted
  REQUIRE(line.capacity() <= 1000);
  REQUIRE(reader.next(line) == rawtool::mcp::detail::LineReader::Status::line);
  REQUIRE(line == "last");  // a final line without LF still counts
  REQUIRE(reader.next(line) == rawtool::mcp::detail::LineReader::Status::end);
  writer.join();
  ::close(fds[0]);
}

TEST_CASE("a request already waiting when a call starts is read at once, not when the call ends", "[mcp][server]") {
  Harness harness(limits_with(2));
  // One write, so the server reads both lines together.
  harness.send(request_line(1, "slow") + "\n" + R"({"jsonrpc":"2.0","id":"p","method":"ping"})");
  const auto pong = harness.read(5s);
  REQUIRE(pong.has_value());
  REQUIRE((*pong)["id"] == "p");
  REQUIRE(harness.backend.wait_running(1));
}

TEST_CASE("calls sent in one write run concurrently", "[mcp][server]") {
  Harness harness(limits_with(2));
  harness.send(request_line(1, "first") + "\n" + request_line(2, "second"));
  REQUIRE(harness.backend.wait_running(2));
  harness.backend.release();
  REQUIRE(harness.read(5s).has_value());
  REQUIRE(harness.read(5s).has_value());
  REQUIRE(harness.backend.peak() == 2);
}

TEST_CASE("a call beyond the running and waiting bounds is answered server_busy, and the others are served",
          "[mcp][server]") {
  ServerLimits limits = limits_with(1);
  limits.max_queued_calls = 1;
  Harness harness(limits);
  harness.call(1, "runs");
  REQUIRE(harness.backend.wait_running(1));
  harness.call(2, "waits");
  harness.call(3, "one too many");
  const auto busy = harness.read(2s);
  REQUIRE(busy.has_value());
  REQUIRE((*busy)["id"] == 3);
  REQUIRE((*busy)["error"]["code"] == static_cast<int>(ErrorCode::server_busy));
  CHECK((*busy)["error"]["message"] ==
        "1 tool calls wait already, the most rawtool queues behind the max_concurrent_calls=1 (max_concurrent_calls) "
        "running; try again later");
  harness.backend.release();
  REQUIRE(harness.read_results(2, 2s) == std::vector<json>{1, 2});  // first in, first out
  REQUIRE(harness.backend.started() == 2);
}

TEST_CASE("end of input drops a call still waiting for a worker when the grace ends: it never runs", "[mcp][server]") {
  Harness harness(limits_with(1));  // 300 ms grace
  harness.call(1, "never finishes on its own");
  REQUIRE(harness.backend.wait_running(1));
  harness.call(2, "waits");
  harness.send(R"({"jsonrpc":"2.0","id":"sync","method":"ping"})");
  REQUIRE((*harness.read(2s))["id"] == "sync");  // both calls accepted
  harness.close_input();
  REQUIRE(harness.wait_done(3s));
  REQUIRE(harness.backend.started() == 1);
  REQUIRE(harness.backend.cancels() == 1);
  REQUIRE_FALSE(harness.read(100ms).has_value());
}

TEST_CASE("output that can no longer be written ends serving, logged as output_closed", "[mcp][server][log]") {
  Harness harness(limits_with(1));
  harness.close_output();
  harness.send(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");  // its answer cannot be written
  harness.send(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");  // read, then serving stops
  REQUIRE(harness.wait_done(5s));
  bool logged = false;
  for (const json& record : harness.log.records()) {
    logged = logged || (record["event"] == "output_closed" && record["level"] == "warn" && record["component"] == "mcp");
  }
  CHECK(logged);
}
