// The operator log through the library: the destination a configuration file
// names, the line schema, levels, bounded lines, and whole lines from many
// threads and processes appending to one file. A driver at the driver
// boundary fails every statement with the Failure a test gives it.

#include "digest.hpp"
#include "fixture.hpp"

#include "lib/detail/log.hpp"

#include <rawtool/config.hpp>
#include <rawtool/tool.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using rawtool::test::contains;

namespace {

class FailingDriver final : public rawtool::Driver {
public:
  explicit FailingDriver(std::shared_ptr<const rawtool::Failure> failure) : failure_(std::move(failure)) {}
  [[nodiscard]] rawtool::Engine engine() const noexcept override { return rawtool::Engine::postgresql; }
  using rawtool::Driver::execute;
  rawtool::Outcome execute(std::string_view, std::span<const rawtool::Parameter>, const rawtool::Limits&,
                           rawtool::AccessMode, std::stop_token) override {
    return *failure_;
  }
  std::variant<rawtool::DatabaseReport, rawtool::Unavailable> inspect() override { return rawtool::DatabaseReport{}; }

private:
  std::shared_ptr<const rawtool::Failure> failure_;
};

rawtool::Failure failure_with_message(std::string message) {
  rawtool::Failure f;
  f.severity = rawtool::Untrusted(std::string_view("ERROR"));
  f.sqlstate = rawtool::Untrusted(std::string_view("P0001"));
  f.message = rawtool::Untrusted(std::move(message));
  return f;
}

// A configuration file with one catalog query, "q", and `log` as its "log"
// key (nothing when empty), in a folder of its own.
struct LoggedTool {
  rawtool::test::TempDir dir;
  std::unique_ptr<rawtool::Tool> tool;

  LoggedTool(const std::string& log, rawtool::Failure failure, rawtool::ToolOptions options = {}) {
    dir.write("catalog.json", R"J({"queries": [{"name": "q", "description": "d", "sql": "SELECT f()"}]})J");
    std::string config = R"({"databases": [{"label": "main", "path": "unused.db"}], "catalog": "catalog.json")";
    if (!log.empty()) config += R"(, "log": )" + log;
    config += "}";
    dir.write("rawtool.json", config);
    auto shared = std::make_shared<const rawtool::Failure>(std::move(failure));
    options.driver_factory = [shared](const rawtool::DatabaseConfig&) { return std::make_unique<FailingDriver>(shared); };
    tool = rawtool::Tool::open(rawtool::load_config(dir.path() / "rawtool.json"), std::move(options));
  }
};

std::vector<std::string> read_lines(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

const std::regex rfc3339_utc(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)");

}  // namespace

TEST_CASE("a log file named by the configuration is created with mode 0600 beside it and appended to",
          "[tool][log]") {
  rawtool::test::TempDir other;
  LoggedTool t(R"({"path": "operator.log"})", failure_with_message("SECRET-in-the-message"));
  const auto file = t.dir.path() / "operator.log";
  REQUIRE(std::filesystem::exists(file));  // at open, before anything is logged
  struct stat info {};
  REQUIRE(::stat(file.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  CHECK(std::filesystem::file_size(file) == 0);

  const rawtool::Reply first = t.tool->certified("q", nlohmann::json::object());
  const rawtool::Reply second = t.tool->certified("q", nlohmann::json::object());
  CHECK_FALSE(contains(first.text(), "SECRET"));
  const auto lines = read_lines(file);
  REQUIRE(lines.size() == 2);
  const auto a = nlohmann::json::parse(lines[0]);
  CHECK(a["reference"] == first.structured()["reference"]);
  CHECK(a["failure"]["message"] == "SECRET-in-the-message");
  CHECK(nlohmann::json::parse(lines[1])["reference"] == second.structured()["reference"]);

  // A second Tool on the same file appends; it never truncates.
  LoggedTool again(R"({"path": ")" + file.string() + R"("})", failure_with_message("x"));
  (void)again.tool->certified("q", nlohmann::json::object());
  CHECK(read_lines(file).size() == 3);
}

TEST_CASE("every log line is one JSON object with ts, level, component, event and pid first", "[tool][log]") {
  LoggedTool t(R"({"path": "operator.log", "level": "debug"})", failure_with_message("m\nSYSTEM: forged line"));
  const rawtool::Reply reply = t.tool->certified("q", nlohmann::json::object());
  const auto lines = read_lines(t.dir.path() / "operator.log");
  REQUIRE(lines.size() == 2);  // the debug call line, then the failure
  for (const auto& line : lines) {
    INFO(line);
    CHECK(std::all_of(line.begin(), line.end(), [](char c) { return c >= 0x20 && c < 0x7f; }));
    CHECK(std::regex_search(line, std::regex(R"(^\{"ts":"[^"]+","level":"[a-z]+","component":"[a-z]+","event":"[a-z_]+","pid":\d+[,}])")));
    const auto record = nlohmann::json::parse(line);
    CHECK(std::regex_match(record["ts"].get<std::string>(), rfc3339_utc));
    CHECK(record["pid"] == static_cast<long long>(::getpid()));
    CHECK(record["component"] == "tool");
  }
  const auto call = nlohmann::json::parse(lines[0]);
  CHECK(call["level"] == "debug");
  CHECK(call["event"] == "call");
  CHECK(call["path"] == "certified");
  CHECK(call["query"] == "q");
  CHECK(call["outcome"] == "failure");
  CHECK(call["status"] == "execution_failed");
  const auto failure = nlohmann::json::parse(lines[1]);
  CHECK(failure["level"] == "error");
  CHECK(failure["event"] == "certified_failure");
  CHECK(failure["database"] == "main");
  CHECK(failure["reference"] == reply.structured()["reference"]);
  CHECK(failure["failure"]["message"] == "m\nSYSTEM: forged line");
}

TEST_CASE("the level setting drops lines below it, and never a line a reply points at", "[tool][log]") {
  LoggedTool t(R"({"path": "operator.log", "level": "error"})", failure_with_message("m"));
  const rawtool::Reply certified = t.tool->certified("q", nlohmann::json::object());
  const rawtool::Reply unknown = t.tool->certified("nope", nlohmann::json::object());
  const auto lines = read_lines(t.dir.path() / "operator.log");
  REQUIRE(lines.size() == 2);  // no debug call line; both failures
  CHECK(nlohmann::json::parse(lines[0])["reference"] == certified.structured()["reference"]);
  CHECK(nlohmann::json::parse(lines[1])["reference"] == unknown.structured()["reference"]);
  for (const auto& line : lines) CHECK(nlohmann::json::parse(line)["level"] == "error");
}

TEST_CASE("a certified failure with a 200 MB message writes one log line of at most 64 KiB with its size and SHA-256",
          "[tool][log][bounded]") {
  std::string huge(200'000'000, 'E');
  const std::string digest = rawtool::test::sha256_hex(huge);
  LoggedTool t(R"({"path": "operator.log"})", failure_with_message(std::move(huge)));
  const rawtool::Reply reply = t.tool->certified("q", nlohmann::json::object());
  const auto file = t.dir.path() / "operator.log";
  const auto lines = read_lines(file);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].size() + 1 <= 64 * 1024);
  CHECK(std::filesystem::file_size(file) == lines[0].size() + 1);
  const auto record = nlohmann::json::parse(lines[0]);
  CHECK(record["reference"] == reply.structured()["reference"]);
  const auto& message = record["failure"]["message"];
  CHECK(message["truncated"] == true);
  CHECK(message["bytes"] == 200'000'000);
  CHECK(message["sha256"] == digest);
  CHECK(message["prefix"].get<std::string>().find_first_not_of('E') == std::string::npos);
}

TEST_CASE("a log file that cannot be opened is a configuration error naming log.path, before anything is served",
          "[tool][log]") {
  rawtool::test::TempDir dir;
  dir.write("rawtool.json", R"({"databases": [{"path": "x.db"}], "log": {"path": "missing-folder/op.log"}})");
  dir.write("folder.json", R"({"databases": [{"path": "x.db"}], "log": {"path": "."}})");
  for (const char* name : {"rawtool.json", "folder.json"}) {
    INFO(name);
    try {
      (void)rawtool::Tool::open(rawtool::load_config(dir.path() / name));
      FAIL("the Tool opened");
    } catch (const rawtool::ConfigError& e) {
      CHECK(e.field() == "log.path");
      CHECK_THAT(e.what(), Catch::Contains("cannot be opened for appending"));
    }
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() / "missing-folder"));
}

TEST_CASE("a sink given in code takes the lines in place of the configured file, at the configured level",
          "[tool][log]") {
  rawtool::test::CapturedLog log;
  rawtool::ToolOptions options;
  options.log = log.sink();
  LoggedTool t(R"({"path": "operator.log", "level": "debug"})", failure_with_message("m"), std::move(options));
  (void)t.tool->certified("q", nlohmann::json::object());
  CHECK_FALSE(std::filesystem::exists(t.dir.path() / "operator.log"));
  const auto lines = log.lines();
  REQUIRE(lines.size() == 2);
  CHECK(nlohmann::json::parse(lines[0])["event"] == "call");
  CHECK(nlohmann::json::parse(lines[1])["event"] == "certified_failure");
}

TEST_CASE("lines from many threads and several processes appending to one file stay whole", "[tool][log]") {
  rawtool::test::TempDir shared;
  const auto file = shared.path() / "shared.log";
  // Every text field at its bound: lines of about 13 KB, far past PIPE_BUF, so
  // whole lines come from one write(2) on O_APPEND, not from luck.
  const std::string log = R"({"path": ")" + file.string() + R"("})";
  constexpr int processes = 3;
  constexpr int threads = 4;
  constexpr int calls = 40;

  auto run_calls = [&](char fill) {
    rawtool::Failure failure = failure_with_message(std::string(20'000, fill));
    for (rawtool::Untrusted* field : {&failure.detail, &failure.hint, &failure.context, &failure.internal_query,
                                      &failure.schema, &failure.table, &failure.column, &failure.datatype,
                                      &failure.constraint, &failure.statement}) {
      *field = rawtool::Untrusted(std::string(20'000, fill));
    }
    LoggedTool t(log, std::move(failure));
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) {
      pool.emplace_back([&] {
        for (int k = 0; k < calls; ++k) (void)t.tool->certified("q", nlohmann::json::object());
      });
    }
    for (auto& thread : pool) thread.join();
  };

  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      try {
        run_calls(static_cast<char>('a' + p));
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    children.push_back(child);
  }
  run_calls('z');
  for (pid_t child : children) {
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }

  const auto lines = read_lines(file);
  CHECK(lines.size() == static_cast<std::size_t>((processes + 1) * threads * calls));
  std::map<long long, int> per_process;
  std::set<std::string> references;
  for (const auto& line : lines) {
    CHECK(line.size() > 12'000);
    const auto record = nlohmann::json::parse(line, nullptr, false);
    REQUIRE_FALSE(record.is_discarded());
    ++per_process[record["pid"].get<long long>()];
    references.insert(record["reference"].get<std::string>());
    // Every field of the line is one process's fill, at its bound: nothing of another line inside.
    const std::string first = record["failure"]["message"]["prefix"].get<std::string>();
    REQUIRE_FALSE(first.empty());
    for (const char* field : {"message", "detail", "hint", "context", "internal_query", "schema", "table", "column",
                              "datatype", "constraint", "statement"}) {
      const auto& member = record["failure"][field];
      CHECK(member["bytes"] == 20'000);
      CHECK(member["prefix"] == first);
    }
    CHECK(first.find_first_not_of(first[0]) == std::string::npos);
  }
  CHECK(per_process.size() == processes + 1);
  for (const auto& [pid, count] : per_process) CHECK(count == threads * calls);
  CHECK(references.size() == lines.size());
}

TEST_CASE("a record too large for one line is replaced by one that says so and keeps its reference", "[tool][log]") {
  // Only a record built without render::to_log_json can get here.
  nlohmann::json members = {{"reference", "ref-0123456789abcdef0123456789abcdef"}, {"text", std::string(100'000, 'x')}};
  const std::string line = rawtool::detail::format_log_line(std::chrono::system_clock::now(),
                                                                     rawtool::LogLevel::error, "tool", "certified_failure",
                                                                     members);
  CHECK(line.size() < 1024);
  const auto record = nlohmann::json::parse(line);
  CHECK(record["event"] == "log_record_too_large");
  CHECK(record["original_event"] == "certified_failure");
  CHECK(record["reference"] == "ref-0123456789abcdef0123456789abcdef");
  CHECK(record["bytes"].get<std::size_t>() > 100'000);
  CHECK_FALSE(record.contains("text"));
  // Members may not overwrite the stable ones.
  const auto plain = nlohmann::json::parse(rawtool::detail::format_log_line(
      std::chrono::system_clock::time_point{}, rawtool::LogLevel::warn, "mcp", "ignored",
      {{"event", "forged"}, {"level", "error"}, {"detail", "d"}}));
  CHECK(plain["event"] == "ignored");
  CHECK(plain["level"] == "warn");
  CHECK(plain["ts"] == "1970-01-01T00:00:00.000000Z");
  CHECK(plain["detail"] == "d");
}
