#pragma once

#include <rawtool/driver.hpp>
#include <rawtool/render/options.hpp>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rawtool {

/// A configuration that cannot be served. what() names the field, e.g.
/// "databases[0].limits.max_rows: must be a positive integer".
class ConfigError : public std::runtime_error {
public:
  ConfigError(std::string field, const std::string& problem);
  [[nodiscard]] const std::string& field() const noexcept { return field_; }

private:
  std::string field_;
};

struct DatabaseConfig {
  /// Operator's name for the database: 1-64 of [A-Za-z0-9_.-]; shown in provenance.
  std::string label = "default";
  /// PostgreSQL URL or libpq string, or a SQLite path / ":memory:".
  std::string target;
  AccessMode access = AccessMode::read_only;
  Limits limits;
  /// Connections kept for this database; calls beyond it wait.
  std::size_t pool_size = 4;
};

struct Config {
  /// The first database is the default one.
  std::vector<DatabaseConfig> databases;
  /// When false the raw path does not exist (not merely refusing).
  bool raw_path = true;
  /// Path of the catalog of pinned queries (JSON); none means an empty catalog.
  std::optional<std::filesystem::path> catalog;
  render::RenderOptions render;
  /// Tool calls served at once by the MCP server.
  std::size_t max_concurrent_calls = 4;
};

/// Parses a JSON configuration. Relative paths resolve against `base_dir`.
/// Database targets left out come from RAWTOOL_DATABASE_URL, then the PG*
/// environment. Throws ConfigError naming the field.
Config parse_config(std::string_view json_text, const std::filesystem::path& base_dir);

/// Reads and parses a configuration file. Throws ConfigError.
Config load_config(const std::filesystem::path& file);

}  // namespace rawtool
