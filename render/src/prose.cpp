#include <rawtool/render/prose.hpp>

#include "detail/common.hpp"
#include "detail/escape.hpp"
#include "detail/prose.hpp"
#include "detail/untrusted_access.hpp"

#include <rawtool/render/json.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace rawtool::render {

namespace detail {

std::string append_prose_block(std::string& out, std::string_view label, const Untrusted& prose,
                               const RenderOptions& options) {
  const std::string label_line = fmt::format("{}:", label);
  if (!is_label_line(label_line)) throw std::invalid_argument("append_prose: a label must match ^[a-z][a-z0-9 _]*$");
  if (options.catalog_prose == CatalogProse::omitted) {
    out += fmt::format("{}{}: omitted by configuration (catalog_prose=omitted)\n", contract::own_prefix, label);
    return {};
  }
  if (options.brief) {  // under the one notice its listing gives (describe_catalog's first line)
    out += label_line;
    out += '\n';
    quote_lines(out, UntrustedAccess::bytes(prose), contract::quote_prefix, options.ascii_only);
    return {};
  }
  std::string nonce = fresh_nonce();
  const std::string block = contract::catalog_prose_block_for(label);
  out += contract::begin_marker(block, nonce);
  out += contract::own_prefix;
  out += contract::catalog_prose_boundary;
  out += '\n';
  out += label_line;
  out += '\n';
  quote_lines(out, UntrustedAccess::bytes(prose), contract::quote_prefix, options.ascii_only);
  out += contract::end_marker(block, nonce);
  return nonce;
}

}  // namespace detail

void append_prose(std::string& out, std::string_view label, const Untrusted& prose, const RenderOptions& options) {
  detail::append_prose_block(out, label, prose, options);
}

nlohmann::json prose_json(const Untrusted& prose, const RenderOptions& options) {
  if (options.catalog_prose == CatalogProse::omitted) return nullptr;
  return to_json(prose);
}

}  // namespace rawtool::render
