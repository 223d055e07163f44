#pragma once

// Test doubles at the MCP core's boundaries: a backend whose calls block
// until the test releases them or they are cancelled, a reply channel that
// keeps what it is sent, and an operator log that keeps its lines.

#include "mcp/backend.hpp"
#include "mcp/dispatcher.hpp"
#include "mcp/tools.hpp"

#include <rawtool/log.hpp>
#include <rawtool/render/builder.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rawtool::mcp::test {

using namespace std::chrono_literals;

/// What a server shows with the databases `labels` (the first the default),
/// raw_sql enabled unless `raw_path` is false.
inline detail::ServerDescription description_with(std::vector<std::string> labels, bool raw_path = true) {
  detail::ToolSettings settings;
  settings.raw_path_enabled = raw_path;
  for (const auto& label : labels) settings.databases.push_back({label, "sqlite", false});
  if (!labels.empty()) settings.database_label = labels.front();
  settings.catalog_names = {"q"};
  detail::ServerDescription description;
  description.version = "test";
  description.tools = detail::describe_tools(settings);
  description.instructions = detail::server_instructions(settings);
  description.raw_path_enabled = raw_path;
  description.database_labels = std::move(labels);
  return description;
}

/// A reply as a backend returns one, made by the renderer: rawtool's words
/// `words`, then `value` (escaped, in quotes) when given.
inline detail::CallReply scripted_reply(Trusted words, const std::optional<std::string>& value, nlohmann::json structured,
                                        bool is_error) {
  render::ReplyBuilder reply{render::RenderOptions{}};
  reply.begin_line(words);
  if (value) reply.add_quoted(Untrusted(std::string_view(*value)));
  reply.end_line();
  return detail::CallReply(std::move(reply).finish(std::move(structured)), is_error);
}

/// raw_sql "throw" throws; raw_sql "big" returns a large reply at once; every
/// other call blocks until release() or its cancellation, then answers
/// "ran <sql>" (or "cancelled").
class ScriptedBackend final : public detail::Backend {
public:
  class Control final : public detail::CallControl {
  public:
    explicit Control(ScriptedBackend& owner) : owner_(owner) {
      std::lock_guard lock(owner_.mutex_);
      ++owner_.live_controls_;
    }
    ~Control() override {
      std::lock_guard lock(owner_.mutex_);
      --owner_.live_controls_;
    }
    void cancel() noexcept override {
      std::lock_guard lock(owner_.mutex_);
      cancelled_ = true;
      ++owner_.cancels_;
      owner_.changed_.notify_all();
    }
    bool cancelled_ = false;  // guarded by owner_.mutex_

  private:
    ScriptedBackend& owner_;
  };

  std::unique_ptr<detail::CallControl> make_control() override {
    {
      std::lock_guard lock(mutex_);
      if (std::exchange(fail_next_control_, false)) throw std::runtime_error("a backend that breaks as a call starts");
    }
    return std::make_unique<Control>(*this);
  }

  /// The next make_control() throws (on the thread that starts the call).
  void fail_next_control() {
    std::lock_guard lock(mutex_);
    fail_next_control_ = true;
  }
  /// Calls whose control still exists: made and not yet released by the
  /// server.
  int live_controls() {
    std::lock_guard lock(mutex_);
    return live_controls_;
  }

  detail::CallReply run(const detail::ToolCall& call, detail::CallControl& control,
                        const detail::ProgressSink& progress) override {
    auto& mine = static_cast<Control&>(control);
    const auto* raw = std::get_if<detail::RawSqlCall>(&call);
    const std::string sql = raw != nullptr ? raw->sql : "";
    {
      std::lock_guard lock(mutex_);
      if (raw != nullptr) databases_.push_back(raw->database);
    }
    if (sql == "throw") throw std::runtime_error("driver text that must not be shown");
    if (sql == "progress" && progress) {
      progress(ProgressFigures{std::chrono::milliseconds(1500), 10, 100});
      progress(ProgressFigures{std::chrono::milliseconds(2500), 20, 100});
    }
    if (sql == "big") return scripted_reply(Literal("big "), std::string(4096, 'x'), nlohmann::json{{"kind", "raw_rows"}}, false);
    std::unique_lock lock(mutex_);
    ++running_;
    ++started_;
    peak_ = std::max(peak_, running_);
    changed_.notify_all();
    changed_.wait(lock, [&] { return released_ || mine.cancelled_; });
    --running_;
    changed_.notify_all();
    if (mine.cancelled_) return scripted_reply(Literal("cancelled"), std::nullopt, nlohmann::json{{"kind", "refusal"}}, true);
    return scripted_reply(Literal("ran "), sql, nlohmann::json{{"kind", "raw_rows"}}, false);
  }

  detail::CallReply too_large(const detail::ToolCall&, std::size_t bytes) override {
    return scripted_reply(Trusted::format("too large: {}", bytes), std::nullopt,
                          nlohmann::json{{"kind", "refusal"}, {"reason", "limit"}}, true);
  }

  /// Lets every blocked call, and every later one, return.
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

  /// Waits until `count` calls block at once; false on timeout.
  bool wait_running(int count, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return running_ == count; });
  }

  int started() {
    std::lock_guard lock(mutex_);
    return started_;
  }
  int peak() {
    std::lock_guard lock(mutex_);
    return peak_;
  }
  int cancels() {
    std::lock_guard lock(mutex_);
    return cancels_;
  }
  /// The `database` of each raw_sql call the backend was given, in order.
  std::vector<std::string> databases() {
    std::lock_guard lock(mutex_);
    return databases_;
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool released_ = false;
  int running_ = 0;
  int started_ = 0;
  int peak_ = 0;
  int cancels_ = 0;
  int live_controls_ = 0;
  bool fail_next_control_ = false;
  std::vector<std::string> databases_;
};

/// A channel that keeps every message it is sent, parsed.
class RecordingChannel final : public detail::ReplyChannel {
public:
  void send(std::string message) override {
    std::lock_guard lock(mutex_);
    messages_.push_back(nlohmann::json::parse(message));
    changed_.notify_all();
  }

  /// Waits until the channel holds `count` messages; false on timeout.
  bool wait_for(std::size_t count, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return messages_.size() >= count; });
  }

  std::vector<nlohmann::json> messages() {
    std::lock_guard lock(mutex_);
    return messages_;
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<nlohmann::json> messages_;
};

/// The lines an operator log received, through the library's sink.
class CapturedLines {
public:
  rawtool::LogSink sink() {
    return [this](std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    };
  }
  std::vector<nlohmann::json> records() const {
    std::lock_guard lock(mutex_);
    std::vector<nlohmann::json> out;
    for (const auto& line : lines_) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  std::string all() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& line : lines_) out += line + "\n";
    return out;
  }

private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

}  // namespace rawtool::mcp::test
