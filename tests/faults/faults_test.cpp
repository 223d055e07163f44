// Faults against a real PostgreSQL that these tests own (a cluster of their
// own, restarted at will; never the shared server), through the library and
// through the MCP binary: the server down at start, restarted between calls
// and during a call, a backend terminated mid-query, a statement timeout, a
// lock wait past lock_timeout. Each gives a clean reply, the pool serves the
// next calls, nothing crashes, and no connection-failure text (host, port,
// role, libpq's wording) reaches either half of a reply: those words go to
// the log under the reply's reference.

#include "environment.hpp"
#include "mcp_pipe.hpp"
#include "pg_cluster.hpp"
#include "replies.hpp"

#include "oracle.hpp"

#include <rawtool/config.hpp>
#include <rawtool/tool.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;
using rawtool::faults::AdminSession;
using rawtool::faults::PgCluster;
using rawtool::reliability::Answer;
using rawtool::reliability::kind_of;
using rawtool::reliability::ScratchDir;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int statement_timeout_ms = 2500;
constexpr int lock_timeout_ms = 300;
constexpr const char* application_name = "rawtool_faults";

// A caller of one surface. Thread-safe: calls may run on several threads.
class Surface {
public:
  virtual ~Surface() = default;
  virtual Answer raw(const std::string& sql) = 0;
  virtual Answer certified(const std::string& name, const json& params) = 0;
  /// Everything logged so far.
  virtual std::string log() = 0;
  /// Still serving (the process has not died).
  virtual bool alive() = 0;
  /// Ends the surface; true when it ended cleanly (the server exited with status 0).
  virtual bool finish() = 0;
};

std::string catalog_text() {
  const json catalog{
      {"queries",
       json::array({json{{"name", "echo"},
                         {"description", "Returns its argument."},
                         {"sql", "SELECT $1::text AS value"},
                         {"parameters", json::array({json{{"name", "value"}, {"type", "text"}}})}},
                    json{{"name", "nap"},
                         {"description", "Sleeps."},
                         {"sql", "SELECT pg_sleep($1) AS slept"},
                         {"parameters", json::array({json{{"name", "seconds"}, {"type", "number"}}})}},
                    json{{"name", "locked"},
                         {"description", "Reads the table the lock test holds."},
                         {"sql", "SELECT count(*) AS n FROM faults_locked"}}})}};
  return catalog.dump();
}

std::filesystem::path write_config(const ScratchDir& dir, const PgCluster& cluster) {
  dir.write("catalog.json", catalog_text());
  const json config{
      {"databases",
       json::array({json{{"label", "faults"},
                         {"url", cluster.reader_url() + "?application_name=" + application_name},
                         {"pool_size", 2},
                         {"limits", {{"statement_timeout_ms", statement_timeout_ms}, {"lock_timeout_ms", lock_timeout_ms}}}}})},
      {"catalog", "catalog.json"},
      {"max_concurrent_calls", 4}};
  return dir.write("config.json", config.dump());
}

class LibrarySurface final : public Surface {
public:
  explicit LibrarySurface(const PgCluster& cluster) {
    const auto config = write_config(dir_, cluster);
    rawtool::ToolOptions options;
    options.log = [this](std::string_view line) {
      std::lock_guard lock(mutex_);
      log_ += line;
      log_ += '\n';
    };
    tool_ = rawtool::Tool::open(rawtool::load_config(config), std::move(options));
  }
  Answer raw(const std::string& sql) override { return answer(tool_->raw(sql)); }
  Answer certified(const std::string& name, const json& params) override {
    return answer(tool_->certified(name, params));
  }
  std::string log() override {
    std::lock_guard lock(mutex_);
    return log_;
  }
  bool alive() override { return true; }
  bool finish() override { return true; }

private:
  static Answer answer(rawtool::Reply reply) {
    Answer out{reply.text(), reply.structured(), reply.is_error(), {}};
    out.wire = out.text + "\n" + out.structured.dump();
    return out;
  }
  ScratchDir dir_{"rawtool-faults-lib"};
  std::mutex mutex_;
  std::string log_;  // guarded by mutex_; declared before the Tool that writes it
  std::unique_ptr<rawtool::Tool> tool_;
};

class McpSurface final : public Surface {
public:
  explicit McpSurface(const PgCluster& cluster)
      : pipe_(std::make_unique<rawtool::reliability::McpPipe>(RAWTOOL_BINARY, write_config(dir_, cluster))) {
    pipe_->initialize();
  }
  Answer raw(const std::string& sql) override { return call("raw_sql", json{{"sql", sql}}); }
  Answer certified(const std::string& name, const json& params) override {
    return call("certified_query", json{{"name", name}, {"params", params}});
  }
  std::string log() override { return pipe_->log(); }
  bool alive() override { return pipe_->running() && pipe_->protocol_violations() == 0; }
  bool finish() override {
    pipe_->close_input();
    const auto status = pipe_->wait_exit(30s);
    return status.has_value() && *status == 0;
  }

private:
  Answer call(const std::string& tool, const json& arguments) {
    const auto response = pipe_->call_tool(tool, arguments, 60s);
    if (!response) return Answer{"(no response)", json(), false, {}};
    return rawtool::reliability::answer_of_mcp(response->line, response->message);
  }
  ScratchDir dir_{"rawtool-faults-mcp"};
  std::unique_ptr<rawtool::reliability::McpPipe> pipe_;
};

enum class Via { library, mcp };

std::unique_ptr<Surface> open_surface(Via via, const PgCluster& cluster) {
  if (via == Via::library) return std::make_unique<LibrarySurface>(cluster);
  return std::make_unique<McpSurface>(cluster);
}

// Words that belong to the connection, not to the caller's statement.
std::vector<std::string> connection_words(const PgCluster& cluster) {
  return {"127.0.0.1",
          std::to_string(cluster.port()),
          "rawtool_reader",
          application_name,
          "localhost",
          "onnection refused",
          "could not connect",
          "server closed the connection",
          "terminating connection",
          "administrator command",
          "Is the server running",
          "no connection to the server",
          "connection to server",
          "the database system is"};
}

void require_no_connection_words(const Answer& answer, const PgCluster& cluster) {
  INFO("reply: " << answer.wire.substr(0, 3000));
  for (const auto& word : connection_words(cluster)) {
    INFO("word: " << word);
    CHECK(answer.wire.find(word) == std::string::npos);
  }
  CHECK(rawtool::test::text_surface_problems(answer.text).empty());
}

// A connection that broke or could not be had: rawtool's own status, and its
// reference names a log line that holds the connection's complaint.
void require_unavailable(Surface& surface, const Answer& answer, const PgCluster& cluster, bool certified) {
  INFO("reply: " << answer.wire.substr(0, 3000));
  require_no_connection_words(answer, cluster);
  REQUIRE(answer.is_error);
  REQUIRE(kind_of(answer) == (certified ? "certified_status" : "raw_unavailable"));
  REQUIRE(answer.structured.value("status", "") == "unavailable");
  const std::string reference = answer.structured.value("reference", "");
  REQUIRE_FALSE(reference.empty());
  const std::string log = surface.log();
  INFO("log: " << log.substr(0, 3000));
  bool logged = false;
  for (std::size_t at = log.find(reference); at != std::string::npos; at = log.find(reference, at + 1)) {
    const auto begin = log.rfind('\n', at) == std::string::npos ? 0 : log.rfind('\n', at) + 1;
    const auto line = log.substr(begin, log.find('\n', at) - begin);
    if (line.find("\"complaint\"") != std::string::npos) logged = true;
  }
  CHECK(logged);
}

// The pool serves again: two calls at once (so both pooled connections are
// used) and a certified call, all right.
void require_serving(Surface& surface, const std::string& tag) {
  const auto slow = [&](int n) {
    return surface.raw("SELECT '" + tag + "-" + std::to_string(n) + "' AS tag, pg_sleep(0.2) AS slept");
  };
  auto first = std::async(std::launch::async, slow, 1);
  auto second = std::async(std::launch::async, slow, 2);
  const Answer answers[] = {first.get(), second.get()};
  for (int n = 0; n < 2; ++n) {
    const Answer& answer = answers[n];
    INFO("reply: " << answer.wire.substr(0, 3000));
    REQUIRE(kind_of(answer) == "raw_rows");
    const auto cells = rawtool::test::row_cells(answer.text);
    REQUIRE(cells.size() == 1);
    CHECK(cells[0][0] == tag + "-" + std::to_string(n + 1));
  }
  const Answer echoed = surface.certified("echo", json{{"value", tag}});
  INFO("reply: " << echoed.wire.substr(0, 3000));
  REQUIRE(kind_of(echoed) == "certified_rows");
  REQUIRE(rawtool::test::row_cells(echoed.text).at(0).at(0) == tag);
  REQUIRE(surface.alive());
}

// Waits until a statement containing `marker` runs on the fault cluster; its backend pid.
std::string wait_until_running(const PgCluster& cluster, const std::string& marker) {
  const auto deadline = Clock::now() + 10s;
  while (Clock::now() < deadline) {
    const std::string pid = cluster.admin(
        // A read-only query runs as a cursor: while it runs, the backend shows the FETCH.
        "SELECT pid FROM pg_stat_activity WHERE application_name = '" + std::string(application_name) +
        "' AND state = 'active' AND (query LIKE '%" + marker + "%' OR query LIKE 'FETCH FORWARD % FROM rawtool_cursor') LIMIT 1");
    if (!pid.empty()) return pid;
    std::this_thread::sleep_for(20ms);
  }
  FAIL("the statement never started on the server");
  return {};
}

// ---- the scenarios --------------------------------------------------------------------

void server_down_at_start(Via via) {
  PgCluster cluster;
  cluster.ensure_up();
  cluster.stop("fast");
  // Whatever happens below, the next test finds the server up.
  struct BringBack {
    PgCluster& target;
    ~BringBack() {
      try {
        target.ensure_up();
      } catch (...) {
        // The next test's ensure_up tries again and reports it.
      }
    }
  } bring_back{cluster};

  auto surface = open_surface(via, cluster);
  require_unavailable(*surface, surface->raw("SELECT 'down' AS state"), cluster, false);
  require_unavailable(*surface, surface->certified("echo", json{{"value", "down"}}), cluster, true);
  REQUIRE(surface->alive());

  cluster.start();
  require_serving(*surface, "up-after-start");
  REQUIRE(surface->finish());
}

void restart_between_calls(Via via) {
  PgCluster cluster;
  cluster.ensure_up();
  auto surface = open_surface(via, cluster);
  require_serving(*surface, "before-restart");
  cluster.restart("fast");
  // Both pooled connections died while idle; the next calls find that out
  // before sending anything and connect again.
  require_serving(*surface, "after-restart");
  cluster.restart("immediate");
  require_serving(*surface, "after-crash-restart");
  REQUIRE(surface->finish());
}

void restart_during_call(Via via) {
  PgCluster cluster;
  cluster.ensure_up();
  auto surface = open_surface(via, cluster);
  require_serving(*surface, "before");

  auto raw = std::async(std::launch::async, [&] { return surface->raw("SELECT pg_sleep(2) AS restart_marker"); });
  wait_until_running(cluster, "restart_marker");
  cluster.restart("fast");
  require_unavailable(*surface, raw.get(), cluster, false);
  require_serving(*surface, "after-raw");

  auto certified = std::async(std::launch::async, [&] { return surface->certified("nap", json{{"seconds", 2.0}}); });
  wait_until_running(cluster, "pg_sleep($1)");
  cluster.restart("immediate");
  require_unavailable(*surface, certified.get(), cluster, true);
  require_serving(*surface, "after-certified");
  REQUIRE(surface->finish());
}

void backend_terminated(Via via) {
  PgCluster cluster;
  cluster.ensure_up();
  auto surface = open_surface(via, cluster);
  require_serving(*surface, "before");

  auto raw = std::async(std::launch::async, [&] { return surface->raw("SELECT pg_sleep(2) AS terminate_marker"); });
  const std::string pid = wait_until_running(cluster, "terminate_marker");
  REQUIRE(cluster.admin("SELECT pg_terminate_backend(" + pid + ")") == "t");
  require_unavailable(*surface, raw.get(), cluster, false);
  require_serving(*surface, "after-raw");

  auto certified = std::async(std::launch::async, [&] { return surface->certified("nap", json{{"seconds", 2.0}}); });
  const std::string certified_pid = wait_until_running(cluster, "pg_sleep($1)");
  REQUIRE(cluster.admin("SELECT pg_terminate_backend(" + certified_pid + ")") == "t");
  require_unavailable(*surface, certified.get(), cluster, true);
  require_serving(*surface, "after-certified");
  REQUIRE(surface->finish());
}

void statement_timeout(Via via) {
  PgCluster cluster;
  cluster.ensure_up();
  auto surface = open_surface(via, cluster);
  require_serving(*surface, "before");

  const auto started = Clock::now();
  const Answer raw = surface->raw("SELECT pg_sleep(30) AS timeout_marker");
  const auto took = Clock::now() - started;
  INFO("reply: " << raw.wire.substr(0, 3000));
  require_no_connection_words(raw, cluster);
  REQUIRE(raw.is_error);
  REQUIRE(kind_of(raw) == "refusal");
  REQUIRE(raw.structured.value("reason", "") == "timeout");
  CHECK(took >= std::chrono::milliseconds(statement_timeout_ms));
  CHECK(took < std::chrono::milliseconds(statement_timeout_ms) + 5s);

  const Answer certified = surface->certified("nap", json{{"seconds", 30.0}});
  INFO("reply: " << certified.wire.substr(0, 3000));
  require_no_connection_words(certified, cluster);
  REQUIRE(kind_of(certified) == "certified_status");
  REQUIRE(certified.structured.value("status", "") == "timeout");
  require_serving(*surface, "after");
  REQUIRE(surface->finish());
}

void lock_timeout(Via via) {
  PgCluster cluster;
  cluster.ensure_up();
  cluster.admin("CREATE TABLE IF NOT EXISTS faults_locked (x int); GRANT SELECT ON faults_locked TO rawtool_reader");
  auto surface = open_surface(via, cluster);
  require_serving(*surface, "before");
  {
    AdminSession holder(cluster.url("postgres"));
    holder.run("BEGIN");
    holder.run("LOCK TABLE faults_locked IN ACCESS EXCLUSIVE MODE");

    const auto started = Clock::now();
    const Answer raw = surface->raw("SELECT count(*) AS lock_marker FROM faults_locked");
    INFO("reply: " << raw.wire.substr(0, 3000));
    require_no_connection_words(raw, cluster);
    // lock_timeout is the database's own failure: its words are the reply.
    REQUIRE(kind_of(raw) == "raw_failure");
    REQUIRE(raw.structured.value("sqlstate", "") == "55P03");
    CHECK(Clock::now() - started < std::chrono::milliseconds(statement_timeout_ms));

    const Answer certified = surface->certified("locked", json::object());
    INFO("reply: " << certified.wire.substr(0, 3000));
    require_no_connection_words(certified, cluster);
    REQUIRE(kind_of(certified) == "certified_status");
    REQUIRE(certified.structured.value("status", "") == "timeout");
    holder.run("ROLLBACK");
  }
  const Answer counted = surface->certified("locked", json::object());
  INFO("reply: " << counted.wire.substr(0, 3000));
  REQUIRE(kind_of(counted) == "certified_rows");
  require_serving(*surface, "after");
  REQUIRE(surface->finish());
  cluster.admin("DROP TABLE IF EXISTS faults_locked");
}

}  // namespace

TEST_CASE("library: the server down at start is the unavailable status on both paths, and the next call after it comes up works",
          "[faults][library]") {
  server_down_at_start(Via::library);
}
TEST_CASE("mcp: the server down at start is the unavailable status on both tools, and the next call after it comes up works",
          "[faults][mcp]") {
  server_down_at_start(Via::mcp);
}
TEST_CASE("library: after a server restart between calls, the pool's dead connections are replaced and every call works",
          "[faults][library]") {
  restart_between_calls(Via::library);
}
TEST_CASE("mcp: after a server restart between calls, the pool's dead connections are replaced and every call works",
          "[faults][mcp]") {
  restart_between_calls(Via::mcp);
}
TEST_CASE("library: a restart during a call ends it with the unavailable status, and the pool recovers", "[faults][library]") {
  restart_during_call(Via::library);
}
TEST_CASE("mcp: a restart during a call ends it with the unavailable status, and the pool recovers", "[faults][mcp]") {
  restart_during_call(Via::mcp);
}
TEST_CASE("library: a backend terminated mid-query ends the call with the unavailable status, and the pool recovers",
          "[faults][library]") {
  backend_terminated(Via::library);
}
TEST_CASE("mcp: a backend terminated mid-query ends the call with the unavailable status, and the pool recovers",
          "[faults][mcp]") {
  backend_terminated(Via::mcp);
}
TEST_CASE("library: a statement past its timeout is the timeout refusal or status, and the connection serves the next call",
          "[faults][library]") {
  statement_timeout(Via::library);
}
TEST_CASE("mcp: a statement past its timeout is the timeout refusal or status, and the connection serves the next call",
          "[faults][mcp]") {
  statement_timeout(Via::mcp);
}
TEST_CASE("library: a lock wait past lock_timeout is the database's 55P03 on the raw path and the timeout status certified",
          "[faults][library]") {
  lock_timeout(Via::library);
}
TEST_CASE("mcp: a lock wait past lock_timeout is the database's 55P03 on the raw path and the timeout status certified",
          "[faults][mcp]") {
  lock_timeout(Via::mcp);
}
