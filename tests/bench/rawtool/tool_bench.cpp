// raw("SELECT 1") through the library (pool, driver, renderer) with 1, 2 and
// 8 threads, beside the PostgreSQL driver alone (one driver per thread, no
// pool, no rendering) in the same run, both read-only. The server is
// RAWTOOL_TEST_PG_READER_URL when set (read-only mode refuses a superuser),
// else RAWTOOL_TEST_PG_URL.
//
//   RAWTOOL_TEST_PG_READER_URL=postgresql://rawtool_reader@... ./rawtool_tool_bench

#include <rawtool/config.hpp>
#include <rawtool/driver.hpp>
#include <rawtool/tool.hpp>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <variant>

namespace {

const char* postgres_url() {
  for (const char* name : {"RAWTOOL_TEST_PG_READER_URL", "RAWTOOL_TEST_PG_URL"}) {
    const char* url = std::getenv(name);
    if (url != nullptr && *url != '\0') return url;
  }
  return nullptr;
}

// One Tool for every library benchmark: pool_size 8, so 8 threads never wait.
rawtool::Tool* shared_tool() {
  static std::unique_ptr<rawtool::Tool> tool = [] {
    rawtool::Config config;
    rawtool::DatabaseConfig db = rawtool::database_for_target(postgres_url());
    db.label = "bench";
    db.pool_size = 8;
    config.databases.push_back(db);
    return rawtool::Tool::open(std::move(config));
  }();
  return tool.get();
}

void library_raw_select1(benchmark::State& state) {
  if (postgres_url() == nullptr) {
    state.SkipWithError("neither RAWTOOL_TEST_PG_READER_URL nor RAWTOOL_TEST_PG_URL is set");
    return;
  }
  rawtool::Tool* tool = shared_tool();
  if (tool->raw("SELECT 1").is_error()) {  // connects this thread's pooled driver before timing
    state.SkipWithError("SELECT 1 failed through the library");
    return;
  }
  for (auto _ : state) {
    rawtool::Reply reply = tool->raw("SELECT 1");
    if (reply.is_error()) {
      state.SkipWithError("SELECT 1 failed through the library");
      break;
    }
    benchmark::DoNotOptimize(reply.text().data());
  }
  state.SetItemsProcessed(state.iterations());
}

void driver_alone_select1(benchmark::State& state) {
  if (postgres_url() == nullptr) {
    state.SkipWithError("neither RAWTOOL_TEST_PG_READER_URL nor RAWTOOL_TEST_PG_URL is set");
    return;
  }
  std::unique_ptr<rawtool::Driver> driver = rawtool::make_postgres_driver(postgres_url());
  const rawtool::Limits limits;
  if (!std::holds_alternative<rawtool::Rows>(driver->execute("SELECT 1", {}, limits, rawtool::AccessMode::read_only))) {
    state.SkipWithError("SELECT 1 failed through the driver");
    return;
  }
  for (auto _ : state) {
    rawtool::Outcome outcome = driver->execute("SELECT 1", {}, limits, rawtool::AccessMode::read_only);
    if (!std::holds_alternative<rawtool::Rows>(outcome)) {
      state.SkipWithError("SELECT 1 failed through the driver");
      break;
    }
    benchmark::DoNotOptimize(outcome);
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(driver_alone_select1)->Threads(1)->Threads(2)->Threads(8)->UseRealTime()->MinTime(2.0);
BENCHMARK(library_raw_select1)->Threads(1)->Threads(2)->Threads(8)->UseRealTime()->MinTime(2.0);

BENCHMARK_MAIN();
