#pragma once

// One GET over HTTP or HTTPS with a deadline and a size limit, for the OAuth
// issuer's key set. HTTPS verifies the server's certificate against the
// system's trust store and its name against the URL's host.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace rawtool::mcp::detail {

/// The body of a 200 answer to GET `url` (http:// or https://). Throws
/// std::runtime_error, with a sentence naming the URL and what went wrong,
/// when the URL is not one, the server cannot be reached or does not answer
/// within `timeout`, the status is not 200, or the body is over `max_bytes`.
std::string http_get(std::string_view url, std::chrono::milliseconds timeout, std::size_t max_bytes);

}  // namespace rawtool::mcp::detail
