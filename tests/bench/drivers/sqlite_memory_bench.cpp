// Peak memory of the SQLite driver under statements built to make SQLite
// allocate far more than the caps let rawtool keep, with default limits.
//
// Peak RSS (ru_maxrss) only grows within a process, so run each benchmark in
// a process of its own and read its peak_rss_MiB:
//
//   for b in baseline_select1 hex_of_huge_zeroblobs wide_zeroblob_columns wide_hex_columns
//            wide_randomblob_columns growing_group_concat wide_randomblob_columns_heap_limit_off
//            null_cells; do
//     tests/bench/drivers/sqlite_memory_bench --benchmark_filter="^$b/"
//   done
//   (the for line is one line)
//
// Each reports what the driver answered (outcome: 0 rows, 1 failure,
// 2 refusal, 3 unavailable; refusal_reason as RefusalReason's value) and
// whether the same driver answered SELECT 1 afterwards (next_call_ok), so
// that a figure is never read off a statement that did not run.
#include <rawtool/driver.hpp>

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>
#include <variant>

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// `SELECT expr, expr, ...` with `count` copies of `expr`.
std::string select_many(const std::string& expr, int count) {
  std::string sql = "SELECT ";
  for (int i = 0; i < count; ++i) {
    if (i > 0) sql += ", ";
    sql += expr;
  }
  return sql;
}

void run_bomb(benchmark::State& state, const std::string& sql) {
  auto driver = rawtool::make_sqlite_driver(":memory:", rawtool::AccessMode::read_only);
  const rawtool::Limits limits;
  // Open the connection first, so that the baseline includes it.
  (void)driver->execute("SELECT 1", {}, limits, rawtool::AccessMode::read_only);
  const double rss_before = peak_rss_mib();
  std::size_t index = 0;
  int reason = -1;
  std::size_t rows_kept = 0;
  for (auto _ : state) {
    const rawtool::Outcome outcome = driver->execute(sql, {}, limits, rawtool::AccessMode::read_only);
    index = outcome.index();
    if (const auto* rows = std::get_if<rawtool::Rows>(&outcome)) rows_kept = rows->rows.size();
    if (const auto* refusal = std::get_if<rawtool::Refusal>(&outcome)) reason = static_cast<int>(refusal->reason);
    benchmark::DoNotOptimize(outcome);
  }
  const rawtool::Outcome next = driver->execute("SELECT 1", {}, limits, rawtool::AccessMode::read_only);
  state.counters["outcome"] = static_cast<double>(index);
  state.counters["rows_kept"] = static_cast<double>(rows_kept);
  state.counters["refusal_reason"] = reason;
  state.counters["next_call_ok"] = std::holds_alternative<rawtool::Rows>(next) ? 1 : 0;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
  state.counters["rss_before_MiB"] = rss_before;
}

/// The process with an open driver and nothing else: what every figure sits on.
void baseline_select1(benchmark::State& state) { run_bomb(state, "SELECT 1"); }

/// A few values each far larger than any cell the caps keep.
void hex_of_huge_zeroblobs(benchmark::State& state) {
  run_bomb(state, select_many("hex(zeroblob(150000000))", 3));
}

/// Hundreds of columns, each a value of 1 MB. A zeroblob costs nothing until
/// something reads its bytes.
void wide_zeroblob_columns(benchmark::State& state) { run_bomb(state, select_many("zeroblob(1000000)", 500)); }

/// Hundreds of columns, each a 2 MB string SQLite must build in memory.
void wide_hex_columns(benchmark::State& state) { run_bomb(state, select_many("hex(zeroblob(1000000))", 500)); }

/// Hundreds of columns, each 1 MB of random bytes SQLite must build in memory.
void wide_randomblob_columns(benchmark::State& state) { run_bomb(state, select_many("randomblob(1000000)", 500)); }

/// One value that grows row by row past every cap.
void growing_group_concat(benchmark::State& state) {
  run_bomb(state, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 2000000) "
                  "SELECT length(group_concat(hex(zeroblob(500)))) FROM c");
}

/// The wide columns again with the heap limit turned off, as an embedder may:
/// what the length limit alone leaves (each value is far below it).
void wide_randomblob_columns_heap_limit_off(benchmark::State& state) {
  rawtool::set_sqlite_heap_limit(0);
  run_bomb(state, select_many("randomblob(1000000)", 500));
}

/// Rows of NULLs: each cell costs cell_overhead_bytes against max_bytes, so
/// only so many rows of 2000 columns are kept (when NULLs were free, all
/// max_rows of them were: 82 MiB). Memory here is the kept Rows, not SQLite's.
void null_cells(benchmark::State& state) {
  run_bomb(state, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) " +
                      select_many("NULL", 2000) + " FROM c");
}

}  // namespace

BENCHMARK(baseline_select1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(hex_of_huge_zeroblobs)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(wide_zeroblob_columns)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(wide_hex_columns)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(wide_randomblob_columns)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(growing_group_concat)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(wide_randomblob_columns_heap_limit_off)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(null_cells)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
