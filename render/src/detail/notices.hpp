#pragma once

// The notices a statement raised, shown the same way beside a failure and
// beside rows. Private to render/.

#include "common.hpp"

#include <rawtool/outcome.hpp>
#include <rawtool/render/options.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rawtool::render::detail {

/// A labelled untrusted field: the text-surface label and the structured
/// member are the renderer's words; the value is not.
struct Field {
  std::string_view label;
  std::string_view member;
  const Untrusted* value;
};

/// A notice's prose fields, in the order they are shown.
std::array<Field, 4> notice_fields(const Notice& n);

/// "label:" on its own line, then the value quoted per line with "> ".
void append_field(std::string& t, std::string_view label, const Untrusted& value, const RenderOptions& options);

/// Bytes of notice text a rendering shows (prose fields, plus header codes
/// that fail their grammar and are therefore quoted as data).
std::size_t notice_bytes(const std::vector<Notice>& notices);

/// For each notice: "rawtool: notice i of N[; severity=S][; sqlstate=C (name)]",
/// then its non-empty fields labelled "notice i message:" and so on. A severity
/// or SQLSTATE that fails its grammar never stands in that line: it is quoted
/// as data under "notice i unrecognised severity:" / "notice i unrecognised sqlstate:".
void append_notices(std::string& t, const std::vector<Notice>& notices, const RenderOptions& options);

/// Notice `i` of `notices` alone, as append_notices writes it.
void append_notice(std::string& t, const std::vector<Notice>& notices, std::size_t i, const RenderOptions& options);

/// The notices as a structured array: each {"severity","sqlstate"} (null when
/// not sent) plus its non-empty fields, every value exact (to_json). Only the
/// first `count` notices, when fewer are shown.
nlohmann::json notices_json(const std::vector<Notice>& notices, std::size_t count = SIZE_MAX);

/// The SHA-256 fields of the notices, for withheld_sha256.
void hash_notices(Sha256& h, const std::vector<Notice>& notices);

}  // namespace rawtool::render::detail
