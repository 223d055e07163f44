#pragma once

#include <rawtool/argument_error.hpp>
#include <rawtool/render/surface.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace rawtool::render {

/// The closed set of outcomes a certified query can report on failure.
enum class Status { invalid_arguments, not_found, timeout, unavailable, execution_failed, refused };

/// The status's stable name, e.g. "execution_failed".
std::string_view status_name(Status status) noexcept;

/// Renders a status-only reply: the status, the certified query's name (a
/// validated catalog identifier), a log reference, and a short explanation the
/// tool wrote. No database text can reach it: it takes none. Structured:
/// {"kind":"certified_status","status","reference","explanation",
/// "certified_provenance":{...}}. `log_reference` must match
/// ^[A-Za-z0-9._:-]{1,128}$ and the provenance must be showable text;
/// otherwise std::invalid_argument (a caller's bug, not a database's reply).
Rendered render_status(Status status, const Provenance& provenance, std::string_view log_reference);

/// The unavailable status with its cause, in rawtool's words from a closed
/// set: "status=unavailable; cause=authentication_failed", and a sentence on
/// what to check; structured, a "cause" member. Still no connection text.
Rendered render_unavailable(const Provenance& provenance, std::string_view log_reference, UnavailableCause cause);

/// The same for an invalid_arguments status, which also says which argument
/// and which rule, in rawtool's words: "rawtool: argument limit: must be at
/// most 100 (rule=maximum)"; an unknown parameter's name, and any value
/// echoed back, is the caller's and is quoted per line under a label
/// ("name given:"), escaped, never in a line rawtool writes. Structured: an
/// "argument" member {"name" (null for an unknown parameter), "rule",
/// "explanation", "given" (to_json, when echoed)}. Nothing is withheld, so
/// it names no log reference. Still no database text.
Rendered render_status(const Provenance& provenance, const ArgumentError& argument, const RenderOptions& options);

/// A tool call whose arguments do not fit, before anything ran: "rawtool:
/// invalid argument; tool=NAME; rule=RULE", the argument line as above, and
/// a line saying nothing ran. Structured: {"kind":"argument_error","tool",
/// "argument":{...}}. `tool` is a Label of rawtool's own tools.
Rendered render_argument_error(const Label& tool, const ArgumentError& argument, const RenderOptions& options);

/// Renders a refusal the tool wrote (Refusal::explanation is rawtool's text,
/// still escaped, each of its lines led by "rawtool: "). Structured:
/// {"kind":"refusal","reason","explanation", provenance member}.
Rendered render_refusal(const Refusal& refusal, const Provenance& provenance);

}  // namespace rawtool::render
