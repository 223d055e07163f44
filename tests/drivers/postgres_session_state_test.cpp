// A pooled PostgreSQL connection goes back indistinguishable from a fresh
// one, in both access modes: each family of session state in
// data/postgres_session_state.jsonl is left behind by one call, and the next
// call on the same driver, and on the same pooled connection of a Tool, asks
// as another caller would whether anything of it remains. "As another caller
// would" is measured against a fresh connection: the probe's answer there is
// the answer the reused connection must give.
//
// Everything runs in two databases the test makes and drops
// (session_state_walk and session_state_walk_dblink, the second with dblink
// installed for the superuser only), as a login role of the test's own
// (reset_tenant, a member of reset_other) or, for the families only a
// superuser can leave (SET SESSION AUTHORIZATION, LOAD, dblink), as the
// superuser.
//
// Each statement of a family's "leave" is one call, and every call is reset,
// so what a family leaves is made within one statement (a DO block where it
// takes several). A family with "survives" is a known limit, pinned: the
// probe must still tell it apart, so that the limit the driver's comment
// names is the true one.
#include "outcome_checks.hpp"
#include "pg_server.hpp"
#include "untrusted_bytes.hpp"

#include <rawtool/config.hpp>
#include <rawtool/driver.hpp>
#include <rawtool/tool.hpp>

#include "oracle.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

using rawtool::AccessMode;
using rawtool::Limits;
using rawtool::Outcome;
using rawtool::test::pg_admin;
using rawtool::test::pg_url;

namespace {

constexpr const char* walk_database = "session_state_walk";
constexpr const char* dblink_database = "session_state_walk_dblink";

struct Family {
  std::string name;
  bool superuser = false;
  bool dblink = false;  ///< runs in the database where dblink is installed
  std::vector<AccessMode> modes{AccessMode::read_write, AccessMode::read_only};
  std::vector<std::string> leave;
  std::string probe;
  std::string survives;  ///< a known limit: the probe still tells the reused connection apart
};

std::vector<Family> load_families() {
  std::ifstream in(RAWTOOL_SOURCE_DIR "/tests/drivers/data/postgres_session_state.jsonl");
  REQUIRE(in.good());
  std::vector<Family> families;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json entry = nlohmann::json::parse(line);
    Family family;
    family.name = entry.at("name").get<std::string>();
    family.superuser = entry.value("as", "tenant") == "superuser";
    family.dblink = entry.value("database", "walk") == "dblink";
    if (entry.contains("modes")) {
      family.modes.clear();
      for (const auto& mode : entry.at("modes")) {
        family.modes.push_back(mode.get<std::string>() == "read_write" ? AccessMode::read_write : AccessMode::read_only);
      }
    }
    family.leave = entry.at("leave").get<std::vector<std::string>>();
    family.probe = entry.at("probe").get<std::string>();
    family.survives = entry.value("survives", "");
    families.push_back(std::move(family));
  }
  return families;
}

/// `url` with its user and database replaced (when given).
std::string url_with(const std::string& url, const std::string& user, const std::string& database) {
  char* complaint = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &complaint);
  REQUIRE(options != nullptr);
  std::string conninfo;
  for (PQconninfoOption* option = options; option->keyword != nullptr; ++option) {
    const std::string_view keyword = option->keyword;
    if (option->val == nullptr || (keyword == "user" && !user.empty()) || keyword == "dbname") continue;
    conninfo += fmt::format("{}='{}' ", keyword, option->val);
  }
  PQconninfoFree(options);
  if (!user.empty()) conninfo += "user='" + user + "' ";
  return conninfo + "dbname='" + database + "'";
}

/// `conninfo` as key=value pairs without quotes, for a SQL literal (dblink's
/// connection string): host, port, user and database only.
std::string conninfo_of(const std::string& conninfo) {
  char* complaint = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &complaint);
  REQUIRE(options != nullptr);
  std::string pairs;
  for (PQconninfoOption* option = options; option->keyword != nullptr; ++option) {
    const std::string_view keyword = option->keyword;
    if (option->val == nullptr || (keyword != "host" && keyword != "port" && keyword != "user" && keyword != "dbname")) continue;
    pairs += fmt::format("{}={} ", keyword, option->val);
  }
  PQconninfoFree(options);
  return pairs;
}

std::string substitute(std::string text, const std::string& connect) {
  for (std::size_t at = text.find("{connect}"); at != std::string::npos; at = text.find("{connect}", at + connect.size())) {
    text.replace(at, 9, connect);
  }
  return text;
}

/// Administrative SQL in one of the test's databases, as the superuser.
void admin_in(const std::string& url, const std::string& sql) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(url.c_str()), &PQfinish);
  REQUIRE(PQstatus(conn.get()) == CONNECTION_OK);
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn.get(), sql.c_str()), &PQclear);
  INFO(sql << ": " << PQerrorMessage(conn.get()));
  REQUIRE(PQresultStatus(result.get()) == PGRES_COMMAND_OK);
}

/// What a caller learns from a probe: its rows, or the kind of its failure.
std::string answer(const Outcome& outcome) {
  if (const auto* rows = std::get_if<rawtool::Rows>(&outcome)) {
    std::string text = "rows";
    for (const auto& row : rows->rows) {
      for (const auto& cell : row) text += cell ? " '" + rawtool::test::bytes_of(*cell) + "'" : std::string(" NULL");
      text += ";";
    }
    return text;
  }
  if (const auto* failure = std::get_if<rawtool::Failure>(&outcome)) return "failure " + rawtool::test::bytes_of(failure->sqlstate);
  if (const auto* refusal = std::get_if<rawtool::Refusal>(&outcome)) return fmt::format("refusal {}", static_cast<int>(refusal->reason));
  return "unavailable";
}

std::string answer(const rawtool::Reply& reply) {
  if (!reply.is_error()) {
    std::string text = "rows";
    for (const auto& row : rawtool::test::row_cells(reply.text())) {
      for (const auto& cell : row) text += cell ? " '" + *cell + "'" : std::string(" NULL");
      text += ";";
    }
    return text;
  }
  const nlohmann::json& structured = reply.structured();
  return structured.value("kind", "") + " " + structured.value("sqlstate", structured.value("reason", ""));
}

const char* mode_name(AccessMode mode) { return mode == AccessMode::read_only ? "read_only" : "read_write"; }

/// Makes the walk's roles and databases, and drops them when it ends.
struct Walk {
  std::string admin_url;
  std::string tenant_url;
  std::string superuser_url;
  std::string dblink_url;
  std::string connect;  ///< "{connect}" in a family: a conninfo for dblink, quoted for a SQL literal

  explicit Walk(const std::string& url) {
    drop();
    pg_admin("CREATE ROLE reset_other NOLOGIN; CREATE ROLE reset_tenant LOGIN; GRANT reset_other TO reset_tenant");
    pg_admin(fmt::format("CREATE DATABASE {}", walk_database));
    pg_admin(fmt::format("CREATE DATABASE {}", dblink_database));
    admin_url = url;
    connect = conninfo_of(url_with(url, "", dblink_database));
    superuser_url = url_with(url, "", walk_database);
    tenant_url = url_with(url, "reset_tenant", walk_database);
    dblink_url = url_with(url, "", dblink_database);
    admin_in(superuser_url,
             "CREATE TABLE reset_shadow (x text); INSERT INTO reset_shadow VALUES ('real'); "
             "GRANT SELECT ON reset_shadow TO reset_tenant; CREATE SEQUENCE reset_seq; "
             "GRANT USAGE, SELECT, UPDATE ON reset_seq TO reset_tenant; "
             // As the test database has it: read-only mode refuses a role that can
             // write into the WAL while wal_level is logical. Every form of the
             // function: PostgreSQL 17 gave it a fourth argument.
             "DO $$DECLARE f regprocedure; BEGIN FOR f IN SELECT oid FROM pg_catalog.pg_proc "
             "WHERE proname = 'pg_logical_emit_message' LOOP "
             "EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f); END LOOP; END$$");
    // dblink for the superuser only: a role that can execute it is refused in
    // read-only mode, and its read-write connections are never reused.
    admin_in(dblink_url,
             "CREATE SCHEMA reset_ext; CREATE EXTENSION dblink SCHEMA reset_ext; "
             "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA reset_ext FROM PUBLIC");
  }
  ~Walk() { drop(); }
  Walk(const Walk&) = delete;
  Walk& operator=(const Walk&) = delete;

  static void drop() {
    pg_admin(fmt::format("DROP DATABASE IF EXISTS {} WITH (FORCE)", walk_database));
    pg_admin(fmt::format("DROP DATABASE IF EXISTS {} WITH (FORCE)", dblink_database));
    pg_admin("DROP ROLE IF EXISTS reset_tenant; DROP ROLE IF EXISTS reset_other");
  }

  [[nodiscard]] const std::string& url_for(const Family& family) const {
    if (family.dblink) return dblink_url;
    return family.superuser ? superuser_url : tenant_url;
  }
};

}  // namespace

TEST_CASE("no session state one call leaves reaches the next call on the same PostgreSQL connection, in either mode",
          "[postgres][session_state]") {
  const auto url = pg_url();
  if (!url) return;
  const Walk walk(*url);
  std::size_t walked = 0;
  for (const Family& family : load_families()) {
    for (const AccessMode mode : family.modes) {
      INFO(family.name << " in " << mode_name(mode));
      const rawtool::PostgresOptions options = family.superuser ? rawtool::test::trusted_options() : rawtool::PostgresOptions{};
      const std::string fresh = answer(rawtool::make_postgres_driver(walk.url_for(family), options)
                                           ->execute(family.probe, {}, Limits{}, mode));
      auto driver = rawtool::make_postgres_driver(walk.url_for(family), options);
      for (const std::string& statement : family.leave) {
        const Outcome left = driver->execute(substitute(statement, walk.connect), {}, Limits{}, mode);
        INFO(statement << " -> " << answer(left));
        REQUIRE_FALSE(std::holds_alternative<rawtool::Unavailable>(left));
        // What the family is about must be possible where the mode allows it.
        if (mode == AccessMode::read_write) CHECK(std::holds_alternative<rawtool::Rows>(left));
      }
      const std::string after = answer(driver->execute(family.probe, {}, Limits{}, mode));
      INFO("fresh: " << fresh << "  after: " << after);
      CHECK((fresh.starts_with("rows") || fresh.starts_with("failure")));
      if (family.survives.empty()) {
        CHECK(after == fresh);
      } else {
        INFO("known limit: " << family.survives);
        CHECK(after != fresh);
      }
      ++walked;
    }
  }
  CHECK(walked >= 48);
}

TEST_CASE("no session state one call leaves reaches the next call on the same pooled connection of a Tool",
          "[postgres][session_state][pool]") {
  const auto url = pg_url();
  if (!url) return;
  const Walk walk(*url);
  rawtool::test::TempDir dir;
  // One connection per database, so that every call of a database shares it.
  nlohmann::json databases = nlohmann::json::array();
  for (const auto& [label, target, access] :
       {std::tuple{"tenant_rw", walk.tenant_url, "read_write"}, {"tenant_ro", walk.tenant_url, "read_only"},
        {"super_rw", walk.superuser_url, "read_write"}, {"dblink_rw", walk.dblink_url, "read_write"}}) {
    databases.push_back({{"label", label}, {"url", target}, {"access", access}, {"pool_size", 1}});
  }
  dir.write("rawtool.json", nlohmann::json{{"databases", databases}}.dump());
  const auto open = [&] {
    rawtool::ToolOptions options;
    options.log = [](std::string_view) {};
    return rawtool::Tool::open(rawtool::load_config(dir.path() / "rawtool.json"), std::move(options));
  };
  auto tool = open();
  std::size_t walked = 0;
  for (const Family& family : load_families()) {
    for (const AccessMode mode : family.modes) {
      // A configuration cannot let a superuser run read-only (the driver test
      // above walks those with the library's allow_privileged_read_only).
      if (family.superuser && mode == AccessMode::read_only) continue;
      const std::string label = std::string(family.dblink ? "dblink" : family.superuser ? "super" : "tenant") +
                                (mode == AccessMode::read_only ? "_ro" : "_rw");
      INFO(family.name << " on " << label);
      rawtool::CallOptions call;
      call.database = label;
      const std::string fresh = answer(open()->raw(family.probe, call));
      for (const std::string& statement : family.leave) (void)tool->raw(substitute(statement, walk.connect), call);
      const std::string after = answer(tool->raw(family.probe, call));
      INFO("fresh: " << fresh << "  after: " << after);
      CHECK((fresh.starts_with("rows") || fresh.starts_with("raw_failure")));
      if (family.survives.empty()) {
        CHECK(after == fresh);
      } else {
        CHECK(after != fresh);
      }
      ++walked;
    }
  }
  CHECK(walked >= 48);
}
