#pragma once

// A SQLite shop database, a catalog and configuration files in a scratch
// folder, for driving the real binary.

#include "process.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace rawtool::test {

/// Bytes planted in the database by "someone else"; a certified failure must
/// never show them, a raw one shows them only quoted.
inline constexpr std::string_view shop_canary = "canary-5f3a9e";
/// A word that appears only in the catalog's descriptions.
inline constexpr std::string_view prose_canary = "prose-canary-81d2";

class ShopFixture {
public:
  ShopFixture();

  /// Writes a configuration file naming the database and the catalog, with
  /// `extra` (e.g. R"("catalog_prose": "omitted")") added to the top-level
  /// object, and returns its path.
  std::filesystem::path config(std::string_view name, std::string_view extra = {}) const;

  [[nodiscard]] const std::filesystem::path& folder() const noexcept { return scratch_.path(); }
  [[nodiscard]] std::filesystem::path database() const { return scratch_.path() / "shop.db"; }

private:
  ScratchFolder scratch_;
};

}  // namespace rawtool::test
