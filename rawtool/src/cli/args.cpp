#include "cli/args.hpp"

#include <algorithm>

namespace rawtool::cli {

namespace {

const OptionSpec* find_spec(std::span<const OptionSpec> specs, std::string_view name) {
  auto it = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.name == name; });
  return it == specs.end() ? nullptr : &*it;
}

}  // namespace

Args::Args(std::span<const std::string_view> argv, std::span<const OptionSpec> specs) {
  bool options_done = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string_view arg = argv[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      positionals_.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const OptionSpec* spec = find_spec(specs, name);
    if (spec == nullptr) {
      throw UsageError("unknown option " + std::string(name));
    }
    if (spec->value_name.empty()) {
      if (inline_value) {
        throw UsageError("option " + std::string(name) + " takes no value");
      }
      if (flag(name)) {
        throw UsageError("option " + std::string(name) + " given twice");
      }
      flags_.emplace_back(name);
      continue;
    }
    std::string value;
    if (inline_value) {
      value = std::string(*inline_value);
    } else if (i + 1 < argv.size()) {
      value = std::string(argv[++i]);
    } else {
      throw UsageError("option " + std::string(name) + " needs a value (" + std::string(spec->value_name) + ")");
    }
    if (!values_.emplace(std::string(name), std::move(value)).second) {
      throw UsageError("option " + std::string(name) + " given twice");
    }
  }
}

bool Args::flag(std::string_view name) const {
  return std::find(flags_.begin(), flags_.end(), name) != flags_.end();
}

std::optional<std::string> Args::value(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    return std::nullopt;
  }
  return it->second;
}

}  // namespace rawtool::cli
