// The operator log through the real binary: where each destination sends
// the lines when a configuration file or the command line names it, the
// commands' defaults, and the certified guarantee held on stdout and stderr.

#include "fixture.hpp"
#include "pg_url.hpp"
#include "process.hpp"

#include <rawtool/driver.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <poll.h>
#include <unistd.h>

namespace {

using nlohmann::json;
using rawtool::test::RunOptions;
using rawtool::test::run_rawtool;
using rawtool::test::ScratchFolder;
using rawtool::test::shop_canary;
using rawtool::test::ShopFixture;

/// No database from the environment; the default log under `state_home`.
RunOptions env_with_state(const std::filesystem::path& state_home) {
  RunOptions options;
  for (const char* name : {"RAWTOOL_DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER",
                           "PGSERVICE", "NO_COLOR"}) {
    options.env.emplace_back(name, std::nullopt);
  }
  options.env.emplace_back("XDG_STATE_HOME", state_home.string());
  return options;
}

bool mentions(const std::string& text, std::string_view word) { return text.find(word) != std::string::npos; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The log record in `log_text` (JSON lines) whose `key` is `value`, or null.
json record_with(const std::string& log_text, const std::string& key, const std::string& value) {
  for (const auto& line : lines_of(log_text)) {
    const json record = json::parse(line, nullptr, false);
    if (record.is_object() && record.value(key, "") == value) return record;
  }
  return nullptr;
}

/// What the one stderr line of a command that logged says: the place and the reference.
struct Pointer {
  std::string where;
  std::string key;
  std::string value;
};
std::optional<Pointer> pointer_in(const std::string& err) {
  static const std::regex line(
      R"(rawtool: [a-z]+: the details are in the operator log, (.+), under (reference|withheld_sha256) ([0-9a-z-]+); the agent is not shown them)");
  std::smatch m;
  if (!std::regex_search(err, m, line)) return std::nullopt;
  return Pointer{m[1].str(), m[2].str(), m[3].str()};
}

mode_t mode_of(const std::filesystem::path& path) {
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  return info.st_mode & 0777;
}

const std::vector<std::string> failing_certified = {"product_reviews", "product_id=2"};

std::vector<std::string> args(std::vector<std::string> head, const std::vector<std::string>& tail = failing_certified) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

}  // namespace

TEST_CASE("by default certified shows no byte of the database's text on stdout or stderr and the default log file holds "
          "it under the reference printed",
          "[cli][log][sqlite]") {
  ShopFixture shop;
  ScratchFolder state;
  const std::string config = shop.config("config.json").string();
  for (bool as_json : {false, true}) {
    DYNAMIC_SECTION("json " << as_json) {
      std::vector<std::string> command = {"certified", "--config", config};
      if (as_json) command.push_back("--json");
      const auto result = run_rawtool(args(command), env_with_state(state.path()));
      INFO(result.out << result.err);
      CHECK(result.exit_status == 1);
      for (const std::string* half : {&result.out, &result.err}) {
        CHECK_FALSE(mentions(*half, shop_canary));
        CHECK_FALSE(mentions(*half, "SYSTEM"));
        CHECK_FALSE(mentions(*half, "JSON path"));
      }
      // stderr is one line, in rawtool's words, naming the file and the reference.
      CHECK(lines_of(result.err).size() == 1);
      const auto pointer = pointer_in(result.err);
      REQUIRE(pointer.has_value());
      const auto log_file = state.path() / "rawtool" / "rawtool.log";
      CHECK(pointer->where == "the file " + log_file.string());
      CHECK(pointer->key == "reference");
      CHECK(mentions(result.out, pointer->value));
      const json record = record_with(read_file(log_file), "reference", pointer->value);
      REQUIRE(record.is_object());
      CHECK(record["event"] == "certified_failure");
      CHECK(record["level"] == "error");
      CHECK(mentions(record["failure"]["message"].get<std::string>(), shop_canary));
      CHECK(mode_of(log_file) == 0600);
      CHECK(mode_of(log_file.parent_path()) == 0700);
    }
  }
}

TEST_CASE("without XDG_STATE_HOME the default log file is under ~/.local/state/rawtool and with neither the command stops",
          "[cli][log][sqlite]") {
  ShopFixture shop;
  ScratchFolder home;
  RunOptions options = env_with_state("");
  options.env.emplace_back("XDG_STATE_HOME", "relative/is/ignored");
  options.env.emplace_back("HOME", home.path().string());
  const auto result = run_rawtool(args({"certified", "--config", shop.config("config.json").string()}), options);
  CHECK(result.exit_status == 1);
  const auto log_file = home.path() / ".local" / "state" / "rawtool" / "rawtool.log";
  const auto pointer = pointer_in(result.err);
  REQUIRE(pointer.has_value());
  CHECK(mentions(read_file(log_file), pointer->value));
  CHECK(mentions(read_file(log_file), shop_canary));

  options.env.emplace_back("HOME", std::nullopt);
  options.env.emplace_back("XDG_STATE_HOME", std::nullopt);
  const auto nowhere = run_rawtool(args({"certified", "--config", shop.config("config.json").string()}), options);
  CHECK(nowhere.exit_status == 2);
  CHECK(nowhere.out.empty());
  CHECK_THAT(nowhere.err, Catch::Contains("configuration error: log: no default operator log file"));
}

TEST_CASE("a log file named in the configuration file gets the lines, resolved against the file's folder",
          "[cli][log][sqlite]") {
  ShopFixture shop;
  ScratchFolder state;
  const std::string config =
      shop.config("config.json", R"("log": {"destination": "file", "path": "operator.log"})").string();
  const auto result = run_rawtool(args({"certified", "--config", config}), env_with_state(state.path()));
  CHECK(result.exit_status == 1);
  CHECK_FALSE(mentions(result.out + result.err, shop_canary));
  const auto log_file = shop.folder() / "operator.log";
  const auto pointer = pointer_in(result.err);
  REQUIRE(pointer.has_value());
  CHECK(pointer->where == "the file " + log_file.string());
  CHECK(mentions(record_with(read_file(log_file), "reference", pointer->value).dump(), shop_canary));
  CHECK(mode_of(log_file) == 0600);
  CHECK_FALSE(std::filesystem::exists(state.path() / "rawtool"));  // the default was not used
}

TEST_CASE("stderr gets the log lines only when the configuration or --log asks for it", "[cli][log][sqlite]") {
  ShopFixture shop;
  ScratchFolder state;
  const std::string configured = shop.config("stderr.json", R"("log": {"destination": "stderr"})").string();
  const std::string plain = shop.config("plain.json").string();
  for (const auto& command : {args({"certified", "--config", configured}),
                              args({"certified", "--config", plain, "--log", "stderr"})}) {
    const auto result = run_rawtool(command, env_with_state(state.path()));
    CHECK(result.exit_status == 1);
    CHECK_FALSE(mentions(result.out, shop_canary));
    // Asked for: the operator's line is on stderr, one JSON object, and no pointer beside it.
    const auto lines = lines_of(result.err);
    REQUIRE(lines.size() == 1);
    const json record = json::parse(lines[0]);
    CHECK(record["event"] == "certified_failure");
    CHECK(mentions(record.dump(), shop_canary));
    CHECK(mentions(result.out, record["reference"].get<std::string>()));
    CHECK_FALSE(pointer_in(result.err).has_value());
  }
  CHECK_FALSE(std::filesystem::exists(state.path() / "rawtool"));
}

TEST_CASE("the --log and --log-level options replace what the configuration file says", "[cli][log][sqlite]") {
  ShopFixture shop;
  ScratchFolder state;
  const std::string config =
      shop.config("config.json", R"("log": {"path": "from-config.log", "level": "error"})").string();
  const auto flag_file = shop.folder() / "from-flag.log";
  const auto result = run_rawtool(
      args({"certified", "--config", config, "--log", flag_file.string(), "--log-level", "debug"}),
      env_with_state(state.path()));
  CHECK(result.exit_status == 1);
  CHECK_FALSE(std::filesystem::exists(shop.folder() / "from-config.log"));
  const auto lines = lines_of(read_file(flag_file));
  REQUIRE(lines.size() == 2);
  CHECK(json::parse(lines[0])["event"] == "call");
  CHECK(json::parse(lines[0])["level"] == "debug");
  CHECK(json::parse(lines[1])["event"] == "certified_failure");

  // A relative --log is resolved against the working folder, not the configuration's.
  const auto relative = run_rawtool(args({"catalog", "--config", config, "--log", "rel.log"}, {}), env_with_state(state.path()));
  CHECK(relative.exit_status == 0);
  CHECK(std::filesystem::exists(std::filesystem::current_path() / "rel.log"));
  std::filesystem::remove(std::filesystem::current_path() / "rel.log");

  const auto bad_level = run_rawtool(args({"certified", "--config", config, "--log-level", "loud"}), env_with_state(state.path()));
  CHECK(bad_level.exit_status == 2);
  CHECK_THAT(bad_level.err, Catch::Contains("--log-level must be error, warn, info or debug"));
}

TEST_CASE("a log file that cannot be opened stops the command before it runs, with exit status 2, naming what named it",
          "[cli][log][sqlite]") {
  ShopFixture shop;
  ScratchFolder state;
  const std::string missing = shop.config("missing.json", R"("log": {"path": "no-such-folder/op.log"})").string();
  const auto from_config = run_rawtool(args({"certified", "--config", missing}), env_with_state(state.path()));
  CHECK(from_config.exit_status == 2);
  CHECK(from_config.out.empty());
  CHECK_THAT(from_config.err, Catch::Contains("configuration error: log.path: cannot be opened for appending"));

  const auto from_flag = run_rawtool(
      args({"query", "--config", shop.config("plain.json").string(), "--log", (shop.folder() / "nope" / "x.log").string()},
           {"SELECT 1"}),
      env_with_state(state.path()));
  CHECK(from_flag.exit_status == 2);
  CHECK(from_flag.out.empty());
  CHECK_THAT(from_flag.err, Catch::Contains("--log: cannot be opened for appending"));

  // The default's folder cannot be made: XDG_STATE_HOME is a file.
  rawtool::test::write_file(state.path() / "not-a-folder", "x");
  const auto from_default = run_rawtool(args({"certified", "--config", shop.config("plain.json").string()}),
                                        env_with_state(state.path() / "not-a-folder"));
  CHECK(from_default.exit_status == 2);
  CHECK(from_default.out.empty());
  CHECK_THAT(from_default.err, Catch::Contains("configuration error: log: "));
  CHECK_THAT(from_default.err, Catch::Contains("--log"));

  // check-config opens the file too, so the problem is found before serving.
  const auto checked = run_rawtool({"check-config", "--config", missing}, env_with_state(state.path()));
  CHECK(checked.exit_status == 2);
  CHECK_THAT(checked.err, Catch::Contains("log.path"));
}

TEST_CASE("query: a reply withheld for its size and an unreachable database point at the log, which holds them",
          "[cli][log][sqlite]") {
  ShopFixture shop;
  ScratchFolder state;
  const std::string config = shop.config("small.json", R"("render": {"budget_bytes": 1024})").string();
  // SQLite quotes the 2,000-character path back: over the 1 KiB render budget, so withheld.
  const auto withheld = run_rawtool(
      {"query", "--config", config, "SELECT json_extract('{}', 'planted-' || replace(hex(zeroblob(1000)), '00', 'ab'))"},
      env_with_state(state.path()));
  CHECK(withheld.exit_status == 1);
  CHECK_FALSE(mentions(withheld.out + withheld.err, "planted-abab"));
  const auto pointer = pointer_in(withheld.err);
  REQUIRE(pointer.has_value());
  CHECK(pointer->key == "withheld_sha256");
  CHECK(mentions(withheld.out, pointer->value));
  const std::string log = read_file(state.path() / "rawtool" / "rawtool.log");
  const json record = record_with(log, "withheld_sha256", pointer->value);
  REQUIRE(record.is_object());
  CHECK(record["event"] == "raw_failure_withheld");
  CHECK(mentions(record["failure"]["message"].dump(), "planted-abab"));

  const auto unreachable = run_rawtool({"query", "--db", (shop.folder() / "absent.db").string(), "SELECT 1"},
                                       env_with_state(state.path()));
  CHECK(unreachable.exit_status == 1);
  const auto down = pointer_in(unreachable.err);
  REQUIRE(down.has_value());
  CHECK(down->key == "reference");
  const json complaint = record_with(read_file(state.path() / "rawtool" / "rawtool.log"), "reference", down->value);
  REQUIRE(complaint.is_object());
  CHECK(complaint["event"] == "raw_unavailable");
  CHECK(complaint.contains("complaint"));
}

TEST_CASE("syslog gets the lines when the configuration names it, through /dev/log", "[cli][log][sqlite][syslog]") {
  // A private mount namespace puts a datagram socket of this test at /dev/log
  // for the binary alone; where user namespaces are not allowed, say so and stop.
  const auto probe = run_rawtool({"--version"}, [] {
    RunOptions o;
    o.launcher = {"unshare", "--user", "--map-root-user", "--mount", "true"};
    return o;
  }());
  if (probe.exit_status != 0) {
    WARN("unshare --user --mount is not available here; the syslog destination was not tested through /dev/log");
    return;
  }
  ShopFixture shop;
  ScratchFolder state;
  ScratchFolder dev;
  const std::string socket_path = (dev.path() / "log").string();
  const int listener = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(socket_path.size() < sizeof address.sun_path);
  std::copy(socket_path.begin(), socket_path.end(), address.sun_path);
  REQUIRE(::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  int buffer_size = 1 << 20;
  ::setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &buffer_size, sizeof buffer_size);

  RunOptions options = env_with_state(state.path());
  options.launcher = {"unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                      "set -e; d=\"$0\"; for f in null zero random urandom; do : > \"$d/$f\"; "
                      "mount --bind \"/dev/$f\" \"$d/$f\"; done; mount --rbind \"$d\" /dev; exec \"$@\"",
                      dev.path().string()};
  const std::string config = shop.config("syslog.json", R"("log": {"destination": "syslog"})").string();
  const auto result = run_rawtool(args({"certified", "--config", config}), options);
  INFO(result.err);
  CHECK(result.exit_status == 1);
  CHECK_FALSE(mentions(result.out + result.err, shop_canary));
  const auto pointer = pointer_in(result.err);
  REQUIRE(pointer.has_value());
  CHECK(pointer->where == "syslog (identity rawtool)");

  // With nothing listening at /dev/log, syslog(3) would drop every line
  // silently: the command stops at start instead, naming what chose syslog.
  ScratchFolder empty_dev;
  RunOptions unheard = options;
  unheard.launcher.back() = empty_dev.path().string();
  const auto from_config = run_rawtool(args({"certified", "--config", config}), unheard);
  CHECK(from_config.exit_status == 2);
  CHECK(from_config.out.empty());
  CHECK_THAT(from_config.err, Catch::Contains("configuration error: log.destination: is syslog, but /dev/log is not a socket"));
  const auto from_flag =
      run_rawtool(args({"certified", "--config", shop.config("plain.json").string(), "--log", "syslog"}), unheard);
  CHECK(from_flag.exit_status == 2);
  CHECK_THAT(from_flag.err, Catch::Contains("--log: is syslog, but /dev/log is not a socket"));

  std::vector<std::string> messages;
  for (;;) {
    pollfd fd{listener, POLLIN, 0};
    if (::poll(&fd, 1, 2000) <= 0) break;
    std::vector<char> datagram(1 << 17);
    const ssize_t got = ::recv(listener, datagram.data(), datagram.size(), 0);
    if (got <= 0) break;
    messages.emplace_back(datagram.data(), static_cast<std::size_t>(got));
  }
  ::close(listener);
  REQUIRE(messages.size() == 1);
  // "<PRI>timestamp rawtool[pid]: {json}": LOG_USER | LOG_ERR is priority 11.
  CHECK(messages[0].rfind("<11>", 0) == 0);
  CHECK(mentions(messages[0], " rawtool["));
  const json record = json::parse(messages[0].substr(messages[0].find('{')));
  CHECK(record["reference"] == pointer->value);
  CHECK(mentions(record.dump(), shop_canary));
  CHECK_FALSE(std::filesystem::exists(state.path() / "rawtool"));
}

TEST_CASE("rawtool mcp keeps its log on stderr by default and writes to a file the configuration names",
          "[cli][log][sqlite][mcp]") {
  ShopFixture shop;
  ScratchFolder state;
  const std::string requests =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"certified_query","arguments":{"name":"product_reviews","params":{"product_id":2}}}})"
      "\n";
  RunOptions options = env_with_state(state.path());
  options.stdin_bytes = requests;

  const auto by_default = run_rawtool({"mcp", "--config", shop.config("plain.json").string()}, options);
  CHECK(by_default.exit_status == 0);
  CHECK_FALSE(mentions(by_default.out, shop_canary));
  CHECK(mentions(by_default.err, shop_canary));
  CHECK(record_with(by_default.err, "event", "serving")["component"] == "mcp");
  CHECK_FALSE(std::filesystem::exists(state.path() / "rawtool"));

  const auto to_file =
      run_rawtool({"mcp", "--config", shop.config("file.json", R"("log": {"path": "mcp.log"})").string()}, options);
  CHECK(to_file.exit_status == 0);
  CHECK(to_file.err.empty());
  CHECK_FALSE(mentions(to_file.out, shop_canary));
  const std::string log = read_file(shop.folder() / "mcp.log");
  CHECK(mentions(log, shop_canary));
  CHECK(record_with(log, "event", "serving")["component"] == "mcp");
  CHECK(record_with(log, "event", "stopped")["level"] == "info");
  CHECK(record_with(log, "event", "certified_failure")["component"] == "tool");
}

TEST_CASE("certified over PostgreSQL with a 200 MB RAISE writes one bounded line with the failure's size and digest",
          "[cli][log][postgres][bounded]") {
  const auto admin_url = rawtool::test::pg_url();
  const auto reader_url = rawtool::test::pg_url(true);
  if (!admin_url || !reader_url) return;
  const char* admin = admin_url->c_str();
  const char* reader = reader_url->c_str();
  std::mt19937_64 rng{std::random_device{}()};
  const std::string function = "rawtool_cli_huge_" + std::to_string(rng() % 1000000000);
  auto driver = rawtool::make_postgres_driver(admin);
  auto run = [&](const std::string& sql) {
    const auto outcome = driver->execute(sql, {}, rawtool::Limits{}, rawtool::AccessMode::read_write);
    REQUIRE(std::holds_alternative<rawtool::Rows>(outcome));
  };
  run("CREATE FUNCTION " + function +
      "() RETURNS int LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION '%', repeat('E', 200000000); END $f$");
  struct Drop {
    std::function<void()> drop;
    ~Drop() { drop(); }
  } cleanup{[&] {
    (void)driver->execute("DROP FUNCTION IF EXISTS " + function + "()", {}, rawtool::Limits{},
                          rawtool::AccessMode::read_write);
  }};

  ScratchFolder folder;
  rawtool::test::write_file(folder.path() / "catalog.json",
                            R"({"queries": [{"name": "huge", "description": "d", "sql": "SELECT )" + function + R"J(()"}]})J");
  rawtool::test::write_file(folder.path() / "config.json",
                            json{{"databases", json::array({json{{"url", reader}, {"limits", {{"statement_timeout_ms", 120000}}}}})},
                                 {"catalog", "catalog.json"},
                                 {"log", {{"path", "operator.log"}}}}
                                .dump());
  const auto result = run_rawtool({"certified", "--config", (folder.path() / "config.json").string(), "huge"},
                                  env_with_state(folder.path()));
  INFO(result.out.substr(0, 2000) << result.err.substr(0, 2000));
  CHECK(result.exit_status == 1);
  CHECK(mentions(result.out, "status=execution_failed"));
  CHECK(result.out.size() < 4096);
  CHECK(lines_of(result.err).size() == 1);
  const auto log_file = folder.path() / "operator.log";
  const std::string log = read_file(log_file);
  const auto lines = lines_of(log);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].size() + 1 <= 64 * 1024);
  const json record = json::parse(lines[0]);
  const json& failure = record["failure"];
  // The driver kept the start of each field and the size and digest of all of
  // them (Failure::withheld); the log carries both, each field bounded again.
  REQUIRE(failure.contains("withheld"));
  CHECK(failure["withheld"]["bytes"].get<std::uint64_t>() >= 200000000);
  CHECK(failure["withheld"]["sha256"].get<std::string>().size() == 64);
  CHECK(failure["withheld_sha256"] == failure["withheld"]["sha256"]);
  const json& message = failure["message"];
  const std::string kept = message.is_string() ? message.get<std::string>() : message["prefix"].get<std::string>();
  CHECK_FALSE(kept.empty());
  CHECK(kept.find_first_not_of('E') == std::string::npos);
  CHECK(failure["sqlstate"] == "P0001");
}
