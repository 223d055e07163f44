#include "mcp/http_access.hpp"

#include <rawtool/crypto.hpp>

// Boost 1.74's Asio uses std::exchange without including <utility> under C++20.
#include <utility>

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace rawtool::mcp::detail {

namespace {

// Equal-length strings compared without an early exit.
bool same_digest(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference = static_cast<unsigned char>(difference | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i])));
  }
  return difference == 0;
}

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && starts_with_ignoring_case(a, b);
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A q parameter of zero ("q=0", "q=0.0", "q=0.000") refuses the range.
bool refused_by_quality(std::string_view parameters) {
  while (!parameters.empty()) {
    const auto end = parameters.find(';');
    const std::string_view parameter = trimmed(parameters.substr(0, end));
    parameters = end == std::string_view::npos ? std::string_view() : parameters.substr(end + 1);
    if (parameter.size() < 2 || !starts_with_ignoring_case(parameter, "q=")) continue;
    const std::string_view value = parameter.substr(2);
    return !value.empty() && value.find_first_not_of("0.") == std::string_view::npos;
  }
  return false;
}

}  // namespace

Accepted accepted_types(const std::optional<std::string_view>& accept) {
  if (!accept) return {true, true};
  Accepted accepted;
  std::string_view rest = *accept;
  while (!rest.empty()) {
    const auto end = rest.find(',');
    std::string_view range = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    const auto parameters = range.find(';');
    const std::string_view type = trimmed(range.substr(0, parameters));
    if (parameters != std::string_view::npos && refused_by_quality(range.substr(parameters + 1))) continue;
    const bool any = type == "*/*";
    if (any || equal_ignoring_case(type, "application/json") || equal_ignoring_case(type, "application/*")) accepted.json = true;
    if (any || equal_ignoring_case(type, "text/event-stream") || equal_ignoring_case(type, "text/*")) accepted.event_stream = true;
  }
  return accepted;
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "Bearer ";
  if (!starts_with_ignoring_case(authorization, scheme)) return std::nullopt;
  std::string_view token = authorization.substr(scheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  return token;
}

const HttpClient* authenticate(std::string_view authorization, const std::vector<HttpClient>& clients) {
  const auto token = bearer_token(authorization);
  if (!token || clients.empty()) return nullptr;
  // Digests, not tokens, are compared: the configuration holds no token, and
  // a digest's length does not depend on the token's.
  const std::string presented = crypto::sha256_hex(*token);
  const HttpClient* found = nullptr;
  for (const HttpClient& client : clients) {
    if (same_digest(presented, client.sha256)) found = &client;
  }
  return found;
}

bool origin_allowed(const std::optional<std::string_view>& origin, const std::vector<std::string>& allowed) {
  if (!origin) return true;
  return std::find(allowed.begin(), allowed.end(), *origin) != allowed.end();
}

std::optional<ListenAddress> parse_listen_address(std::string_view text) {
  // A port alone listens on loopback.
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos) {
    return parse_listen_address("127.0.0.1:" + std::string(text));
  }
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::nullopt;  // an IPv6 address needs its brackets
  }
  unsigned port = 0;
  const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port > 65535) return std::nullopt;
  return ListenAddress{std::string(host), static_cast<std::uint16_t>(port)};
}

std::optional<bool> is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  boost::system::error_code error;
  const auto address = boost::asio::ip::make_address(std::string(host), error);
  if (error) return std::nullopt;
  return address.is_loopback();
}

}  // namespace rawtool::mcp::detail
