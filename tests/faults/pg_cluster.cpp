#include "pg_cluster.hpp"

#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <unistd.h>

namespace rawtool::faults {

namespace {

std::string environment_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : std::string(fallback);
}

std::string first_cell(PGconn* connection, const std::string& sql) {
  PGresult* result = PQexec(connection, sql.c_str());
  const ExecStatusType status = PQresultStatus(result);
  const bool ok = status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK;
  std::string value;
  if (ok && status == PGRES_TUPLES_OK && PQntuples(result) > 0 && PQnfields(result) > 0) {
    value = PQgetvalue(result, 0, 0);
  }
  std::string complaint = ok ? std::string() : std::string(PQresultErrorMessage(result));
  PQclear(result);
  if (!ok) throw std::runtime_error("administrative SQL failed: " + complaint);
  return value;
}

}  // namespace

PgCluster::PgCluster()
    : dir_(environment_or("RAWTOOL_FAULTS_PG_DIR", RAWTOOL_FAULTS_PG_DIR)),
      port_(std::stoi(environment_or("RAWTOOL_FAULTS_PG_PORT", RAWTOOL_FAULTS_PG_PORT))) {}

std::string PgCluster::url(const std::string& role) const {
  return "postgresql://" + role + "@127.0.0.1:" + std::to_string(port_) + "/rawtool_test";
}

bool PgCluster::accepting() const {
  const std::string conninfo = "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=postgres user=postgres connect_timeout=2";
  return PQping(conninfo.c_str()) == PQPING_OK;
}

void PgCluster::pg_ctl(const std::string& arguments) const {
  const std::string run_as = ::geteuid() == 0 ? "runuser -u postgres -- " : "";
  const std::string command = run_as + RAWTOOL_PG_BINDIR "/pg_ctl -D '" + dir_ + "' " + arguments +
                              " >>'" + dir_ + ".faults.log' 2>&1";
  // The exit status is not trusted alone: callers wait for the state they want.
  if (std::system(command.c_str()) == -1) throw std::runtime_error("cannot run pg_ctl");
}

void PgCluster::ensure_up() {
  if (!accepting()) start();
}

void PgCluster::stop(const char* mode) {
  pg_ctl(std::string("-m ") + mode + " -w -t 60 stop");
  for (int i = 0; i < 200 && accepting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (accepting()) throw std::runtime_error("the fault cluster did not stop");
}

void PgCluster::start() {
  // What names the instance, as .ci/pg-start gives it; the server settings
  // are in its postgresql.conf (from .ci/pg-settings.conf).
  pg_ctl("-l '" + dir_ + ".log' -w -t 60 -o \"-c listen_addresses=127.0.0.1 -c port=" + std::to_string(port_) +
         " -c unix_socket_directories=" + dir_ + "\" start");
  for (int i = 0; i < 200 && !accepting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!accepting()) throw std::runtime_error("the fault cluster did not start");
}

void PgCluster::restart(const char* mode) {
  pg_ctl(std::string("-m ") + mode + " -w -t 60 restart");
  for (int i = 0; i < 200 && !accepting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!accepting()) throw std::runtime_error("the fault cluster did not come back after a restart");
}

std::string PgCluster::admin(const std::string& sql) const {
  AdminSession session(url("postgres"));
  return session.run(sql);
}

AdminSession::AdminSession(const std::string& url) : connection_(PQconnectdb(url.c_str())) {
  if (PQstatus(connection_) != CONNECTION_OK) {
    std::string complaint = PQerrorMessage(connection_);
    PQfinish(connection_);
    connection_ = nullptr;
    throw std::runtime_error("cannot connect to the fault cluster: " + complaint);
  }
}

AdminSession::~AdminSession() {
  if (connection_ != nullptr) PQfinish(connection_);
}

std::string AdminSession::run(const std::string& sql) { return first_cell(connection_, sql); }

}  // namespace rawtool::faults
