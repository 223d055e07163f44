#pragma once

// A scratch folder for tests that need files (databases, configurations,
// catalogs), removed with its contents when the test is done.

#include <filesystem>
#include <string_view>

namespace rawtool::test {

/// A fresh folder under the system's temporary folder, removed with its contents.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// Writes `content` to `name` inside the folder and returns the full path.
  /// Throws std::runtime_error when the file cannot be written.
  std::filesystem::path write(std::string_view name, std::string_view content) const;

private:
  std::filesystem::path path_;
};

}  // namespace rawtool::test
