#include "pg_server.hpp"

#include <catch2/catch.hpp>
#include <libpq-fe.h>

#include <cstdlib>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <string_view>

namespace rawtool::test {

namespace {

/// The thread's superuser connection for pg_admin, kept from call to call:
/// a connection costs the server a process and an authentication (28 ms a
/// connection here, 12.6 of the READ_ONLY walk's 44 s), a DISCARD ALL a
/// round trip. Per thread, since libpq connections are not shared.
struct AdminConnection {
  std::string url;
  PGconn* connection = nullptr;
  AdminConnection() = default;
  AdminConnection(const AdminConnection&) = delete;
  AdminConnection& operator=(const AdminConnection&) = delete;
  ~AdminConnection() { drop(); }
  void drop() noexcept {
    if (connection != nullptr) PQfinish(connection);
    connection = nullptr;
  }
};

thread_local AdminConnection admin;

PGconn* admin_connection(const std::string& url) {
  if (admin.connection != nullptr && (admin.url != url || PQstatus(admin.connection) != CONNECTION_OK)) admin.drop();
  if (admin.connection == nullptr) {
    admin.connection = PQconnectdb(url.c_str());
    admin.url = url;
    INFO(PQerrorMessage(admin.connection));
    REQUIRE(PQstatus(admin.connection) == CONNECTION_OK);
    PQsetNoticeProcessor(admin.connection, [](void*, const char*) {}, nullptr);
  }
  return admin.connection;
}

}  // namespace

std::string pg_admin(const std::string& sql) {
  const auto url = pg_url(false);
  REQUIRE(url.has_value());
  PGconn* connection = admin_connection(*url);
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(connection, sql.c_str()), &PQclear);
  if (PQstatus(connection) != CONNECTION_OK) {
    // The kept connection was ended while idle (a test ends other sessions):
    // the statement is run again on a new one.
    admin.drop();
    connection = admin_connection(*url);
    result.reset(PQexec(connection, sql.c_str()));
  }
  // Two tests that GRANT or REVOKE on the same database at once (ctest -j2)
  // update its one catalog row together, and PostgreSQL fails the second with
  // "tuple concurrently updated" (XX000). The query string ran as one
  // implicit transaction, rolled back whole, so it is run again.
  for (int retry = 0; retry < 50 && PQresultStatus(result.get()) == PGRES_FATAL_ERROR; ++retry) {
    const char* code = PQresultErrorField(result.get(), PG_DIAG_SQLSTATE);
    const char* message = PQresultErrorField(result.get(), PG_DIAG_MESSAGE_PRIMARY);
    if (code == nullptr || std::string_view(code) != "XX000" || message == nullptr ||
        std::string_view(message) != "tuple concurrently updated") {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    result.reset(PQexec(connection, sql.c_str()));
  }
  // What the statement left on the session (settings, a role, temporary
  // tables, prepared statements, locks) goes, as if the connection were new;
  // a session left inside a transaction is not kept at all.
  if (PQtransactionStatus(connection) != PQTRANS_IDLE) {
    admin.drop();
  } else {
    const std::unique_ptr<PGresult, decltype(&PQclear)> discarded(PQexec(connection, "DISCARD ALL"), &PQclear);
    if (PQresultStatus(discarded.get()) != PGRES_COMMAND_OK) admin.drop();
  }
  const ExecStatusType status = PQresultStatus(result.get());
  INFO(sql << "\n" << PQresultErrorMessage(result.get()));
  REQUIRE((status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK));
  if (status == PGRES_TUPLES_OK && PQntuples(result.get()) > 0 && PQnfields(result.get()) > 0) {
    return std::string(PQgetvalue(result.get(), 0, 0), static_cast<std::size_t>(PQgetlength(result.get(), 0, 0)));
  }
  return {};
}

ProxyTarget proxy_target(const std::string& url) {
  char* complaint = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &complaint);
  if (complaint != nullptr) PQfreemem(complaint);
  REQUIRE(options != nullptr);
  ProxyTarget target;
  std::string hostaddr;
  for (PQconninfoOption* option = options; option->keyword != nullptr; ++option) {
    if (option->val == nullptr) continue;
    const std::string_view keyword = option->keyword;
    if (keyword == "port") target.port = static_cast<std::uint16_t>(std::stoi(option->val));
    if (keyword == "user") target.user = option->val;
    if (keyword == "dbname") target.database = option->val;
    if (keyword == "host") target.host = option->val;
    if (keyword == "hostaddr") hostaddr = option->val;
  }
  PQconninfoFree(options);
  // libpq connects to hostaddr when it is given.
  if (!hostaddr.empty()) target.host = hostaddr;
  INFO("RAWTOOL_TEST_PG_URL must name one server by TCP host for the proxy: " << url);
  REQUIRE(!target.host.empty());
  REQUIRE(target.host.front() != '/');
  REQUIRE(target.host.find(',') == std::string::npos);
  return target;
}

std::string ProxyTarget::url_through(std::uint16_t proxy_port, std::string_view options) const {
  std::string through = "postgresql://" + user + "@127.0.0.1:" + std::to_string(proxy_port) + "/" + database;
  if (!options.empty()) through += "?" + std::string(options);
  return through;
}

void wait_until_sleeping(const std::string& pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pg_admin("SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid + " AND wait_event = 'PgSleep'") != "1") {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace rawtool::test
