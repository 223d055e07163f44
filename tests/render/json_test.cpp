#include <rawtool/render/json.hpp>

#include "oracle.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <string>

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
