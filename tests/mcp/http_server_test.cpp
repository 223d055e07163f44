// The HTTP server as a component, in process over a scripted backend: started,
// stopped from another thread and waited for by its embedder, with no
// signal involved; the order of its stop; and exceptions on its threads.

#include "scripted_backend.hpp"

#include "mcp/http_server.hpp"
#include "mcp/tools.hpp"

#include <rawtool/log.hpp>

// Boost 1.74's Asio uses std::exchange without including <utility> under C++20.
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;
using namespace rawtool::mcp::detail;
using rawtool::mcp::test::CapturedLines;
using rawtool::mcp::test::description_with;
using rawtool::mcp::test::ScriptedBackend;
using namespace std::chrono_literals;

// One keep-alive connection to the server; a response that does not come
// within 10 s is an error, so a server that never answers fails the test
// instead of hanging it.
class Client {
public:
  explicit Client(std::uint16_t port) : stream_(io_) {
    stream_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }

  void send(const json& message, const std::string& session = {}) {
    http::request<http::string_body> request(http::verb::post, "/mcp", 11);
    request.set(http::field::host, "127.0.0.1");
    request.set(http::field::content_type, "application/json");
    request.set(http::field::accept, "application/json, text/event-stream");
    if (!session.empty()) request.set("Mcp-Session-Id", session);
    request.body() = message.dump();
    request.prepare_payload();
    http::write(stream_, request);
  }
  http::response<http::string_body> receive() {
    http::response<http::string_body> response;
    beast::error_code result;
    stream_.expires_after(10s);
    http::async_read(stream_, buffer_, response, [&](beast::error_code error, std::size_t) { result = error; });
    io_.restart();
    io_.run();
    if (result) throw beast::system_error(result);
    return response;
  }
  http::response<http::string_body> post(const json& message, const std::string& session = {}) {
    send(message, session);
    return receive();
  }
  /// initialize + notifications/initialized; the session's id.
  std::string open_session() {
    const auto answer = post(json::parse(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{)"
                                         R"("protocolVersion":"2025-11-25","capabilities":{},)"
                                         R"("clientInfo":{"name":"t","version":"1"}}})"));
    REQUIRE(answer.result() == http::status::ok);
    const std::string id(answer["Mcp-Session-Id"]);
    REQUIRE(!id.empty());
    REQUIRE(post(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, id).result() == http::status::accepted);
    return id;
  }

private:
  asio::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

json raw_sql(int id, const std::string& sql) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
              {"params", {{"name", "raw_sql"}, {"arguments", {{"sql", sql}}}}}};
}

// True once a connection to `port` is refused: the server stopped accepting.
bool refuses_connections(std::uint16_t port) {
  for (int attempt = 0; attempt < 2000; ++attempt) {
    asio::io_context io;
    tcp::socket socket(io);
    beast::error_code error;
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), error);
    if (error == asio::error::connection_refused) return true;
    std::this_thread::yield();
  }
  return false;
}

// A server over a scripted backend on a free loopback port; its log kept.
// Declared in this order so that the server goes first.
struct Served {
  explicit Served(std::chrono::milliseconds grace = 5s) {
    log = rawtool::OperatorLog::open(rawtool::LogConfig{}, lines.sink());
    config.open = description_with({"main"});
    config.shutdown_grace = grace;
    server = std::make_unique<HttpServer>(backend, config, *log);
    server->start();
  }
  ~Served() { backend.release(); }
  Served(const Served&) = delete;
  Served& operator=(const Served&) = delete;

  CapturedLines lines;
  std::shared_ptr<rawtool::OperatorLog> log;
  ScriptedBackend backend;
  HttpServerConfig config;
  std::unique_ptr<HttpServer> server;

  bool logged(std::string_view event) const {
    for (const auto& record : lines.records()) {
      if (record.value("event", "") == event) return true;
    }
    return false;
  }
};

}  // namespace

TEST_CASE("an embedder stops the HTTP server from another thread: its call in flight is answered, then wait returns",
          "[mcp][http]") {
  Served served(30s);
  Client client(served.server->port());
  const std::string session = client.open_session();
  client.send(raw_sql(2, "slow"), session);
  REQUIRE(served.backend.wait_running(1));

  std::thread([&] { served.server->stop(); }).join();
  auto waited = std::async(std::launch::async, [&] { return served.server->wait(); });
  served.backend.release();  // the call finishes within the grace
  const auto answer = client.receive();
  REQUIRE(answer.result() == http::status::ok);
  const json message = json::parse(answer.body());
  REQUIRE(message["id"] == 2);
  REQUIRE(message["result"]["isError"] == false);

  REQUIRE(waited.wait_for(10s) == std::future_status::ready);
  REQUIRE(waited.get() == 0);
  REQUIRE(served.logged("stopped"));
  REQUIRE(served.server->wait() == 0);  // a second wait returns at once
}

TEST_CASE("a session opened while the HTTP server stops starts no call, and nothing runs once wait returns",
          "[mcp][http]") {
  // The stop's grace is long: the call in flight holds the stop until the
  // test lets it finish.
  Served served(60s);
  Client first(served.server->port());
  Client late(served.server->port());  // open before the stop, used after it
  const std::string session = first.open_session();
  first.send(raw_sql(2, "slow"), session);
  REQUIRE(served.backend.wait_running(1));

  served.server->stop();
  auto waited = std::async(std::launch::async, [&] { return served.server->wait(); });
  REQUIRE(refuses_connections(served.server->port()));

  // A session opened on a connection accepted before the stop: it answers,
  // but its call is refused at once instead of running past the stop.
  const std::string late_session = late.open_session();
  const auto refused = late.post(raw_sql(3, "late"), late_session);
  REQUIRE(refused.result() == http::status::ok);
  const json refusal = json::parse(refused.body());
  REQUIRE(refusal["id"] == 3);
  REQUIRE(refusal["error"]["message"] == "the session has ended");
  REQUIRE(served.backend.started() == 1);

  served.backend.release();
  const json answered = json::parse(first.receive().body());
  REQUIRE(answered["result"]["isError"] == false);
  REQUIRE(waited.wait_for(10s) == std::future_status::ready);
  REQUIRE(waited.get() == 0);
  // The workers are joined before wait returns: no call holds anything.
  REQUIRE(served.backend.live_controls() == 0);
  REQUIRE(served.backend.started() == 1);
}

TEST_CASE("a request whose handling throws on an I/O thread is logged and answered with an internal error, and the "
          "HTTP server keeps serving",
          "[mcp][http]") {
  Served served;
  served.backend.release();
  Client client(served.server->port());
  const std::string session = client.open_session();

  served.backend.fail_next_control();
  const auto failed = client.post(raw_sql(2, "q"), session);
  REQUIRE(failed.result() == http::status::ok);
  const json failure = json::parse(failed.body());
  REQUIRE(failure["id"] == 2);
  REQUIRE(failure["error"]["code"] == static_cast<int>(ErrorCode::internal_error));
  REQUIRE(failure["error"]["message"] == "internal error");
  REQUIRE(served.logged("internal_error"));
  REQUIRE(served.lines.all().find("a backend that breaks") == std::string::npos);

  // The same connection, session and id serve again.
  const json next = json::parse(client.post(raw_sql(2, "q"), session).body());
  REQUIRE(next["result"]["isError"] == false);
  served.server->stop();
  REQUIRE(served.server->wait() == 0);
}
