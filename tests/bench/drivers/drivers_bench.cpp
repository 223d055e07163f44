// Per-statement overhead of the PostgreSQL driver against bare libpq on the
// same kind of connection, and memory and time of a 2,000,000-row query.
//
//   RAWTOOL_TEST_PG_READER_URL=... drivers_bench --benchmark_filter=select1
//       --benchmark_repetitions=9 --benchmark_min_time=0.2 --benchmark_enable_random_interleaving=true
//       (one command line)
//   RAWTOOL_TEST_PG_READER_URL=... drivers_bench --benchmark_filter='rows2m/driver_default_caps$'
//
// The select1 benchmarks are the driver in both modes, bare libpq (one
// PQexecParams; one pipelined statement), bare libpq sending exactly the
// driver's wrapping (select1_pipe_full_one_sync for read-only,
// select1_pipe_read_write_wrapping for read-write), and the wrapping taken
// apart (BEGIN/ROLLBACK only, each cleanup statement alone, one Sync or two,
// prepared). Besides the client's real and CPU time each reports
// server_cpu_us, the server process's CPU per call read from /proc (the
// server must run on this machine for it to appear). On a shared machine the
// CPU figures are the steadier ones; random interleaving spreads changes in
// load over every benchmark alike.
//
// Peak RSS (ru_maxrss) only grows within a process, so run each rows2m
// benchmark alone (one filter per process) to read its own peak.
#include "untrusted_bytes.hpp"

#include <rawtool/driver.hpp>

#include <benchmark/benchmark.h>
#include <libpq-fe.h>
#include <sys/resource.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace {

std::string url() {
  const char* value = std::getenv("RAWTOOL_TEST_PG_READER_URL");
  return value == nullptr ? std::string() : std::string(value);
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// CPU seconds (user + system) the server process `pid` has used, from
/// /proc: the server runs on this machine in the benchmark setup. Negative
/// when it cannot be read (a remote server).
double backend_cpu_seconds(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return -1;
  // Fields after the command name (which is in parentheses and may hold spaces).
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int index = 3; fields >> field && index <= 15; ++index) {
    if (index == 14 || index == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

/// Reports the server's CPU per iteration beside the client's, so that the
/// cost of the wrapping can be split between the two ends and the waits.
class ServerCpu {
public:
  explicit ServerCpu(int pid) : pid_(pid), before_(backend_cpu_seconds(pid)) {}
  void report(benchmark::State& state) const {
    const double after = backend_cpu_seconds(pid_);
    if (before_ < 0 || after < 0) return;
    state.counters["server_cpu_us"] = benchmark::Counter((after - before_) * 1e6, benchmark::Counter::kAvgIterations);
  }

private:
  int pid_;
  double before_;
};

using Connection = std::unique_ptr<PGconn, decltype(&PQfinish)>;
using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

Connection connect_bare(benchmark::State& state) {
  Connection connection(PQconnectdb(url().c_str()), &PQfinish);
  if (PQstatus(connection.get()) != CONNECTION_OK) state.SkipWithError("set RAWTOOL_TEST_PG_READER_URL to a reachable server");
  return connection;
}

/// Bare libpq: one PQexecParams round trip, no wrapping.
void select1_bare_libpq(benchmark::State& state) {
  Connection connection = connect_bare(state);
  const ServerCpu server(PQbackendPID(connection.get()));
  for (auto _ : state) {
    Result result(PQexecParams(connection.get(), "SELECT 1", 0, nullptr, nullptr, nullptr, nullptr, 0), &PQclear);
    if (PQresultStatus(result.get()) != PGRES_TUPLES_OK) state.SkipWithError("SELECT 1 failed");
    benchmark::DoNotOptimize(PQgetvalue(result.get(), 0, 0));
  }
  server.report(state);
}

/// Bare libpq doing the read-only wrapping as the driver sent it before it
/// had one Sync per call: five statements and two Syncs in one pipeline,
/// results read and dropped.
void select1_bare_libpq_wrapped(benchmark::State& state) {
  Connection connection = connect_bare(state);
  PGconn* conn = connection.get();
  const auto send = [&](const char* sql) { PQsendQueryParams(conn, sql, 0, nullptr, nullptr, nullptr, nullptr, 0); };
  const ServerCpu server(PQbackendPID(conn));
  for (auto _ : state) {
    PQenterPipelineMode(conn);
    send("BEGIN READ ONLY");
    send("SELECT 1");
    PQpipelineSync(conn);
    send("ROLLBACK");
    send("SELECT pg_catalog.pg_advisory_unlock_all()");
    send("DEALLOCATE ALL");
    PQpipelineSync(conn);
    for (int syncs = 0; syncs < 2;) {
      Result result(PQgetResult(conn), &PQclear);
      if (result == nullptr) continue;  // the end of one query's results
      const ExecStatusType status = PQresultStatus(result.get());
      if (status == PGRES_PIPELINE_SYNC) ++syncs;
      else if (status == PGRES_FATAL_ERROR) state.SkipWithError("the wrapped pipeline failed");
      else if (status == PGRES_TUPLES_OK) benchmark::DoNotOptimize(PQgetvalue(result.get(), 0, 0));
    }
    PQexitPipelineMode(conn);
  }
  server.report(state);
}

/// One pipeline of segments, each a list of statements ended by a Sync, sent
/// at once and read to the last Sync. A statement whose text is in
/// `prepare` is prepared once under a name before the loop and sent as
/// Bind/Execute only.
void run_pipeline(benchmark::State& state, const std::vector<std::vector<const char*>>& segments,
                  const std::vector<std::string_view>& prepare = {}) {
  Connection connection = connect_bare(state);
  PGconn* conn = connection.get();
  std::vector<std::vector<std::string>> names(segments.size());
  int counter = 0;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    for (const char* sql : segments[s]) {
      std::string name;
      if (std::find(prepare.begin(), prepare.end(), std::string_view(sql)) != prepare.end()) {
        name = "bench_" + std::to_string(counter++);
        Result made(PQprepare(conn, name.c_str(), sql, 0, nullptr), &PQclear);
        if (PQresultStatus(made.get()) != PGRES_COMMAND_OK) state.SkipWithError("prepare failed");
      }
      names[s].push_back(std::move(name));
    }
  }
  const ServerCpu server(PQbackendPID(conn));
  for (auto _ : state) {
    PQenterPipelineMode(conn);
    for (std::size_t s = 0; s < segments.size(); ++s) {
      for (std::size_t q = 0; q < segments[s].size(); ++q) {
        if (names[s][q].empty()) {
          PQsendQueryParams(conn, segments[s][q], 0, nullptr, nullptr, nullptr, nullptr, 0);
        } else {
          PQsendQueryPrepared(conn, names[s][q].c_str(), 0, nullptr, nullptr, nullptr, 0);
        }
      }
      PQpipelineSync(conn);
    }
    for (std::size_t syncs = 0; syncs < segments.size();) {
      Result result(PQgetResult(conn), &PQclear);
      if (result == nullptr) continue;  // the end of one query's results
      const ExecStatusType status = PQresultStatus(result.get());
      if (status == PGRES_PIPELINE_SYNC) ++syncs;
      else if (status == PGRES_FATAL_ERROR || status == PGRES_PIPELINE_ABORTED) state.SkipWithError("the pipeline failed");
      else if (status == PGRES_TUPLES_OK) benchmark::DoNotOptimize(PQgetvalue(result.get(), 0, 0));
    }
    PQexitPipelineMode(conn);
  }
  server.report(state);
}

// Components of the read-only wrapping, each over bare libpq, to see what
// every part costs beside the same statement.
void select1_pipe_bare(benchmark::State& state) { run_pipeline(state, {{"SELECT 1"}}); }
void select1_pipe_begin_rollback(benchmark::State& state) {
  run_pipeline(state, {{"BEGIN READ ONLY", "SELECT 1"}, {"ROLLBACK"}});
}
void select1_pipe_begin_rollback_one_sync(benchmark::State& state) {
  run_pipeline(state, {{"BEGIN READ ONLY", "SELECT 1", "ROLLBACK"}});
}
void select1_pipe_no_deallocate(benchmark::State& state) {
  run_pipeline(state, {{"BEGIN READ ONLY", "SELECT 1"}, {"ROLLBACK", "SELECT pg_catalog.pg_advisory_unlock_all()"}});
}
void select1_pipe_full_one_sync(benchmark::State& state) {
  run_pipeline(state, {{"BEGIN READ ONLY", "SELECT 1", "ROLLBACK", "SELECT pg_catalog.pg_advisory_unlock_all()",
                        "DEALLOCATE ALL"}});
}
/// The read-only wrapping as the driver sends it: the full one-Sync wrapping
/// with the query that sets the timeouts local to the transaction and asks
/// for the server process (what a transaction pooler needs; see the file
/// comment of postgres_pipeline.cpp).
void select1_pipe_full_local_timeouts(benchmark::State& state) {
  run_pipeline(state, {{"BEGIN READ ONLY",
                        "SELECT pg_catalog.pg_backend_pid(), pg_catalog.set_config('statement_timeout', '5000', true), "
                        "pg_catalog.set_config('lock_timeout', '1000', true), "
                        "pg_catalog.set_config('idle_in_transaction_session_timeout', '9000', true), "
                        "pg_catalog.set_config('client_connection_check_interval', '1000', true)",
                        "SELECT 1", "ROLLBACK", "SELECT pg_catalog.pg_advisory_unlock_all()", "DEALLOCATE ALL"}});
}
void select1_pipe_one_sync_unlock_only(benchmark::State& state) {
  run_pipeline(state, {{"BEGIN READ ONLY", "SELECT 1", "ROLLBACK", "SELECT pg_catalog.pg_advisory_unlock_all()"}});
}
void select1_pipe_one_sync_deallocate_only(benchmark::State& state) {
  run_pipeline(state, {{"BEGIN READ ONLY", "SELECT 1", "ROLLBACK", "DEALLOCATE ALL"}});
}
void select1_pipe_one_sync_discard_all(benchmark::State& state) {
  run_pipeline(state, {{"BEGIN READ ONLY", "SELECT 1", "ROLLBACK", "DISCARD ALL"}});
}
/// What parsing and planning the wrapping costs the server, measured only:
/// the driver cannot keep named statements (it keeps one, the guard, as the
/// unnamed statement, which SQL cannot name: see postgres_pipeline.cpp). DEALLOCATE ALL, which it needs
/// because a read-only statement's dynamic SQL can PREPARE (and that outlives
/// ROLLBACK), would drop them every call; and without it, dynamic SQL could
/// DEALLOCATE a named wrapping statement and PREPARE another under its name,
/// so that the next call's "BEGIN READ ONLY" runs the caller's SQL instead.
void select1_pipe_full_prepared(benchmark::State& state) {
  run_pipeline(state, {{"BEGIN READ ONLY", "SELECT 1"}, {"ROLLBACK", "SELECT pg_catalog.pg_advisory_unlock_all()"}},
               {"BEGIN READ ONLY", "ROLLBACK", "SELECT pg_catalog.pg_advisory_unlock_all()"});
}

/// A guard as the driver builds it (postgres_audit.cpp): the session user's
/// membership in each role read-only mode refuses, by OID.
std::string guard_query(benchmark::State& state) {
  Connection connection = connect_bare(state);
  Result roles(PQexec(connection.get(),
                      "SELECT (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = session_user), oid FROM "
                      "pg_catalog.pg_roles WHERE rolsuper OR rolreplication OR rolname IN ('pg_read_server_files', "
                      "'pg_write_server_files', 'pg_execute_server_program', 'pg_signal_backend')"),
               &PQclear);
  std::string checks;
  for (int row = 0; row < PQntuples(roles.get()); ++row) {
    checks += std::string(checks.empty() ? "" : " OR ") + "pg_catalog.pg_has_role(" + PQgetvalue(roles.get(), row, 0) +
              "::pg_catalog.oid, " + PQgetvalue(roles.get(), row, 1) + "::pg_catalog.oid, 'MEMBER'::pg_catalog.text)";
  }
  return "SELECT 1 OPERATOR(pg_catalog./) CASE WHEN " + checks + " THEN 0 ELSE 1 END";
}

/// The read-only wrapping with the guard parsed and planned in every call:
/// what keeping it prepared saves (select1_driver_read_only keeps it).
void select1_pipe_guarded(benchmark::State& state) {
  const std::string guard = guard_query(state);
  run_pipeline(state, {{"BEGIN READ ONLY", guard.c_str(), "SELECT 1", "ROLLBACK",
                        "SELECT pg_catalog.pg_advisory_unlock_all()", "DEALLOCATE ALL"}});
}

constexpr const char* set_timeouts =
    "SELECT pg_catalog.set_config('statement_timeout', '5000', false), pg_catalog.set_config('lock_timeout', '1000', "
    "false), pg_catalog.set_config('idle_in_transaction_session_timeout', '9000', false)";

/// The read-write wrapping as the driver sends it with unchanged limits: the
/// statement commits at its own Sync, then DISCARD ALL, the timeouts and the
/// question whether the session is as a fresh one (its temporary schema).
void select1_pipe_read_write_wrapping(benchmark::State& state) {
  run_pipeline(state, {{"SELECT 1"}, {"DISCARD ALL", set_timeouts, "SELECT pg_catalog.pg_my_temp_schema() = 0"}});
}
/// The same without that question: what it costs.
void select1_pipe_read_write_without_fresh_check(benchmark::State& state) {
  run_pipeline(state, {{"SELECT 1"}, {"DISCARD ALL", set_timeouts}});
}
/// The read-write wrapping with the timeouts sent ahead of every statement,
/// in a segment of their own, and DISCARD ALL alone after it.
void select1_pipe_read_write_three_syncs(benchmark::State& state) {
  run_pipeline(state, {{set_timeouts}, {"SELECT 1"}, {"DISCARD ALL"}});
}

void run_driver(benchmark::State& state, rawtool::AccessMode mode) {
  auto driver = rawtool::make_postgres_driver(url());
  const rawtool::Limits limits;
  int pid = -1;
  const rawtool::Outcome first = driver->execute("SELECT pg_backend_pid()", {}, limits, mode);
  if (const auto* rows = std::get_if<rawtool::Rows>(&first); rows != nullptr && rows->rows.size() == 1) {
    pid = std::stoi(rawtool::test::bytes_of(*rows->rows[0][0]));
  }
  const ServerCpu server(pid);
  for (auto _ : state) {
    const rawtool::Outcome outcome = driver->execute("SELECT 1", {}, limits, mode);
    if (!std::holds_alternative<rawtool::Rows>(outcome)) {
      state.SkipWithError("SELECT 1 did not return rows");
      break;
    }
    benchmark::DoNotOptimize(outcome);
  }
  server.report(state);
}

void select1_driver_read_only(benchmark::State& state) { run_driver(state, rawtool::AccessMode::read_only); }

/// A read-only statement that fails: its error aborts the rest of the call's
/// pipeline, so the driver sends the cleanup again, one more round trip.
void select1_failing_driver_read_only(benchmark::State& state) {
  auto driver = rawtool::make_postgres_driver(url());
  const rawtool::Limits limits;
  for (auto _ : state) {
    const rawtool::Outcome outcome = driver->execute("SELECT 1 / 0", {}, limits, rawtool::AccessMode::read_only);
    if (!std::holds_alternative<rawtool::Failure>(outcome)) {
      state.SkipWithError("SELECT 1 / 0 did not fail");
      break;
    }
    benchmark::DoNotOptimize(outcome);
  }
}
void select1_driver_read_write(benchmark::State& state) { run_driver(state, rawtool::AccessMode::read_write); }

constexpr const char* two_million_streamed = "SELECT generate_series(1, 2000000) AS n";
constexpr const char* two_million_materialized = "SELECT n FROM generate_series(1, 2000000) AS n";

void run_rows(benchmark::State& state, const char* sql, rawtool::Limits limits) {
  auto driver = rawtool::make_postgres_driver(url());
  const double rss_before = peak_rss_mib();
  std::size_t kept = 0;
  for (auto _ : state) {
    const rawtool::Outcome outcome = driver->execute(sql, {}, limits, rawtool::AccessMode::read_only);
    const auto* rows = std::get_if<rawtool::Rows>(&outcome);
    if (rows == nullptr) {
      state.SkipWithError("the query did not return rows");
      break;
    }
    kept = rows->rows.size();
  }
  state.counters["rows_kept"] = static_cast<double>(kept);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
  state.counters["rss_before_MiB"] = rss_before;
}

void rows2m_driver_default_caps(benchmark::State& state) { run_rows(state, two_million_streamed, {}); }
void rows2m_driver_default_caps_materialized(benchmark::State& state) { run_rows(state, two_million_materialized, {}); }

/// Caps raised so every row is read and kept: memory is the kept rows, not a
/// buffered copy of the result.
void rows2m_driver_caps_raised(benchmark::State& state) {
  rawtool::Limits limits;
  limits.max_rows = 3'000'000;
  limits.max_bytes = 512ULL * 1024 * 1024;
  limits.statement_timeout = std::chrono::milliseconds(60'000);
  run_rows(state, two_million_streamed, limits);
}

/// Bare libpq PQexec of the same query: libpq holds the whole result.
void rows2m_bare_libpq(benchmark::State& state) {
  Connection connection = connect_bare(state);
  const double rss_before = peak_rss_mib();
  for (auto _ : state) {
    Result result(PQexec(connection.get(), two_million_streamed), &PQclear);
    if (PQresultStatus(result.get()) != PGRES_TUPLES_OK) state.SkipWithError("the query failed");
    benchmark::DoNotOptimize(PQntuples(result.get()));
  }
  state.counters["peak_rss_MiB"] = peak_rss_mib();
  state.counters["rss_before_MiB"] = rss_before;
}

}  // namespace

BENCHMARK(select1_bare_libpq)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_bare_libpq_wrapped)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_bare)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_begin_rollback)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_begin_rollback_one_sync)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_no_deallocate)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_full_one_sync)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_full_local_timeouts)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_one_sync_unlock_only)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_one_sync_deallocate_only)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_one_sync_discard_all)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_full_prepared)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_guarded)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_read_write_wrapping)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_read_write_without_fresh_check)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_pipe_read_write_three_syncs)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_driver_read_only)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_failing_driver_read_only)->Unit(benchmark::kMicrosecond);
BENCHMARK(select1_driver_read_write)->Unit(benchmark::kMicrosecond);
BENCHMARK(rows2m_driver_default_caps)->Unit(benchmark::kMillisecond);
BENCHMARK(rows2m_driver_default_caps_materialized)->Unit(benchmark::kMillisecond);
BENCHMARK(rows2m_driver_caps_raised)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(rows2m_bare_libpq)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
