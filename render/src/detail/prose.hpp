#pragma once

#include <rawtool/render/options.hpp>
#include <rawtool/untrusted.hpp>

#include <string>
#include <string_view>

namespace rawtool::render::detail {

/// append_prose, returning the nonce of the block it wrote (which occurs
/// twice, in its two markers), or empty text when the prose was omitted.
std::string append_prose_block(std::string& out, std::string_view label, const Untrusted& prose,
                               const RenderOptions& options);

}  // namespace rawtool::render::detail
