// Fuzzes the MCP request reader and dispatcher: the input is split on LF and
// every line goes through handle_line with one session, as the server reads
// them. Invariants: nothing throws; every answer is one JSON-RPC 2.0 response
// with a result or an error of the closed set, an id that is a string or an
// integer or none at all (never null), the id of the request when there was
// one; notifications are never answered; a tool call starts only after
// initialize.

#include "mcp/protocol.hpp"
#include "mcp/tools.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

namespace {

using nlohmann::json;
using namespace rawtool::mcp::detail;

void check(bool holds) {
  if (!holds) std::abort();
}

const ServerDescription& server() {
  static const ServerDescription description = [] {
    ToolSettings settings;
    settings.catalog_names = {"q"};
    ServerDescription d;
    d.version = "fuzz";
    d.tools = describe_tools(settings);
    d.instructions = server_instructions(settings);
    return d;
  }();
  return description;
}

// The id the line carried when it parses as an object with a valid one.
json request_id(std::string_view line) {
  if (!is_valid_utf8(line) || nests_deeper_than(line, 64)) return json();
  const json message = json::parse(line, nullptr, false);
  if (!message.is_object()) return json();
  const auto id = message.find("id");
  if (id == message.end() || !(id->is_string() || id->is_number_integer())) return json();
  return *id;
}

void check_answer(const json& message, std::string_view line) {
  check(message.is_object());
  check(message.value("jsonrpc", "") == "2.0");
  check(message.contains("result") != message.contains("error"));
  const json id = request_id(line);
  if (message.contains("id")) {
    check(message["id"].is_string() || message["id"].is_number_integer());
    check(message["id"] == id);
  } else {
    check(message.contains("error"));
  }
  if (message.contains("error")) {
    const int code = message["error"]["code"].get<int>();
    check(code == -32700 || code == -32600 || code == -32601 || code == -32602);
    check(message["error"]["message"].is_string());
  }
  // The wire form is ASCII-only and one line.
  const std::string wire = message.dump(-1, ' ', true);
  check(wire.find('\n') == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Session session;
  std::size_t start = 0;
  while (start <= input.size()) {
    const std::size_t end = std::min(input.find('\n', start), input.size());
    const std::string_view line = input.substr(start, end - start);
    const bool was_initialized = session.initialized;
    const Action action = handle_line(line, session, server());
    if (const auto* send = std::get_if<Send>(&action)) {
      check_answer(send->message, line);
    } else if (const auto* start_call = std::get_if<StartCall>(&action)) {
      check(was_initialized);
      check(start_call->id == request_id(line));
      const json& token = start_call->progress_token;
      check(token.is_null() || token.is_string() || token.is_number_integer());
    } else if (const auto* cancel = std::get_if<CancelCall>(&action)) {
      check(cancel->request_id.is_string() || cancel->request_id.is_number_integer());
      check(request_id(line).is_null());  // only a notification cancels
    }
    start = end + 1;
  }
  return 0;
}
