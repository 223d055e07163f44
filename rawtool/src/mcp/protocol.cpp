#include "mcp/protocol.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>

namespace rawtool::mcp::detail {

namespace {

using nlohmann::json;

// Stands for params or arguments left out, so that present ones are read in
// place rather than copied.
const json& empty_object() {
  static const json empty = json::object();
  return empty;
}

constexpr std::array<std::string_view, 4> supported_versions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                                "2024-11-05"};

bool is_valid_id(const json& id) {
  return id.is_string() || id.is_number_integer();  // number_integer covers signed and unsigned
}

Action send_error(const json& id, ErrorCode code, std::string_view message) {
  return Send{error_response(id, code, message)};
}

// The outcome of checking a request's params: either the call goes ahead or
// the request is answered with invalid params.
struct ParamsProblem {
  std::string message;
};

// `_meta` may ride on any params object; when present it must be an object,
// and a progress token must be a string or an integer.
std::optional<ParamsProblem> check_meta(const json& params) {
  const auto meta = params.find("_meta");
  if (meta == params.end()) return std::nullopt;
  if (!meta->is_object()) return ParamsProblem{"params._meta must be an object"};
  const auto token = meta->find("progressToken");
  if (token != meta->end() && !is_valid_id(*token)) {
    return ParamsProblem{"params._meta.progressToken must be a string or an integer"};
  }
  return std::nullopt;
}

// Arguments must hold exactly the members the tool's inputSchema declares.
std::optional<ParamsProblem> check_members(const json& arguments, std::initializer_list<std::string_view> allowed,
                                           std::string_view tool) {
  for (const auto& [key, value] : arguments.items()) {
    bool known = false;
    for (const auto name : allowed) known = known || key == name;
    if (!known) {
      // The key is the caller's text; it is not echoed back.
      return ParamsProblem{std::string("arguments for ") + std::string(tool) + " hold a member the tool does not take"};
    }
  }
  return std::nullopt;
}

std::variant<ToolCall, ParamsProblem> read_tool_call(const json& params, const ServerDescription& server) {
  const auto name = params.find("name");
  if (name == params.end()) return ParamsProblem{"params.name is required"};
  if (!name->is_string()) return ParamsProblem{"params.name must be a string"};
  const json* arguments_member = &empty_object();
  if (const auto found = params.find("arguments"); found != params.end()) {
    if (!found->is_object()) return ParamsProblem{"params.arguments must be an object"};
    arguments_member = &*found;
  }
  const json& arguments = *arguments_member;
  const auto& tool = name->get_ref<const std::string&>();
  if (tool == "raw_sql" && server.raw_path_enabled) {
    if (auto problem = check_members(arguments, {"sql", "database"}, "raw_sql")) return *problem;
    const auto sql = arguments.find("sql");
    if (sql == arguments.end()) return ParamsProblem{"arguments.sql is required"};
    if (!sql->is_string()) return ParamsProblem{"arguments.sql must be a string"};
    RawSqlCall call{sql->get<std::string>(), {}};
    if (const auto database = arguments.find("database"); database != arguments.end()) {
      if (!database->is_string()) return ParamsProblem{"arguments.database must be a string"};
      const auto& labels = server.database_labels;
      if (std::find(labels.begin(), labels.end(), database->get_ref<const std::string&>()) == labels.end()) {
        // The caller's text is not echoed back; the labels are the operator's and passed their grammar.
        std::string known;
        for (const auto& label : labels) known += (known.empty() ? "" : ", ") + label;
        return ParamsProblem{"arguments.database names no configured database (configured: " + known + ")"};
      }
      call.database = database->get<std::string>();
    } else if (!server.database_labels.empty()) {
      call.database = server.database_labels.front();
    }
    return ToolCall{std::move(call)};
  }
  if (tool == "certified_query") {
    if (auto problem = check_members(arguments, {"name", "params"}, "certified_query")) return *problem;
    const auto query = arguments.find("name");
    if (query == arguments.end()) return ParamsProblem{"arguments.name is required"};
    if (!query->is_string()) return ParamsProblem{"arguments.name must be a string"};
    CertifiedQueryCall call{query->get<std::string>(), json::object()};
    if (const auto bound = arguments.find("params"); bound != arguments.end()) {
      if (!bound->is_object()) return ParamsProblem{"arguments.params must be an object"};
      call.params = *bound;
    }
    return ToolCall{std::move(call)};
  }
  if (tool == "describe_catalog") {
    if (auto problem = check_members(arguments, {}, "describe_catalog")) return *problem;
    return ToolCall{DescribeCatalogCall{}};
  }
  // The name is the caller's text; it is not echoed back.
  return ParamsProblem{"unknown tool: see tools/list for the tools this server has"};
}

json initialize_result(std::string_view version, const ServerDescription& server) {
  return json{{"protocolVersion", version},
              {"capabilities", {{"tools", json::object()}}},
              {"serverInfo", {{"name", "rawtool"}, {"title", "rawtool"}, {"version", server.version}}},
              {"instructions", server.instructions}};
}

std::optional<ParamsProblem> check_initialize(const json& params) {
  const auto version = params.find("protocolVersion");
  if (version == params.end()) return ParamsProblem{"params.protocolVersion is required"};
  if (!version->is_string()) return ParamsProblem{"params.protocolVersion must be a string"};
  const auto capabilities = params.find("capabilities");
  if (capabilities == params.end()) return ParamsProblem{"params.capabilities is required"};
  if (!capabilities->is_object()) return ParamsProblem{"params.capabilities must be an object"};
  const auto client = params.find("clientInfo");
  if (client == params.end()) return ParamsProblem{"params.clientInfo is required"};
  if (!client->is_object()) return ParamsProblem{"params.clientInfo must be an object"};
  for (const char* member : {"name", "version"}) {
    const auto value = client->find(member);
    if (value == client->end() || !value->is_string()) {
      return ParamsProblem{std::string("params.clientInfo.") + member + " must be a string"};
    }
  }
  return check_meta(params);
}

Action handle_request(const json& id, const std::string& method, const json& params, Session& session,
                      const ServerDescription& server) {
  if (method == "ping") {
    if (auto problem = check_meta(params)) return send_error(id, ErrorCode::invalid_params, problem->message);
    return Send{result_response(id, json::object())};
  }
  if (method == "initialize") {
    if (session.initialized) return send_error(id, ErrorCode::invalid_request, "initialize was already answered");
    if (auto problem = check_initialize(params)) return send_error(id, ErrorCode::invalid_params, problem->message);
    const auto version = negotiate_protocol_version(params["protocolVersion"].get_ref<const std::string&>());
    session.initialized = true;
    session.protocol_version = std::string(version);
    return Send{result_response(id, initialize_result(version, server))};
  }
  const bool tools_method = method == "tools/list" || method == "tools/call";
  if (!tools_method) return send_error(id, ErrorCode::method_not_found, "method not found");
  if (!session.initialized) {
    return send_error(id, ErrorCode::invalid_request, "the session is not initialized: send initialize first");
  }
  if (auto problem = check_meta(params)) return send_error(id, ErrorCode::invalid_params, problem->message);
  if (method == "tools/list") {
    if (const auto cursor = params.find("cursor"); cursor != params.end() && !cursor->is_string()) {
      return send_error(id, ErrorCode::invalid_params, "params.cursor must be a string");
    }
    // One page holds every tool; any cursor is past the end of it.
    return Send{result_response(id, json{{"tools", server.tools}})};
  }
  auto call = read_tool_call(params, server);
  if (auto* problem = std::get_if<ParamsProblem>(&call)) {
    return send_error(id, ErrorCode::invalid_params, problem->message);
  }
  json token;
  if (const auto meta = params.find("_meta"); meta != params.end()) token = meta->value("progressToken", json());
  return StartCall{id, std::move(std::get<ToolCall>(call)), std::move(token)};
}

Action handle_notification(const std::string& method, const json& params, Session& session) {
  if (method == "notifications/initialized") {
    session.client_ready = true;
    return Ignore{};
  }
  if (method == "notifications/cancelled") {
    const auto request = params.find("requestId");
    if (request == params.end() || !is_valid_id(*request)) {
      return Ignore{"notifications/cancelled without a valid requestId"};
    }
    return CancelCall{*request};
  }
  return Ignore{};
}

}  // namespace

std::string_view negotiate_protocol_version(std::string_view requested) noexcept {
  for (const auto version : supported_versions) {
    if (version == requested) return version;
  }
  return latest_protocol_version;
}

json error_response(const json& id, ErrorCode code, std::string_view message) {
  json response{{"jsonrpc", "2.0"}};
  if (!id.is_null()) response["id"] = id;
  response["error"] = json{{"code", static_cast<int>(code)}, {"message", message}};
  return response;
}

json result_response(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json progress_notification(const json& token, double progress, std::string_view message) {
  return json{{"jsonrpc", "2.0"},
              {"method", "notifications/progress"},
              {"params", {{"progressToken", token}, {"progress", progress}, {"message", message}}}};
}

json oversized_line_error(std::size_t max_line_bytes) {
  return error_response(json(), ErrorCode::invalid_request,
                        "message longer than " + std::to_string(max_line_bytes) + " bytes; it was skipped");
}

bool nests_deeper_than(std::string_view text, std::size_t max_depth) noexcept {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > max_depth) return true;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default: break;
    }
  }
  return false;
}

std::string id_key(const json& id) {
  // dump() distinguishes 1 from "1"; ensure_ascii keeps the key printable.
  return id.dump(-1, ' ', true, json::error_handler_t::replace);
}

std::variant<json, Send> read_message(std::string_view text, const LineLimits& limits) {
  if (!is_valid_utf8(text)) return Send{error_response(json(), ErrorCode::parse_error, "message is not valid UTF-8")};
  if (nests_deeper_than(text, limits.max_depth)) {
    return Send{error_response(json(), ErrorCode::invalid_request,
                               "message nests deeper than " + std::to_string(limits.max_depth) + " levels")};
  }
  json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) return Send{error_response(json(), ErrorCode::parse_error, "message is not valid JSON")};
  return message;
}

Action handle_line(std::string_view line, Session& session, const ServerDescription& server,
                   const LineLimits& limits) {
  auto read = read_message(line, limits);
  if (auto* error = std::get_if<Send>(&read)) return std::move(*error);
  return handle_message(std::get<json>(read), session, server);
}

Action handle_message(const json& message, Session& session, const ServerDescription& server) {
  if (message.is_array()) {
    return send_error(json(), ErrorCode::invalid_request, "batches are not supported: send one message per line");
  }
  if (!message.is_object()) return send_error(json(), ErrorCode::invalid_request, "a message must be a JSON object");

  const auto id_member = message.find("id");
  const bool has_id = id_member != message.end();
  if (has_id && !is_valid_id(*id_member)) {
    return send_error(json(), ErrorCode::invalid_request, "id must be a string or an integer");
  }
  const json id = has_id ? *id_member : json();

  const auto version = message.find("jsonrpc");
  if (version == message.end() || !version->is_string() || version->get_ref<const std::string&>() != "2.0") {
    return send_error(id, ErrorCode::invalid_request, "jsonrpc must be \"2.0\"");
  }
  const auto method_member = message.find("method");
  if (method_member == message.end()) {
    if (has_id && (message.contains("result") || message.contains("error"))) {
      return Ignore{"a response to a request the server never sent"};
    }
    return send_error(id, ErrorCode::invalid_request, "method is required");
  }
  if (!method_member->is_string()) return send_error(id, ErrorCode::invalid_request, "method must be a string");
  const auto& method = method_member->get_ref<const std::string&>();

  const json* params = &empty_object();
  if (const auto found = message.find("params"); found != message.end()) {
    if (!found->is_object()) {
      if (!has_id) return Ignore{"a notification whose params are not an object"};
      return send_error(id, ErrorCode::invalid_params, "params must be an object");
    }
    params = &*found;
  }
  if (!has_id) return handle_notification(method, *params, session);
  return handle_request(id, method, *params, session, server);
}

}  // namespace rawtool::mcp::detail
