#pragma once

// Shared pieces of the library's tests: temporary folders and files, a log
// sink that keeps what it is given, the PostgreSQL server named by the
// environment, and walks over the structured half of a reply.

#include <rawtool/tool.hpp>

#include "pg_url.hpp"
#include "temp_dir.hpp"
#include "untrusted_bytes.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rawtool::test {

/// A log sink that keeps every line, for tests that read the server log.
class CapturedLog {
public:
  LogSink sink();
  [[nodiscard]] std::vector<std::string> lines() const;
  /// Every line joined with LF.
  [[nodiscard]] std::string all() const;

private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

/// Every object key at any depth.
std::vector<std::string> all_keys(const nlohmann::json& value);

/// Every string value at any depth (keys excluded).
std::vector<std::string> all_strings(const nlohmann::json& value);

/// True when `text` contains `needle`.
bool contains(const std::string& text, const std::string& needle);

/// A unique name for objects a test makes on the shared server: `prefix` and random hex.
std::string unique_name(const std::string& prefix);

}  // namespace rawtool::test
