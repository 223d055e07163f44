#pragma once

// What load and fault runs need from their surroundings: scratch folders,
// SQLite files, the PostgreSQL URL from the environment, and the binary.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace rawtool::reliability {

/// A fresh folder under the system's temporary folder, removed with its contents.
class ScratchDir {
public:
  explicit ScratchDir(std::string_view prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// Writes `text` to `name` inside the folder; returns the full path. Throws on failure.
  std::filesystem::path write(std::string_view name, std::string_view text) const;

private:
  std::filesystem::path path_;
};

/// Creates the SQLite file `file` by running `script`. Throws on failure.
void make_sqlite_file(const std::filesystem::path& file, std::string_view script);

/// The environment variable `name`, or nullopt when unset or empty.
std::optional<std::string> environment(const char* name);

}  // namespace rawtool::reliability
