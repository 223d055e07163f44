// Peak memory of the statements that try to take more than the caps ("memory
// bombs"), each run once in a child process of its own so that its peak RSS
// (ru_maxrss) is its own, beside the size of the largest protocol message it
// makes the server send and bare libpq reading the same statement, in the
// same run.
//
//   RAWTOOL_TEST_PG_READER_URL=... pg_memory_bench
//   RAWTOOL_MEMORY_BENCH_ROW_BYTES=300000000 RAWTOOL_MEMORY_BENCH_ERROR_BYTES=200000000 (the defaults)
//
// Counters: peak_rss_MiB (the child's peak), message_MiB (the statement's
// largest message: the one cell, or the error's message field), x_message
// (the ratio of the two). The rawtool rows are the driver alone and the
// library's raw() (which adds rendering and the operator log line, sent to
// a sink that only counts it: log_bytes).
#include <rawtool/config.hpp>
#include <rawtool/driver.hpp>
#include <rawtool/tool.hpp>

#include <benchmark/benchmark.h>
#include <libpq-fe.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>

namespace {

std::string url() {
  const char* value = std::getenv("RAWTOOL_TEST_PG_READER_URL");
  return value == nullptr ? std::string() : std::string(value);
}

long long size_from(const char* variable, long long fallback) {
  const char* value = std::getenv(variable);
  return value == nullptr ? fallback : std::atoll(value);
}

long long row_bytes() { return size_from("RAWTOOL_MEMORY_BENCH_ROW_BYTES", 300000000); }
long long error_bytes() { return size_from("RAWTOOL_MEMORY_BENCH_ERROR_BYTES", 200000000); }

std::string row_statement() { return "SELECT repeat('x', " + std::to_string(row_bytes()) + ")"; }
std::string error_statement() {
  return "DO $$BEGIN RAISE EXCEPTION '%', repeat('E', " + std::to_string(error_bytes()) + "); END$$";
}

struct ChildResult {
  long peak_kib = -1;
  long long extra = 0;  ///< a figure the child reports beside its peak
};

/// Runs `work` in a child process and returns its peak RSS and extra figure.
ChildResult in_child(const std::function<long long()>& work) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    const long long extra = work();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const long long figures[2] = {usage.ru_maxrss, extra};
    const ssize_t wrote = write(pipe_fds[1], figures, sizeof figures);
    _exit(wrote == static_cast<ssize_t>(sizeof figures) ? 0 : 1);
  }
  close(pipe_fds[1]);
  long long figures[2] = {-1, 0};
  const ssize_t got = read(pipe_fds[0], figures, sizeof figures);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof figures) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  return {static_cast<long>(figures[0]), figures[1]};
}

void report(benchmark::State& state, const ChildResult& result, long long message_bytes) {
  if (result.peak_kib < 0) {
    state.SkipWithError("the child process failed");
    return;
  }
  const double peak_mib = static_cast<double>(result.peak_kib) / 1024.0;
  const double message_mib = static_cast<double>(message_bytes) / (1024.0 * 1024.0);
  state.counters["peak_rss_MiB"] = peak_mib;
  state.counters["message_MiB"] = message_mib;
  state.counters["x_message"] = peak_mib / message_mib;
}

void run_once(benchmark::State& state, long long message_bytes, const std::function<long long()>& work,
              const char* extra_name = nullptr) {
  if (url().empty()) {
    state.SkipWithError("RAWTOOL_TEST_PG_READER_URL is not set");
    return;
  }
  ChildResult result;
  for (auto _ : state) result = in_child(work);
  report(state, result, message_bytes);
  if (extra_name != nullptr) state.counters[extra_name] = static_cast<double>(result.extra);
}

long long driver_call(const std::string& statement) {
  auto driver = rawtool::make_postgres_driver(url());
  const rawtool::Outcome outcome = driver->execute(statement, {}, rawtool::Limits{}, rawtool::AccessMode::read_only);
  return static_cast<long long>(outcome.index());
}

long long tool_call(const std::string& statement) {
  rawtool::Config config;
  rawtool::DatabaseConfig database;
  database.target = url();
  config.databases.push_back(database);
  long long logged = 0;
  rawtool::ToolOptions options;
  options.log = [&logged](std::string_view line) { logged += static_cast<long long>(line.size()); };
  auto tool = rawtool::Tool::open(config, options);
  const rawtool::Reply reply = tool->raw(statement);
  benchmark::DoNotOptimize(reply.text().data());
  return logged;
}

long long libpq_exec(const std::string& statement) {
  PGconn* conn = PQconnectdb(url().c_str());
  PGresult* result = PQexec(conn, statement.c_str());
  const long long status = PQresultStatus(result);
  PQclear(result);
  PQfinish(conn);
  return status;
}

long long libpq_single_row(const std::string& statement) {
  PGconn* conn = PQconnectdb(url().c_str());
  long long rows = 0;
  if (PQsendQuery(conn, statement.c_str()) == 1 && PQsetSingleRowMode(conn) == 1) {
    while (PGresult* result = PQgetResult(conn)) {
      if (PQresultStatus(result) == PGRES_SINGLE_TUPLE) ++rows;
      PQclear(result);
    }
  }
  PQfinish(conn);
  return rows;
}

void pg_row_driver(benchmark::State& state) { run_once(state, row_bytes(), [] { return driver_call(row_statement()); }); }
void pg_row_tool_raw(benchmark::State& state) {
  run_once(state, row_bytes(), [] { return tool_call(row_statement()); }, "log_bytes");
}
void pg_row_libpq_single_row(benchmark::State& state) {
  run_once(state, row_bytes(), [] { return libpq_single_row(row_statement()); });
}
void pg_row_libpq_exec(benchmark::State& state) { run_once(state, row_bytes(), [] { return libpq_exec(row_statement()); }); }
void pg_error_driver(benchmark::State& state) { run_once(state, error_bytes(), [] { return driver_call(error_statement()); }); }
void pg_error_tool_raw(benchmark::State& state) {
  run_once(state, error_bytes(), [] { return tool_call(error_statement()); }, "log_bytes");
}
void pg_error_libpq_exec(benchmark::State& state) {
  run_once(state, error_bytes(), [] { return libpq_exec(error_statement()); });
}

BENCHMARK(pg_row_driver)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(pg_row_tool_raw)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(pg_row_libpq_single_row)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(pg_row_libpq_exec)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(pg_error_driver)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(pg_error_tool_raw)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(pg_error_libpq_exec)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
