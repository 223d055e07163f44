// OAuth access tokens checked without a socket: keys made here with OpenSSL,
// tokens signed here, and every refusal the transport relies on.

#include "mcp/http_oauth.hpp"

#include <rawtool/crypto.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>

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
