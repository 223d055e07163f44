// The pool and cancellation, over a scripted driver at the driver boundary:
// drivers made lazily and never more than pool_size, callers beyond it wait,
// cancel reaches a running statement or a waiting call, a call cancelled
// before it starts never runs, and Unavailable is a status whose complaint
// only the log sees.

#include "fixture.hpp"

#include <rawtool/render/json.hpp>
#include <rawtool/tool.hpp>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using rawtool::test::contains;

namespace {

// Shared by every driver a test's factory makes.
struct Script {
  std::mutex mutex;
  std::condition_variable changed;
  bool block = false;          // execute waits until released or cancelled
  bool released = false;
  std::chrono::milliseconds work{0};
  bool unavailable = false;    // execute reports Unavailable
  std::atomic<int> made{0};
  std::atomic<int> executes{0};
  std::atomic<int> running{0};
  std::atomic<int> most_running{0};
  std::atomic<int> cancels{0};

  void release() {
    std::lock_guard lock(mutex);
    released = true;
    changed.notify_all();
  }
  // Waits until `n` statements are running.
  bool wait_running(int n) {
    for (int i = 0; i < 500; ++i) {
      if (running.load() >= n) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
};

class ScriptedDriver final : public rawtool::Driver {
public:
  explicit ScriptedDriver(Script& script) : script_(script) { ++script_.made; }
  [[nodiscard]] rawtool::Engine engine() const noexcept override { return rawtool::Engine::sqlite; }

  using rawtool::Driver::execute;
  rawtool::Outcome execute(std::string_view, std::span<const rawtool::Parameter>, const rawtool::Limits&,
                           rawtool::AccessMode, std::stop_token stop) override {
    ++script_.executes;
    int now = ++script_.running;
    int most = script_.most_running.load();
    while (now > most && !script_.most_running.compare_exchange_weak(most, now)) {
    }
    {
      std::lock_guard lock(script_.mutex);
      cancelled_ = false;
    }
    const std::stop_callback on_stop(stop, [this] { cancel(); });
    bool cancelled = false;
    {
      std::unique_lock lock(script_.mutex);
      if (script_.block) {
        script_.changed.wait(lock, [&] { return script_.released || cancelled_; });
      } else if (script_.work.count() > 0) {
        script_.changed.wait_for(lock, script_.work, [&] { return cancelled_; });
      }
      cancelled = cancelled_;
    }
    --script_.running;
    if (cancelled) return rawtool::Refusal{rawtool::RefusalReason::cancelled, "The statement was cancelled."};
    if (script_.unavailable) {
      return rawtool::Unavailable{rawtool::Untrusted(std::string_view("could not connect to host CANARY-unavail.example"))};
    }
    rawtool::Rows rows;
    rows.columns.push_back({rawtool::Untrusted(std::string_view("one")), rawtool::Untrusted(std::string_view("integer"))});
    rows.rows.push_back({rawtool::Cell(rawtool::Untrusted(std::string_view("1")))});
    return rows;
  }

  std::variant<rawtool::DatabaseReport, rawtool::Unavailable> inspect() override { return rawtool::DatabaseReport{}; }

private:
  // What the call's stop does: counted, and the statement ends.
  void cancel() noexcept {
    ++script_.cancels;
    std::lock_guard lock(script_.mutex);
    cancelled_ = true;
    script_.changed.notify_all();
  }

  Script& script_;
  bool cancelled_ = false;  // REQUIRES: script_.mutex held
};

struct ScriptedTool {
  Script script;
  rawtool::test::CapturedLog log;
  std::unique_ptr<rawtool::Tool> tool;

  explicit ScriptedTool(std::size_t pool_size) {
    rawtool::test::TempDir dir;
    dir.write("catalog.json",
              R"({"queries": [{"name": "one", "description": "d", "sql": "SELECT 1"}]})");
    dir.write("rawtool.json", R"({"databases": [{"label": "scripted", "path": "unused.db", "pool_size": )" +
                                  std::to_string(pool_size) + R"(}], "catalog": "catalog.json"})");
    rawtool::ToolOptions options;
    options.log = log.sink();
    options.driver_factory = [this](const rawtool::DatabaseConfig&) { return std::make_unique<ScriptedDriver>(script); };
    tool = rawtool::Tool::open(rawtool::load_config(dir.path() / "rawtool.json"), std::move(options));
  }
};

}  // namespace

TEST_CASE("drivers are made on first use, not at open", "[tool][pool]") {
  ScriptedTool t(4);
  CHECK(t.script.made == 0);
  CHECK_FALSE(t.tool->raw("SELECT 1").is_error());
  CHECK(t.script.made == 1);
  CHECK_FALSE(t.tool->raw("SELECT 1").is_error());
  CHECK(t.script.made == 1);  // the idle driver is reused
}

TEST_CASE("many threads share a pool that never exceeds pool_size, callers beyond it wait", "[tool][pool]") {
  ScriptedTool t(3);
  t.script.work = 15ms;
  constexpr int threads = 12;
  constexpr int calls_each = 4;
  std::atomic<int> ok{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      for (int k = 0; k < calls_each; ++k) {
        rawtool::Reply r = t.tool->raw("SELECT 1");
        if (!r.is_error() && r.structured()["kind"] == "raw_rows") ++ok;
      }
    });
  }
  for (auto& w : workers) w.join();
  CHECK(ok == threads * calls_each);
  CHECK(t.script.executes == threads * calls_each);
  CHECK(t.script.made <= 3);
  CHECK(t.script.most_running <= 3);
  CHECK(t.script.most_running >= 2);  // the pool does let calls run side by side
}

TEST_CASE("cancel stops a running statement and the call returns a cancelled refusal", "[tool][cancel]") {
  ScriptedTool t(1);
  t.script.block = true;
  rawtool::Cancellation cancellation;
  rawtool::CallOptions options;
  options.cancellation = &cancellation;
  rawtool::Reply reply;
  std::thread caller([&] { reply = t.tool->raw("SELECT pg_sleep(1000)", options); });
  REQUIRE(t.script.wait_running(1));
  cancellation.cancel();
  caller.join();
  CHECK(cancellation.cancelled());
  CHECK(t.script.cancels == 1);
  CHECK(reply.is_error());
  CHECK(reply.structured()["kind"] == "refusal");
  CHECK(reply.structured()["reason"] == "cancelled");
  // The driver went back to the pool and serves the next call.
  t.script.block = false;
  CHECK_FALSE(t.tool->raw("SELECT 1").is_error());
  CHECK(t.script.made == 1);
}

TEST_CASE("a call cancelled before it starts does not run", "[tool][cancel]") {
  ScriptedTool t(2);
  rawtool::Cancellation cancellation;
  cancellation.cancel();
  rawtool::CallOptions options;
  options.cancellation = &cancellation;
  rawtool::Reply raw = t.tool->raw("SELECT 1", options);
  CHECK(raw.structured()["reason"] == "cancelled");
  rawtool::Reply certified = t.tool->certified("one", nullptr, options);
  CHECK(certified.structured()["kind"] == "certified_status");
  CHECK(certified.structured()["status"] == "refused");
  CHECK(t.script.executes == 0);
  CHECK(t.script.made == 0);
}

TEST_CASE("a call waiting for a connection can be cancelled without disturbing the running one", "[tool][cancel][pool]") {
  ScriptedTool t(1);
  t.script.block = true;
  rawtool::Reply first;
  std::thread holder([&] { first = t.tool->raw("SELECT 1"); });
  REQUIRE(t.script.wait_running(1));

  // The second call waits for the only driver, which the first holds; its
  // stop ends that wait. Stopped once the call is seen to have started (its
  // progress says running); a stop that still came before it reached the
  // pool (its refusal says so) is tried again on a new call.
  for (int attempt = 0;; ++attempt) {
    REQUIRE(attempt < 20);
    rawtool::Cancellation cancellation;
    rawtool::CallProgress progress;
    rawtool::CallOptions options;
    options.cancellation = &cancellation;
    options.progress = &progress;
    rawtool::Reply second;
    std::atomic<bool> second_done{false};
    std::thread waiter([&] {
      second = t.tool->raw("SELECT 1", options);
      second_done = true;
    });
    const auto started_by = std::chrono::steady_clock::now() + 10s;
    while (progress.phase() == rawtool::CallProgress::Phase::idle) {
      REQUIRE(std::chrono::steady_clock::now() < started_by);
      std::this_thread::yield();
    }
    CHECK_FALSE(second_done.load());  // the only driver is busy: it cannot have run
    cancellation.cancel();
    waiter.join();
    CHECK(second.structured()["reason"] == "cancelled");
    const std::string explanation = second.structured()["explanation"].get<std::string>();
    if (explanation.find("before it ran") != std::string::npos) continue;
    CHECK(explanation == "The call was cancelled while it waited for a connection.");
    break;
  }
  CHECK(t.script.cancels == 0);  // the running statement was not touched
  t.script.release();
  holder.join();
  CHECK_FALSE(first.is_error());
  CHECK(t.script.executes == 1);
}

TEST_CASE("cancelling a certified call gives the refused status", "[tool][cancel][certified]") {
  ScriptedTool t(1);
  t.script.block = true;
  rawtool::Cancellation cancellation;
  rawtool::CallOptions options;
  options.cancellation = &cancellation;
  rawtool::Reply reply;
  std::thread caller([&] { reply = t.tool->certified("one", nlohmann::json::object(), options); });
  REQUIRE(t.script.wait_running(1));
  cancellation.cancel();
  caller.join();
  CHECK(reply.structured()["kind"] == "certified_status");
  CHECK(reply.structured()["status"] == "refused");
}

TEST_CASE("an unreachable database is a status on both paths, and only the log names the host", "[tool][unavailable]") {
  ScriptedTool t(1);
  t.script.unavailable = true;
  rawtool::Reply raw = t.tool->raw("SELECT 1");
  rawtool::Reply certified = t.tool->certified("one", nullptr);
  for (const rawtool::Reply* r : {&raw, &certified}) {
    INFO(r->text());
    CHECK(r->is_error());
    CHECK(r->structured()["status"] == "unavailable");
    CHECK_FALSE(contains(r->text(), "CANARY-unavail"));
    CHECK_FALSE(contains(rawtool::render::dump(r->structured()), "CANARY-unavail"));
    const std::string reference = r->structured()["reference"].get<std::string>();
    CHECK(contains(r->text(), reference));
    bool logged = false;
    for (const std::string& line : t.log.lines()) {
      logged = logged || (contains(line, reference) && contains(line, "CANARY-unavail.example"));
    }
    CHECK(logged);
  }
  CHECK(raw.structured()["kind"] == "raw_unavailable");
  CHECK(raw.structured()["raw_provenance"]["path"] == "raw");
  CHECK(contains(raw.text(), "path=raw (uncertified)"));
  CHECK_FALSE(contains(raw.text(), "certified query"));
  CHECK(certified.structured()["kind"] == "certified_status");
}

TEST_CASE("a driver that cannot be made is reported as unavailable, and the pool slot is freed", "[tool][pool]") {
  rawtool::test::TempDir dir;
  dir.write("rawtool.json", R"({"databases": [{"path": "x.db", "pool_size": 1}]})");
  rawtool::test::CapturedLog log;
  std::atomic<int> attempts{0};
  rawtool::ToolOptions options;
  options.log = log.sink();
  options.driver_factory = [&](const rawtool::DatabaseConfig&) -> std::unique_ptr<rawtool::Driver> {
    ++attempts;
    throw std::runtime_error("CANARY-factory failure");
  };
  auto tool = rawtool::Tool::open(rawtool::load_config(dir.path() / "rawtool.json"), std::move(options));
  for (int i = 0; i < 2; ++i) {
    rawtool::Reply r = tool->raw("SELECT 1");
    CHECK(r.structured()["status"] == "unavailable");
    CHECK_FALSE(contains(r.text(), "CANARY"));
  }
  CHECK(attempts == 2);  // the failed slot did not stay taken
  CHECK(contains(log.all(), "CANARY-factory failure"));
}

TEST_CASE("log lines go to the sink as one JSON object each", "[tool][log]") {
  ScriptedTool t(1);
  (void)t.tool->certified("nope", nullptr);
  REQUIRE(t.log.lines().size() == 1);
  const std::string line = t.log.lines()[0];
  CHECK_FALSE(contains(line, "\n"));
  nlohmann::json record = nlohmann::json::parse(line);
  CHECK(record["event"] == "certified_failure");
  CHECK(record["status"] == "not_found");
  CHECK(record["query"] == "nope");
  CHECK(record["reference"].get<std::string>().rfind("ref-", 0) == 0);
}

TEST_CASE("without a log sink, each log line goes to stderr as one JSON line", "[tool][log]") {
  rawtool::test::TempDir dir;
  dir.write("rawtool.json", R"({"databases": [{"path": "x.db"}]})");
  auto tool = rawtool::Tool::open(rawtool::load_config(dir.path() / "rawtool.json"));
  const std::filesystem::path captured = dir.path() / "stderr.txt";

  std::fflush(stderr);
  int saved = ::dup(2);
  REQUIRE(saved >= 0);
  int fd = ::open(captured.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  ::dup2(fd, 2);
  rawtool::Reply first = tool->certified("nope", nullptr);
  rawtool::Reply second = tool->certified("CANARY\nforged line", nullptr);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(fd);

  std::ifstream in(captured);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 2);
  nlohmann::json a = nlohmann::json::parse(lines[0]);
  nlohmann::json b = nlohmann::json::parse(lines[1]);
  CHECK(a["reference"] == first.structured()["reference"]);
  CHECK(b["reference"] == second.structured()["reference"]);
  CHECK(b["query"] == "CANARY\nforged line");  // carried inside the JSON string, escaped
}

TEST_CASE("a log sink that throws does not lose the line", "[tool][log]") {
  rawtool::test::TempDir dir;
  dir.write("rawtool.json", R"({"databases": [{"path": "x.db"}]})");
  rawtool::ToolOptions options;
  int calls = 0;
  options.log = [&](std::string_view) {
    ++calls;
    throw std::runtime_error("sink down");
  };
  auto tool = rawtool::Tool::open(rawtool::load_config(dir.path() / "rawtool.json"), std::move(options));
  std::fflush(stderr);
  int saved = ::dup(2);
  int fd = ::open((dir.path() / "stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, 2);
  rawtool::Reply reply = tool->certified("nope", nullptr);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(fd);
  CHECK(calls == 1);
  CHECK(reply.structured()["status"] == "not_found");
  std::ifstream in(dir.path() / "stderr.txt");
  std::string line;
  REQUIRE(std::getline(in, line));
  CHECK(nlohmann::json::parse(line)["reference"] == reply.structured()["reference"]);
}
