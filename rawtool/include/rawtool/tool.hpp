#pragma once

#include <rawtool/config.hpp>
#include <rawtool/render/surface.hpp>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace rawtool {

/// One reply, both halves. `is_error` is true for failures, refusals and
/// statuses; the text and structured halves always describe the same thing.
struct Reply {
  std::string text;
  nlohmann::json structured;
  bool is_error = false;
};

/// Lets another thread cancel one call. Pass it in CallOptions; cancel() from
/// any thread stops the statement if it runs and makes the call return a
/// cancelled refusal. Thread-safe.
class Cancellation {
public:
  Cancellation();
  void cancel() noexcept;
  [[nodiscard]] bool cancelled() const noexcept;

private:
  friend class Tool;
  struct State;
  std::shared_ptr<State> state_;
};

struct CallOptions {
  /// Label of the database to use; empty means the first configured one.
  std::string database;
  Cancellation* cancellation = nullptr;
};

/// rawtool's library API: the raw path and the certified path over a pool of
/// connections per configured database. Safe for concurrent calls from many
/// threads.
class Tool {
public:
  /// Validates the configuration and loads the catalog. Throws ConfigError
  /// before anything is served; does not connect.
  static std::unique_ptr<Tool> open(Config config);
  ~Tool();

  /// The caller's own SQL, one statement, configured access mode and limits.
  /// A failure is rendered as untrusted content. When the raw path is switched
  /// off, raw() is absent from every surface and this returns a refusal.
  Reply raw(std::string_view sql, const CallOptions& options = {});

  /// A pinned query by name with bound parameters (a JSON object; values of
  /// the declared type, or strings in that type's textual form). On failure:
  /// a status from the closed set and a log reference, no database text; the
  /// complaint goes to stderr as one JSON line under that reference.
  Reply certified(std::string_view name, const nlohmann::json& params, const CallOptions& options = {});

  /// The catalog: names, parameters, and descriptions as the catalog_prose
  /// setting says.
  Reply describe_catalog() const;

  [[nodiscard]] bool raw_path_enabled() const noexcept;
  [[nodiscard]] const Config& config() const noexcept;

private:
  struct Impl;
  explicit Tool(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rawtool
