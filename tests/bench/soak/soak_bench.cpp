// Soak: the real binary (`rawtool mcp`) under 1, 2 and 8 concurrent clients
// for a fixed time, on SQLite and on PostgreSQL (RAWTOOL_TEST_PG_READER_URL).
// Each benchmark starts a fresh server and reports calls per second, p50 and
// p99 latency of a tools/call as the client sees it, the server's peak RSS
// (VmHWM) and any wrong reply. The baseline, measured in the same run at the
// same concurrency against the same kind of server, is `ping`: the pipe and
// JSON-RPC round trip with no tool and no database behind it.
//
//   soak_bench [--soak_seconds=N] [google benchmark flags]
// N defaults to 3 seconds per benchmark; a soak is e.g. --soak_seconds=120.

#include "environment.hpp"
#include "mcp_pipe.hpp"
#include "mixed_calls.hpp"
#include "replies.hpp"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;
using rawtool::reliability::Engine;
using rawtool::reliability::McpPipe;
using rawtool::reliability::ScratchDir;
using Clock = std::chrono::steady_clock;

double soak_seconds = 3.0;

enum class Load {
  ping,      ///< baseline: JSON-RPC ping, no tool, no database
  select,    ///< raw_sql: SELECT of one literal
  mixed,     ///< raw_sql: good, failing and hostile statements, each reply checked
};

struct Stats {
  std::vector<double> latencies_us;
  std::size_t wrong = 0;
  std::size_t unanswered = 0;
};

void run_soak(benchmark::State& state, Engine engine, Load load) {
  const auto clients = static_cast<unsigned>(state.range(0));
  const auto pg_url = rawtool::reliability::environment("RAWTOOL_TEST_PG_READER_URL");
  if (engine == Engine::postgresql && !pg_url) {
    state.SkipWithError("RAWTOOL_TEST_PG_READER_URL is not set");
    return;
  }
  ScratchDir dir("rawtool-soak");
  rawtool::reliability::make_sqlite_file(dir.path() / "soak.sqlite",
                                         "CREATE TABLE soak(id INTEGER PRIMARY KEY, name TEXT);"
                                         "INSERT INTO soak(name) VALUES ('a'), ('b');");
  const json database = engine == Engine::sqlite ? json{{"label", "soak"}, {"path", "soak.sqlite"}, {"pool_size", 8}}
                                                 : json{{"label", "soak"}, {"url", *pg_url}, {"pool_size", 8}};
  const auto config = dir.write("config.json", json{{"databases", json::array({database})}, {"max_concurrent_calls", 8}}.dump());

  for (auto _ : state) {
    McpPipe server(RAWTOOL_BINARY, config);
    server.initialize();
    std::vector<Stats> stats(clients);
    const auto started = Clock::now();
    const auto deadline = started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(soak_seconds));
    std::vector<std::thread> threads;
    for (unsigned client = 0; client < clients; ++client) {
      threads.emplace_back([&, client] {
        Stats& mine = stats[client];
        for (unsigned call = 0; Clock::now() < deadline; ++call) {
          const auto mixed = rawtool::reliability::make_call(engine, client, call % 100000);
          const auto before = Clock::now();
          std::optional<rawtool::reliability::Response> response;
          if (load == Load::ping) {
            response = server.request(server.next_id(), "ping", json::object(), std::chrono::seconds(60));
          } else if (load == Load::select) {
            response = server.call_tool("raw_sql", json{{"sql", fmt::format("SELECT '{}' AS canary", mixed.canary)}},
                                        std::chrono::seconds(60));
          } else {
            response = server.call_tool("raw_sql", json{{"sql", mixed.sql}}, std::chrono::seconds(60));
          }
          const auto after = Clock::now();
          if (!response) {
            ++mine.unanswered;
            continue;
          }
          mine.latencies_us.push_back(std::chrono::duration<double, std::micro>(after - before).count());
          if (load == Load::mixed &&
              !rawtool::reliability::problems_of(mixed, rawtool::reliability::answer_of_mcp(response->line, response->message))
                   .empty()) {
            ++mine.wrong;
          }
          if (load == Load::select && !response->message.contains("result")) ++mine.wrong;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    const auto peak = rawtool::reliability::proc_status_kib(server.pid(), "VmHWM").value_or(0);
    state.SetIterationTime(elapsed);

    std::vector<double> all;
    std::size_t wrong = 0;
    std::size_t unanswered = 0;
    for (const auto& s : stats) {
      all.insert(all.end(), s.latencies_us.begin(), s.latencies_us.end());
      wrong += s.wrong;
      unanswered += s.unanswered;
    }
    std::sort(all.begin(), all.end());
    const auto percentile = [&](double p) {
      if (all.empty()) return 0.0;
      return all[std::min(all.size() - 1, static_cast<std::size_t>(p * static_cast<double>(all.size())))];
    };
    state.counters["calls_per_s"] = benchmark::Counter(static_cast<double>(all.size()) / elapsed);
    state.counters["p50_us"] = percentile(0.50);
    state.counters["p99_us"] = percentile(0.99);
    state.counters["peak_rss_kib"] = static_cast<double>(peak);
    state.counters["calls"] = static_cast<double>(all.size());
    state.counters["wrong"] = static_cast<double>(wrong);
    state.counters["unanswered"] = static_cast<double>(unanswered);
    if (wrong != 0 || unanswered != 0 || server.protocol_violations() != 0) {
      state.SkipWithError("a reply was wrong, missing, or not a protocol message");
    }
  }
}

void register_all() {
  const std::pair<Engine, const char*> engines[] = {{Engine::sqlite, "sqlite"}, {Engine::postgresql, "postgresql"}};
  const std::pair<Load, const char*> loads[] = {{Load::ping, "ping_baseline"}, {Load::select, "raw_select"}, {Load::mixed, "raw_mixed"}};
  for (const auto& [engine, engine_name] : engines) {
    for (const auto& [load, load_name] : loads) {
      benchmark::RegisterBenchmark(fmt::format("soak/{}/{}", engine_name, load_name).c_str(),
                                   [engine = engine, load = load](benchmark::State& state) { run_soak(state, engine, load); })
          ->Arg(1)
          ->Arg(2)
          ->Arg(8)
          ->ArgName("clients")
          ->Iterations(1)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // --soak_seconds=N is ours; everything else goes to Google Benchmark.
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    constexpr std::string_view flag = "--soak_seconds=";
    if (std::string_view(argv[i]).substr(0, flag.size()) == flag) {
      soak_seconds = std::atof(argv[i] + flag.size());
      if (soak_seconds <= 0) {
        std::fprintf(stderr, "soak_bench: --soak_seconds must be positive\n");
        return 2;
      }
      continue;
    }
    rest.push_back(argv[i]);
  }
  int rest_count = static_cast<int>(rest.size());
  register_all();
  benchmark::Initialize(&rest_count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_count, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
