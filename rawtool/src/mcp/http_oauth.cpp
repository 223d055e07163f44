#include "mcp/http_oauth.hpp"

#include "mcp/dispatcher.hpp"
#include "mcp/http_fetch.hpp"

#include <rawtool/log.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rawtool::mcp::detail {

namespace {

std::optional<std::string> string_member(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// A key of the set, or nullopt when rawtool does not verify with it.
std::optional<SigningKey> signing_key(const nlohmann::json& jwk) {
  if (!jwk.is_object()) return std::nullopt;
  const auto kty = string_member(jwk, "kty");
  const auto use = string_member(jwk, "use");
  if (!kty || (jwk.contains("use") && use != "sig")) return std::nullopt;
  const auto alg = string_member(jwk, "alg");
  if (jwk.contains("alg") && !alg) return std::nullopt;
  const auto kid = string_member(jwk, "kid");
  if (jwk.contains("kid") && !kid) return std::nullopt;
  if (*kty == "RSA" && (!alg || *alg == "RS256")) {
    const auto n = string_member(jwk, "n");
    const auto e = string_member(jwk, "e");
    if (!n || !e) return std::nullopt;
    auto key = crypto::PublicKey::rsa(*n, *e);
    if (!key) return std::nullopt;
    return SigningKey{kid.value_or(""), "RS256", std::move(*key)};
  }
  if (*kty == "EC" && (!alg || *alg == "ES256") && string_member(jwk, "crv") == "P-256") {
    const auto x = string_member(jwk, "x");
    const auto y = string_member(jwk, "y");
    if (!x || !y) return std::nullopt;
    auto key = crypto::PublicKey::ec_p256(*x, *y);
    if (!key) return std::nullopt;
    return SigningKey{kid.value_or(""), "ES256", std::move(*key)};
  }
  return std::nullopt;
}

std::optional<nlohmann::json> json_object_part(std::string_view part) {
  const auto bytes = crypto::base64url_decode(part);
  if (!bytes) return std::nullopt;
  auto value = nlohmann::json::parse(*bytes, nullptr, false);
  if (value.is_discarded() || !value.is_object()) return std::nullopt;
  return value;
}

// A NumericDate (RFC 7519 section 2), whole seconds; nullopt when missing or
// not a finite number.
std::optional<std::int64_t> numeric_date(const nlohmann::json& claims, const char* name) {
  const auto it = claims.find(name);
  if (it == claims.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (!std::isfinite(v) || std::fabs(v) > 1e15) return std::nullopt;
    return static_cast<std::int64_t>(std::floor(v));
  }
  return std::nullopt;
}

bool audience_names(const nlohmann::json& claims, const std::string& resource) {
  const auto it = claims.find("aud");
  if (it == claims.end()) return false;
  if (it->is_string()) return it->get<std::string>() == resource;
  if (!it->is_array()) return false;
  for (const auto& a : *it)
    if (a.is_string() && a.get<std::string>() == resource) return true;
  return false;
}

}  // namespace

KeySet parse_key_set(std::string_view document) {
  const auto json = nlohmann::json::parse(document, nullptr, false);
  if (json.is_discarded() || !json.is_object()) throw std::invalid_argument("the key set is not a JSON object");
  const auto keys = json.find("keys");
  if (keys == json.end() || !keys->is_array()) throw std::invalid_argument("the key set has no \"keys\" array");
  KeySet set;
  for (const auto& jwk : *keys) {
    if (auto key = signing_key(jwk)) set.keys.push_back(std::move(*key));
    else ++set.ignored;
  }
  return set;
}

std::string_view describe(TokenRefusal refusal) {
  switch (refusal) {
    case TokenRefusal::malformed: return "the token is not a JWT";
    case TokenRefusal::algorithm: return "the token's algorithm is not accepted";
    case TokenRefusal::unknown_key: return "no key of the issuer's key set signed the token";
    case TokenRefusal::signature: return "the token's signature is invalid";
    case TokenRefusal::issuer: return "the token is from another issuer";
    case TokenRefusal::audience: return "the token is for another resource";
    case TokenRefusal::expired: return "the token has expired";
    case TokenRefusal::not_yet_valid: return "the token is not valid yet";
    case TokenRefusal::no_subject: return "the token names no subject";
  }
  return "the token is invalid";
}

std::variant<TokenIdentity, TokenRefusal> validate_token(std::string_view token, const KeySet& keys,
                                                         const TokenRules& rules, std::int64_t now) {
  if (token.size() > max_token_bytes) return TokenRefusal::malformed;
  const auto first = token.find('.');
  const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos)
    return TokenRefusal::malformed;
  const auto header = json_object_part(token.substr(0, first));
  auto payload = json_object_part(token.substr(first + 1, second - first - 1));
  const auto signature = crypto::base64url_decode(token.substr(second + 1));
  if (!header || !payload || !signature) return TokenRefusal::malformed;

  // The algorithm is rawtool's choice, not the token's: "none", HMAC with a
  // public key as the secret, and anything else are refused before a key is
  // looked at. A critical extension rawtool cannot honour refuses the token
  // (RFC 7515 section 4.1.11).
  const auto alg = string_member(*header, "alg");
  if (!alg || (*alg != "RS256" && *alg != "ES256") || header->contains("crit")) return TokenRefusal::algorithm;
  const auto kid = string_member(*header, "kid");
  if (header->contains("kid") && !kid) return TokenRefusal::malformed;

  // With a kid, the key with that kid; without, the set's only key of the
  // algorithm, so a token cannot pick among several keys by leaving it out.
  const SigningKey* key = nullptr;
  std::size_t candidates = 0;
  for (const auto& k : keys.keys) {
    if (k.alg != *alg) continue;
    if (kid ? k.kid == *kid : true) {
      key = &k;
      ++candidates;
    }
  }
  if (key == nullptr || candidates != 1) return TokenRefusal::unknown_key;
  if (!key->key.verifies(token.substr(0, second), *signature)) return TokenRefusal::signature;

  if (string_member(*payload, "iss") != rules.issuer) return TokenRefusal::issuer;
  if (!audience_names(*payload, rules.resource)) return TokenRefusal::audience;
  const auto leeway = rules.leeway.count();
  const auto exp = numeric_date(*payload, "exp");
  if (!exp || now >= *exp + leeway) return TokenRefusal::expired;
  if (payload->contains("nbf")) {
    const auto nbf = numeric_date(*payload, "nbf");
    if (!nbf || now + leeway < *nbf) return TokenRefusal::not_yet_valid;
  }
  auto subject = string_member(*payload, "sub");
  if (!subject || subject->empty()) return TokenRefusal::no_subject;

  TokenIdentity identity;
  identity.subject = std::move(*subject);
  identity.client_id = string_member(*payload, "client_id").value_or(string_member(*payload, "azp").value_or(""));
  if (const auto scope = string_member(*payload, "scope")) {
    std::string_view rest = *scope;
    while (!rest.empty()) {
      const auto space = rest.find(' ');
      const auto word = rest.substr(0, space);
      if (!word.empty()) identity.scopes.emplace_back(word);
      rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    }
  }
  identity.claims = std::move(*payload);
  return identity;
}

namespace {

// The largest key set document read.
constexpr std::size_t max_key_set_bytes = 1024 * 1024;

std::string_view path_of(std::string_view url) {
  const auto scheme = url.find("://");
  const auto rest = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return {};
  auto path = rest.substr(slash);
  path = path.substr(0, path.find('?'));
  return path == "/" ? std::string_view{} : path;
}

}  // namespace

std::string read_key_set(const OAuthSettings& settings) {
  if (!settings.jwks_url.empty()) return http_get(settings.jwks_url, settings.fetch_timeout, max_key_set_bytes);
  std::ifstream in(settings.jwks_file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + settings.jwks_file.string());
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw std::runtime_error("cannot read " + settings.jwks_file.string());
  return text.str();
}

std::string resource_metadata_path(std::string_view resource) {
  return "/.well-known/oauth-protected-resource" + std::string(path_of(resource));
}

std::string resource_metadata_url(std::string_view resource) {
  const auto scheme = resource.find("://");
  const auto host_end = resource.find('/', scheme == std::string_view::npos ? 0 : scheme + 3);
  return std::string(resource.substr(0, host_end)) + resource_metadata_path(resource);
}

nlohmann::json resource_metadata(const OAuthSettings& settings) {
  nlohmann::json scopes = nlohmann::json::array();
  for (const auto& [scope, databases] : settings.scopes) scopes.push_back(scope);
  return {{"resource", settings.rules.resource},
          {"authorization_servers", nlohmann::json::array({settings.rules.issuer})},
          {"scopes_supported", scopes},
          {"bearer_methods_supported", nlohmann::json::array({"header"})}};
}

std::vector<std::string> databases_for(const OAuthSettings& settings, const std::vector<std::string>& scopes) {
  std::vector<std::string> reached;
  for (const auto& [scope, databases] : settings.scopes) {
    if (std::find(scopes.begin(), scopes.end(), scope) == scopes.end()) continue;
    if (!databases) return settings.databases;
    for (const auto& label : *databases)
      if (std::find(reached.begin(), reached.end(), label) == reached.end()) reached.push_back(label);
  }
  // Configuration order, whatever order the scopes came in.
  std::vector<std::string> ordered;
  for (const auto& label : settings.databases)
    if (std::find(reached.begin(), reached.end(), label) != reached.end()) ordered.push_back(label);
  return ordered;
}

OAuthGate::OAuthGate(OAuthSettings settings, Describe describe, const rawtool::OperatorLog& log, Fetch fetch)
    : settings_(std::move(settings)), describe_(std::move(describe)), log_(log),
      fetch_(fetch ? std::move(fetch) : Fetch(read_key_set)) {}

OAuthGate::~OAuthGate() {
  std::thread fetcher;
  {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return !fetching_; });
    fetcher = std::move(fetcher_);
  }
  if (fetcher.joinable()) fetcher.join();
}

void OAuthGate::start() { load(); }

void OAuthGate::load() noexcept {
  std::shared_ptr<const KeySet> keys;
  std::string failure;
  try {
    auto set = std::make_shared<KeySet>(parse_key_set(fetch_(settings_)));
    if (set->keys.empty()) failure = "the key set holds no RS256 or ES256 signing key";
    else keys = std::move(set);
  } catch (const std::exception& error) {
    failure = error.what();
  } catch (...) {
    failure = "the key set could not be read";
  }
  try {
    if (keys) {
      log_.write(LogLevel::info, "mcp", "oauth_keys",
                 nlohmann::json{{"detail", "the issuer's key set was loaded"},
                                {"keys", keys->keys.size()},
                                {"ignored", keys->ignored}});
    } else {
      log_.write(LogLevel::error, "mcp", "oauth_keys",
                 nlohmann::json{{"detail", "the issuer's key set could not be loaded; OAuth tokens are refused until "
                                           "it can be (tokens naming an unknown key retry): " + failure}});
    }
  } catch (...) {
  }
  std::lock_guard lock(mutex_);
  if (keys) keys_ = std::move(keys);
  fetched_ = std::chrono::steady_clock::now();
  fetched_once_ = true;
}

OAuthGate::Outcome OAuthGate::check(std::string_view token, std::int64_t now) {
  std::shared_ptr<const KeySet> keys;
  {
    std::lock_guard lock(mutex_);
    keys = keys_;
  }
  Outcome outcome;
  const KeySet none;
  auto result = validate_token(token, keys ? *keys : none, settings_.rules, now);
  if (auto* refusal = std::get_if<TokenRefusal>(&result)) {
    outcome.kind = *refusal == TokenRefusal::unknown_key ? Outcome::Kind::unknown_key : Outcome::Kind::invalid;
    outcome.refusal = *refusal;
    return outcome;
  }
  auto& identity = std::get<TokenIdentity>(result);
  for (const auto& required : settings_.required_scopes) {
    if (std::find(identity.scopes.begin(), identity.scopes.end(), required) == identity.scopes.end()) {
      outcome.kind = Outcome::Kind::insufficient_scope;
      outcome.scope = required;
      return outcome;
    }
  }
  const auto databases = databases_for(settings_, identity.scopes);
  if (databases.empty()) {
    // None of its scopes reaches a database: name those that would.
    outcome.kind = Outcome::Kind::insufficient_scope;
    for (const auto& [scope, reach] : settings_.scopes) outcome.scope += (outcome.scope.empty() ? "" : " ") + scope;
    return outcome;
  }
  std::string key = identity.subject;
  key += '\0';
  key += identity.client_id;
  std::string reach;
  for (const auto& label : databases) reach += label + '\0';
  key += '\0' + reach;
  std::lock_guard lock(mutex_);
  auto found = identities_.find(key);
  if (found == identities_.end()) {
    if (identities_.size() >= settings_.max_identities) {
      outcome.kind = Outcome::Kind::busy;
      return outcome;
    }
    auto& description = descriptions_[reach];
    if (!description) description = describe_(databases);
    auto client = std::make_unique<HttpClient>();
    client->name = "oauth";
    client->description = description;
    client->subject = identity.subject;
    client->client_id = identity.client_id;
    found = identities_.emplace(std::move(key), std::move(client)).first;
  }
  outcome.kind = Outcome::Kind::accepted;
  outcome.client = found->second.get();
  outcome.claims = std::make_shared<const nlohmann::json>(std::move(identity.claims));
  return outcome;
}

void OAuthGate::refresh(std::function<void()> done) {
  std::thread finished;
  {
    std::lock_guard lock(mutex_);
    if (fetching_) {
      waiting_.push_back(std::move(done));
      return;
    }
    if (!fetched_once_ || std::chrono::steady_clock::now() - fetched_ >= settings_.refetch_interval) {
      fetching_ = true;
      waiting_.push_back(std::move(done));
      finished = std::move(fetcher_);
      fetcher_ = std::thread([this] {
        load();
        std::vector<std::function<void()>> waiting;
        {
          std::lock_guard inner(mutex_);
          waiting.swap(waiting_);
          fetching_ = false;
        }
        idle_.notify_all();
        // The destructor joins this thread, so these run before the gate goes.
        for (auto& callback : waiting) {
          try {
            callback();
          } catch (...) {
            log_internal_error(log_, "a request waiting for the OAuth key set threw");
          }
        }
      });
      done = nullptr;
    }
  }
  if (finished.joinable()) finished.join();
  if (done) done();
}

}  // namespace rawtool::mcp::detail
