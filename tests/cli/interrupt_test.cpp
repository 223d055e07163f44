// Ctrl-C and SIGTERM during a statement, and the progress line, through the
// real binary on a pseudo-terminal: the statement is cancelled on the server
// (its backend gone within seconds, even one that ignores the cancel), one
// line says so, and the exit status is 128 + the signal; a long statement
// shows elapsed time, rows read and the row cap on stderr, only on a terminal
// that wants it.

#include "fixture.hpp"
#include "pg_server.hpp"
#include "process.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;
using rawtool::test::RunningRawtool;
using rawtool::test::RunOptions;
using rawtool::test::ScratchFolder;
using rawtool::test::write_file;

RunOptions terminal_env(const ScratchFolder& state) {
  RunOptions options = rawtool::test::isolated_env(state.path());
  options.env.emplace_back("TERM", "xterm");
  options.stderr_is_terminal = true;
  return options;
}

/// An application name no other test's session has, to find this one's backend.
std::string unique_application_name() {
  std::mt19937_64 rng{std::random_device{}()};
  return "rawtool_cli_interrupt_" + std::to_string(rng() % 1000000000);
}

/// A PostgreSQL URL with an application name added.
std::string with_application_name(const std::string& url, const std::string& name) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + "application_name=" + name;
}

/// The pid of the backend with `application_name`, once it is inside pg_sleep.
std::string sleeping_backend(const std::string& application_name) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    const std::string pid = pg_admin("SELECT coalesce(max(pid)::text, '') FROM pg_stat_activity WHERE application_name = '" +
                                     application_name + "' AND wait_event = 'PgSleep'");
    if (!pid.empty()) return pid;
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
}

/// True once no backend with `application_name` is left, waiting up to `patience`.
bool backends_gone(const std::string& application_name, std::chrono::milliseconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (pg_admin("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + application_name + "'") != "0") {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

/// stderr as a person saw it: the lines that stay, once every progress line
/// ("\r...\x1b[K") is taken back by the next carriage return.
std::vector<std::string> lines_that_stay(const std::string& err) {
  std::vector<std::string> lines;
  std::string current;
  for (std::size_t i = 0; i < err.size(); ++i) {
    if (err.compare(i, 3, "\x1b[K") == 0) {
      i += 2;
    } else if (err[i] == '\r') {
      current.clear();
    } else if (err[i] == '\n') {
      lines.push_back(current);
      current.clear();
    } else {
      current += err[i];
    }
  }
  if (!current.empty()) lines.push_back(current);
  return lines;
}

/// What stays on stderr but the terminal's echo of the Ctrl-C ("^C") and empty lines.
std::vector<std::string> stays_but_echo(const std::string& err) {
  std::vector<std::string> stays = lines_that_stay(err);
  std::erase_if(stays, [](const std::string& line) { return line.empty() || line == "^C"; });
  return stays;
}

/// A run that Ctrl-C interrupted, and how long it took to end after the Ctrl-C.
struct Interrupted {
  rawtool::test::RunResult result;
  std::chrono::steady_clock::duration after_ctrl_c{};
};

/// Runs rawtool with `args` on a terminal, types Ctrl-C once its backend (the
/// session with `application_name`) sleeps, and waits for it to end.
Interrupted interrupted_while_sleeping(const std::vector<std::string>& args, const RunOptions& options,
                                       const std::string& application_name) {
  RunningRawtool running(args, options);
  sleeping_backend(application_name);
  const auto typed = std::chrono::steady_clock::now();
  running.type("\x03");  // Ctrl-C, turned into SIGINT by the terminal
  Interrupted interrupted{running.finish(30s)};
  interrupted.after_ctrl_c = std::chrono::steady_clock::now() - typed;
  return interrupted;
}

/// The progress lines drawn ("\r<line>\x1b[K"), in order.
std::vector<std::string> progress_lines(const std::string& err) {
  std::vector<std::string> found;
  const std::regex drawn("\r(rawtool: [a-z]+: running [^\r\x1b]*)\x1b\\[K");
  for (std::sregex_iterator it(err.begin(), err.end(), drawn), end; it != end; ++it) found.push_back((*it)[1]);
  return found;
}

/// Every row count the progress lines showed.
std::set<std::uint64_t> rows_shown(const std::vector<std::string>& lines) {
  std::set<std::uint64_t> counts;
  const std::regex figure(", ([0-9,]+) rows? read so far");
  for (const std::string& line : lines) {
    std::smatch match;
    if (std::regex_search(line, match, figure)) {
      std::string digits = match[1];
      digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
      counts.insert(std::stoull(digits));
    }
  }
  return counts;
}

std::string pg_config(const ScratchFolder& folder, const std::string& url, const std::string& access = "read_only") {
  write_file(folder.path() / "config.json",
             json{{"databases", json::array({json{{"label", "pg"},
                                                  {"url", url},
                                                  {"access", access},
                                                  {"limits", {{"statement_timeout_ms", 120000}}}}})},
                  {"log", {{"path", "operator.log"}}}}
                 .dump());
  return (folder.path() / "config.json").string();
}

}  // namespace

TEST_CASE("Ctrl-C on a terminal cancels a PostgreSQL statement on the server, says so in one line, exit 130",
          "[cli][interrupt][postgres]") {
  const auto reader = pg_url(true);
  if (!reader) return;
  ScratchFolder folder;
  const std::string name = unique_application_name();
  const std::string config = pg_config(folder, with_application_name(*reader, name));
  const auto [result, after_ctrl_c] =
      interrupted_while_sleeping({"query", "--config", config, "SELECT pg_sleep(30)"}, terminal_env(folder), name);
  INFO(result.out << result.err);
  CHECK(result.exit_status == 130);
  CHECK(after_ctrl_c < 5s);
  CHECK(result.out.empty());
  // The terminal echoes the ^C; what stays on stderr is rawtool's one line.
  CHECK(stays_but_echo(result.err) ==
        std::vector<std::string>{"rawtool: query: interrupted by SIGINT: The statement was cancelled."});
  CHECK(backends_gone(name, 5s));
}

TEST_CASE("SIGTERM cancels a PostgreSQL statement the same way, exit 143", "[cli][interrupt][postgres]") {
  const auto reader = pg_url(true);
  if (!reader) return;
  ScratchFolder folder;
  const std::string name = unique_application_name();
  const std::string config = pg_config(folder, with_application_name(*reader, name));
  RunOptions options = terminal_env(folder);
  options.stderr_is_terminal = false;  // as a service manager stops it: no terminal at all
  RunningRawtool running({"query", "--config", config, "SELECT pg_sleep(30)"}, options);
  sleeping_backend(name);
  running.signal(SIGTERM);
  const auto result = running.finish(30s);
  INFO(result.out << result.err);
  CHECK(result.exit_status == 143);
  CHECK(result.out.empty());
  CHECK(result.err == "rawtool: query: interrupted by SIGTERM: The statement was cancelled.\n");
  CHECK(backends_gone(name, 5s));
}

TEST_CASE("Ctrl-C ends a backend whose statement ignores the cancel, and a certified query is cancelled too",
          "[cli][interrupt][postgres]") {
  const auto reader = pg_url(true);
  if (!reader) return;
  const std::string function = "rawtool_cli_stubborn_" + std::to_string(std::random_device{}() % 1000000);
  pg_admin("CREATE FUNCTION " + function +
           "() RETURNS int LANGUAGE plpgsql AS $f$ BEGIN LOOP BEGIN PERFORM pg_sleep(30); "
           "EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END $f$");
  struct Drop {
    std::string function;
    ~Drop() { pg_admin("DROP FUNCTION IF EXISTS " + function + "()"); }
  } drop{function};

  ScratchFolder folder;
  const std::string name = unique_application_name();
  write_file(folder.path() / "catalog.json",
             json{{"queries", json::array({json{{"name", "stubborn"}, {"description", "never stops"},
                                                {"sql", "SELECT " + function + "()"}}})}}
                 .dump());
  write_file(folder.path() / "config.json",
             json{{"databases", json::array({json{{"label", "pg"},
                                                  {"url", with_application_name(*reader, name)},
                                                  {"limits", {{"statement_timeout_ms", 120000}}}}})},
                  {"catalog", "catalog.json"},
                  {"log", {{"path", "operator.log"}}}}
                 .dump());
  const std::string config = (folder.path() / "config.json").string();

  {
    const auto [result, after_ctrl_c] = interrupted_while_sleeping(
        {"query", "--config", config, "SELECT " + function + "()"}, terminal_env(folder), name);
    CHECK(after_ctrl_c < 10s);  // the cancel's grace, then the backend is ended
    INFO(result.out << result.err);
    CHECK(result.exit_status == 130);
    const std::vector<std::string> stays = stays_but_echo(result.err);
    REQUIRE(stays.size() == 1);
    CHECK_THAT(stays[0], Catch::StartsWith("rawtool: query: interrupted by SIGINT: The statement was cancelled and did "
                                           "not stop when the server was asked to cancel it; rawtool ended its server "
                                           "session."));
    CHECK(backends_gone(name, 5s));
  }
  {
    const auto [result, after_ctrl_c] =
        interrupted_while_sleeping({"certified", "--config", config, "stubborn"}, terminal_env(folder), name);
    CHECK(after_ctrl_c < 10s);
    INFO(result.out << result.err);
    CHECK(result.exit_status == 130);
    CHECK(stays_but_echo(result.err) ==
          std::vector<std::string>{"rawtool: certified: interrupted by SIGINT; the call was cancelled"});
    CHECK(backends_gone(name, 5s));
  }
}

TEST_CASE("on SQLite, a long statement shows its progress on the terminal, rows growing, and Ctrl-C stops it",
          "[cli][interrupt][progress][sqlite]") {
  ScratchFolder folder;
  write_file(folder.path() / "config.json",
             R"({"databases": [{"label": "mem", "path": ":memory:", "limits": {"statement_timeout_ms": 120000, "max_rows": 100000}}]})");
  // A row every 200,000 steps of a count that would take hours.
  RunningRawtool running(
      {"query", "--config", (folder.path() / "config.json").string(),
       "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000000) "
       "SELECT x FROM c WHERE x % 200000 = 0"},
      terminal_env(folder));
  // Wait until the line has shown two different row counts.
  REQUIRE(running.wait_for([](const auto& so_far) { return rows_shown(progress_lines(so_far.err)).size() >= 2; }, 60s));
  const auto typed = std::chrono::steady_clock::now();
  running.type("\x03");
  const auto result = running.finish(30s);
  CHECK(std::chrono::steady_clock::now() - typed < 3s);
  INFO(result.out << result.err);
  CHECK(result.exit_status == 130);
  CHECK(result.out.empty());
  const auto lines = progress_lines(result.err);
  REQUIRE_FALSE(lines.empty());
  for (const std::string& line : lines) {
    CHECK(std::regex_match(line, std::regex(R"(rawtool: query: running [0-9]+\.[0-9] s, [0-9,]+ rows? read so far \(row cap 100,000\))")));
  }
  // No line before the statement has run a second.
  CHECK_FALSE(lines.front().starts_with("rawtool: query: running 0."));
  CHECK(stays_but_echo(result.err) ==
        std::vector<std::string>{"rawtool: query: interrupted by SIGINT: The statement was cancelled."});
}

TEST_CASE("PostgreSQL rows streaming in are counted on the progress line, which is cleared before the reply",
          "[cli][progress][postgres]") {
  const auto reader = pg_url(true);
  if (!reader) return;
  ScratchFolder folder;
  // Read-write mode streams rows as the server sends them; each row is larger
  // than the server's send buffer, so it is sent as soon as it is made.
  const std::string config = pg_config(folder, *reader, "read_write");
  RunOptions options = terminal_env(folder);
  const auto result = rawtool::test::run_rawtool(
      {"query", "--config", config, "--json",
       "SELECT g, repeat('x', 9000) AS pad, pg_sleep(0.4) FROM generate_series(1, 7) AS g"},
      options);
  INFO(result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(json::parse(result.out)["row_count"] == 7);
  const auto lines = progress_lines(result.err);
  const auto counts = rows_shown(lines);
  CHECK(counts.size() >= 2);
  CHECK(*counts.rbegin() <= 7);
  CHECK_THAT(lines.back(), Catch::EndsWith("(row cap 1,000)"));
  // Taken back at the end: nothing stays on stderr.
  CHECK(result.err.ends_with("\r\x1b[K"));
  CHECK(lines_that_stay(result.err).empty());
}

TEST_CASE("no progress line when stderr is not a terminal, with NO_COLOR, with TERM=dumb, or with the log on stderr",
          "[cli][progress][postgres]") {
  const auto reader = pg_url(true);
  if (!reader) return;
  ScratchFolder folder;
  const std::string config = pg_config(folder, *reader);
  const std::vector<std::string> args = {"query", "--config", config, "SELECT pg_sleep(1.6) AS slept"};
  const RunOptions base = terminal_env(folder);
  {
    const auto shown = rawtool::test::run_rawtool(args, base);
    REQUIRE(shown.exit_status == 0);
    CHECK_FALSE(progress_lines(shown.err).empty());  // the same statement does show one on a terminal
  }
  RunOptions piped = base;
  piped.stderr_is_terminal = false;
  RunOptions no_color = base;
  no_color.env.emplace_back("NO_COLOR", "1");
  RunOptions dumb = base;
  dumb.env.emplace_back("TERM", "dumb");
  for (const auto& [what, options, extra] :
       {std::tuple{"a pipe", piped, std::vector<std::string>{}}, std::tuple{"NO_COLOR", no_color, std::vector<std::string>{}},
        std::tuple{"TERM=dumb", dumb, std::vector<std::string>{}},
        std::tuple{"--log stderr", base, std::vector<std::string>{"--log", "stderr"}}}) {
    DYNAMIC_SECTION(what) {
      std::vector<std::string> with = args;
      with.insert(with.begin() + 1, extra.begin(), extra.end());
      const auto result = rawtool::test::run_rawtool(with, options);
      INFO(result.err);
      CHECK(result.exit_status == 0);
      CHECK(result.err.find("running") == std::string::npos);
      CHECK(result.err.find('\r') == std::string::npos);
    }
  }
}
