#include "mcp/http_fetch.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <openssl/ssl.h>

#include <optional>
#include <stdexcept>
#include <string>

namespace rawtool::mcp::detail {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct Url {
  bool tls = false;
  std::string host;
  std::string port;
  std::string target;
};

Url parse_url(std::string_view url) {
  Url parsed;
  std::string_view rest;
  if (url.rfind("https://", 0) == 0) {
    parsed.tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    throw std::runtime_error("is not an http:// or https:// URL");
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  parsed.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos) throw std::runtime_error("carries credentials, which rawtool does not send");
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) throw std::runtime_error("has an unclosed IPv6 address");
    parsed.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
  } else {
    const auto colon = authority.rfind(':');
    parsed.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (parsed.host.empty()) throw std::runtime_error("names no host");
  parsed.port = port.empty() ? (parsed.tls ? "443" : "80") : std::string(port);
  return parsed;
}

using Deadline = std::chrono::steady_clock::time_point;

// Runs one asynchronous step until it completes or the deadline passes.
// Beast's synchronous calls ignore a stream's expiry, so every step is
// asynchronous and the caller's thread drives the I/O until the deadline.
template <class Start>
void step(asio::io_context& io, Deadline deadline, Start start) {
  std::optional<beast::error_code> result;
  start([&result](beast::error_code ec, auto&&...) { result = ec; });
  io.restart();
  io.run_until(deadline);
  if (!result) throw beast::system_error(beast::error::timeout);
  if (*result) throw beast::system_error(*result);
}

template <class Stream>
std::string exchange(asio::io_context& io, Deadline deadline, Stream& stream, const Url& url, std::size_t max_bytes) {
  http::request<http::empty_body> request(http::verb::get, url.target, 11);
  request.set(http::field::host, url.host);
  request.set(http::field::accept, "application/json, application/jwk-set+json");
  request.set(http::field::user_agent, "rawtool");
  step(io, deadline, [&](auto done) { http::async_write(stream, request, done); });
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_bytes);
  step(io, deadline, [&](auto done) { http::async_read(stream, buffer, parser, done); });
  const auto& response = parser.get();
  if (response.result() != http::status::ok) {
    throw std::runtime_error("answered HTTP " + std::to_string(response.result_int()) + ", not 200");
  }
  return response.body();
}

}  // namespace

std::string http_get(std::string_view url_text, std::chrono::milliseconds timeout, std::size_t max_bytes) {
  const auto fail = [&](const std::string& why) {
    return std::runtime_error("GET " + std::string(url_text) + ": " + why);
  };
  // One deadline for resolve, connect, TLS, request and answer.
  const Deadline deadline = std::chrono::steady_clock::now() + timeout;
  try {
    const Url url = parse_url(url_text);
    asio::io_context io;
    tcp::resolver resolver(io);
    tcp::resolver::results_type endpoints;
    step(io, deadline, [&](auto done) {
      resolver.async_resolve(url.host, url.port, [&endpoints, done](beast::error_code ec, tcp::resolver::results_type found) mutable {
        endpoints = std::move(found);
        done(ec);
      });
    });
    beast::tcp_stream tcp_stream(io);
    step(io, deadline, [&](auto done) { tcp_stream.async_connect(endpoints, done); });
    if (!url.tls) return exchange(io, deadline, tcp_stream, url, max_bytes);
    asio::ssl::context tls(asio::ssl::context::tls_client);
    tls.set_default_verify_paths();
    tls.set_verify_mode(asio::ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream&> stream(tcp_stream, tls);
    // SNI: SSL_set_tlsext_host_name, spelled without its macro's C cast.
    if (SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(url.host.c_str())) != 1)
      throw std::runtime_error("TLS setup failed");
    stream.set_verify_callback(asio::ssl::host_name_verification(url.host));
    step(io, deadline, [&](auto done) { stream.async_handshake(asio::ssl::stream_base::client, done); });
    return exchange(io, deadline, stream, url, max_bytes);
  } catch (const beast::system_error& error) {
    if (error.code() == beast::error::timeout) throw fail("no answer within " + std::to_string(timeout.count()) + " ms");
    if (error.code() == http::error::body_limit) throw fail("the answer is over " + std::to_string(max_bytes) + " bytes");
    throw fail(error.code().message());
  } catch (const std::runtime_error& error) {
    throw fail(error.what());
  }
}

}  // namespace rawtool::mcp::detail
