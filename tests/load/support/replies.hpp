#pragma once

// Reading replies for load and fault runs: both halves of a reply as one
// value whichever surface produced it, and the per-call canaries that prove a
// reply belongs to its own call.

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <string_view>

namespace rawtool::reliability {

/// One reply as the caller saw it: the text half, the structured half, the
/// error flag, and every byte that reached the caller (the whole response line
/// for MCP; text and structured dump for the library).
struct Answer {
  std::string text;
  nlohmann::json structured;
  bool is_error = false;
  std::string wire;
};

/// The reply inside a tools/call response line; nullopt-like empty Answer with
/// `structured` null when the line is a JSON-RPC error or malformed.
Answer answer_of_mcp(const std::string& line, const nlohmann::json& message);

/// `structured["kind"]` or "".
std::string kind_of(const Answer& answer);

/// A token unique to one call: "cnry" + client (3 digits) + "x" + call (5
/// digits) + "q". Only letters and digits, so every surface carries it as is.
std::string canary(unsigned client, unsigned call);

/// Every canary-shaped token in `text`.
std::set<std::string> canaries_in(std::string_view text);

}  // namespace rawtool::reliability
