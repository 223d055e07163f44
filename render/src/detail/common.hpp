#pragma once

// Pieces every surface shares: nonces, hashing, the header-field grammars,
// provenance, and the post-render self-check. Private to render/ and test support.

#include <rawtool/crypto.hpp>
#include <rawtool/render/contract.hpp>
#include <rawtool/render/surface.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rawtool::render::detail {

/// contract::nonce_hex_digits lower-case hex digits from the CSPRNG, fresh
/// each call. Throws std::runtime_error when the generator fails.
std::string fresh_nonce();

/// SHA-256 with field framing, as every digest rawtool shows is computed.
using Sha256 = crypto::Sha256;

/// ^[0-9A-Z]{5}$
bool valid_sqlstate(std::string_view code) noexcept;
/// One of ERROR FATAL PANIC WARNING NOTICE DEBUG INFO LOG.
bool valid_severity(std::string_view severity) noexcept;

/// "1.234": milliseconds with three decimals.
std::string elapsed_ms_text(const Provenance& provenance);
double elapsed_ms(const Provenance& provenance);

/// "raw (uncertified)" or "certified <name>@<first 12 hex of the catalog hash>".
std::string path_text(const Provenance& provenance);

/// {"raw_provenance": {...}} or {"certified_provenance": {...}}: the member
/// name itself says which path, so the two can never be confused.
void add_provenance(nlohmann::json& object, const Provenance& provenance);

/// A nonce and how many times it must occur in the rendered text.
using NonceUse = std::pair<std::string, std::size_t>;

/// The renderer's check of its own output before anything leaves it: every
/// line begins with a prefix the renderer writes; the text is valid UTF-8; no
/// code point of the escape set stands raw (LF aside), and no combining mark
/// follows a "> " prefix; every nonce occurs exactly as often as expected.
/// Returns the first problem found, in rawtool's words, or empty text.
Trusted self_check(std::string_view text, const std::vector<NonceUse>& nonces);

/// True when `line` (without its LF) is a label line the renderer writes:
/// ^[a-z][a-z0-9 _]*:$
bool is_label_line(std::string_view line) noexcept;

}  // namespace rawtool::render::detail
