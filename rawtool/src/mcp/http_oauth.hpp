#pragma once

// OAuth 2.1 access tokens for the HTTP transport, as the MCP authorization
// specification (2025-11-25) has a protected resource check them: a JWT
// (RFC 9068) signed by a key of the issuer's key set, RS256 or ES256 only,
// whose `iss` is the configured issuer, whose `aud` names this server's
// resource (RFC 8707), and whose `exp` and `nbf` hold with the leeway.
// Pure functions over the token's text and a key set, so every refusal can be
// tested without a socket or an authorization server.

#include "mcp/http_access.hpp"

#include <rawtool/crypto.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

namespace rawtool {
class OperatorLog;
}

namespace rawtool::mcp::detail {

/// One signing key of a key set (RFC 7517): its `kid` (empty when the key
/// has none) and the algorithm it signs with, "RS256" or "ES256".
struct SigningKey {
  std::string kid;
  std::string alg;
  crypto::PublicKey key;
};

/// The usable signing keys of a JWK Set document, and how many of its keys
/// were left out (another algorithm or key type, `use` other than "sig", an
/// RSA modulus under 2048 bits, a malformed member). Throws
/// std::invalid_argument when `document` is not a JSON object with a `keys`
/// array.
struct KeySet {
  std::vector<SigningKey> keys;
  std::size_t ignored = 0;
};
KeySet parse_key_set(std::string_view document);

/// What a valid token says of its bearer.
struct TokenIdentity {
  std::string subject;    // `sub`
  std::string client_id;  // `client_id`, else `azp`, else empty
  std::vector<std::string> scopes;  // `scope`, split at spaces
  nlohmann::json claims;  // the whole payload, for claim-bound parameters
};

/// Why a token was refused. `unknown_key` alone can change with a newer key
/// set: the caller may fetch the set again and retry.
enum class TokenRefusal {
  malformed,      // not three base64url parts of a JSON header and payload, or too long
  algorithm,      // `alg` other than RS256/ES256, or a `crit` header
  unknown_key,    // no key of the set has the token's `kid` and algorithm
  signature,      // the signature does not verify
  issuer,         // `iss` is not the configured issuer
  audience,       // `aud` does not name this server's resource
  expired,        // `exp` missing, or passed (beyond the leeway)
  not_yet_valid,  // `nbf` in the future (beyond the leeway)
  no_subject,     // `sub` missing or not a string
};

/// A few words naming the refusal, for the operator log and the
/// WWW-Authenticate error description (never the token's content).
std::string_view describe(TokenRefusal refusal);

/// The longest token text accepted; longer is `malformed` before any decoding.
inline constexpr std::size_t max_token_bytes = 16 * 1024;

struct TokenRules {
  std::string issuer;
  std::string resource;
  std::chrono::seconds leeway{60};
};

/// Checks `token` (the text after "Bearer ") against `keys` and `rules` at
/// `now` (seconds since the epoch).
std::variant<TokenIdentity, TokenRefusal> validate_token(std::string_view token, const KeySet& keys,
                                                         const TokenRules& rules, std::int64_t now);

/// What the transport needs of `http.oauth` and `http.resource`.
struct OAuthSettings {
  TokenRules rules;
  /// Where the key set is: an http(s) URL, or else a file.
  std::string jwks_url;
  std::filesystem::path jwks_file;
  /// Scope → the labels it reaches (configuration order); nullopt: all.
  std::vector<std::pair<std::string, std::optional<std::vector<std::string>>>> scopes;
  std::vector<std::string> required_scopes;
  /// Every configured label, in configuration order.
  std::vector<std::string> databases;
  /// The least time between two fetches of the key set.
  std::chrono::milliseconds refetch_interval{10000};
  std::chrono::milliseconds fetch_timeout{5000};
  /// Distinct identities (subject, client, databases) remembered at once;
  /// a token of one more is refused (503) until the server restarts.
  std::size_t max_identities = 10000;
};

/// The key set's document from settings.jwks_url (within fetch_timeout, at
/// most 1 MiB) or else settings.jwks_file. Throws std::runtime_error naming
/// the URL or file and what went wrong.
std::string read_key_set(const OAuthSettings& settings);

/// The resource's Protected Resource Metadata (RFC 9728).
nlohmann::json resource_metadata(const OAuthSettings& settings);
/// The path of the metadata's well-known URL for the resource (RFC 9728
/// section 3.1): "/.well-known/oauth-protected-resource" followed by the
/// resource URL's path, e.g. ".../oauth-protected-resource/mcp".
std::string resource_metadata_path(std::string_view resource);
/// The metadata's full URL, for WWW-Authenticate's resource_metadata.
std::string resource_metadata_url(std::string_view resource);

/// The databases a token with `scopes` reaches, in configuration order: the
/// union over its scopes that `settings` maps.
std::vector<std::string> databases_for(const OAuthSettings& settings, const std::vector<std::string>& scopes);

/// Checks OAuth tokens for the HTTP transport and gives each identity an
/// HttpClient the sessions are bound to: one per (subject, client id,
/// databases reached), kept as long as the gate, so a session opened with one
/// token is found again with a later token of the same identity and never
/// with another's. Thread-safe.
///
/// The key set is loaded by start() and again, at most once per
/// refetch_interval, when a token names a key the set does not have (so a
/// rotation needs no restart). A set that cannot be loaded is logged
/// ("oauth_keys") and every token is refused until one is.
class OAuthGate {
public:
  using Describe = std::function<std::shared_ptr<const ServerDescription>(const std::vector<std::string>& databases)>;
  using Fetch = std::function<std::string(const OAuthSettings&)>;
  /// `describe` makes what a session reaching those databases is shown;
  /// `fetch` reads the key set's document (default: jwks_url or jwks_file).
  /// `log` outlives the gate.
  OAuthGate(OAuthSettings settings, Describe describe, const rawtool::OperatorLog& log, Fetch fetch = {});
  /// Waits for a fetch under way.
  ~OAuthGate();
  OAuthGate(const OAuthGate&) = delete;
  OAuthGate& operator=(const OAuthGate&) = delete;

  /// Loads the key set once, in the calling thread; logs on failure.
  void start();

  struct Outcome {
    enum class Kind {
      accepted,            // client is the identity's
      invalid,             // 401 invalid_token; refusal says why
      insufficient_scope,  // 403; scope names what is missing
      unknown_key,         // a newer key set may accept it: refresh(), then check again
      busy,                // 503: max_identities are remembered
    };
    Kind kind = Kind::invalid;
    const HttpClient* client = nullptr;
    /// The token's claims, when accepted.
    std::shared_ptr<const nlohmann::json> claims;
    TokenRefusal refusal = TokenRefusal::malformed;
    std::string scope;
  };
  /// Never blocks on the network. `now`: seconds since the epoch.
  Outcome check(std::string_view token, std::int64_t now);
  /// Fetches the key set again on a thread of the gate's, unless one was
  /// fetched within refetch_interval; then calls `done` (on that thread, or
  /// at once when nothing is fetched).
  void refresh(std::function<void()> done);

  const OAuthSettings& settings() const { return settings_; }

private:
  void load() noexcept;

  const OAuthSettings settings_;
  Describe describe_;
  const rawtool::OperatorLog& log_;
  Fetch fetch_;
  mutable std::mutex mutex_;
  std::shared_ptr<const KeySet> keys_;                                  // guarded by mutex_
  std::chrono::steady_clock::time_point fetched_{};                     // guarded by mutex_
  bool fetched_once_ = false;                                           // guarded by mutex_
  bool fetching_ = false;                                               // guarded by mutex_
  std::vector<std::function<void()>> waiting_;                          // guarded by mutex_
  std::map<std::string, std::unique_ptr<HttpClient>> identities_;       // guarded by mutex_
  std::map<std::string, std::shared_ptr<const ServerDescription>> descriptions_;  // by databases; guarded by mutex_
  std::thread fetcher_;                                                 // guarded by mutex_
  std::condition_variable idle_;
};

}  // namespace rawtool::mcp::detail
