// What the MCP server adds: tools/call raw_sql through the `rawtool mcp`
// binary over pipes (a client writing one request line and reading one
// response line), beside Tool::raw alone in this process, with the same
// configuration file. Each iteration makes one library call, then one tool
// call and one ping through the server: the three are interleaved so that all
// see the same load on a shared machine, and the ping (the pipes, two process
// wake-ups and the JSON-RPC framing, no tool) is the transport's baseline.
//
// Each benchmark reports, in microseconds unless named otherwise:
//   library_p50_us   Tool::raw in this process
//   mcp_p50_us       the same call through the binary, request written to response read
//   ping_p50_us      a ping through the same binary
//   added_p50_us     mcp_p50_us - library_p50_us: what the server adds at p50 (the goal: <= 50)
//   server_p50_us    added_p50_us - ping_p50_us: what a tool call costs beyond the transport
//   *_p99_us         the p99s of the first three
//   server_cpu_us    the server's CPU time per iteration (one call and one ping), from the
//                    scheduler's accounting of every thread (/proc/PID/task/*/schedstat)
//   server_runq_us   time its threads were runnable but waited for a CPU, per iteration
//   server_switches  times one of its threads was put on a CPU, per iteration
// Run with repetitions and read the medians:
//
//   ./mcp_bench --benchmark_filter=select1 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Benchmarks: select1_<engine> (one row, one column), rows20k_<engine>
// (20,000 rows x 2 columns end to end), capped20k_postgresql (a 20,000-row
// query shown to the default cap of 1,000) beside limit1000_postgresql (the
// query asking for 1,000 itself). SQLite runs on a temporary file;
// PostgreSQL runs when RAWTOOL_TEST_PG_READER_URL (or RAWTOOL_TEST_PG_URL) is
// set.
//
// RAWTOOL_MCP_BENCH_BINARY runs another build of `rawtool` instead of the one
// built beside this benchmark. RAWTOOL_MCP_BENCH_COMPARE names a second build
// that is measured in the same iterations, the two taking turns at going
// first: compare_mcp_p50_us and _p99_us, compare_added_p50_us, compare_ping_p50_us, its
// compare_cpu_us, compare_runq_us and compare_switches, and
// compare_delta_p50_us, the p50 of (its call - this call) iteration by
// iteration, which load that comes and goes affects least, and
// p50_ratio_to_compare and p99_ratio_to_compare, this build's mcp_p50_us and
// mcp_p99_us over the compared build's (below 1: this build is faster). A
// change to the server is judged so against the build before it:
//
//   RAWTOOL_MCP_BENCH_COMPARE=<previous build>/rawtool/rawtool ./mcp_bench --benchmark_filter=select1 ...

#include "mcp_stdio.hpp"

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
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// postgresql_capped: the same server with the default limits (1,000 rows).
enum class Db { sqlite, postgresql, postgresql_capped };

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

const char* postgres_url() {
  if (const char* url = env("RAWTOOL_TEST_PG_READER_URL")) return url;
  return env("RAWTOOL_TEST_PG_URL");
}

std::string server_binary() {
  const char* chosen = env("RAWTOOL_MCP_BENCH_BINARY");
  return chosen != nullptr ? chosen : RAWTOOL_MCP_BINARY;
}

std::optional<std::string> compare_binary() {
  const char* chosen = env("RAWTOOL_MCP_BENCH_COMPARE");
  if (chosen == nullptr) return std::nullopt;
  return std::string(chosen);
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
      write("postgresql-capped.json", json{{"databases", json::array({json{{"label", "bench"}, {"url", url}}})}});
    }
  }
  ~Setup() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Setup(const Setup&) = delete;
  Setup& operator=(const Setup&) = delete;

  [[nodiscard]] std::filesystem::path config(Db db) const {
    switch (db) {
      case Db::sqlite: return dir_ / "sqlite.json";
      case Db::postgresql: return dir_ / "postgresql.json";
      case Db::postgresql_capped: return dir_ / "postgresql-capped.json";
    }
    return {};
  }

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

/// The scheduler's accounting summed over a process's threads
/// (/proc/PID/task/TID/schedstat): time on a CPU, time runnable but waiting
/// for one, and how many times a thread was put on a CPU.
struct SchedStats {
  unsigned long long run_ns = 0;
  unsigned long long wait_ns = 0;
  unsigned long long switches = 0;
};

SchedStats sched_stats_of(pid_t pid) {
  SchedStats total;
  std::error_code error;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks, error)) {
    std::ifstream in(task.path() / "schedstat");
    SchedStats one;
    if (in >> one.run_ns >> one.wait_ns >> one.switches) {
      total.run_ns += one.run_ns;
      total.wait_ns += one.wait_ns;
      total.switches += one.switches;
    }
  }
  return total;
}

// `rawtool mcp --config FILE` with pipes; one request line out, one response line in.
class McpPipe {
public:
  McpPipe(const std::string& binary, const std::filesystem::path& config) {
    const rawtool::test::McpChild child = rawtool::test::spawn_mcp_server(binary, config);
    pid_ = child.pid;
    in_ = child.to_server;
    out_ = child.from_server;
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

  [[nodiscard]] SchedStats sched_stats() const { return sched_stats_of(pid_); }

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
      const ssize_t got = ::read(out_, chunk_.data(), chunk_.size());
      if (got <= 0) throw std::runtime_error("the server closed its output");
      buffer_.append(chunk_.data(), static_cast<std::size_t>(got));
    }
  }

  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string buffer_;
  std::size_t scanned_ = 0;
  std::string line_;
  std::array<char, 1 << 16> chunk_{};
};

McpPipe& server(const std::string& binary, Db db) {
  static std::map<std::pair<std::string, Db>, std::unique_ptr<McpPipe>> servers;
  auto& slot = servers[{binary, db}];
  if (!slot) slot = std::make_unique<McpPipe>(binary, setup().config(db));
  return *slot;
}

rawtool::Tool& library(Db db) {
  static std::map<Db, std::unique_ptr<rawtool::Tool>> tools;
  auto& slot = tools[db];
  if (!slot) slot = rawtool::Tool::open(rawtool::load_config(setup().config(db)));
  return *slot;
}

// Latencies of one kind of round trip, in microseconds.
class Samples {
public:
  void add(Clock::duration elapsed) { micros_.push_back(std::chrono::duration<double, std::micro>(elapsed).count()); }
  [[nodiscard]] bool empty() const { return micros_.empty(); }
  /// The q-quantile (0..1), nearest rank. Sorts the samples.
  double quantile(double q) {
    std::sort(micros_.begin(), micros_.end());
    const auto rank = static_cast<std::size_t>(q * static_cast<double>(micros_.size() - 1) + 0.5);
    return micros_[std::min(rank, micros_.size() - 1)];
  }

private:
  std::vector<double> micros_;
};

bool available(benchmark::State& state, Db db) {
  if (db != Db::sqlite && postgres_url() == nullptr) {
    state.SkipWithError("RAWTOOL_TEST_PG_READER_URL / RAWTOOL_TEST_PG_URL is not set");
    return false;
  }
  return true;
}

std::string call_request(const std::string& sql) {
  return json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", {{"name", "raw_sql"}, {"arguments", {{"sql", sql}}}}}}
      .dump();
}

bool succeeded(const std::string& response) { return response.find("\"isError\":false") != std::string::npos; }

// One library call, then one tool call and one ping through the server and,
// when there is one, through the compared server, per iteration.
void compare(benchmark::State& state, Db db, const std::string& sql) {
  if (!available(state, db)) return;
  rawtool::Tool& tool = library(db);
  const std::string request = call_request(sql);
  const std::string ping = R"({"jsonrpc":"2.0","id":2,"method":"ping"})";
  McpPipe& pipe = server(server_binary(), db);
  const std::optional<std::string> other_binary = compare_binary();
  McpPipe* other = other_binary ? &server(*other_binary, db) : nullptr;
  // A first call each, unmeasured: connections are opened, caches warm, and a
  // failure stops the benchmark instead of being timed.
  if (tool.raw(sql).is_error() || !succeeded(pipe.round_trip(request)) ||
      (other != nullptr && !succeeded(other->round_trip(request)))) {
    state.SkipWithError("the statement failed through the library or the MCP server");
    return;
  }
  Samples library_samples;
  Samples mcp_samples;
  Samples ping_samples;
  Samples other_samples;
  Samples other_ping_samples;
  Samples deltas;  // compared server minus this one, call by call
  std::size_t reply_bytes = 0;
  // One call and one ping through `through`; false when the call failed.
  const auto visit = [&](McpPipe& through, Samples& calls, Samples& pings, Clock::duration& call_time) {
    auto started = Clock::now();
    const std::string& line = through.round_trip(request);
    call_time = Clock::now() - started;
    calls.add(call_time);
    reply_bytes = line.size();
    if (!succeeded(line)) return false;
    started = Clock::now();
    benchmark::DoNotOptimize(through.round_trip(ping).size());
    pings.add(Clock::now() - started);
    return true;
  };
  const SchedStats pipe_before = pipe.sched_stats();
  const SchedStats other_before = other != nullptr ? other->sched_stats() : SchedStats{};
  std::size_t iterations = 0;
  for (auto _ : state) {
    const auto started = Clock::now();
    rawtool::Reply reply = tool.raw(sql);
    library_samples.add(Clock::now() - started);
    benchmark::DoNotOptimize(reply.structured());

    // The two servers take turns at going first, so that neither gains from
    // its place in the iteration.
    Clock::duration mine{};
    Clock::duration theirs{};
    const bool other_first = other != nullptr && iterations % 2 == 1;
    bool ok = true;
    if (other_first) ok = visit(*other, other_samples, other_ping_samples, theirs);
    ok = ok && visit(pipe, mcp_samples, ping_samples, mine);
    if (other != nullptr && !other_first) ok = ok && visit(*other, other_samples, other_ping_samples, theirs);
    if (!ok) {
      state.SkipWithError("a call failed through an MCP server");
      break;
    }
    if (other != nullptr) deltas.add(theirs - mine);
    ++iterations;
  }
  if (library_samples.empty() || mcp_samples.empty() || ping_samples.empty() || iterations == 0) return;
  const double library_p50 = library_samples.quantile(0.5);
  const double mcp_p50 = mcp_samples.quantile(0.5);
  const double ping_p50 = ping_samples.quantile(0.5);
  state.counters["library_p50_us"] = library_p50;
  state.counters["mcp_p50_us"] = mcp_p50;
  state.counters["ping_p50_us"] = ping_p50;
  state.counters["added_p50_us"] = mcp_p50 - library_p50;
  state.counters["server_p50_us"] = mcp_p50 - library_p50 - ping_p50;
  state.counters["library_p99_us"] = library_samples.quantile(0.99);
  state.counters["mcp_p99_us"] = mcp_samples.quantile(0.99);
  state.counters["ping_p99_us"] = ping_samples.quantile(0.99);
  state.counters["reply_bytes"] = static_cast<double>(reply_bytes);
  // What the server process did per iteration (one call and one ping), from
  // the scheduler's own accounting: CPU time, time spent runnable but waiting
  // for a CPU, and how many times one of its threads was put on a CPU.
  const auto per_iteration = [&](const char* prefix, const SchedStats& before, const SchedStats& after) {
    const auto n = static_cast<double>(iterations);
    state.counters[std::string(prefix) + "cpu_us"] = static_cast<double>(after.run_ns - before.run_ns) / 1000.0 / n;
    state.counters[std::string(prefix) + "runq_us"] = static_cast<double>(after.wait_ns - before.wait_ns) / 1000.0 / n;
    state.counters[std::string(prefix) + "switches"] = static_cast<double>(after.switches - before.switches) / n;
  };
  per_iteration("server_", pipe_before, pipe.sched_stats());
  if (other != nullptr && !other_samples.empty()) {
    const double other_p50 = other_samples.quantile(0.5);
    const double other_p99 = other_samples.quantile(0.99);
    state.counters["compare_mcp_p50_us"] = other_p50;
    state.counters["compare_mcp_p99_us"] = other_p99;
    state.counters["p50_ratio_to_compare"] = mcp_p50 / other_p50;
    state.counters["p99_ratio_to_compare"] = mcp_samples.quantile(0.99) / other_p99;
    state.counters["compare_added_p50_us"] = other_p50 - library_p50;
    state.counters["compare_ping_p50_us"] = other_ping_samples.quantile(0.5);
    state.counters["compare_delta_p50_us"] = deltas.quantile(0.5);
    per_iteration("compare_", other_before, other->sched_stats());
  }
}

void select1_sqlite(benchmark::State& state) { compare(state, Db::sqlite, "SELECT 1"); }
void select1_postgresql(benchmark::State& state) { compare(state, Db::postgresql, "SELECT 1"); }
void rows20k_sqlite(benchmark::State& state) { compare(state, Db::sqlite, rows_20k_sql(Db::sqlite)); }
void rows20k_postgresql(benchmark::State& state) { compare(state, Db::postgresql, rows_20k_sql(Db::postgresql)); }
// A query that would make 20,000 rows, shown to the default cap of 1,000, and
// the same rows when the query itself asks for 1,000: what stopping at the cap
// costs beyond the rows shown.
void capped20k_postgresql(benchmark::State& state) {
  compare(state, Db::postgresql_capped, "SELECT g, md5(g::text) FROM generate_series(1, 20000) AS g");
}
void limit1000_postgresql(benchmark::State& state) {
  compare(state, Db::postgresql_capped, "SELECT g, md5(g::text) FROM generate_series(1, 1000) AS g");
}

}  // namespace

BENCHMARK(select1_sqlite)->UseRealTime()->MinTime(3.0);
BENCHMARK(select1_postgresql)->UseRealTime()->MinTime(3.0);
BENCHMARK(rows20k_sqlite)->UseRealTime()->MinTime(4.0)->Unit(benchmark::kMillisecond);
BENCHMARK(rows20k_postgresql)->UseRealTime()->MinTime(4.0)->Unit(benchmark::kMillisecond);
BENCHMARK(capped20k_postgresql)->UseRealTime()->MinTime(3.0)->Unit(benchmark::kMillisecond);
BENCHMARK(limit1000_postgresql)->UseRealTime()->MinTime(3.0)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
