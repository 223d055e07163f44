// Why a PostgreSQL connection failed, as the driver tells it: the cause from
// libpq's states and the server's code, never from words. A fake server on
// loopback answers the start-up exchange the way a real one refuses (each
// code a real server sends at that step); the real test server covers the
// refusals it makes on request (no such role, no such database).
#include "outcome_checks.hpp"
#include "pg_server.hpp"
#include "untrusted_bytes.hpp"

#include <rawtool/driver.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <stop_token>
#include <thread>

using rawtool::AccessMode;
using rawtool::Unavailable;
using rawtool::UnavailableCause;
using rawtool::test::bytes_of;
using rawtool::test::expect;
using rawtool::test::pg_url;

namespace {

/// A listener on 127.0.0.1 that takes one connection at a time and hands it
/// to `serve` (which writes what a server would and returns to close it).
/// With no `serve`, it never accepts: the kernel completes the handshake and
/// nothing answers.
class FakeServer {
public:
  using Serve = std::function<void(int)>;

  explicit FakeServer(Serve serve = {}) : serve_(std::move(serve)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener_, 8) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      throw std::runtime_error("the fake server could not listen");
    }
    port_ = ntohs(address.sin_port);
    if (serve_) thread_ = std::thread([this] { run(); });
  }
  ~FakeServer() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  [[nodiscard]] std::string url(const std::string& query = "connect_timeout=5") const {
    return "postgresql://somebody@127.0.0.1:" + std::to_string(port_) + "/somewhere?" + query;
  }

private:
  void run() {
    while (!stopping_) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      serve_(client);
      ::close(client);
    }
  }

  Serve serve_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

/// Reads one length-prefixed start-up packet (SSLRequest, GSSENCRequest or
/// StartupMessage); returns its request code, 0 when the client went away.
std::uint32_t read_startup_packet(int client) {
  unsigned char head[8];
  std::size_t got = 0;
  while (got < sizeof head) {
    const ssize_t n = ::recv(client, head + got, sizeof head - got, 0);
    if (n <= 0) return 0;
    got += static_cast<std::size_t>(n);
  }
  const std::uint32_t length = (std::uint32_t{head[0]} << 24U) | (std::uint32_t{head[1]} << 16U) |
                               (std::uint32_t{head[2]} << 8U) | std::uint32_t{head[3]};
  const std::uint32_t code = (std::uint32_t{head[4]} << 24U) | (std::uint32_t{head[5]} << 16U) |
                             (std::uint32_t{head[6]} << 8U) | std::uint32_t{head[7]};
  std::string rest(length > 8 ? length - 8 : 0, '\0');
  got = 0;
  while (got < rest.size()) {
    const ssize_t n = ::recv(client, rest.data() + got, rest.size() - got, 0);
    if (n <= 0) return 0;
    got += static_cast<std::size_t>(n);
  }
  return code;
}

constexpr std::uint32_t ssl_request = 80877103;
constexpr std::uint32_t gss_request = 80877104;

/// Answers encryption requests with 'N' until the StartupMessage; false when
/// the client left first.
bool read_startup(int client) {
  for (;;) {
    const std::uint32_t code = read_startup_packet(client);
    if (code == 0) return false;
    if (code != ssl_request && code != gss_request) return true;
    if (::send(client, "N", 1, MSG_NOSIGNAL) != 1) return false;
  }
}

void send_message(int client, char type, const std::string& body) {
  const auto length = static_cast<std::uint32_t>(body.size() + 4);
  std::string message(1, type);
  for (int shift = 24; shift >= 0; shift -= 8) message += static_cast<char>((length >> static_cast<unsigned>(shift)) & 0xFFU);
  message += body;
  (void)::send(client, message.data(), message.size(), MSG_NOSIGNAL);
}

/// An ErrorResponse with severity FATAL, `code` and `text`.
void send_fatal(int client, const std::string& code, const std::string& text) {
  using namespace std::string_literals;
  send_message(client, 'E', "SFATAL\0VFATAL\0C"s + code + "\0M"s + text + "\0\0"s);
}

void send_authentication(int client, std::uint32_t request) {
  std::string body;
  for (int shift = 24; shift >= 0; shift -= 8) body += static_cast<char>((request >> static_cast<unsigned>(shift)) & 0xFFU);
  send_message(client, 'R', body);
}

/// The cause and complaint of one call to a driver for `url`.
Unavailable unavailable_at(const std::string& url, rawtool::PostgresOptions options = {}) {
  auto driver = rawtool::make_postgres_driver(url, std::move(options));
  return expect<Unavailable>(driver->execute("SELECT 1", {}, rawtool::Limits{}, AccessMode::read_only, {}));
}

/// A server that answers the StartupMessage with a FATAL of `code`, after
/// AuthenticationOk when `after_authentication`.
FakeServer refusing(std::string code, std::string text, bool after_authentication = false) {
  return FakeServer([code = std::move(code), text = std::move(text), after_authentication](int client) {
    if (!read_startup(client)) return;
    if (after_authentication) send_authentication(client, 0);
    send_fatal(client, code, text);
  });
}

}  // namespace

TEST_CASE("each code a server refuses a connection with becomes its cause", "[postgres][connection]") {
  struct Case {
    const char* code;
    bool after_authentication;
    UnavailableCause cause;
  };
  const Case cases[] = {
      {"28P01", false, UnavailableCause::authentication_failed},
      {"28000", false, UnavailableCause::role_refused},
      {"3D000", true, UnavailableCause::no_such_database},
      {"53300", false, UnavailableCause::server_unavailable},
      {"57P03", false, UnavailableCause::server_unavailable},
      {"XX000", false, UnavailableCause::unknown},
  };
  for (const Case& c : cases) {
    INFO(c.code);
    FakeServer server = refusing(c.code, "CANARY-conn words the server chose");
    const Unavailable unavailable = unavailable_at(server.url());
    CHECK(unavailable.cause == c.cause);
    // The server's words are kept for the operator log.
    CHECK(bytes_of(unavailable.complaint).find("CANARY-conn") != std::string::npos);
  }
}

TEST_CASE("a code in the server's words does not choose the cause", "[postgres][connection]") {
  FakeServer server = refusing("28P01", "no such database:  3D000: FATAL:  3D000: ");
  CHECK(unavailable_at(server.url()).cause == UnavailableCause::authentication_failed);
}

TEST_CASE("a server that wants a password none was given is an authentication failure", "[postgres][connection]") {
  FakeServer server([](int client) {
    if (!read_startup(client)) return;
    send_authentication(client, 3);  // AuthenticationCleartextPassword
    char byte = 0;
    (void)::recv(client, &byte, 1, 0);  // libpq gives up without a password
  });
  CHECK(unavailable_at(server.url()).cause == UnavailableCause::authentication_failed);
}

TEST_CASE("a server that closes the connection during start-up lost it", "[postgres][connection]") {
  FakeServer server([](int client) { (void)read_startup(client); });
  CHECK(unavailable_at(server.url()).cause == UnavailableCause::connection_lost);
}

TEST_CASE("TLS required of a server that does not offer it fails as TLS", "[postgres][connection]") {
  FakeServer server([](int client) { (void)read_startup(client); });
  CHECK(unavailable_at(server.url("connect_timeout=5&sslmode=require")).cause == UnavailableCause::tls_failed);
}

TEST_CASE("a closed port is refused, and a server that never answers timed out", "[postgres][connection]") {
  CHECK(unavailable_at("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2").cause == UnavailableCause::refused);
  CHECK(unavailable_at("host=/nonexistent-rawtool-socket-dir port=5432 user=x connect_timeout=2").cause ==
        UnavailableCause::refused);
  const FakeServer silent;  // accepts in the kernel, never answers
  const auto start = std::chrono::steady_clock::now();
  const Unavailable unavailable = unavailable_at(silent.url("connect_timeout=2"));
  CHECK(unavailable.cause == UnavailableCause::timed_out);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(8));
}

TEST_CASE("a password file that cannot be read is its own cause", "[postgres][connection]") {
  rawtool::PostgresOptions options;
  options.password_file = "/nonexistent-rawtool-dir/password";
  CHECK(unavailable_at("postgresql://nobody@127.0.0.1:1/none", options).cause == UnavailableCause::password_file);
}

TEST_CASE("a real server's refusals of a role and a database have their causes", "[postgres][connection]") {
  const auto url = pg_url();
  if (!url) return;
  CHECK(unavailable_at(*url + "?user=drivers_no_such_role").cause == UnavailableCause::role_refused);
  const auto slash = url->rfind('/');
  REQUIRE(slash != std::string::npos);
  CHECK(unavailable_at(url->substr(0, slash) + "/rawtool_no_such_database").cause == UnavailableCause::no_such_database);
}

TEST_CASE("a call stopped while it connects ends at once, as cancelled, not at the connect timeout", "[postgres][connection]") {
  const FakeServer silent;  // accepts in the kernel, never answers
  auto driver = rawtool::make_postgres_driver(silent.url("connect_timeout=30"));
  std::stop_source stop;
  const auto start = std::chrono::steady_clock::now();
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  const rawtool::Outcome outcome = driver->execute("SELECT 1", {}, rawtool::Limits{}, AccessMode::read_only, stop.get_token());
  stopper.join();
  CHECK(rawtool::test::refusal_reason(outcome) == rawtool::RefusalReason::cancelled);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}
