// The pieces of one MCP round trip, measured in this process with warm
// caches, each beside the baseline it adds to, so that what mcp_bench shows
// through the binary can be told apart:
//
//   parse_ping / parse_select1      handle_line on the request line (UTF-8 and depth checks,
//                                   JSON parse, validation)
//   library_select1                 Tool::raw("SELECT 1") on SQLite: the baseline of
//   library_select1_respond         the same call, then its response line built as the server
//                                   builds it (call_result, result_response, render::dump)
//   respond_ping                    the response line of a ping
//   pipe_round_trip                 one byte to another thread over a pipe and back: two
//                                   wake-ups, the floor under any request over stdio
//   condvar_round_trip              the same over a mutex and condition variables: what
//                                   handing a call from the reader to a worker and back costs
//
//   ./mcp_parts_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include "mcp/protocol.hpp"
#include "mcp/tools.hpp"

#include <rawtool/config.hpp>
#include <rawtool/render/json.hpp>
#include <rawtool/tool.hpp>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <array>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace {

using nlohmann::json;
namespace mcp = rawtool::mcp::detail;

const std::string ping_line = R"({"jsonrpc":"2.0","id":2,"method":"ping"})";
const std::string select1_line =
    R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"raw_sql","arguments":{"sql":"SELECT 1"}}})";

mcp::ServerDescription& description() {
  static mcp::ServerDescription server = [] {
    mcp::ServerDescription made;
    const mcp::ToolSettings settings;
    made.version = "bench";
    made.tools = mcp::describe_tools(settings);
    made.instructions = mcp::server_instructions(settings);
    return made;
  }();
  return server;
}

mcp::Session ready_session() {
  mcp::Session session;
  session.initialized = true;
  session.client_ready = true;
  session.protocol_version = "2025-11-25";
  return session;
}

void parse(benchmark::State& state, const std::string& line) {
  mcp::Session session = ready_session();
  for (auto _ : state) {
    mcp::Action action = mcp::handle_line(line, session, description());
    benchmark::DoNotOptimize(action);
  }
}

void parse_ping(benchmark::State& state) { parse(state, ping_line); }
void parse_select1(benchmark::State& state) { parse(state, select1_line); }

// An SQLite file in a temporary folder, removed at exit, and a Tool over it.
class SqliteTool {
public:
  SqliteTool() {
    dir_ = std::filesystem::temp_directory_path() / ("rawtool-mcp-parts-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    sqlite3* db = nullptr;
    sqlite3_open((dir_ / "bench.sqlite").c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS t(x)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    {
      std::ofstream out(dir_ / "sqlite.json");
      out << json{{"databases", json::array({json{{"label", "bench"}, {"path", "bench.sqlite"}}})}}.dump();
    }
    tool_ = rawtool::Tool::open(rawtool::load_config(dir_ / "sqlite.json"));
  }
  ~SqliteTool() {
    tool_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  SqliteTool(const SqliteTool&) = delete;
  SqliteTool& operator=(const SqliteTool&) = delete;

  rawtool::Tool& tool() { return *tool_; }

private:
  std::filesystem::path dir_;
  std::unique_ptr<rawtool::Tool> tool_;
};

rawtool::Tool& sqlite_tool() {
  static SqliteTool instance;
  return instance.tool();
}

void library_select1(benchmark::State& state) {
  rawtool::Tool& tool = sqlite_tool();
  for (auto _ : state) {
    rawtool::Reply reply = tool.raw("SELECT 1");
    benchmark::DoNotOptimize(reply);
  }
}

void library_select1_respond(benchmark::State& state) {
  rawtool::Tool& tool = sqlite_tool();
  const json id = 1;
  std::size_t bytes = 0;
  for (auto _ : state) {
    rawtool::Reply reply = tool.raw("SELECT 1");
    std::string line = rawtool::render::dump(
        mcp::result_response(id, mcp::call_result(std::move(reply.text()), std::move(reply.structured()), reply.is_error())));
    line.push_back('\n');
    bytes = line.size();
    benchmark::DoNotOptimize(line);
  }
  state.counters["line_bytes"] = static_cast<double>(bytes);
}

void respond_ping(benchmark::State& state) {
  const json id = 2;
  for (auto _ : state) {
    std::string line = rawtool::render::dump(mcp::result_response(id, json::object()));
    line.push_back('\n');
    benchmark::DoNotOptimize(line);
  }
}

void pipe_round_trip(benchmark::State& state) {
  std::array<int, 2> there{};
  std::array<int, 2> back{};
  if (::pipe2(there.data(), O_CLOEXEC) != 0 || ::pipe2(back.data(), O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  std::thread echo([&] {
    char byte = 0;
    while (::read(there[0], &byte, 1) == 1) {
      if (::write(back[1], &byte, 1) != 1) break;
    }
  });
  char byte = 'x';
  for (auto _ : state) {
    if (::write(there[1], &byte, 1) != 1 || ::read(back[0], &byte, 1) != 1) {
      state.SkipWithError("pipe failed");
      break;
    }
  }
  ::close(there[1]);
  echo.join();
  for (int fd : {there[0], back[0], back[1]}) ::close(fd);
}

void condvar_round_trip(benchmark::State& state) {
  std::mutex mutex;
  std::condition_variable to_echo;
  std::condition_variable to_main;
  long sent = 0;
  long echoed = 0;
  bool done = false;
  std::thread echo([&] {
    std::unique_lock lock(mutex);
    for (;;) {
      to_echo.wait(lock, [&] { return done || sent > echoed; });
      if (done) return;
      echoed = sent;
      to_main.notify_one();
    }
  });
  for (auto _ : state) {
    std::unique_lock lock(mutex);
    ++sent;
    to_echo.notify_one();
    to_main.wait(lock, [&] { return echoed == sent; });
  }
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  to_echo.notify_one();
  echo.join();
}

}  // namespace

BENCHMARK(parse_ping);
BENCHMARK(parse_select1);
BENCHMARK(library_select1);
BENCHMARK(library_select1_respond);
BENCHMARK(respond_ping);
BENCHMARK(pipe_round_trip)->UseRealTime();
BENCHMARK(condvar_round_trip)->UseRealTime();

BENCHMARK_MAIN();
