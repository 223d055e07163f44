#include "pgbouncer.hpp"

#include "pg_server.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <libpq-fe.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

namespace rawtool::test {
namespace {

/// The keywords of a connection string, as libpq reads them.
std::map<std::string, std::string> conninfo_of(const std::string& url) {
  std::map<std::string, std::string> values;
  char* complaint = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &complaint);
  if (complaint != nullptr) PQfreemem(complaint);
  REQUIRE(options != nullptr);
  for (const PQconninfoOption* option = options; option->keyword != nullptr; ++option) {
    if (option->val != nullptr) values[option->keyword] = option->val;
  }
  PQconninfoFree(options);
  return values;
}

std::string pgbouncer_binary() {
  for (const char* candidate : {"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer"}) {
    if (access(candidate, X_OK) == 0) return candidate;
  }
  return {};
}

bool accepts_connections(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected = connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  close(fd);
  return connected;
}

std::string file_text(const std::filesystem::path& file) {
  std::ifstream stream(file);
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

}  // namespace

std::optional<PgBouncer> PgBouncer::start(int pool_size, const std::vector<std::string>& more_roles) {
  const auto url = pg_url(false);
  const auto reader_url = pg_url(true);
  if (!url || !reader_url) return std::nullopt;
  const std::string binary = pgbouncer_binary();
  if (binary.empty()) {
    const char* required = std::getenv("RAWTOOL_REQUIRE_PG");
    if (required != nullptr && std::string_view(required) == "1") {
      FAIL("pgbouncer is not installed, and RAWTOOL_REQUIRE_PG=1 says the PostgreSQL tests must run "
           "(Debian: apt-get install pgbouncer)");
    }
    WARN("*** pgbouncer is not installed: this PgBouncer test " << not_run << ". "
         "Install it (Debian: apt-get install pgbouncer) to run it. ***");
    return std::nullopt;
  }
  const int port = RAWTOOL_TEST_PGBOUNCER_PORT;
  REQUIRE_FALSE(accepts_connections(port));  // another process holds the port: its answers would not be ours

  const auto server = conninfo_of(*url);
  const auto reader = conninfo_of(*reader_url);
  std::string folder_template = (std::filesystem::temp_directory_path() / "rawtool-pgbouncer-XXXXXX").string();
  REQUIRE(mkdtemp(folder_template.data()) != nullptr);
  const std::filesystem::path folder = folder_template;
  {
    std::ofstream ini(folder / "pgbouncer.ini");
    ini << fmt::format(
        "[databases]\n"
        "* = host={} port={}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        "listen_port = {}\n"
        "unix_socket_dir =\n"
        "auth_type = trust\n"
        "auth_file = {}\n"
        "pool_mode = transaction\n"
        "default_pool_size = {}\n"
        "server_round_robin = 1\n"
        "logfile = {}\n",
        server.at("host"), server.count("port") != 0 ? server.at("port") : "5432", port, (folder / "users.txt").string(),
        pool_size, (folder / "pgbouncer.log").string());
    std::ofstream users(folder / "users.txt");
    users << fmt::format("\"{}\" \"\"\n\"{}\" \"\"\n", server.at("user"), reader.at("user"));
    for (const std::string& role : more_roles) users << fmt::format("\"{}\" \"\"\n", role);
  }
  // PgBouncer refuses to run as root: it is then started as the server's own user.
  const bool as_root = geteuid() == 0;
  if (as_root) {
    const passwd* user = getpwnam("postgres");
    REQUIRE(user != nullptr);
    for (const auto* file : {"", "pgbouncer.ini", "users.txt"}) {
      REQUIRE(chown((folder / file).c_str(), user->pw_uid, user->pw_gid) == 0);
    }
  }
  const std::string ini = (folder / "pgbouncer.ini").string();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (as_root) {
      execl(binary.c_str(), "pgbouncer", "-q", "-u", "postgres", ini.c_str(), static_cast<char*>(nullptr));
    } else {
      execl(binary.c_str(), "pgbouncer", "-q", ini.c_str(), static_cast<char*>(nullptr));
    }
    _exit(127);
  }
  PgBouncer bouncer(folder, pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!accepts_connections(port)) {
    int status = 0;
    INFO(file_text(folder / "pgbouncer.log"));
    REQUIRE(waitpid(pid, &status, WNOHANG) == 0);  // it exited: its log says why
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // PgBouncer opens server connections as its clients need them: a pool of
  // one client's calls in a row would stay one connection. Each role's pool
  // is filled here, with as many transactions open at once.
  for (const std::string* role_url : {&*url, &*reader_url}) {
    std::vector<std::unique_ptr<PGconn, decltype(&PQfinish)>> clients;
    for (int i = 0; i < pool_size; ++i) {
      clients.emplace_back(PQconnectdb(bouncer.url_for(*role_url).c_str()), &PQfinish);
      INFO(PQerrorMessage(clients.back().get()));
      REQUIRE(PQstatus(clients.back().get()) == CONNECTION_OK);
      std::unique_ptr<PGresult, decltype(&PQclear)> begun(PQexec(clients.back().get(), "BEGIN; SELECT 1"), &PQclear);
      REQUIRE(PQresultStatus(begun.get()) == PGRES_TUPLES_OK);
    }
    // Ended before the clients go: PgBouncer closes a server connection its client leaves in a transaction.
    for (const auto& client : clients) {
      std::unique_ptr<PGresult, decltype(&PQclear)> ended(PQexec(client.get(), "COMMIT"), &PQclear);
      REQUIRE(PQresultStatus(ended.get()) == PGRES_COMMAND_OK);
    }
  }
  return bouncer;
}

std::string PgBouncer::url_for(const std::string& url) const {
  const auto values = conninfo_of(url);
  return fmt::format("postgresql://{}@127.0.0.1:{}/{}", values.at("user"), RAWTOOL_TEST_PGBOUNCER_PORT,
                     values.at("dbname"));
}

PgBouncer::PgBouncer(PgBouncer&& other) noexcept : folder_(std::move(other.folder_)), pid_(other.pid_) {
  other.pid_ = -1;
}

PgBouncer::~PgBouncer() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);  // immediate shutdown: clients and servers are closed
  int status = 0;
  waitpid(pid_, &status, 0);
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

}  // namespace rawtool::test
