// The configuration file: every key, its default, and errors that name the
// field without quoting the operator's value.

#include "fixture.hpp"

#include <rawtool/config.hpp>
#include <rawtool/driver.hpp>

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>
#include <string>

using rawtool::ConfigError;
using rawtool::parse_config;

namespace {

// Sets or unsets one environment variable for a scope, restoring it after.
class ScopedEnv {
public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* name_;
  std::optional<std::string> old_;
};

// No database can come from the environment while this lives.
struct NoDatabaseEnvironment {
  ScopedEnv url{"RAWTOOL_DATABASE_URL", std::nullopt};
  ScopedEnv host{"PGHOST", std::nullopt};
  ScopedEnv hostaddr{"PGHOSTADDR", std::nullopt};
  ScopedEnv port{"PGPORT", std::nullopt};
  ScopedEnv database{"PGDATABASE", std::nullopt};
  ScopedEnv user{"PGUSER", std::nullopt};
  ScopedEnv service{"PGSERVICE", std::nullopt};
};

// The field a configuration's error names, or "" when it parses.
std::string error_field(const std::string& json) {
  try {
    (void)parse_config(json, "/base");
  } catch (const ConfigError& e) {
    // what() is always "<field>: <problem>".
    CHECK(std::string(e.what()).rfind(e.field() + ": ", 0) == 0);
    return e.field();
  }
  return "";
}

std::string error_text(const std::string& json) {
  try {
    (void)parse_config(json, "/base");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

const std::string one_db = R"("databases": [{"path": "a.db"}])";

}  // namespace

TEST_CASE("a configuration error names the field it is about", "[config]") {
  NoDatabaseEnvironment env;
  struct Case {
    std::string json;
    std::string field;
  };
  const Case cases[] = {
      {"not json", "configuration"},
      {"[1, 2]", "configuration"},
      {R"({"databases": {"path": "a.db"}})", "databases"},
      {"{}", "databases"},
      {R"({"databases": []})", "databases"},
      {R"({"databases": [{}]})", "databases[0]"},
      {R"({"databases": [{"url": "postgresql://h/d", "path": "a.db"}]})", "databases[0]"},
      {R"({"databases": [{"path": ""}]})", "databases[0].path"},
      {R"({"databases": [{"url": 5}]})", "databases[0].url"},
      {R"({"databases": [{"url": "sqlite:"}]})", "databases[0].url"},
      {R"({"databases": [{"url": ""}]})", "databases[0].url"},
      {R"({"databases": [{"url": "mysql://app@db/shop"}]})", "databases[0].url"},
      {R"({"databases": [{"url": "file:shop.db"}]})", "databases[0].url"},
      {R"({"databases": [{"url": "shop.db"}]})", "databases[0].url"},
      {R"({"databases": [{"url": "${RAWTOOL_TEST_UNSET_VARIABLE}"}]})", "databases[0].url"},
      {R"({"databases": [{"url": "postgresql://u:${1BAD}@h/d"}]})", "databases[0].url"},
      {R"({"databases": [{"url": "postgresql://u:${PW@h/d"}]})", "databases[0].url"},
      {R"({"databases": [{"path": "${RAWTOOL_TEST_UNSET_VARIABLE}/a.db"}]})", "databases[0].path"},
      {R"({"databases": [{"path": "/nonexistent/a.db", "access": "read_write"}]})", "databases[0]"},
      {R"({"databases": [{"path": "a.db", "create_if_missing": true}]})", "databases[0].create_if_missing"},
      {R"({"databases": [{"path": "a.db", "access": "read_write", "create_if_missing": "yes"}]})",
       "databases[0].create_if_missing"},
      {R"({"databases": [{"url": "postgresql://h/d", "access": "read_write", "create_if_missing": true}]})",
       "databases[0].create_if_missing"},
      {R"({"databases": [{"path": "a.db", "password_file": "pw"}]})", "databases[0].password_file"},
      {R"({"databases": [{"url": "postgresql://h/d", "password_file": ""}]})", "databases[0].password_file"},
      {R"({"databases": [{"url": "postgresql://h/d", "password_file": "/nonexistent/pw"}]})",
       "databases[0].password_file"},
      {R"({"databases": [{"path": "a.db", "label": "has space"}]})", "databases[0].label"},
      {R"({"databases": [{"path": "a.db", "label": ""}]})", "databases[0].label"},
      {R"({"databases": [{"path": "a.db", "label": "x"}, {"path": "b.db"}]})", "databases[1].label"},
      {R"({"databases": [{"path": "a.db", "label": "x"}, {"path": "b.db", "label": "x"}]})", "databases[1].label"},
      {R"({"databases": [{"path": "a.db", "access": "readonly"}]})", "databases[0].access"},
      {R"({"databases": [{"path": "a.db", "pool_size": 0}]})", "databases[0].pool_size"},
      {R"({"databases": [{"path": "a.db", "pool_size": 1000}]})", "databases[0].pool_size"},
      {R"({"databases": [{"path": "a.db", "pool": 2}]})", "databases[0].pool"},
      {R"({"databases": [{"path": "a.db", "label": "a"}, {"path": "b.db", "label": "b", "limits": {"max_rows": 0}}]})",
       "databases[1].limits.max_rows"},
      {R"({"databases": [{"path": "a.db", "limits": {"max_rows": "100"}}]})", "databases[0].limits.max_rows"},
      {R"({"databases": [{"path": "a.db", "limits": {"max_rows": 1.5}}]})", "databases[0].limits.max_rows"},
      {R"({"databases": [{"path": "a.db", "limits": {"max_rows": -3}}]})", "databases[0].limits.max_rows"},
      {R"({"databases": [{"path": "a.db", "limits": {"max_rows": true}}]})", "databases[0].limits.max_rows"},
      {R"({"databases": [{"path": "a.db", "limits": {"max_row": 5}}]})", "databases[0].limits.max_row"},
      {R"({"databases": [{"path": "a.db", "limits": {"statement_timeout_ms": 0}}]})",
       "databases[0].limits.statement_timeout_ms"},
      {R"({"databases": [{"path": "a.db", "limits": {"lock_timeout_ms": 100000000000}}]})",
       "databases[0].limits.lock_timeout_ms"},
      {R"({"databases": [{"path": "a.db", "limits": {"max_bytes": 0}}]})", "databases[0].limits.max_bytes"},
      {R"({"databases": [{"path": "a.db", "limits": {"max_statement_bytes": 99999999999}}]})",
       "databases[0].limits.max_statement_bytes"},
      {R"({"databases": [{"path": "a.db", "limits": {"max_notice_bytes": 16777217}}]})",
       "databases[0].limits.max_notice_bytes"},
      {R"({"databases": [{"path": "a.db", "limits": {"max_notice_bytes": -1}}]})", "databases[0].limits.max_notice_bytes"},
      {R"({"databases": [{"path": "a.db", "limits": []}]})", "databases[0].limits"},
      {R"({"databases": [{"path": "a.db", "sqlite_read_only_wal": "sometimes"}]})", "databases[0].sqlite_read_only_wal"},
      {R"({"databases": [{"path": "a.db", "sqlite_read_only_wal": true}]})", "databases[0].sqlite_read_only_wal"},
      {R"({"databases": [{"url": "postgresql://h/d", "sqlite_read_only_wal": "immutable"}]})",
       "databases[0].sqlite_read_only_wal"},
      {R"({"databases": [{"url": "postgresql://h/d", "refuse_hazards": "security_definer"}]})",
       "databases[0].refuse_hazards"},
      {R"({"databases": [{"url": "postgresql://h/d", "refuse_hazards": ["server_log", "security_definr"]}]})",
       "databases[0].refuse_hazards[1]"},
      {R"({"databases": [{"url": "postgresql://h/d", "refuse_hazards": [3]}]})", "databases[0].refuse_hazards[0]"},
      {R"({"databases": [{"url": "postgresql://h/d", "refuse_hazards": ["server_log", "server_log"]}]})",
       "databases[0].refuse_hazards[1]"},
      {R"({"databases": [{"path": "a.db", "refuse_hazards": ["server_log"]}]})", "databases[0].refuse_hazards"},
      {R"({"databases": [{"url": "postgresql://h/d", "access": "read_write", "refuse_hazards": ["server_log"]}]})",
       "databases[0].refuse_hazards"},
      {"{" + one_db + R"(, "raw_paht": true})", "raw_paht"},
      {"{" + one_db + R"(, "raw_path": "yes"})", "raw_path"},
      {"{" + one_db + R"(, "catalog": 3})", "catalog"},
      {"{" + one_db + R"(, "catalog": ""})", "catalog"},
      {"{" + one_db + R"(, "catalog_prose": "hidden"})", "catalog_prose"},
      {"{" + one_db + R"(, "structured_content": "none"})", "structured_content"},
      {"{" + one_db + R"(, "structured_content": false})", "structured_content"},
      {"{" + one_db + R"(, "render": {"ascii_only": 1}})", "render.ascii_only"},
      {"{" + one_db + R"(, "render": {"budget_bytes": 10}})", "render.budget_bytes"},
      {"{" + one_db + R"(, "render": {"show_statement": null}})", "render.show_statement"},
      {"{" + one_db + R"(, "render": {"colour": true}})", "render.colour"},
      {"{" + one_db + R"(, "render": "plain"})", "render"},
      {"{" + one_db + R"(, "max_concurrent_calls": 0})", "max_concurrent_calls"},
      {"{" + one_db + R"(, "max_concurrent_calls": 2.0})", "max_concurrent_calls"},
      {"{" + one_db + R"(, "log": "stderr"})", "log"},
      {"{" + one_db + R"(, "log": {"destination": "journal"}})", "log.destination"},
      {"{" + one_db + R"(, "log": {"destination": 1}})", "log.destination"},
      {"{" + one_db + R"(, "log": {"destination": "file"}})", "log.path"},
      {"{" + one_db + R"(, "log": {"destination": "syslog", "path": "a.log"}})", "log.path"},
      {"{" + one_db + R"(, "log": {"destination": "stderr", "path": "a.log"}})", "log.path"},
      {"{" + one_db + R"(, "log": {"path": ""}})", "log.path"},
      {"{" + one_db + R"(, "log": {"path": 7}})", "log.path"},
      {"{" + one_db + R"(, "log": {"path": "a\u0000b.log"}})", "log.path"},
      {"{" + one_db + R"(, "log": {"level": "verbose"}})", "log.level"},
      {"{" + one_db + R"(, "log": {"level": 3}})", "log.level"},
      {"{" + one_db + R"(, "log": {"file": "a.log"}})", "log.file"},
  };
  for (const Case& c : cases) {
    INFO(c.json);
    CHECK(error_field(c.json) == c.field);
  }
}

TEST_CASE("a configuration error never quotes the operator's value", "[config]") {
  NoDatabaseEnvironment env;
  CHECK_FALSE(rawtool::test::contains(error_text(R"({"databases": [{"path": "a.db", "label": "CANARY label"}]})"),
                                      "CANARY"));
  CHECK_FALSE(rawtool::test::contains(
      error_text(R"({"databases": [{"path": "a.db", "access": "CANARY"}]})"), "CANARY"));
  CHECK_FALSE(rawtool::test::contains(error_text("{" + one_db + R"(, "catalog_prose": "CANARY"})"), "CANARY"));
  CHECK_FALSE(rawtool::test::contains(error_text("{" + one_db + R"(, "log": {"destination": "CANARY"}})"), "CANARY"));
  CHECK_FALSE(rawtool::test::contains(error_text("{" + one_db + R"(, "log": {"level": "CANARY"}})"), "CANARY"));
  // A key that is not a plain identifier is described, not shown.
  std::string text = error_text("{" + one_db + R"(, "CANARY\u001b[2J": 1})");
  CHECK_FALSE(rawtool::test::contains(text, "CANARY"));
  CHECK_FALSE(rawtool::test::contains(text, "\x1b"));
}

TEST_CASE("every key left out takes its documented default", "[config]") {
  NoDatabaseEnvironment env;
  rawtool::Config c = parse_config(R"({"databases": [{"path": "data/a.db"}]})", "/srv/rawtool");
  REQUIRE(c.databases.size() == 1);
  const rawtool::DatabaseConfig& db = c.databases[0];
  CHECK(db.label == "default");
  CHECK(db.kind == rawtool::TargetKind::sqlite_path);
  CHECK(db.target == "/srv/rawtool/data/a.db");
  CHECK(db.access == rawtool::AccessMode::read_only);
  CHECK(db.pool_size == 4);
  CHECK(db.sqlite.read_only_wal == rawtool::SqliteReadOnlyWal::existing_files);
  CHECK(db.limits.statement_timeout == std::chrono::milliseconds(5000));
  CHECK(db.limits.lock_timeout == std::chrono::milliseconds(1000));
  CHECK(db.limits.max_rows == 1000);
  CHECK(db.limits.max_bytes == 1024 * 1024);
  CHECK(db.limits.max_statement_bytes == 256 * 1024);
  CHECK(db.limits.max_notice_bytes == 8 * 1024);
  CHECK(c.raw_path);
  CHECK_FALSE(c.catalog.has_value());
  CHECK(c.render.catalog_prose == rawtool::render::CatalogProse::quoted);
  CHECK_FALSE(c.render.ascii_only);
  CHECK(c.render.budget == 16 * 1024);
  CHECK(c.render.show_statement);
  CHECK(c.max_concurrent_calls == 4);
  CHECK(c.structured_content);
  // No log destination: the program that opens the Tool chooses.
  CHECK_FALSE(c.log.destination.has_value());
  CHECK(c.log.path.empty());
  CHECK(c.log.level == rawtool::LogLevel::info);
}

TEST_CASE("every key set in the file reaches the configuration", "[config]") {
  NoDatabaseEnvironment env;
  rawtool::Config c = parse_config(R"({
    "databases": [
      {"label": "main", "url": "postgresql://u@h:5/d", "access": "read_write",
       "limits": {"statement_timeout_ms": 700, "lock_timeout_ms": 70, "max_rows": 7, "max_bytes": 7777,
                  "max_statement_bytes": 777, "max_notice_bytes": 0},
       "pool_size": 7},
      {"label": "local.copy-2", "url": "sqlite:rel/b.db", "sqlite_read_only_wal": "immutable"},
      {"label": "mem", "path": ":memory:"}
    ],
    "raw_path": false,
    "catalog": "queries.json",
    "catalog_prose": "omitted",
    "render": {"ascii_only": true, "budget_bytes": 4096, "show_statement": false},
    "max_concurrent_calls": 9,
    "structured_content": "text",
    "log": {"destination": "file", "path": "logs/rawtool.log", "level": "debug"}
  })",
                                   "/etc/rawtool");
  REQUIRE(c.databases.size() == 3);
  CHECK(c.databases[0].label == "main");
  CHECK(c.databases[0].kind == rawtool::TargetKind::postgresql);
  CHECK(c.databases[0].target == "postgresql://u@h:5/d");
  CHECK(c.databases[0].access == rawtool::AccessMode::read_write);
  CHECK(c.databases[0].limits.statement_timeout == std::chrono::milliseconds(700));
  CHECK(c.databases[0].limits.lock_timeout == std::chrono::milliseconds(70));
  CHECK(c.databases[0].limits.max_rows == 7);
  CHECK(c.databases[0].limits.max_bytes == 7777);
  CHECK(c.databases[0].limits.max_statement_bytes == 777);
  CHECK(c.databases[0].limits.max_notice_bytes == 0);
  CHECK(c.databases[0].pool_size == 7);
  CHECK(c.databases[1].label == "local.copy-2");
  CHECK(c.databases[1].kind == rawtool::TargetKind::sqlite_path);
  CHECK(c.databases[1].target == "/etc/rawtool/rel/b.db");
  CHECK(c.databases[1].sqlite.read_only_wal == rawtool::SqliteReadOnlyWal::immutable);
  CHECK(c.databases[0].sqlite.read_only_wal == rawtool::SqliteReadOnlyWal::existing_files);
  CHECK(c.databases[2].target == ":memory:");
  CHECK_FALSE(c.raw_path);
  REQUIRE(c.catalog.has_value());
  CHECK(*c.catalog == "/etc/rawtool/queries.json");
  CHECK(c.render.catalog_prose == rawtool::render::CatalogProse::omitted);
  CHECK(c.render.ascii_only);
  CHECK(c.render.budget == 4096);
  CHECK_FALSE(c.render.show_statement);
  CHECK(c.max_concurrent_calls == 9);
  CHECK_FALSE(c.structured_content);
  CHECK(c.log.destination == rawtool::LogDestination::file);
  CHECK(c.log.path == "/etc/rawtool/logs/rawtool.log");
  CHECK(c.log.level == rawtool::LogLevel::debug);
}

TEST_CASE("the log key names each destination and level, a path alone means a file", "[config][log]") {
  NoDatabaseEnvironment env;
  using rawtool::LogDestination;
  using rawtool::LogLevel;
  auto log_of = [](const std::string& log) { return parse_config("{" + one_db + R"(, "log": )" + log + "}", "/srv").log; };
  CHECK(log_of(R"({"destination": "syslog"})").destination == LogDestination::syslog);
  CHECK(log_of(R"({"destination": "stderr"})").destination == LogDestination::standard_error);
  const rawtool::LogConfig file = log_of(R"({"path": "../var/op.log"})");
  CHECK(file.destination == LogDestination::file);
  CHECK(file.path == "/var/op.log");
  CHECK(log_of(R"({"path": "/abs/op.log"})").path == "/abs/op.log");
  CHECK_FALSE(log_of("{}").destination.has_value());
  CHECK(log_of(R"({"level": "error"})").level == LogLevel::error);
  CHECK(log_of(R"({"level": "warn"})").level == LogLevel::warn);
  CHECK(log_of(R"({"level": "info"})").level == LogLevel::info);
  CHECK(log_of(R"({"level": "debug"})").level == LogLevel::debug);
  for (LogLevel level : {LogLevel::error, LogLevel::warn, LogLevel::info, LogLevel::debug}) {
    CHECK(rawtool::log_level_from_name(rawtool::log_level_name(level)) == level);
  }
  CHECK_FALSE(rawtool::log_level_from_name("ERROR").has_value());

  // Built in code, a file destination without a path is refused too.
  rawtool::Config c;
  c.databases.push_back(rawtool::database_for_target(":memory:"));
  c.log.destination = LogDestination::file;
  CHECK_THROWS_WITH(rawtool::validate_config(c), Catch::StartsWith("log.path: "));
}

TEST_CASE("a database left out comes from RAWTOOL_DATABASE_URL before the PG* environment", "[config]") {
  NoDatabaseEnvironment env;
  {
    ScopedEnv host("PGHOST", "db.example");
    rawtool::Config c = parse_config("{}", "/base");
    REQUIRE(c.databases.size() == 1);
    CHECK(c.databases[0].kind == rawtool::TargetKind::postgresql);
    CHECK(c.databases[0].target.empty());  // libpq reads PG* itself
    CHECK(c.databases[0].label == "default");

    ScopedEnv url("RAWTOOL_DATABASE_URL", "postgresql://app@other/db");
    rawtool::Config d = parse_config(R"({"databases": [{"label": "x", "pool_size": 2}]})", "/base");
    REQUIRE(d.databases.size() == 1);
    CHECK(d.databases[0].target == "postgresql://app@other/db");
    CHECK(d.databases[0].label == "x");
    CHECK(d.databases[0].pool_size == 2);
  }
  {
    ScopedEnv url("RAWTOOL_DATABASE_URL", "sqlite:local.db");
    rawtool::Config c = parse_config("{}", "/base");
    CHECK(c.databases[0].kind == rawtool::TargetKind::sqlite_path);
    CHECK(c.databases[0].target == "/base/local.db");
  }
  CHECK(error_field("{}") == "databases");
  ScopedEnv empty_sqlite("RAWTOOL_DATABASE_URL", "sqlite:");
  CHECK(error_field("{}") == "RAWTOOL_DATABASE_URL");
}

TEST_CASE("${NAME} in url, path and password_file comes from the environment, an unset one is named", "[config]") {
  NoDatabaseEnvironment env;
  rawtool::test::TempDir dir;
  ScopedEnv password("RAWTOOL_TEST_DB_PASSWORD", "p@ss/w%rd:1");
  ScopedEnv url("RAWTOOL_TEST_DB_URL", "postgresql://app@db.internal/shop?sslmode=require");
  ScopedEnv folder("RAWTOOL_TEST_DATA", dir.path().string());
  ScopedEnv unset("RAWTOOL_TEST_UNSET_VARIABLE", std::nullopt);
  dir.write("pw", "s3cret\n");
  dir.write("existing.db", "");

  const rawtool::Config c = parse_config(R"({"databases": [
      {"label": "in_url", "url": "postgresql://app:${RAWTOOL_TEST_DB_PASSWORD}@db/shop"},
      {"label": "whole", "url": "${RAWTOOL_TEST_DB_URL}"},
      {"label": "file", "path": "${RAWTOOL_TEST_DATA}/existing.db", "access": "read_write"},
      {"label": "literal", "path": "a$${b}.db"},
      {"label": "keywords", "url": "host=h password=${RAWTOOL_TEST_DB_PASSWORD}"},
      {"label": "secret", "url": "postgresql://app@db/shop", "password_file": "${RAWTOOL_TEST_DATA}/pw"}]})",
                                         "/base");
  // Inside a URL the value is percent-encoded, which libpq decodes: '@', '/', '%' and ':' stay the password's.
  CHECK(c.databases[0].target == "postgresql://app:p%40ss%2Fw%25rd%3A1@db/shop");
  // A whole URL is taken as it is.
  CHECK(c.databases[1].target == "postgresql://app@db.internal/shop?sslmode=require");
  CHECK(c.databases[2].target == (dir.path() / "existing.db").string());
  CHECK(c.databases[3].target == "/base/a${b}.db");
  CHECK(c.databases[4].target == "host=h password=p@ss/w%rd:1");
  CHECK(c.databases[5].password_file == dir.path() / "pw");

  const std::string text = error_text(R"({"databases": [{"url": "postgresql://u:${RAWTOOL_TEST_UNSET_VARIABLE}@h/d"}]})");
  CHECK(text == "databases[0].url: names ${RAWTOOL_TEST_UNSET_VARIABLE}, but the environment variable "
                "RAWTOOL_TEST_UNSET_VARIABLE is not set or is empty");
  ScopedEnv empty("RAWTOOL_TEST_UNSET_VARIABLE", "");
  CHECK(error_field(R"({"databases": [{"url": "postgresql://u:${RAWTOOL_TEST_UNSET_VARIABLE}@h/d"}]})") ==
        "databases[0].url");
  // A password file that exists but is empty is refused now, not at the first connection.
  dir.write("empty", "\n");
  CHECK_THAT(error_text(R"({"databases": [{"url": "postgresql://h/d", "password_file": ")" + (dir.path() / "empty").string() +
                        R"("}]})"),
             Catch::Contains("databases[0].password_file: names an empty file"));
  CHECK_THAT(error_text(R"({"databases": [{"url": "postgresql://h/d", "password_file": "/nonexistent/pw"}]})"),
             Catch::Contains("No such file or directory"));
}

TEST_CASE("a url names its engine: another scheme or a bare path is an error that names the field", "[config]") {
  NoDatabaseEnvironment env;
  CHECK_THAT(error_text(R"({"databases": [{"url": "mysql://app@db/shop"}]})"),
             Catch::StartsWith("databases[0].url: uses the scheme mysql, which is not one rawtool speaks"));
  // A scheme of other bytes is not repeated: the error holds rawtool's words only.
  CHECK_THAT(error_text(R"({"databases": [{"url": "my+sql://app@db/shop"}]})"),
             Catch::StartsWith("databases[0].url: uses a scheme, which is not one rawtool speaks"));
  CHECK(error_text(R"({"databases": [{"url": "my+sql://app@db/shop"}]})").find('+') == std::string::npos);
  CHECK_THAT(error_text(R"({"databases": [{"url": "shop.db"}]})"),
             Catch::StartsWith("databases[0].url: names no engine: a SQLite file is named with sqlite:PATH or the path key"));
  // RAWTOOL_DATABASE_URL and --db may name a SQLite file by its path, but not another engine's URL,
  // and not a variable nobody replaced.
  CHECK_THROWS_WITH(rawtool::database_for_target("mysql://app@db/shop"),
                    Catch::StartsWith("database: uses the scheme mysql, which"));
  CHECK_THROWS_WITH(rawtool::database_for_target("${DB_URL}"), Catch::StartsWith("database: holds ${"));
  CHECK(rawtool::database_for_target("odd:name.db", "/x").target == "/x/odd:name.db");
  {
    ScopedEnv url("RAWTOOL_DATABASE_URL", "${DB_URL}");
    CHECK_THAT(error_text("{}"), Catch::StartsWith("RAWTOOL_DATABASE_URL: holds ${"));
  }
  ScopedEnv url("RAWTOOL_DATABASE_URL", "mysql://app@db/shop");
  CHECK(error_field("{}") == "RAWTOOL_DATABASE_URL");
}

TEST_CASE("a read-write SQLite file that does not exist is an error unless create_if_missing says to create it",
          "[config][sqlite]") {
  NoDatabaseEnvironment env;
  rawtool::test::TempDir dir;
  const std::string missing = (dir.path() / "new.db").string();
  CHECK_THAT(error_text(R"({"databases": [{"path": ")" + missing + R"(", "access": "read_write"}]})"),
             Catch::StartsWith("databases[0]: is a read_write SQLite database whose file does not exist"));
  CHECK_THAT(error_text(R"({"databases": [{"url": "sqlite:)" + missing + R"(", "access": "read_write"}]})"),
             Catch::StartsWith("databases[0]: is a read_write SQLite database whose file does not exist"));
  CHECK_FALSE(std::filesystem::exists(missing));
  // Read-only access creates nothing, and a missing file is reported when it is used.
  CHECK_NOTHROW(parse_config(R"({"databases": [{"path": ")" + missing + R"("}]})", "/base"));

  const rawtool::Config c =
      parse_config(R"({"databases": [{"path": ")" + missing + R"(", "access": "read_write", "create_if_missing": true}]})", "/base");
  CHECK(c.databases[0].sqlite.create_if_missing);
  auto tool = rawtool::Tool::open(c);
  CHECK_FALSE(tool->raw("CREATE TABLE t (x)").is_error());
  CHECK(std::filesystem::exists(missing));

  // A file that disappears after the configuration was read is not made again behind the operator's back.
  const std::string gone = (dir.path() / "gone.db").string();
  dir.write("gone.db", "");
  const rawtool::Config d = parse_config(R"({"databases": [{"path": ")" + gone + R"(", "access": "read_write"}]})", "/base");
  CHECK_FALSE(d.databases[0].sqlite.create_if_missing);
  auto strict = rawtool::Tool::open(d);
  std::filesystem::remove(gone);
  const rawtool::Reply reply = strict->raw("CREATE TABLE t (x)");
  CHECK(reply.is_error());
  CHECK(reply.structured()["status"] == "unavailable");
  CHECK_FALSE(std::filesystem::exists(gone));
}

TEST_CASE("a configuration file that cannot be read is named with the reason", "[config]") {
  rawtool::test::TempDir dir;
  try {
    (void)rawtool::load_config(dir.path() / "missing\x1b[2J.json");
    FAIL("a missing file loaded");
  } catch (const ConfigError& e) {
    CHECK(e.field() == "configuration");
    CHECK_THAT(e.what(), Catch::Contains("cannot open the file \"" + dir.path().string() + "/missing\\x1B[2J.json\": No such file or directory"));
    CHECK_FALSE(rawtool::test::contains(e.what(), "\x1b"));
  }
  CHECK_THROWS_WITH(rawtool::load_config(dir.path()), Catch::Contains("cannot read the file") && Catch::Contains("Is a directory"));
}

TEST_CASE("a target string chooses its engine by its form", "[config]") {
  using rawtool::TargetKind;
  CHECK(rawtool::database_for_target("postgresql://h/d").kind == TargetKind::postgresql);
  CHECK(rawtool::database_for_target("postgres://h/d").kind == TargetKind::postgresql);
  CHECK(rawtool::database_for_target("host=h dbname=d").kind == TargetKind::postgresql);
  CHECK(rawtool::database_for_target(" dbname = d").kind == TargetKind::postgresql);
  CHECK(rawtool::database_for_target(":memory:").target == ":memory:");
  CHECK(rawtool::database_for_target("sqlite:/tmp/a.db").target == "/tmp/a.db");
  CHECK(rawtool::database_for_target("sqlite:///tmp/a.db").target == "/tmp/a.db");
  CHECK(rawtool::database_for_target("a.db", "/x").target == "/x/a.db");
  CHECK(rawtool::database_for_target("a.db", "/x").kind == TargetKind::sqlite_path);
  CHECK_THROWS_AS(rawtool::database_for_target(""), ConfigError);
}

TEST_CASE("the configuration, --db and make_driver take every spelling of a target for the same engine, as libpq parses it",
          "[config][target]") {
  using rawtool::Engine;
  struct Spelling {
    std::string target;
    Engine engine;
  };
  const std::vector<Spelling> spellings = {
      {"postgresql://u@h:5432/db", Engine::postgresql},
      {"postgres://h/db?sslmode=require", Engine::postgresql},
      {"postgresql://", Engine::postgresql},
      {"postgresql://[::1", Engine::postgresql},  // malformed: libpq says so when it connects
      {"host=localhost dbname=x", Engine::postgresql},
      {"  dbname = x", Engine::postgresql},
      {"host=h\tdbname=d", Engine::postgresql},
      {"dbname='my db' user=u", Engine::postgresql},
      {"password='a b\\' c' host=h", Engine::postgresql},
      {"sslrootcert=/etc/ca.pem host=db", Engine::postgresql},  // a keyword make_driver's own list lacked
      {"keepalives=1 host=db", Engine::postgresql},
      {"dbname=", Engine::postgresql},
      {"host=db dbname", Engine::postgresql},  // malformed: libpq says so when it connects
      {" user = u port", Engine::postgresql},
      {"host='db", Engine::postgresql},
      {":memory:", Engine::sqlite},
      {"sqlite:data.db", Engine::sqlite},
      {"sqlite:///tmp/x.db", Engine::sqlite},
      {"data.db", Engine::sqlite},
      {"/var/db/host=1.db", Engine::sqlite},
      {"weird=name.db", Engine::sqlite},  // no libpq keyword: the configuration took it for PostgreSQL
      {"data=1.db", Engine::sqlite},
      {"my data.db", Engine::sqlite},
      {"my db=1.db", Engine::sqlite},
      {"HOST=x", Engine::sqlite},  // libpq's keywords are lower case
      {"host", Engine::sqlite},
      {"   ", Engine::sqlite},
  };
  for (const Spelling& s : spellings) {
    INFO(s.target);
    const auto kind = rawtool::database_for_target(s.target, "/x").kind;
    CHECK((kind == rawtool::TargetKind::postgresql ? Engine::postgresql : Engine::sqlite) == s.engine);
    CHECK(rawtool::make_driver(s.target, rawtool::AccessMode::read_only)->engine() == s.engine);
    // The url key takes a PostgreSQL target as one, and refuses a bare path: it must name its engine.
    const nlohmann::json config = {{"databases", {{{"url", s.target}}}}};
    if (s.engine == Engine::postgresql) {
      CHECK(parse_config(config.dump(), "/x").databases.front().kind == rawtool::TargetKind::postgresql);
    } else if (s.target.find(':') == std::string::npos) {
      CHECK_THROWS_WITH(parse_config(config.dump(), "/x"), Catch::Contains("names no engine"));
    }
  }
  CHECK(rawtool::make_driver("", rawtool::AccessMode::read_only)->engine() == Engine::sqlite);
}

TEST_CASE("load_config resolves relative paths against the file's folder", "[config]") {
  NoDatabaseEnvironment env;
  rawtool::test::TempDir dir;
  auto file = dir.write("rawtool.json", R"({"databases": [{"path": "x.db"}], "catalog": "c.json"})");
  rawtool::Config c = rawtool::load_config(file);
  CHECK(c.databases[0].target == (dir.path() / "x.db").string());
  CHECK(*c.catalog == dir.path() / "c.json");
  try {
    (void)rawtool::load_config(dir.path() / "missing.json");
    FAIL("a missing file loaded");
  } catch (const ConfigError& e) {
    CHECK(e.field() == "configuration");
  }
}

TEST_CASE("sqlite_read_only_wal reaches the SQLite driver through a configuration file", "[config][sqlite]") {
  NoDatabaseEnvironment env;
  rawtool::test::TempDir dir;
  const auto tool_for = [&](const std::string& database) {
    dir.write("rawtool.json", R"({"databases": [)" + database + "]}");
    return rawtool::Tool::open(rawtool::load_config(dir.path() / "rawtool.json"));
  };
  const auto files = [&] {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) names.insert(entry.path().filename());
    return names;
  };
  {
    // A WAL database, written and closed: its last connection removes the -wal and -shm.
    auto writer = tool_for(R"({"path": "w.db", "access": "read_write", "create_if_missing": true})");
    for (const char* sql : {"PRAGMA journal_mode = WAL", "CREATE TABLE t (x)", "INSERT INTO t VALUES (41), (1)"}) {
      INFO(sql);
      REQUIRE_FALSE(writer->raw(sql).is_error());
    }
  }
  REQUIRE(files() == std::set<std::string>{"rawtool.json", "w.db"});
  {
    auto refusing = tool_for(R"({"path": "w.db"})");
    const rawtool::Reply reply = refusing->raw("SELECT sum(x) FROM t");
    CHECK(reply.is_error());
    CHECK(rawtool::test::contains(reply.text(), "sqlite_read_only_wal"));
  }
  CHECK(files() == std::set<std::string>{"rawtool.json", "w.db"});
  {
    auto immutable = tool_for(R"({"path": "w.db", "sqlite_read_only_wal": "immutable"})");
    const rawtool::Reply reply = immutable->raw("SELECT sum(x) AS total FROM t");
    CHECK_FALSE(reply.is_error());
    CHECK(rawtool::test::contains(reply.text(), "42"));
  }
  CHECK(files() == std::set<std::string>{"rawtool.json", "w.db"});
}

TEST_CASE("a configuration built in code gets the same checks", "[config]") {
  rawtool::Config c;
  CHECK_THROWS_AS(rawtool::validate_config(c), ConfigError);
  c.databases.push_back(rawtool::database_for_target(":memory:"));
  CHECK_NOTHROW(rawtool::validate_config(c));
  c.databases[0].label = "no spaces allowed";
  try {
    rawtool::validate_config(c);
    FAIL("an invalid label passed");
  } catch (const ConfigError& e) {
    CHECK(e.field() == "databases[0].label");
  }
  c.databases[0].label = "ok";
  c.databases[0].pool_size = 0;
  CHECK_THROWS_WITH(rawtool::validate_config(c), Catch::Contains("databases[0].pool_size"));
}

TEST_CASE("database labels are 1 to 64 of A-Z a-z 0-9 _ . -", "[config]") {
  CHECK(rawtool::valid_database_label("a"));
  CHECK(rawtool::valid_database_label("Main_db.v2-x"));
  CHECK(rawtool::valid_database_label(std::string(64, 'x')));
  CHECK_FALSE(rawtool::valid_database_label(""));
  CHECK_FALSE(rawtool::valid_database_label(std::string(65, 'x')));
  CHECK_FALSE(rawtool::valid_database_label("a b"));
  CHECK_FALSE(rawtool::valid_database_label("a/b"));
  CHECK_FALSE(rawtool::valid_database_label("\xc3\xa9"));
}

TEST_CASE("a number too large for a double is a configuration error in rawtool's words, not the parser's", "[config]") {
  NoDatabaseEnvironment env;
  const std::string text = error_text(R"({"databases": [{"path": "a.db", "limits": {"max_rows": 1e999}}]})");
  CHECK(text.rfind("configuration: ", 0) == 0);
  CHECK_FALSE(rawtool::test::contains(text, "1e999"));
}

TEST_CASE("the http key holds token digests, their databases, origins and the body limit", "[config][http]") {
  NoDatabaseEnvironment env;
  const std::string two_dbs = R"("databases": [{"label": "a", "path": ":memory:"}, {"label": "b", "path": ":memory:"}])";
  auto http_of = [&](const std::string& http) { return parse_config("{" + two_dbs + R"(, "http": )" + http + "}", "/srv").http; };
  const std::string digest(64, 'a');

  const rawtool::HttpConfig defaults = parse_config("{" + two_dbs + "}", "/srv").http;
  CHECK(defaults.tokens.empty());
  CHECK(defaults.allowed_origins.empty());
  CHECK(defaults.max_body_bytes == 1024 * 1024);
  CHECK_FALSE(defaults.allow_unauthenticated);
  CHECK(defaults.max_sessions == 1024);
  CHECK(defaults.max_sessions_per_token == 0);
  CHECK(defaults.max_calls_per_token == 0);
  CHECK(defaults.session_idle_seconds == 3600);
  CHECK(defaults.request_timeout_seconds == 30);
  CHECK(defaults.idle_timeout_seconds == 60);
  CHECK(defaults.head_timeout_seconds == 10);
  CHECK(defaults.shutdown_grace_seconds == 5);
  CHECK(defaults.sessions);
  CHECK(defaults.max_connections == 1024);
  CHECK(defaults.max_memory_bytes == 256 * 1024 * 1024);

  // Databases are kept in configuration order, whatever order the token lists
  // them in, so its default is the first configured one it reaches.
  const rawtool::HttpConfig set = http_of(R"({"tokens": [{"name": "ci", "sha256": ")" + std::string(64, 'A') +
                                          R"(", "databases": ["b", "a"]}, {"name": "ops", "sha256": ")" +
                                          std::string(64, 'b') + R"(", "databases": ["b"]}, {"name": "all", "sha256": ")" +
                                          std::string(64, 'c') + R"("}],
      "allowed_origins": ["http://localhost:3000"], "max_body_bytes": 4096, "allow_unauthenticated": true,
      "max_sessions": 10, "max_sessions_per_token": 3, "max_calls_per_token": 2, "session_idle_seconds": 60,
      "request_timeout_seconds": 5, "idle_timeout_seconds": 7, "head_timeout_seconds": 2, "shutdown_grace_seconds": 0, "sessions": false,
      "max_connections": 3, "max_memory_bytes": 1099511627776})");
  REQUIRE(set.tokens.size() == 3);
  CHECK(set.tokens[0].name == "ci");
  CHECK(set.tokens[0].sha256 == digest);  // upper-case hex is read as lower-case
  CHECK(set.tokens[0].databases == std::vector<std::string>{"a", "b"});
  CHECK(set.tokens[1].databases == std::vector<std::string>{"b"});
  CHECK(set.tokens[2].databases == std::vector<std::string>{"a", "b"});
  CHECK(set.allowed_origins == std::vector<std::string>{"http://localhost:3000"});
  CHECK(set.max_body_bytes == 4096);
  CHECK(set.allow_unauthenticated);
  CHECK(set.max_sessions == 10);
  CHECK(set.max_sessions_per_token == 3);
  CHECK(set.max_calls_per_token == 2);
  CHECK(set.session_idle_seconds == 60);
  CHECK(set.request_timeout_seconds == 5);
  CHECK(set.idle_timeout_seconds == 7);
  CHECK(set.head_timeout_seconds == 2);
  CHECK(set.shutdown_grace_seconds == 0);
  CHECK_FALSE(set.sessions);
  CHECK(set.max_connections == 3);
  CHECK(set.max_memory_bytes == std::size_t{1} << 40);

  const std::pair<std::string, std::string> errors[] = {
      {R"([])", "http"},
      {R"({"token": []})", "http.token"},
      {R"({"tokens": [{"sha256": ")" + digest + R"("}]})", "http.tokens[0].name"},
      {R"({"tokens": [{"name": "a b", "sha256": ")" + digest + R"("}]})", "http.tokens[0].name"},
      {R"({"tokens": [{"name": "ci"}]})", "http.tokens[0].sha256"},
      {R"({"tokens": [{"name": "ci", "sha256": "s3cret-token"}]})", "http.tokens[0].sha256"},
      {R"({"tokens": [{"name": "ci", "sha256": ")" + digest + R"(", "databases": []}]})", "http.tokens[0].databases"},
      {R"({"tokens": [{"name": "ci", "sha256": ")" + digest + R"(", "databases": ["c"]}]})",
       "http.tokens[0].databases[0]"},
      {R"({"tokens": [{"name": "ci", "sha256": ")" + digest + R"("}, {"name": "ci", "sha256": ")" +
           std::string(64, 'b') + R"("}]})",
       "http.tokens[1].name"},
      {R"({"tokens": [{"name": "ci", "sha256": ")" + digest + R"("}, {"name": "ops", "sha256": ")" + digest + R"("}]})",
       "http.tokens[1].sha256"},
      {R"({"allowed_origins": "http://x"})", "http.allowed_origins"},
      {R"({"allowed_origins": [""]})", "http.allowed_origins[0]"},
      {R"({"max_body_bytes": 10})", "http.max_body_bytes"},
      {R"({"allow_unauthenticated": "yes"})", "http.allow_unauthenticated"},
      {R"({"max_sessions": 0})", "http.max_sessions"},
      {R"({"max_sessions_per_token": 100001})", "http.max_sessions_per_token"},
      {R"({"max_calls_per_token": 1025})", "http.max_calls_per_token"},
      {R"({"session_idle_seconds": 0.5})", "http.session_idle_seconds"},
      {R"({"request_timeout_seconds": 0})", "http.request_timeout_seconds"},
      {R"({"idle_timeout_seconds": 86401})", "http.idle_timeout_seconds"},
      {R"({"head_timeout_seconds": 0})", "http.head_timeout_seconds"},
      {R"({"head_timeout_seconds": 3601})", "http.head_timeout_seconds"},
      {R"({"shutdown_grace_seconds": -1})", "http.shutdown_grace_seconds"},
      {R"({"sessions": "off"})", "http.sessions"},
      {R"({"max_connections": 0})", "http.max_connections"},
      {R"({"max_memory_bytes": 16777215})", "http.max_memory_bytes"},
      {R"({"max_memory_bytes": 1099511627777})", "http.max_memory_bytes"},
      // Under one call's reservation with the default max_bytes (24 MiB).
      {R"({"max_memory_bytes": 16777216})", "http.max_memory_bytes"},
  };
  for (const auto& [http, field] : errors) {
    INFO(http);
    try {
      (void)http_of(http);
      FAIL("accepted");
    } catch (const ConfigError& e) {
      CHECK(e.field() == field);
      CHECK_FALSE(rawtool::test::contains(e.what(), "s3cret"));
    }
  }
}

TEST_CASE("refuse_hazards takes hazard kind names and lists them all when one is unknown", "[config]") {
  NoDatabaseEnvironment env;
  const rawtool::Config config = parse_config(
      R"({"databases": [{"url": "postgresql://h/d", "refuse_hazards": ["security_definer", "server_log", "schema_owner"]},
                         {"label": "plain", "url": "postgresql://h/e"}]})",
      "/base");
  CHECK(config.databases[0].refuse_hazards ==
        std::vector<rawtool::HazardKind>{rawtool::HazardKind::security_definer, rawtool::HazardKind::server_log,
                                         rawtool::HazardKind::schema_owner});
  CHECK(config.databases[1].refuse_hazards.empty());
  // Every kind the audit names is accepted by its name.
  for (const rawtool::HazardKind kind : rawtool::hazard_kinds()) {
    const std::string json = R"({"databases": [{"url": "postgresql://h/d", "refuse_hazards": [")" +
                             std::string(rawtool::hazard_kind_name(kind)) + R"("]}]})";
    INFO(json);
    CHECK(parse_config(json, "/base").databases[0].refuse_hazards == std::vector<rawtool::HazardKind>{kind});
  }
  const std::string unknown =
      error_text(R"({"databases": [{"url": "postgresql://h/d", "refuse_hazards": ["security_definr"]}]})");
  CHECK_THAT(unknown, Catch::StartsWith("databases[0].refuse_hazards[0]: names no hazard kind; the kinds are superuser, "));
  CHECK_THAT(unknown, Catch::Contains("security_definer, server_log"));
  CHECK(unknown.find("security_definr") == std::string::npos);

  rawtool::Config built = config;
  built.databases[1].kind = rawtool::TargetKind::sqlite_path;
  built.databases[1].target = ":memory:";
  built.databases[1].refuse_hazards = {rawtool::HazardKind::server_log};
  try {
    rawtool::validate_config(built);
    FAIL("refuse_hazards on a SQLite database was accepted");
  } catch (const ConfigError& e) {
    CHECK(e.field() == "databases[1].refuse_hazards");
  }
}

TEST_CASE("the metrics key names where rawtool mcp serves Prometheus metrics", "[config]") {
  NoDatabaseEnvironment no_env;
  CHECK(parse_config("{" + one_db + "}", "/base").metrics.listen.empty());
  CHECK(parse_config("{" + one_db + R"(, "metrics": {"listen": "127.0.0.1:9464"}})", "/base").metrics.listen == "127.0.0.1:9464");
  CHECK(error_field("{" + one_db + R"(, "metrics": {"listen": ""}})") == "metrics.listen");
  CHECK(error_field("{" + one_db + R"(, "metrics": {"listen": 9464}})") == "metrics.listen");
  CHECK(error_field("{" + one_db + R"(, "metrics": {"port": 9464}})") == "metrics.port");
  CHECK(error_field("{" + one_db + R"(, "metrics": "127.0.0.1:9464"})") == "metrics");
}

TEST_CASE("the http.oauth key names the issuer, its key set, the scopes' databases, and needs http.resource", "[config][http]") {
  NoDatabaseEnvironment env;
  const std::string two_dbs = R"("databases": [{"label": "a", "path": ":memory:"}, {"label": "b", "path": ":memory:"}])";
  const auto with = [&](const std::string& http) { return "{" + two_dbs + R"(, "http": )" + http + "}"; };
  const std::string resource = R"("resource": "https://db.example.com/mcp")";

  const rawtool::HttpConfig http =
      parse_config(with("{" + resource + R"(, "oauth": {"issuer": "https://id.example.com",
        "jwks_url": "https://id.example.com/jwks", "scopes": {"read:b": ["b"], "both": ["b", "a"], "all": null},
        "required_scopes": ["mcp"], "leeway_seconds": 0, "jwks_min_refetch_seconds": 0}})"), "/srv").http;
  CHECK(http.resource == "https://db.example.com/mcp");
  REQUIRE(http.oauth);
  CHECK(http.oauth->issuer == "https://id.example.com");
  CHECK(http.oauth->jwks_url == "https://id.example.com/jwks");
  CHECK_FALSE(http.oauth->jwks_file);
  REQUIRE(http.oauth->scopes.size() == 3);
  // Each scope's databases in configuration order; null is every database.
  const auto scope = [&](const std::string& name) {
    for (const auto& s : http.oauth->scopes)
      if (s.scope == name) return s.databases;
    FAIL("no scope " << name);
    return std::optional<std::vector<std::string>>{};
  };
  CHECK(scope("read:b") == std::vector<std::string>{"b"});
  CHECK(scope("both") == std::vector<std::string>{"a", "b"});
  CHECK_FALSE(scope("all"));
  CHECK(http.oauth->required_scopes == std::vector<std::string>{"mcp"});
  CHECK(http.oauth->leeway_seconds == 0);
  CHECK(http.oauth->jwks_min_refetch_seconds == 0);

  const auto file = parse_config(with("{" + resource + R"(, "oauth": {"issuer": "i", "jwks_file": "keys/jwks.json",
        "scopes": {"s": null}}})"), "/srv").http.oauth;
  REQUIRE(file);
  CHECK(file->jwks_file == std::filesystem::path("/srv/keys/jwks.json"));
  CHECK(file->leeway_seconds == 60);
  CHECK(file->jwks_min_refetch_seconds == 10);

  const std::string ok_oauth = R"("oauth": {"issuer": "i", "jwks_url": "http://127.0.0.1:1/jwks", "scopes": {"s": null}})";
  CHECK(error_field(with("{" + std::string(R"("oauth": {"issuer": "i", "jwks_url": "http://x/j", "scopes": {"s": null}})") + "}")) == "http.resource");
  CHECK(error_field(with("{" + resource + "}")) == "http.resource");
  CHECK(error_field(with(R"({"resource": "db.example.com/mcp", )" + ok_oauth + "}")) == "http.resource");
  const auto oauth_error = [&](const std::string& oauth) { return error_field(with("{" + resource + R"(, "oauth": )" + oauth + "}")); };
  CHECK(oauth_error(R"({"jwks_url": "http://x/j", "scopes": {"s": null}})") == "http.oauth.issuer");
  CHECK(oauth_error(R"({"issuer": "i", "scopes": {"s": null}})") == "http.oauth");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "http://x/j", "jwks_file": "f", "scopes": {"s": null}})") == "http.oauth");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "ftp://x/j", "scopes": {"s": null}})") == "http.oauth.jwks_url");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "http://x/j"})") == "http.oauth.scopes");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "http://x/j", "scopes": {}})") == "http.oauth.scopes");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "http://x/j", "scopes": {"s": ["c"]}})") == "http.oauth.scopes.s[0]");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "http://x/j", "scopes": {"s": []}})") == "http.oauth.scopes.s");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "http://x/j", "scopes": {"a b": null}})") == "http.oauth.scopes.a b");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "http://x/j", "scopes": {"a\"b": null}})") == "http.oauth.scopes.a\"b");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "http://x/j", "scopes": {"": null}})") == "http.oauth.scopes.");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "http://x/j", "scopes": {"s": null}, "leeway_seconds": 601})") ==
        "http.oauth.leeway_seconds");
  CHECK(oauth_error(R"({"issuer": "i", "jwks_url": "http://x/j", "scopes": {"s": null}, "audience": "x"})") ==
        "http.oauth.audience");
}
