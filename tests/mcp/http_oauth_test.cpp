// OAuth access tokens checked without a socket: keys made here with OpenSSL,
// tokens signed here, and every refusal the transport relies on.

#include "scripted_backend.hpp"

#include "mcp/http_fetch.hpp"
#include "mcp/http_oauth.hpp"

#include <rawtool/log.hpp>

#include <rawtool/crypto.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace rawtool::mcp::detail;
using nlohmann::json;

namespace {

std::string b64url(std::string_view bytes) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto n = (static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16U) |
                   (static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8U) |
                   static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 2]));
    for (int s = 18; s >= 0; s -= 6) out += alphabet[(n >> static_cast<unsigned>(s)) & 63U];
  }
  if (bytes.size() - i == 1) {
    const auto n = static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16U;
    out += alphabet[(n >> 18U) & 63U];
    out += alphabet[(n >> 12U) & 63U];
  } else if (bytes.size() - i == 2) {
    const auto n = (static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16U) |
                   (static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8U);
    out += alphabet[(n >> 18U) & 63U];
    out += alphabet[(n >> 12U) & 63U];
    out += alphabet[(n >> 6U) & 63U];
  }
  return out;
}

std::string bn_bytes(const BIGNUM* bn, int width = 0) {
  std::string out(static_cast<std::size_t>(width > 0 ? width : BN_num_bytes(bn)), '\0');
  if (width > 0) BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), width);
  else BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

std::string bn_param(EVP_PKEY* key, const char* name, int width = 0) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(key, name, &bn) != 1) throw std::runtime_error("no key parameter");
  auto out = bn_bytes(bn, width);
  BN_free(bn);
  return out;
}

// A private key made for the test, with its public half as a JWK.
struct TestKey {
  std::shared_ptr<EVP_PKEY> key;
  std::string alg;
  json jwk;

  static TestKey rsa(const std::string& kid, unsigned bits = 2048) {
    TestKey k{std::shared_ptr<EVP_PKEY>(EVP_RSA_gen(bits), EVP_PKEY_free), "RS256", {}};
    k.jwk = {{"kty", "RSA"},
             {"n", b64url(bn_param(k.key.get(), OSSL_PKEY_PARAM_RSA_N))},
             {"e", b64url(bn_param(k.key.get(), OSSL_PKEY_PARAM_RSA_E))}};
    if (!kid.empty()) k.jwk["kid"] = kid;
    return k;
  }
  static TestKey ec(const std::string& kid) {
    TestKey k{std::shared_ptr<EVP_PKEY>(EVP_EC_gen("P-256"), EVP_PKEY_free), "ES256", {}};
    k.jwk = {{"kty", "EC"},
             {"crv", "P-256"},
             {"x", b64url(bn_param(k.key.get(), OSSL_PKEY_PARAM_EC_PUB_X, 32))},
             {"y", b64url(bn_param(k.key.get(), OSSL_PKEY_PARAM_EC_PUB_Y, 32))}};
    if (!kid.empty()) k.jwk["kid"] = kid;
    return k;
  }

  std::string sign(std::string_view data) const {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get());
    std::size_t size = 0;
    EVP_DigestSign(ctx.get(), nullptr, &size, reinterpret_cast<const unsigned char*>(data.data()), data.size());
    std::string sig(size, '\0');
    EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &size,
                   reinterpret_cast<const unsigned char*>(data.data()), data.size());
    sig.resize(size);
    if (alg == "RS256") return sig;
    // DER to the R || S JWS carries.
    const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* ecdsa = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    auto out = bn_bytes(ECDSA_SIG_get0_r(ecdsa), 32) + bn_bytes(ECDSA_SIG_get0_s(ecdsa), 32);
    ECDSA_SIG_free(ecdsa);
    return out;
  }

  // A token with this header and payload, signed by this key.
  std::string token(json header, const json& payload) const {
    if (!header.contains("alg")) header["alg"] = alg;
    if (!header.contains("kid") && jwk.contains("kid")) header["kid"] = jwk["kid"];
    const auto signing_input = b64url(header.dump()) + "." + b64url(payload.dump());
    return signing_input + "." + b64url(sign(signing_input));
  }
  std::string token(const json& payload) const { return token(json::object(), payload); }
};

const TestKey& rsa_key() {
  static const TestKey key = TestKey::rsa("r1");
  return key;
}
const TestKey& ec_key() {
  static const TestKey key = TestKey::ec("e1");
  return key;
}

constexpr std::int64_t now = 1'800'000'000;
const TokenRules rules{"https://issuer.example", "https://db.example/mcp", std::chrono::seconds(30)};

json claims() {
  return {{"iss", "https://issuer.example"}, {"aud", "https://db.example/mcp"}, {"sub", "alice"},
          {"client_id", "agent-1"},          {"exp", now + 300},              {"scope", "db:read  db:orders"}};
}

KeySet key_set(const std::vector<json>& jwks) { return parse_key_set(json{{"keys", jwks}}.dump()); }

std::variant<TokenIdentity, TokenRefusal> check(const std::string& token, const KeySet& keys) {
  return validate_token(token, keys, rules, now);
}

TokenRefusal refusal(const std::variant<TokenIdentity, TokenRefusal>& result) {
  REQUIRE(std::holds_alternative<TokenRefusal>(result));
  return std::get<TokenRefusal>(result);
}

}  // namespace

TEST_CASE("base64url decodes RFC 4648 vectors and refuses every other spelling", "[oauth]") {
  using rawtool::crypto::base64url_decode;
  CHECK(base64url_decode("") == std::string());
  CHECK(base64url_decode("Zg") == std::string("f"));
  CHECK(base64url_decode("Zm8") == std::string("fo"));
  CHECK(base64url_decode("Zm9v") == std::string("foo"));
  CHECK(base64url_decode("Zm9vYg") == std::string("foob"));
  CHECK(base64url_decode("_-8") == std::string("\xff\xef"));
  CHECK_FALSE(base64url_decode("Zg=="));  // padding
  CHECK_FALSE(base64url_decode("Z"));     // no encoding is 1 mod 4 long
  CHECK_FALSE(base64url_decode("Zh"));    // leftover bits not zero: a second spelling of "f"
  CHECK_FALSE(base64url_decode("Zm+v"));  // base64, not base64url
  CHECK_FALSE(base64url_decode("Zm 9v"));
}

TEST_CASE("a key set keeps RS256 and ES256 signing keys and counts the rest as ignored", "[oauth]") {
  auto hmac = json{{"kty", "oct"}, {"k", "c2VjcmV0"}, {"kid", "h"}};
  auto encryption = rsa_key().jwk;
  encryption["use"] = "enc";
  auto wrong_alg = rsa_key().jwk;
  wrong_alg["alg"] = "RS512";
  auto off_curve = ec_key().jwk;
  off_curve["y"] = off_curve["x"];
  const auto small = TestKey::rsa("small", 1024).jwk;
  const auto set = key_set({rsa_key().jwk, ec_key().jwk, hmac, encryption, wrong_alg, off_curve, small, json("x")});
  REQUIRE(set.keys.size() == 2);
  CHECK(set.keys[0].kid == "r1");
  CHECK(set.keys[0].alg == "RS256");
  CHECK(set.keys[1].alg == "ES256");
  CHECK(set.ignored == 6);
  CHECK_THROWS_AS(parse_key_set("[]"), std::invalid_argument);
  CHECK_THROWS_AS(parse_key_set("{\"keys\": {}}"), std::invalid_argument);
  CHECK_THROWS_AS(parse_key_set("not json"), std::invalid_argument);
}

TEST_CASE("a token signed by a key of the set, for this resource, in time, is accepted with its identity", "[oauth]") {
  const auto keys = key_set({rsa_key().jwk, ec_key().jwk});
  for (const auto* key : {&rsa_key(), &ec_key()}) {
    const auto result = check(key->token(claims()), keys);
    REQUIRE(std::holds_alternative<TokenIdentity>(result));
    const auto& identity = std::get<TokenIdentity>(result);
    CHECK(identity.subject == "alice");
    CHECK(identity.client_id == "agent-1");
    CHECK(identity.scopes == std::vector<std::string>{"db:read", "db:orders"});
    CHECK(identity.claims["sub"] == "alice");
  }
  // `aud` as an array naming the resource among others; `azp` when there is no client_id.
  auto c = claims();
  c["aud"] = json::array({"https://other.example", "https://db.example/mcp"});
  c.erase("client_id");
  c["azp"] = "agent-2";
  const auto result = check(rsa_key().token(c), keys);
  REQUIRE(std::holds_alternative<TokenIdentity>(result));
  CHECK(std::get<TokenIdentity>(result).client_id == "agent-2");
}

TEST_CASE("the token cannot choose its algorithm: none, HMAC and others are refused before any key", "[oauth]") {
  const auto keys = key_set({rsa_key().jwk});
  const auto payload = b64url(claims().dump());
  const auto none = b64url(json{{"alg", "none"}, {"kid", "r1"}}.dump()) + "." + payload + ".";
  CHECK(refusal(check(none, keys)) == TokenRefusal::algorithm);

  // HS256 keyed with the public key's bytes, the classic confusion.
  const auto input = b64url(json{{"alg", "HS256"}, {"kid", "r1"}}.dump()) + "." + payload;
  const auto secret = rsa_key().jwk["n"].get<std::string>();
  unsigned char mac[32];
  unsigned int mac_size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), reinterpret_cast<const unsigned char*>(input.data()),
       input.size(), mac, &mac_size);
  const auto hs = input + "." + b64url(std::string_view(reinterpret_cast<const char*>(mac), mac_size));
  CHECK(refusal(check(hs, keys)) == TokenRefusal::algorithm);

  for (const char* alg : {"RS512", "PS256", "ES384", "EdDSA", "rs256"}) {
    CHECK(refusal(check(rsa_key().token(json{{"alg", alg}}, claims()), keys)) == TokenRefusal::algorithm);
  }
  CHECK(refusal(check(rsa_key().token(json{{"crit", {"exp"}}}, claims()), keys)) == TokenRefusal::algorithm);
  // An ES256 token cannot be checked with the RSA key of the same kid.
  auto ec_with_rsa_kid = TestKey::ec("r1");
  CHECK(refusal(check(ec_with_rsa_kid.token(claims()), keys)) == TokenRefusal::unknown_key);
}

TEST_CASE("a kid not in the set, or no kid among several keys, is an unknown key", "[oauth]") {
  const auto other = TestKey::rsa("r2");
  CHECK(refusal(check(other.token(claims()), key_set({rsa_key().jwk}))) == TokenRefusal::unknown_key);
  CHECK(refusal(check(rsa_key().token(json{{"kid", 7}}, claims()), key_set({rsa_key().jwk}))) ==
        TokenRefusal::malformed);

  auto no_kid = rsa_key();
  no_kid.jwk.erase("kid");
  const auto unnamed = no_kid.token(claims());
  // Alone in the set, the key without a kid verifies a token without one...
  CHECK(std::holds_alternative<TokenIdentity>(check(unnamed, key_set({no_kid.jwk}))));
  // ...but with two RS256 keys the token would pick one by leaving the kid out.
  auto second = other.jwk;
  second.erase("kid");
  CHECK(refusal(check(unnamed, key_set({no_kid.jwk, second}))) == TokenRefusal::unknown_key);
}

TEST_CASE("a token whose signature does not verify is refused, whatever part was changed", "[oauth]") {
  const auto keys = key_set({rsa_key().jwk, ec_key().jwk});
  for (const auto* key : {&rsa_key(), &ec_key()}) {
    const auto token = key->token(claims());
    const auto first = token.find('.');
    const auto second = token.rfind('.');
    auto c = claims();
    c["sub"] = "mallory";
    const auto forged_payload = token.substr(0, first + 1) + b64url(c.dump()) + token.substr(second);
    CHECK(refusal(check(forged_payload, keys)) == TokenRefusal::signature);
    auto flipped = token;
    flipped[second + 5] = flipped[second + 5] == 'A' ? 'B' : 'A';
    CHECK(refusal(check(flipped, keys)) == TokenRefusal::signature);
    CHECK(refusal(check(token.substr(0, second + 1), keys)) == TokenRefusal::signature);
  }
  // Signed by another key under a kid of the set.
  const auto impostor = TestKey::rsa("r1");
  CHECK(refusal(check(impostor.token(claims()), keys)) == TokenRefusal::signature);
}

TEST_CASE("issuer, audience, expiry, not-before and subject are checked, with the leeway", "[oauth]") {
  const auto keys = key_set({rsa_key().jwk});
  const auto with = [&](const char* name, json value) {
    auto c = claims();
    if (value.is_null()) c.erase(name);
    else c[name] = std::move(value);
    return check(rsa_key().token(c), keys);
  };
  CHECK(refusal(with("iss", "https://issuer.example/")) == TokenRefusal::issuer);
  CHECK(refusal(with("iss", nullptr)) == TokenRefusal::issuer);
  CHECK(refusal(with("aud", "https://other.example/mcp")) == TokenRefusal::audience);
  CHECK(refusal(with("aud", json::array({"https://other.example"}))) == TokenRefusal::audience);
  CHECK(refusal(with("aud", nullptr)) == TokenRefusal::audience);
  CHECK(refusal(with("exp", nullptr)) == TokenRefusal::expired);
  CHECK(refusal(with("exp", "soon")) == TokenRefusal::expired);
  CHECK(refusal(with("exp", now - 30)) == TokenRefusal::expired);
  CHECK(std::holds_alternative<TokenIdentity>(with("exp", now - 29)));  // within the leeway
  CHECK(std::holds_alternative<TokenIdentity>(with("exp", static_cast<double>(now) + 0.5)));
  CHECK(refusal(with("nbf", now + 31)) == TokenRefusal::not_yet_valid);
  CHECK(std::holds_alternative<TokenIdentity>(with("nbf", now + 30)));
  CHECK(refusal(with("nbf", "later")) == TokenRefusal::not_yet_valid);
  CHECK(refusal(with("sub", nullptr)) == TokenRefusal::no_subject);
  CHECK(refusal(with("sub", "")) == TokenRefusal::no_subject);
  CHECK(refusal(with("sub", 42)) == TokenRefusal::no_subject);
}

TEST_CASE("text that is not a JWT is malformed, and so is one longer than the limit", "[oauth]") {
  const auto keys = key_set({rsa_key().jwk});
  const auto token = rsa_key().token(claims());
  for (const std::string& bad : {std::string(), std::string("abc"), std::string("a.b"), token + ".x",
                                std::string("!!.e30.AA"), b64url("[1]") + "." + b64url("{}") + ".AA",
                                b64url("{}") + "." + b64url("not json") + ".AA", token + "=="}) {
    CHECK(refusal(check(bad, keys)) == TokenRefusal::malformed);
  }
  auto c = claims();
  c["pad"] = std::string(max_token_bytes, 'x');
  CHECK(refusal(check(rsa_key().token(c), keys)) == TokenRefusal::malformed);
  for (auto r : {TokenRefusal::malformed, TokenRefusal::algorithm, TokenRefusal::unknown_key, TokenRefusal::signature,
                 TokenRefusal::issuer, TokenRefusal::audience, TokenRefusal::expired, TokenRefusal::not_yet_valid,
                 TokenRefusal::no_subject})
    CHECK_FALSE(describe(r).empty());
}

namespace {

// A gate over a key set the test controls, counting fetches.
struct Gate {
  explicit Gate(std::vector<json> jwks, std::size_t max_identities = 10000, std::chrono::milliseconds refetch = std::chrono::hours(1)) {
    log = rawtool::OperatorLog::open(rawtool::LogConfig{}, lines.sink());
    document = json{{"keys", std::move(jwks)}}.dump();
    OAuthSettings settings;
    settings.rules = rules;
    settings.scopes = {{"db:a", std::vector<std::string>{"a"}}, {"db:b", std::vector<std::string>{"b"}}, {"all", std::nullopt}};
    settings.required_scopes = {"mcp"};
    settings.databases = {"a", "b"};
    settings.refetch_interval = refetch;
    settings.max_identities = max_identities;
    gate = std::make_unique<OAuthGate>(
        settings,
        [this](const std::vector<std::string>& databases) {
          ++described;
          auto description = std::make_shared<ServerDescription>();
          description->all_database_labels = databases;
          return description;
        },
        *log,
        [this](const OAuthSettings&) {
          ++fetches;
          std::lock_guard lock(mutex);
          if (document.empty()) throw std::runtime_error("the key set server is down");
          return document;
        });
  }
  void publish(std::vector<json> jwks) {
    std::lock_guard lock(mutex);
    document = jwks.empty() ? std::string() : json{{"keys", std::move(jwks)}}.dump();
  }
  OAuthGate::Outcome check(const std::string& token) { return gate->check(token, now); }
  void refresh() {
    std::promise<void> done;
    gate->refresh([&] { done.set_value(); });
    done.get_future().wait();
  }

  rawtool::mcp::test::CapturedLines lines;
  std::shared_ptr<rawtool::OperatorLog> log;
  std::mutex mutex;
  std::string document;
  std::atomic<int> fetches{0};
  std::atomic<int> described{0};
  std::unique_ptr<OAuthGate> gate;
};

json scoped(const std::string& subject, const std::string& scope) {
  auto c = claims();
  c["sub"] = subject;
  c["scope"] = scope;
  return c;
}

}  // namespace

TEST_CASE("the gate gives each identity one client, with the databases of its scopes", "[oauth][gate]") {
  Gate g(std::vector<json>{rsa_key().jwk});
  g.gate->start();
  const auto a1 = g.check(rsa_key().token(scoped("alice", "mcp db:a")));
  REQUIRE(a1.kind == OAuthGate::Outcome::Kind::accepted);
  CHECK(a1.client->subject == "alice");
  CHECK(a1.client->client_id == "agent-1");
  CHECK(a1.client->name == "oauth");
  CHECK(a1.client->description->all_database_labels == std::vector<std::string>{"a"});
  REQUIRE(a1.claims);
  CHECK((*a1.claims)["sub"] == "alice");
  // Another token of the same identity: the same client, so its sessions are found.
  CHECK(g.check(rsa_key().token(scoped("alice", "db:a mcp"))).client == a1.client);
  // Another subject, or the same subject reaching other databases: another client.
  const auto b = g.check(rsa_key().token(scoped("bob", "mcp db:a")));
  const auto a2 = g.check(rsa_key().token(scoped("alice", "mcp db:a db:b")));
  CHECK(b.client != a1.client);
  CHECK(a2.client != a1.client);
  CHECK(a2.client->description->all_database_labels == std::vector<std::string>{"a", "b"});
  CHECK(g.check(rsa_key().token(scoped("carol", "mcp all"))).client->description->all_database_labels ==
        std::vector<std::string>{"a", "b"});
  // One description per set of databases, shared by the identities reaching it.
  CHECK(g.described == 2);
  CHECK(b.client->description == a1.client->description);
}

TEST_CASE("the gate refuses a token short of a scope, naming it", "[oauth][gate]") {
  Gate g(std::vector<json>{rsa_key().jwk});
  g.gate->start();
  const auto missing = g.check(rsa_key().token(scoped("alice", "db:a")));
  CHECK(missing.kind == OAuthGate::Outcome::Kind::insufficient_scope);
  CHECK(missing.scope == "mcp");
  const auto nowhere = g.check(rsa_key().token(scoped("alice", "mcp other")));
  CHECK(nowhere.kind == OAuthGate::Outcome::Kind::insufficient_scope);
  CHECK(nowhere.scope == "db:a db:b all");
  const auto invalid = g.check(rsa_key().token(json{{"alg", "none"}}, claims()));
  CHECK(invalid.kind == OAuthGate::Outcome::Kind::invalid);
  CHECK(invalid.refusal == TokenRefusal::algorithm);
}

TEST_CASE("the gate remembers at most max_identities identities", "[oauth][gate]") {
  Gate g(std::vector<json>{rsa_key().jwk}, 2);
  g.gate->start();
  CHECK(g.check(rsa_key().token(scoped("a", "mcp db:a"))).kind == OAuthGate::Outcome::Kind::accepted);
  CHECK(g.check(rsa_key().token(scoped("b", "mcp db:a"))).kind == OAuthGate::Outcome::Kind::accepted);
  CHECK(g.check(rsa_key().token(scoped("c", "mcp db:a"))).kind == OAuthGate::Outcome::Kind::busy);
  CHECK(g.check(rsa_key().token(scoped("a", "mcp db:a"))).kind == OAuthGate::Outcome::Kind::accepted);  // known
}

TEST_CASE("a key set that cannot be loaded is logged, refuses tokens, and a later fetch brings the keys", "[oauth][gate]") {
  Gate g(std::vector<json>{}, 10000, std::chrono::milliseconds(0));
  g.publish({});
  g.gate->start();
  CHECK(g.fetches == 1);
  CHECK(g.lines.all().find("the key set server is down") != std::string::npos);
  const auto token = rsa_key().token(scoped("alice", "mcp db:a"));
  CHECK(g.check(token).kind == OAuthGate::Outcome::Kind::unknown_key);
  g.publish({rsa_key().jwk});
  g.refresh();
  CHECK(g.fetches == 2);
  CHECK(g.check(token).kind == OAuthGate::Outcome::Kind::accepted);
  // A set whose every key is unusable keeps the keys there were.
  g.publish({json{{"kty", "oct"}, {"k", "c2VjcmV0"}}});
  g.refresh();
  CHECK(g.check(token).kind == OAuthGate::Outcome::Kind::accepted);
  CHECK(g.lines.all().find("holds no RS256 or ES256 signing key") != std::string::npos);
}

TEST_CASE("the key set is fetched again at most once per interval, whoever asks", "[oauth][gate]") {
  Gate g(std::vector<json>{rsa_key().jwk});
  g.gate->start();
  REQUIRE(g.fetches == 1);
  for (int i = 0; i < 5; ++i) g.refresh();  // each answered at once: fetched within the hour
  CHECK(g.fetches == 1);

  // With no interval, requests arriving during a fetch wait for it and are
  // all answered; none is lost.
  Gate eager({rsa_key().jwk}, 10000, std::chrono::milliseconds(0));
  std::atomic<int> answered{0};
  std::vector<std::thread> askers;
  for (int i = 0; i < 8; ++i) {
    askers.emplace_back([&] {
      std::promise<void> done;
      eager.gate->refresh([&] {
        ++answered;
        done.set_value();
      });
      done.get_future().wait();
    });
  }
  for (auto& t : askers) t.join();
  CHECK(answered == 8);
  CHECK(eager.fetches >= 1);
  CHECK(eager.fetches <= 8);
}

TEST_CASE("the metadata names the resource, its issuer and scopes, at the path RFC 9728 gives", "[oauth]") {
  CHECK(resource_metadata_path("https://db.example.com/mcp") == "/.well-known/oauth-protected-resource/mcp");
  CHECK(resource_metadata_path("https://db.example.com/") == "/.well-known/oauth-protected-resource");
  CHECK(resource_metadata_path("https://db.example.com") == "/.well-known/oauth-protected-resource");
  CHECK(resource_metadata_path("https://db.example.com/tenants/1/mcp?x=1") ==
        "/.well-known/oauth-protected-resource/tenants/1/mcp");
  CHECK(resource_metadata_url("https://db.example.com:8443/mcp") ==
        "https://db.example.com:8443/.well-known/oauth-protected-resource/mcp");
  OAuthSettings settings;
  settings.rules = rules;
  settings.scopes = {{"db:a", std::vector<std::string>{"a"}}, {"all", std::nullopt}};
  CHECK(resource_metadata(settings) == json{{"resource", "https://db.example/mcp"},
                                            {"authorization_servers", {"https://issuer.example"}},
                                            {"scopes_supported", {"db:a", "all"}},
                                            {"bearer_methods_supported", {"header"}}});
  settings.databases = {"a", "b", "c"};
  settings.scopes = {{"c_only", std::vector<std::string>{"c"}}, {"a_only", std::vector<std::string>{"a"}}};
  CHECK(databases_for(settings, {"c_only", "a_only"}) == std::vector<std::string>{"a", "c"});
  CHECK(databases_for(settings, {"other"}).empty());
}

TEST_CASE("a key set server that takes the connection but never answers fails the fetch at its deadline", "[oauth][fetch]") {
  // A listener that never accepts: the kernel completes the handshake and
  // holds the request, as a stalled or partitioned issuer would.
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(silent >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  auto* generic = reinterpret_cast<sockaddr*>(&address);
  REQUIRE(::bind(silent, generic, length) == 0);
  REQUIRE(::listen(silent, 4) == 0);
  REQUIRE(::getsockname(silent, generic, &length) == 0);
  const auto url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/jwks";
  CHECK_THROWS_WITH(http_get(url, std::chrono::milliseconds(200), 1 << 20),
                    "GET " + url + ": no answer within 200 ms");
  CHECK_THROWS_WITH(http_get("ftp://127.0.0.1/jwks", std::chrono::milliseconds(200), 1 << 20),
                    "GET ftp://127.0.0.1/jwks: is not an http:// or https:// URL");
  ::close(silent);
}
