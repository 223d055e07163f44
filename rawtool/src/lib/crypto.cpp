#include "lib/detail/crypto.hpp"

#include <rawtool/crypto.hpp>

namespace rawtool::detail {

std::string sha256_hex(std::string_view bytes) { return crypto::sha256_hex(bytes); }

std::string new_log_reference() { return "ref-" + crypto::random_hex(16); }

}  // namespace rawtool::detail
