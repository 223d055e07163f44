// The byte-level checks every reader of outside input shares.

#include <rawtool/render/bytes.hpp>

#include <catch2/catch.hpp>

#include <random>
#include <string>

using rawtool::render::decode_base64;
using rawtool::render::encode_base64;
using rawtool::render::first_invalid_utf8;
using rawtool::render::is_valid_utf8;

TEST_CASE("base64 decoding inverts encoding for every length and byte", "[render][bytes]") {
  std::mt19937 random(20261129);
  for (std::size_t length = 0; length < 64; ++length) {
    std::string bytes(length, '\0');
    for (auto& b : bytes) b = static_cast<char>(random() & 0xFFu);
    const auto decoded = decode_base64(encode_base64(bytes));
    REQUIRE(decoded.has_value());
    REQUIRE(*decoded == bytes);
  }
  REQUIRE(encode_base64("\xC0\xAF") == "wK8=");
}

TEST_CASE("base64 decoding refuses every spelling but the canonical one", "[render][bytes]") {
  CHECK(decode_base64("wK8=") == std::string("\xC0\xAF"));
  CHECK_FALSE(decode_base64("wK9=").has_value());   // unused bits set
  CHECK_FALSE(decode_base64("wK8").has_value());    // unpadded
  CHECK_FALSE(decode_base64("wK8=\n").has_value()); // whitespace
  CHECK_FALSE(decode_base64("wK-_").has_value());   // URL alphabet
  CHECK_FALSE(decode_base64("w=K8").has_value());   // padding inside
}

TEST_CASE("first_invalid_utf8 points at the first byte that is not well-formed UTF-8", "[render][bytes]") {
  CHECK_FALSE(first_invalid_utf8("plain \xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF").has_value());
  CHECK(first_invalid_utf8("ab\xC0\xAF") == std::size_t{2});          // overlong
  CHECK(first_invalid_utf8("a\xED\xA0\x80") == std::size_t{1});       // surrogate
  CHECK(first_invalid_utf8("abc\xE2\x80") == std::size_t{3});         // truncated
  CHECK(first_invalid_utf8("\x80") == std::size_t{0});                // stray continuation
  CHECK(first_invalid_utf8("ok\xF5\x80\x80\x80") == std::size_t{2});  // past U+10FFFF
  CHECK(first_invalid_utf8(std::string_view("a\0b\xFF", 4)) == std::size_t{3});
  CHECK(is_valid_utf8(std::string_view("a\0b", 3)));
  CHECK_FALSE(is_valid_utf8("\xFF"));
}
