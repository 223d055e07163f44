#pragma once

// Who may use the HTTP transport, decided from a request's headers before its
// body is read: the bearer token (compared by digest, in constant time), the
// Origin (against DNS rebinding), and the listen address the server was given.
// Pure functions, so every rejection can be tested without a socket.

#include "mcp/protocol.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rawtool::mcp::detail {

/// One configured token, as the transport holds it: its name for the log, the
/// lower-case hex SHA-256 of the token, and what a session it opens is shown
/// and may use.
struct HttpClient {
  std::string name;
  std::string sha256;  // empty for an OAuth identity
  std::shared_ptr<const ServerDescription> description;
  /// An OAuth identity's `sub` and client id (`client_id`, else `azp`);
  /// empty for a static token.
  std::string subject;
  std::string client_id;
};

/// The token of an Authorization header `Bearer <token>` (scheme
/// case-insensitive, spaces around the token dropped); nullopt for another
/// scheme or an empty token.
std::optional<std::string_view> bearer_token(std::string_view authorization);

/// The client whose token `authorization` carries as `Bearer <token>` (scheme
/// case-insensitive), or nullptr. Every configured digest is compared, each in
/// time independent of where it differs, so neither which token matched nor
/// how much of a digest did shows in the time taken.
const HttpClient* authenticate(std::string_view authorization, const std::vector<HttpClient>& clients);

/// True when a request with this Origin header may be served: none at all
/// (not a browser), or one of `allowed` exactly.
bool origin_allowed(const std::optional<std::string_view>& origin, const std::vector<std::string>& allowed);

/// What a request's Accept header lets the server answer with: a JSON body,
/// an event stream. A missing header accepts both; a media range with q=0
/// accepts nothing; `*/*` and `application/*` accept JSON, `*/*` and
/// `text/*` an event stream.
struct Accepted {
  bool json = false;
  bool event_stream = false;
};
Accepted accepted_types(const std::optional<std::string_view>& accept);

/// `HOST:PORT` as `rawtool mcp --http` takes it: a host name or IPv4 address,
/// or an IPv6 address in brackets, then a port 0-65535 (0: any free port); or
/// a port alone, on 127.0.0.1.
struct ListenAddress {
  std::string host;
  std::uint16_t port = 0;
};
std::optional<ListenAddress> parse_listen_address(std::string_view text);

/// Whether `host` (an IP address, or "localhost") is a loopback address;
/// nullopt when it is neither an IP address nor "localhost".
std::optional<bool> is_loopback_host(std::string_view host);

}  // namespace rawtool::mcp::detail
