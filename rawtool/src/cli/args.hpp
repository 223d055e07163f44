#pragma once

// Shared command-line parsing for every subcommand: options are declared up
// front, so an unknown option, a missing value or a stray argument is a usage
// error (exit status 2) named in rawtool's own words.

#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rawtool::cli {

/// The documented exit statuses of every subcommand.
enum class Exit : int {
  ok = 0,       ///< rows, success
  failure = 1,  ///< the database failed, the tool refused, or a status-only certified failure
  usage = 2,    ///< bad command line, bad input, or a configuration error
};

/// A command line that cannot be run; what() is rawtool's own text.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One option a subcommand accepts.
struct OptionSpec {
  std::string_view name;        ///< with the leading "--", e.g. "--config"
  std::string_view value_name;  ///< empty for a flag, e.g. "FILE" for a valued option
};

/// A parsed command line. Options may be given as "--name value" or
/// "--name=value"; "--" ends the options, so an argument that begins with "-"
/// (e.g. SQL starting with a "--" comment) can follow it.
class Args {
public:
  /// Throws UsageError for an unknown option, a missing value, or an option given twice.
  Args(std::span<const std::string_view> argv, std::span<const OptionSpec> specs);

  [[nodiscard]] bool flag(std::string_view name) const;
  [[nodiscard]] std::optional<std::string> value(std::string_view name) const;
  [[nodiscard]] const std::vector<std::string>& positionals() const noexcept { return positionals_; }
  [[nodiscard]] bool help() const noexcept { return help_; }

private:
  std::map<std::string, std::string, std::less<>> values_;
  std::vector<std::string> flags_;
  std::vector<std::string> positionals_;
  bool help_ = false;
};

}  // namespace rawtool::cli
