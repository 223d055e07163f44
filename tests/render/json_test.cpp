#include <rawtool/render/json.hpp>

#include "digest.hpp"
#include "oracle.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace std::string_literals;
using rawtool::Untrusted;

TEST_CASE("valid UTF-8 is carried as an exact JSON string", "[render][json]") {
  for (const std::string& text : {""s, "plain"s, "caf\xc3\xa9"s, "\xe2\x80\xae rlo"s, std::string("nul\0inside", 10), "\xf3\xa0\x81\xa7"s}) {
    const auto j = rawtool::render::to_json(Untrusted(text));
    REQUIRE(j.is_string());
    CHECK(j.get<std::string>() == text);
  }
}

TEST_CASE("invalid UTF-8 is carried losslessly as base64 and marked, never as U+FFFD", "[render][json]") {
  const std::string bytes = "ok \xff\xfe \xc0\xaf \xed\xa0\x80 \xe2\x82";
  const auto j = rawtool::render::to_json(Untrusted(bytes));
  REQUIRE(j.is_object());
  CHECK(j["encoding"] == "base64");
  CHECK(j["invalid_utf8"] == true);
  CHECK(rawtool::test::json_bytes(j) == bytes);
  CHECK(rawtool::render::dump(j).find("\\ufffd") == std::string::npos);
}

TEST_CASE("base64 carriage round-trips every length and byte", "[render][json]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::size_t length = 1; length < 300; ++length) {
    std::string bytes = "\xff";
    for (std::size_t i = 1; i < length; ++i) bytes.push_back(static_cast<char>(byte(rng)));
    const auto j = rawtool::render::to_json(Untrusted(bytes));
    CHECK(rawtool::test::json_bytes(nlohmann::json::parse(rawtool::render::dump(j))) == bytes);
  }
}

TEST_CASE("dump writes every non-ASCII code point and control as an escape", "[render][json]") {
  const auto j = rawtool::render::to_json(Untrusted("a\xe2\x80\xae\x7f\x1b\n\xf0\x9f\x98\x80"s));
  const std::string wire = rawtool::render::dump(nlohmann::json{{"v", j}});
  for (char c : wire) {
    const auto b = static_cast<unsigned char>(c);
    CHECK((b >= 0x20 && b < 0x7F));
  }
  CHECK(wire == R"({"v":"a\u202e\u007f\u001b\n\ud83d\ude00"})");
  CHECK(nlohmann::json::parse(wire)["v"] == j);
}

namespace {

using rawtool::render::dump;
using rawtool::render::log_text_bound;
using rawtool::render::to_log_json;

// Values whose bytes cost the most characters in dump(), and whose cuts can
// fall inside multi-byte sequences or beside invalid bytes.
std::vector<std::pair<std::string, std::string>> long_values() {
  std::vector<std::pair<std::string, std::string>> values;
  auto repeat = [](const std::string& unit, std::size_t total) {
    std::string out;
    while (out.size() < total) out += unit;
    return out;
  };
  values.emplace_back("ascii", repeat("E", 5000));
  values.emplace_back("controls (6 characters each)", repeat("\x01\x1b\x7f", 5000));
  values.emplace_back("quotes and backslashes", repeat("\"\\", 5000));
  values.emplace_back("two-byte", repeat("\xc3\xa9", 5000));
  values.emplace_back("three-byte", repeat("\xe2\x80\xae", 5000));
  values.emplace_back("four-byte", repeat("\xf0\x9f\x98\x80", 5000));
  values.emplace_back("mixed widths", repeat("a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\n", 5000));
  values.emplace_back("invalid from the start", repeat("\xff\xfe", 5000));
  // One invalid byte at every offset around the places a cut can fall.
  for (std::size_t at : {0UL, 1UL, 100UL, 700UL, 765UL, 766UL, 767UL, 768UL, 1020UL, 1021UL, 1022UL, 4000UL}) {
    std::string v = repeat("\xe4\xb8\xad", 5000);
    v[at] = '\xff';
    values.emplace_back("three-byte with an invalid byte at " + std::to_string(at), v);
  }
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 20; ++i) {
    std::string v;
    for (int k = 0; k < 3000; ++k) v.push_back(static_cast<char>(byte(rng)));
    values.emplace_back("random bytes " + std::to_string(i), v);
  }
  return values;
}

// The first code point's length at `bytes[at]`, as a strict decoder sees it; 0 when none starts there.
std::size_t sequence_length(const std::string& bytes, std::size_t at) {
  const auto b = static_cast<unsigned char>(bytes[at]);
  std::size_t len = b < 0x80 ? 1 : b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
  if (len == 0 || at + len > bytes.size()) return 0;
  // Whether the sequence is well-formed, by asking nlohmann's own strict UTF-8 check.
  try {
    (void)nlohmann::json(bytes.substr(at, len)).dump(-1, ' ', true, nlohmann::json::error_handler_t::strict);
    return len;
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
}

}  // namespace

TEST_CASE("an untrusted log member that fits the bound is exactly to_json's form", "[render][json][log]") {
  for (const std::string& text : {""s, "plain"s, "caf\xc3\xa9"s, "x\xff"s, std::string(1000, 'a'),
                                  std::string(log_text_bound - 2, 'a'), std::string(170, '\x01')}) {
    const Untrusted value(text);
    CHECK(to_log_json(value) == rawtool::render::to_json(value));
  }
  // One more byte and it no longer fits: 1022 characters between the quotes is the most.
  const auto over = to_log_json(Untrusted(std::string(log_text_bound - 1, 'a')));
  REQUIRE(over.is_object());
  CHECK(over["truncated"] == true);
}

TEST_CASE("a log member past the bound keeps the longest prefix that fits, with the whole value's size and SHA-256",
          "[render][json][log]") {
  for (const auto& [name, bytes] : long_values()) {
    INFO(name);
    const auto j = to_log_json(Untrusted(bytes));
    REQUIRE(j.is_object());
    CHECK(j["truncated"] == true);
    CHECK(j["bytes"] == bytes.size());
    CHECK(j["sha256"] == rawtool::test::sha256_hex(bytes));
    const auto kept = j["kept_bytes"].get<std::size_t>();
    REQUIRE(kept < bytes.size());
    // What is kept is kept exactly, encoded as to_json encodes it.
    CHECK(j["prefix"] == rawtool::render::to_json(Untrusted(bytes.substr(0, kept))));
    CHECK(rawtool::test::json_bytes(j["prefix"]) == bytes.substr(0, kept));
    // It fits, and the whole member stays within the documented overhead.
    CHECK(dump(j["prefix"]).size() <= log_text_bound);
    CHECK(dump(j).size() <= log_text_bound + 200);
    // The cut never falls inside a well-formed UTF-8 sequence.
    for (std::size_t at = kept >= 3 ? kept - 3 : 0; at < kept; ++at) {
      const std::size_t len = sequence_length(bytes, at);
      if (len > 0 && (static_cast<unsigned char>(bytes[at]) & 0xC0) != 0x80) CHECK(at + len <= kept);
    }
    if (j["prefix"].is_string()) {
      // Longest: one more code point would not fit.
      const std::size_t next = sequence_length(bytes, kept);
      if (next > 0) CHECK(dump(nlohmann::json(bytes.substr(0, kept + next))).size() > log_text_bound);
    } else {
      // Carried as base64 (4 characters per 3 bytes): most of the room is used.
      CHECK(kept + 3 >= (log_text_bound - 60) / 4 * 3);
    }
  }
}

TEST_CASE("a 200 MB value becomes a bounded log member with its size and digest", "[render][json][log]") {
  const std::string huge(200'000'000, 'E');
  const auto j = to_log_json(Untrusted(huge));
  CHECK(dump(j).size() <= log_text_bound + 200);
  CHECK(j["bytes"] == huge.size());
  CHECK(j["sha256"] == rawtool::test::sha256_hex(huge));
  CHECK(j["kept_bytes"] == log_text_bound - 2);
}
