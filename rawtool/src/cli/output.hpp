#pragma once

// How the program writes: replies on stdout exactly as the library rendered
// them (colour only on the renderer's own lines, only on a terminal), and its
// own complaints on stderr.

#include "cli/args.hpp"

#include <rawtool/tool.hpp>

#include <string>
#include <string_view>

namespace rawtool::cli {

/// True when stdout is a terminal and NO_COLOR is not set at all.
[[nodiscard]] bool stdout_wants_colour();

/// Writes every byte to the file descriptor, retrying short writes. Returns
/// false if the descriptor is gone.
bool write_all(int fd, std::string_view bytes);

/// `text` with terminal colour added to the prefixes of the lines the renderer
/// wrote itself. Colour is chosen from the renderer's line prefixes only, never
/// from the content of a line; quoted and row lines are left as they are.
[[nodiscard]] std::string colourize(std::string_view text);

/// Writes a text surface to stdout, colourized when stdout_wants_colour().
void print_text_surface(std::string_view text);

/// Prints one reply, the text surface or (json) the structured one serialised
/// by render::dump, and returns the exit status it stands for.
Exit print_reply(const Reply& reply, bool json);

/// When `reply` points at the operator log (a reference, or the digest of a
/// withheld raw reply), says on stderr, in one line of rawtool's words, where
/// that log is and under what to look. Nothing when the log is stderr itself:
/// the line is there already.
void print_log_pointer(std::string_view command, const Reply& reply, const LogConfig& log);

/// "rawtool: <command>: <message>" on stderr. `message` must be rawtool's own words.
void print_error(std::string_view command, std::string_view message);

}  // namespace rawtool::cli
