#include <rawtool/config.hpp>

namespace rawtool {

ConfigError::ConfigError(std::string field, const std::string& problem)
    : std::runtime_error(field.empty() ? problem : field + ": " + problem), field_(std::move(field)) {}

}  // namespace rawtool
