#pragma once

#include <rawtool/outcome.hpp>
#include <rawtool/render/surface.hpp>

#include <cstddef>
#include <string>

namespace rawtool::render {

/// Renders the database's reply to the caller's own statement (raw path) on
/// both surfaces. The text surface is: a header line written by the renderer
/// (path, driver, grammar-checked SQLSTATE or SQLite extended code with its
/// condition name, severity); the boundary notice; an opening marker with a
/// fresh random nonce; each non-empty untrusted field under a label the
/// renderer writes, quoted per line with "> ", and each field the engine sent
/// empty (Failure::sent_empty) under its label with contract::sent_empty_marker
/// in place of the quote ("" on the structured surface; a field not sent has
/// neither label nor member); the closing marker.
///
/// Rows the statement sent before it failed are counted in the header
/// (`rows_before_failure=N`) and in a line of rawtool's own, never shown. A
/// count the driver does not know (Failure::rows_before_failure empty) is
/// said to be unknown there (`rows_before_failure=unknown`, null on the
/// structured surface), never shown as none.
///
/// Within options.budget the failure's own fields come before its notices:
/// the notices are shown in order while they fit, and those past the budget
/// are counted in the header (`notices_not_shown=N`), in a "left out" line of
/// rawtool's own and in the structured member "notices_not_shown" (present
/// only then), so that a failure is never withheld for its notices.
///
/// Refuses (Rendered::refused) when the driver withheld the failure's text for
/// its size (Failure::withheld; reason `limit`), when a code fails its grammar (SQLSTATE
/// ^[0-9A-Z]{5}$, severity in ERROR FATAL PANIC WARNING NOTICE DEBUG INFO LOG,
/// SQLite code defined by sqlite3.h; for the failure and for every notice),
/// when the text would exceed options.budget with no notice shown, when the post-render self-check
/// fails, or when `provenance` is not the raw path (a certified failure shows
/// no database text). A refusal carries the reason, the sizes, the SQLSTATE
/// where it is valid and withheld_sha256(failure), and none of the untrusted
/// text. Never shortens or scrubs. Thread-safe.
///
/// Structured surface: {"kind":"raw_failure","path":"raw","engine","sqlstate",
/// "condition","severity","sqlite_code","sqlite_code_name","position",
/// "internal_position","untrusted_notice","untrusted":{"message",...,
/// "notices":[...]},"raw_provenance":{...}}; a refusal is {"kind":"refusal",...}.
Rendered render_failure(const Failure& failure, const Provenance& provenance, const RenderOptions& options);

/// The SHA-256 (hex) that a refusal shows for correlation with the server
/// log. What is hashed: each of these fields as an 8-byte big-endian length
/// followed by its bytes, in this order: severity, sqlstate, message, detail,
/// hint, context, internal_query, schema, table, column, datatype, constraint,
/// statement; then for each notice in order: severity, sqlstate, message,
/// detail, hint, context. It does not depend on the render options. For a
/// failure the driver withheld (Failure::withheld), it is the driver's digest
/// of the full fields instead, the bytes no longer being at hand.
std::string withheld_sha256(const Failure& failure);

/// Notices a log record carries in full (each field bounded); the rest are counted.
inline constexpr std::size_t log_notices_kept = 4;

/// The failure as a JSON object for the operator log: every field, untrusted
/// ones through to_log_json (exact when short, else a bounded prefix with the
/// whole value's size and SHA-256), the first log_notices_kept notices
/// ("notices_not_logged" counts the rest), and "withheld_sha256" over every
/// byte of every field and notice. However large the failure, its dump() stays
/// under 48 KiB. Used by the certified path, whose caller sees none of it, and
/// for raw failures the renderer withheld.
nlohmann::json failure_log_record(const Failure& failure);

}  // namespace rawtool::render
