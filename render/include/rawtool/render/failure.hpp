#pragma once

#include <rawtool/outcome.hpp>
#include <rawtool/render/surface.hpp>

namespace rawtool::render {

/// Renders the database's reply to the caller's own statement (raw path) on
/// both surfaces. The text surface is: a header line written by the renderer
/// (path, driver, grammar-checked SQLSTATE or SQLite extended code with its
/// condition name, severity); the boundary notice; an opening marker with a
/// fresh random nonce; each non-empty untrusted field under a label the
/// renderer writes, quoted per line with "> "; the closing marker.
///
/// Refuses (Rendered::refused, see render_withheld) when a code fails its
/// grammar, when the text would exceed options.budget, or when the post-render
/// self-check fails. Never shortens or scrubs. Thread-safe.
Rendered render_failure(const Failure& failure, const Provenance& provenance, const RenderOptions& options);

/// The failure as a JSON object for the server log: every field, untrusted
/// ones through to_json. Used by the certified path, whose caller sees none of it.
nlohmann::json failure_log_record(const Failure& failure);

}  // namespace rawtool::render
