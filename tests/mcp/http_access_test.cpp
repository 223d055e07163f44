// The HTTP transport's admission decisions without a socket: which token a
// request's Authorization header carries, which Origins pass, and which
// listen addresses are accepted and count as loopback.

#include "mcp/http_access.hpp"

#include <rawtool/crypto.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using rawtool::mcp::detail::authenticate;
using rawtool::mcp::detail::HttpClient;
using rawtool::mcp::detail::is_loopback_host;
using rawtool::mcp::detail::origin_allowed;
using rawtool::mcp::detail::parse_listen_address;

namespace {

std::vector<HttpClient> two_clients() {
  std::vector<HttpClient> clients(2);
  clients[0].name = "alice";
  clients[0].sha256 = rawtool::crypto::sha256_hex("token-a");
  clients[1].name = "bob";
  clients[1].sha256 = rawtool::crypto::sha256_hex("token-b");
  return clients;
}

}  // namespace

TEST_CASE("a bearer token is recognised by its digest, and only a whole token is", "[mcp][http]") {
  const auto clients = two_clients();
  REQUIRE(authenticate("Bearer token-a", clients) == &clients[0]);
  REQUIRE(authenticate("bearer token-b", clients) == &clients[1]);
  CHECK(authenticate("Bearer  token-b ", clients) == &clients[1]);
  CHECK(authenticate("Bearer token-", clients) == nullptr);
  CHECK(authenticate("Bearer token-ab", clients) == nullptr);
  CHECK(authenticate("Bearer ", clients) == nullptr);
  CHECK(authenticate("Basic token-a", clients) == nullptr);
  CHECK(authenticate("token-a", clients) == nullptr);
  // The digest itself is not a token.
  CHECK(authenticate("Bearer " + clients[0].sha256, clients) == nullptr);
  CHECK(authenticate("Bearer token-a", {}) == nullptr);
}

TEST_CASE("a request without Origin passes, and one with an Origin only when it is listed", "[mcp][http]") {
  const std::vector<std::string> allowed{"http://localhost:3000"};
  CHECK(origin_allowed(std::nullopt, allowed));
  CHECK(origin_allowed(std::nullopt, {}));
  CHECK(origin_allowed(std::string_view("http://localhost:3000"), allowed));
  CHECK_FALSE(origin_allowed(std::string_view("http://localhost:3001"), allowed));
  CHECK_FALSE(origin_allowed(std::string_view("http://localhost:3000.evil.example"), allowed));
  CHECK_FALSE(origin_allowed(std::string_view("null"), allowed));
  CHECK_FALSE(origin_allowed(std::string_view("http://localhost:3000"), {}));
}

TEST_CASE("the listen address is HOST:PORT, an IPv6 host in brackets", "[mcp][http]") {
  const auto v4 = parse_listen_address("127.0.0.1:8808");
  REQUIRE(v4);
  CHECK(v4->host == "127.0.0.1");
  CHECK(v4->port == 8808);
  const auto v6 = parse_listen_address("[::1]:0");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->port == 0);
  CHECK_FALSE(parse_listen_address("127.0.0.1"));
  // A port alone is loopback, the default listen address.
  const auto bare = parse_listen_address("8808");
  REQUIRE(bare);
  CHECK(bare->host == "127.0.0.1");
  CHECK(bare->port == 8808);
  CHECK_FALSE(parse_listen_address("65536"));
  CHECK_FALSE(parse_listen_address(""));
  CHECK_FALSE(parse_listen_address(":8808"));
  CHECK_FALSE(parse_listen_address("127.0.0.1:"));
  CHECK_FALSE(parse_listen_address("127.0.0.1:65536"));
  CHECK_FALSE(parse_listen_address("127.0.0.1:80x"));
  CHECK_FALSE(parse_listen_address("::1:8808"));
  CHECK_FALSE(parse_listen_address("[]:8808"));
}

TEST_CASE("only loopback addresses and localhost count as loopback", "[mcp][http]") {
  CHECK(is_loopback_host("127.0.0.1") == true);
  CHECK(is_loopback_host("127.3.2.1") == true);
  CHECK(is_loopback_host("::1") == true);
  CHECK(is_loopback_host("localhost") == true);
  CHECK(is_loopback_host("0.0.0.0") == false);
  CHECK(is_loopback_host("::") == false);
  CHECK(is_loopback_host("192.0.2.7") == false);
  CHECK_FALSE(is_loopback_host("example.com").has_value());
}
