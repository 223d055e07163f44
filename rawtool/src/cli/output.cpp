#include "cli/output.hpp"

#include <rawtool/render/escape.hpp>
#include <rawtool/render/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <unistd.h>

namespace rawtool::cli {

namespace {

constexpr std::string_view bold_cyan = "\x1b[1;36m";
constexpr std::string_view dim = "\x1b[2m";
constexpr std::string_view reset = "\x1b[0m";

// Prefixes the renderer writes at column 0 of its own lines. Untrusted bytes
// never stand at column 0, so a line that begins with one of these is the
// renderer's; only the prefix itself is coloured.
constexpr std::string_view own_prefixes[] = {"rawtool:"};
constexpr std::string_view quote_prefix = "> ";

}  // namespace

bool stdout_wants_colour() {
  return ::isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr;
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string colourize(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const std::string_view line = text.substr(0, eol == std::string_view::npos ? text.size() : eol + 1);
    text.remove_prefix(line.size());
    std::string_view colour;
    std::size_t prefix_size = 0;
    for (std::string_view prefix : own_prefixes) {
      if (line.starts_with(prefix)) {
        colour = bold_cyan;
        prefix_size = prefix.size();
        break;
      }
    }
    if (prefix_size == 0 && line.starts_with(quote_prefix)) {
      colour = dim;
      prefix_size = quote_prefix.size();
    }
    if (prefix_size == 0) {
      out.append(line);
      continue;
    }
    out.append(colour);
    out.append(line.substr(0, prefix_size));
    out.append(reset);
    out.append(line.substr(prefix_size));
  }
  return out;
}

void print_text_surface(std::string_view text) {
  if (stdout_wants_colour()) {
    write_all(STDOUT_FILENO, colourize(text));
  } else {
    write_all(STDOUT_FILENO, text);
  }
  if (!text.empty() && text.back() != '\n') {
    write_all(STDOUT_FILENO, "\n");
  }
}

Exit print_reply(const Reply& reply, bool json) {
  if (json) {
    write_all(STDOUT_FILENO, render::dump(reply.structured()) + "\n");
  } else {
    print_text_surface(reply.text());
  }
  return reply.is_error() ? Exit::failure : Exit::ok;
}

void print_log_pointer(std::string_view command, const Reply& reply, const LogConfig& log) {
  const nlohmann::json& s = reply.structured();
  std::string under;
  if (s.contains("reference") && s.at("reference").is_string()) {
    under = "reference " + s.at("reference").get<std::string>();
  } else if (s.contains("withheld_sha256") && s.at("withheld_sha256").is_string()) {
    under = "withheld_sha256 " + s.at("withheld_sha256").get<std::string>();
  } else {
    return;
  }
  std::string where;
  switch (log.destination.value_or(LogDestination::standard_error)) {
    case LogDestination::standard_error:
      return;
    case LogDestination::syslog:
      where = "syslog (identity rawtool)";
      break;
    case LogDestination::file: {
      // The operator's path, shown escaped like a cell so that an odd byte in
      // it cannot act on the terminal.
      where = "the file ";
      render::append_escaped(where, Untrusted(log.path.string()), render::EscapeContext::cell, render::RenderOptions{});
      break;
    }
  }
  print_error(command, "the details are in the operator log, " + where + ", under " + under +
                           "; the agent is not shown them");
}

void print_error(std::string_view command, std::string_view message) {
  std::string line = "rawtool: ";
  if (!command.empty()) {
    line.append(command);
    line.append(": ");
  }
  line.append(message);
  line.push_back('\n');
  write_all(STDERR_FILENO, line);
}

}  // namespace rawtool::cli
