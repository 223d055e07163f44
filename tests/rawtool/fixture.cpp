#include "fixture.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <random>

namespace rawtool::test {

namespace {
std::string random_hex(std::size_t digits) {
  static std::mutex mutex;
  static std::mt19937_64 engine{std::random_device{}()};
  std::lock_guard lock(mutex);
  std::string out;
  for (std::size_t i = 0; i < digits; ++i) out += "0123456789abcdef"[engine() % 16];
  return out;
}

void walk(const nlohmann::json& value, std::vector<std::string>* keys, std::vector<std::string>* strings) {
  if (value.is_object()) {
    for (const auto& item : value.items()) {
      if (keys != nullptr) keys->push_back(item.key());
      walk(item.value(), keys, strings);
    }
  } else if (value.is_array()) {
    for (const auto& item : value) walk(item, keys, strings);
  } else if (value.is_string() && strings != nullptr) {
    strings->push_back(value.get<std::string>());
  }
}
}  // namespace


LogSink CapturedLog::sink() {
  return [this](std::string_view line) {
    std::lock_guard lock(mutex_);
    lines_.emplace_back(line);
  };
}

std::vector<std::string> CapturedLog::lines() const {
  std::lock_guard lock(mutex_);
  return lines_;
}

std::string CapturedLog::all() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& line : lines_) out += line + "\n";
  return out;
}

std::vector<std::string> all_keys(const nlohmann::json& value) {
  std::vector<std::string> keys;
  walk(value, &keys, nullptr);
  return keys;
}

std::vector<std::string> all_strings(const nlohmann::json& value) {
  std::vector<std::string> strings;
  walk(value, nullptr, &strings);
  return strings;
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

std::string unique_name(const std::string& prefix) { return prefix + "_" + random_hex(12); }

}  // namespace rawtool::test
