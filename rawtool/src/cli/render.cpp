// rawtool render: one failure, read as JSON on stdin, rendered exactly as the
// raw path renders a database's reply. For gateways written in other
// languages: they hand rawtool the fields and show the agent what it prints.

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/failure_input.hpp"
#include "cli/output.hpp"

#include <rawtool/render/failure.hpp>
#include <rawtool/render/json.hpp>

#include <array>
#include <cerrno>
#include <charconv>
#include <string>
#include <unistd.h>

namespace rawtool::cli {

namespace {

constexpr std::string_view help =
    "Usage: rawtool render [--json] [--ascii-only] [--budget BYTES] [--hide-statement]\n"
    "                      [--label NAME] < failure.json\n"
    "\n"
    "Reads ONE database failure as a JSON object on stdin and prints it as the raw\n"
    "path would: the text surface (untrusted fields quoted line by line inside\n"
    "boundaries with a fresh nonce), or the structured surface with --json. For\n"
    "gateways written in other languages.\n"
    "\n"
    "Input members (only \"engine\" is required):\n"
    "  engine or driver   \"postgresql\" or \"sqlite\"\n"
    "  sqlstate           PostgreSQL's SQLSTATE (TEXT; its grammar is checked)\n"
    "  code               SQLite's extended result code (integer)\n"
    "  severity, message, detail, hint, context, statement,\n"
    "  internal_query, schema, table, column, datatype, constraint   TEXT\n"
    "  position, internal_position                                   integer\n"
    "  notices            array of objects with severity, sqlstate, message,\n"
    "                     detail, hint, context (each TEXT)\n"
    "TEXT is a JSON string, or {\"base64\": \"...\"} for bytes that are not UTF-8.\n"
    "null means the member was not sent. Anything else (not JSON, not an object,\n"
    "an unknown or repeated member, a wrong type, bad base64, trailing characters,\n"
    "more than 4 MiB) is refused with a message on stderr and exit status 2.\n"
    "\n"
    "Options:\n"
    "  --json             print the structured surface (one JSON line)\n"
    "  --ascii-only       escape every character from U+0080 up\n"
    "  --budget BYTES     largest text rendering shown (default 16384); over it,\n"
    "                     a refusal is printed instead, never a shortened text\n"
    "  --hide-statement   leave the caller's statement out of the rendering\n"
    "  --label NAME       database label shown in the header (default \"gateway\")\n"
    "\n"
    "Exit status:\n"
    "  0  the failure was rendered\n"
    "  1  the renderer refused (a code failed its grammar, the budget was passed,\n"
    "     or its self-check failed); the refusal is printed instead\n"
    "  2  usage error or malformed input\n";

constexpr std::string_view examples =
    "  echo '{\"engine\": \"postgresql\", \"sqlstate\": \"42P01\", \"message\": \"relation \\\"x\\\" does not exist\"}' | rawtool render\n"
    "  echo '{\"engine\": \"sqlite\", \"code\": 1, \"message\": \"no such table: x\"}' | rawtool render --json\n";

constexpr std::array<OptionSpec, 5> options{{
    {"--json", ""},
    {"--ascii-only", ""},
    {"--budget", "BYTES"},
    {"--hide-statement", ""},
    {"--label", "NAME"},
}};

std::string read_stdin_bounded() {
  std::string input;
  std::array<char, 65536> buffer{};
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw InputError("cannot read stdin");
    }
    if (n == 0) {
      return input;
    }
    input.append(buffer.data(), static_cast<std::size_t>(n));
    if (input.size() > max_failure_input_bytes) {
      throw InputError("input is larger than " + std::to_string(max_failure_input_bytes) + " bytes");
    }
  }
}

std::size_t parse_budget(const std::string& text) {
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0) {
    throw UsageError("--budget must be a positive number of bytes");
  }
  return value;
}

}  // namespace

int run_render(Arguments argv) {
  const Args args(argv, options);
  if (args.help()) {
    write_all(1, std::string(help) + std::string(examples_lead) + std::string(examples));
    return static_cast<int>(Exit::ok);
  }
  if (!args.positionals().empty()) {
    throw UsageError("render takes no arguments; the failure is read from stdin");
  }
  render::RenderOptions render_options;
  render_options.ascii_only = args.flag("--ascii-only");
  render_options.show_statement = !args.flag("--hide-statement");
  if (auto budget = args.value("--budget")) {
    render_options.budget = parse_budget(*budget);
  }
  render::Provenance provenance;
  provenance.path = render::PathKind::raw;
  const auto label = Label::parse(args.value("--label").value_or("gateway"));
  if (!label) {
    throw UsageError("--label must be 1-64 characters of A-Z a-z 0-9 _ . -");
  }
  provenance.database_label = *label;

  Failure failure;
  try {
    failure = parse_failure_input(read_stdin_bounded());
  } catch (const InputError& e) {
    // InputError's text is rawtool's own; unknown names in it were escaped.
    print_error("render", e.what());
    return static_cast<int>(Exit::usage);
  }
  provenance.engine = failure.engine;

  const render::Rendered rendered = render::render_failure(failure, provenance, render_options);
  if (args.flag("--json")) {
    write_all(STDOUT_FILENO, render::dump(rendered.structured()) + "\n");
  } else {
    print_text_surface(rendered.text());
  }
  return static_cast<int>(rendered.refused() ? Exit::failure : Exit::ok);
}

}  // namespace rawtool::cli
