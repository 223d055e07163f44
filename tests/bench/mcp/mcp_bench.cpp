// What the MCP server adds: tools/call raw_sql through the `rawtool mcp`
// binary over pipes (a client writing one request line and reading one
// response line), beside Tool::raw alone in this process, with the same
// configuration file, in the same run. Each benchmark reports its p50 and p99
// latency in microseconds as counters; the added cost is the difference of
// the p50s.
//
//   ping            the transport alone (answered on the reader thread)
//   SELECT 1        one row, one column
//   rows_20k        20,000 rows x 2 columns, end to end
//
// SQLite runs on a temporary file; PostgreSQL runs when RAWTOOL_TEST_PG_READER_URL
// (or RAWTOOL_TEST_PG_URL) is set.
//
//   RAWTOOL_TEST_PG_READER_URL=postgresql://rawtool_reader@... ./mcp_bench

#include <rawtool/config.hpp>
#include <rawtool/tool.hpp>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <csignal>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

enum class Db { sqlite, postgresql };

const char* postgres_url() {
  for (const char* name : {"RAWTOOL_TEST_PG_READER_URL", "RAWTOOL_TEST_PG_URL"}) {
    const char* url = std::getenv(name);
    if (url != nullptr && *url != '\0') return url;
  }
  return nullptr;
}

std::string rows_20k_sql(Db db) {
  return db == Db::sqlite ? "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) "
                            "SELECT x AS id, 'row ' || x AS label FROM c"
                          : "SELECT g AS id, 'row ' || g AS label FROM generate_series(1, 20000) AS g";
}

// A configuration file per engine, in a temporary folder removed at exit.
class Setup {
public:
  Setup() {
    dir_ = std::filesystem::temp_directory_path() / ("rawtool-mcp-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    sqlite3* db = nullptr;
    sqlite3_open((dir_ / "bench.sqlite").c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS t(x)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    const json limits{{"max_rows", 100000}, {"max_bytes", 64 * 1024 * 1024}, {"statement_timeout_ms", 60000}};
    write("sqlite.json", json{{"databases", json::array({json{{"label", "bench"}, {"path", "bench.sqlite"}, {"limits", limits}}})}});
    if (const char* url = postgres_url()) {
      write("postgresql.json",
            json{{"databases", json::array({json{{"label", "bench"}, {"url", url}, {"limits", limits}}})}});
    }
  }
  ~Setup() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Setup(const Setup&) = delete;
  Setup& operator=(const Setup&) = delete;

  [[nodiscard]] std::filesystem::path config(Db db) const { return dir_ / (db == Db::sqlite ? "sqlite.json" : "postgresql.json"); }

private:
  void write(const char* name, const json& config) const {
    std::ofstream out(dir_ / name);
    out << config.dump();
  }
  std::filesystem::path dir_;
};

Setup& setup() {
  static Setup instance;
  return instance;
}

// `rawtool mcp --config FILE` with pipes; one request line out, one response line in.
class McpPipe {
public:
  explicit McpPipe(const std::filesystem::path& config) {
    std::array<int, 2> to_child{};
    std::array<int, 2> from_child{};
    if (::pipe2(to_child.data(), O_CLOEXEC) != 0 || ::pipe2(from_child.data(), O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    const std::string binary = RAWTOOL_MCP_BINARY;
    const std::string config_path = config.string();
    std::array<char*, 5> argv{const_cast<char*>(binary.c_str()), const_cast<char*>("mcp"),
                              const_cast<char*>("--config"), const_cast<char*>(config_path.c_str()), nullptr};
    const int rc = ::posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_child[0]);
    ::close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
    if (rc != 0) throw std::runtime_error("cannot start " + binary);
    round_trip(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}})");
    write_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  }
  ~McpPipe() {
    ::close(in_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    ::close(out_);
  }
  McpPipe(const McpPipe&) = delete;
  McpPipe& operator=(const McpPipe&) = delete;

  /// Writes `request` and returns the next line the server writes.
  const std::string& round_trip(const std::string& request) {
    write_line(request);
    return read_line();
  }

private:
  void write_line(std::string line) {
    line.push_back('\n');
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t wrote = ::write(in_, line.data() + done, line.size() - done);
      if (wrote <= 0) throw std::runtime_error("write to the server failed");
      done += static_cast<std::size_t>(wrote);
    }
  }
  const std::string& read_line() {
    for (;;) {
      if (const auto newline = buffer_.find('\n', scanned_); newline != std::string::npos) {
        line_.assign(buffer_, 0, newline);
        buffer_.erase(0, newline + 1);
        scanned_ = 0;
        return line_;
      }
      scanned_ = buffer_.size();
      std::array<char, 1 << 16> chunk{};
      const ssize_t got = ::read(out_, chunk.data(), chunk.size());
      if (got <= 0) throw std::runtime_error("the server closed its output");
      buffer_.append(chunk.data(), static_cast<std::size_t>(got));
    }
  }

  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string buffer_;
  std::size_t scanned_ = 0;
  std::string line_;
};

McpPipe& server(Db db) {
  static std::map<Db, std::unique_ptr<McpPipe>> servers;
  auto& slot = servers[db];
  if (!slot) slot = std::make_unique<McpPipe>(setup().config(db));
  return *slot;
}

rawtool::Tool& library(Db db) {
  static std::map<Db, std::unique_ptr<rawtool::Tool>> tools;
  auto& slot = tools[db];
  if (!slot) slot = rawtool::Tool::open(rawtool::load_config(setup().config(db)));
  return *slot;
}

void report(benchmark::State& state, std::vector<double>& micros, std::size_t reply_bytes) {
  if (micros.empty()) return;
  std::sort(micros.begin(), micros.end());
  state.counters["p50_us"] = micros[micros.size() / 2];
  state.counters["p99_us"] = micros[std::min(micros.size() - 1, micros.size() * 99 / 100)];
  state.counters["reply_bytes"] = static_cast<double>(reply_bytes);
}

bool available(benchmark::State& state, Db db) {
  if (db == Db::postgresql && postgres_url() == nullptr) {
    state.SkipWithError("RAWTOOL_TEST_PG_READER_URL / RAWTOOL_TEST_PG_URL is not set");
    return false;
  }
  return true;
}

void library_call(benchmark::State& state, Db db, const std::string& sql) {
  if (!available(state, db)) return;
  rawtool::Tool& tool = library(db);
  if (tool.raw(sql).is_error) {
    state.SkipWithError("the statement failed through the library");
    return;
  }
  std::vector<double> micros;
  std::size_t bytes = 0;
  for (auto _ : state) {
    const auto started = Clock::now();
    rawtool::Reply reply = tool.raw(sql);
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - started).count());
    bytes = reply.text.size();
    benchmark::DoNotOptimize(reply.structured);
  }
  report(state, micros, bytes);
}

void mcp_call(benchmark::State& state, Db db, const std::string& sql) {
  if (!available(state, db)) return;
  McpPipe& pipe = server(db);
  const std::string request =
      json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", {{"name", "raw_sql"}, {"arguments", {{"sql", sql}}}}}}
          .dump();
  const json first = json::parse(pipe.round_trip(request));
  if (!first.contains("result") || first["result"]["isError"] != false) {
    state.SkipWithError("the statement failed through the MCP server");
    return;
  }
  std::vector<double> micros;
  std::size_t bytes = 0;
  for (auto _ : state) {
    const auto started = Clock::now();
    const std::string& line = pipe.round_trip(request);
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - started).count());
    bytes = line.size();
    if (line.find("\"isError\":false") == std::string::npos) {
      state.SkipWithError("a call failed through the MCP server");
      break;
    }
  }
  report(state, micros, bytes);
}

// The transport alone: a ping answered by the reader thread, no tool call.
void mcp_ping(benchmark::State& state) {
  McpPipe& pipe = server(Db::sqlite);
  const std::string request = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  std::vector<double> micros;
  std::size_t bytes = 0;
  for (auto _ : state) {
    const auto started = Clock::now();
    bytes = pipe.round_trip(request).size();
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - started).count());
  }
  report(state, micros, bytes);
}

void library_select1_sqlite(benchmark::State& state) { library_call(state, Db::sqlite, "SELECT 1"); }
void mcp_select1_sqlite(benchmark::State& state) { mcp_call(state, Db::sqlite, "SELECT 1"); }
void library_select1_postgresql(benchmark::State& state) { library_call(state, Db::postgresql, "SELECT 1"); }
void mcp_select1_postgresql(benchmark::State& state) { mcp_call(state, Db::postgresql, "SELECT 1"); }
void library_rows20k_sqlite(benchmark::State& state) { library_call(state, Db::sqlite, rows_20k_sql(Db::sqlite)); }
void mcp_rows20k_sqlite(benchmark::State& state) { mcp_call(state, Db::sqlite, rows_20k_sql(Db::sqlite)); }
void library_rows20k_postgresql(benchmark::State& state) { library_call(state, Db::postgresql, rows_20k_sql(Db::postgresql)); }
void mcp_rows20k_postgresql(benchmark::State& state) { mcp_call(state, Db::postgresql, rows_20k_sql(Db::postgresql)); }

}  // namespace

BENCHMARK(mcp_ping)->UseRealTime()->MinTime(2.0);
BENCHMARK(library_select1_sqlite)->UseRealTime()->MinTime(2.0);
BENCHMARK(mcp_select1_sqlite)->UseRealTime()->MinTime(2.0);
BENCHMARK(library_select1_postgresql)->UseRealTime()->MinTime(2.0);
BENCHMARK(mcp_select1_postgresql)->UseRealTime()->MinTime(2.0);
BENCHMARK(library_rows20k_sqlite)->UseRealTime()->MinTime(3.0)->Unit(benchmark::kMillisecond);
BENCHMARK(mcp_rows20k_sqlite)->UseRealTime()->MinTime(3.0)->Unit(benchmark::kMillisecond);
BENCHMARK(library_rows20k_postgresql)->UseRealTime()->MinTime(3.0)->Unit(benchmark::kMillisecond);
BENCHMARK(mcp_rows20k_postgresql)->UseRealTime()->MinTime(3.0)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
