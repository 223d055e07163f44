#include "mcp/protocol.hpp"

#include "mcp/tools.hpp"

#include <rawtool/render/status.hpp>

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

// A tool's arguments that do not fit its inputSchema: answered as a tool
// result with isError (SEP-1303), so the model reads which argument and
// which rule, in rawtool's words.
struct ToolArgumentError {
  Label tool;
  ArgumentError error;
};

// "a, b and c" from labels that passed their grammar.
Trusted label_list(const std::vector<std::string>& labels) {
  Trusted text;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i != 0) text += i + 1 == labels.size() ? Literal(" and ") : Literal(", ");
    text += Label::checked(labels[i]);
  }
  return text;
}

// Arguments must hold exactly the members the tool's inputSchema declares; an
// undeclared one is echoed back escaped, since it is the caller's text.
std::optional<ArgumentError> check_members(const json& arguments, const std::vector<std::string>& allowed, const Label& tool) {
  for (const auto& [key, value] : arguments.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    ArgumentError error = argument_error(
        Label(), ArgumentRule::unknown_parameter,
        allowed.empty() ? Trusted::format("{} takes no arguments", tool)
                        : Trusted::format("an argument was given that {} does not take; it takes {}", tool, label_list(allowed)));
    error.given = Untrusted(key);
    return error;
  }
  return std::nullopt;
}

// A string argument: absent is nullopt, present and not a string an error.
std::variant<std::optional<std::string>, ArgumentError> string_argument(const json& arguments, const Label& name) {
  const auto found = arguments.find(name.view());
  if (found == arguments.end()) return std::optional<std::string>();
  if (!found->is_string()) return argument_type_error(name, "a string", *found);
  return std::optional<std::string>(found->get<std::string>());
}

using ToolCallOrProblem = std::variant<ToolCall, ParamsProblem, ToolArgumentError>;

// raw_sql and raw_sql_write: one statement, on one of the tool's databases.
ToolCallOrProblem read_raw_sql(const json& arguments, const Label& tool, const std::vector<std::string>& labels,
                               const ServerDescription& server) {
  if (auto problem = check_members(arguments, {"sql", "database"}, tool)) return ToolArgumentError{tool, std::move(*problem)};
  auto sql = string_argument(arguments, Label("sql"));
  if (auto* problem = std::get_if<ArgumentError>(&sql)) return ToolArgumentError{tool, std::move(*problem)};
  if (!std::get<std::optional<std::string>>(sql))
    return ToolArgumentError{tool, argument_error(Label("sql"), ArgumentRule::missing, Literal("is required: one SQL statement"))};
  RawSqlCall call{std::move(*std::get<std::optional<std::string>>(sql)), {}};
  auto database = string_argument(arguments, Label("database"));
  if (auto* problem = std::get_if<ArgumentError>(&database)) return ToolArgumentError{tool, std::move(*problem)};
  if (auto& label = std::get<std::optional<std::string>>(database)) {
    if (std::find(labels.begin(), labels.end(), *label) == labels.end()) {
      // The caller's text is not echoed back; the labels are the operator's and passed their grammar.
      const bool configured = std::find(server.all_database_labels.begin(), server.all_database_labels.end(), *label) !=
                              server.all_database_labels.end();
      return ToolArgumentError{
          tool, configured ? argument_error(Label("database"), ArgumentRule::enum_value,
                                            Trusted::format("names a database {} does not run on; it runs on {}", tool, label_list(labels)))
                           : argument_error(Label("database"), ArgumentRule::unknown_database,
                                            Trusted::format("names no configured database; {} runs on {}", tool, label_list(labels)))};
    }
    call.database = std::move(*label);
  } else if (!labels.empty()) {
    call.database = labels.front();
  }
  return ToolCall{std::move(call)};
}

// Binds the query's claim-bound parameters from `claims`: an argument the
// agent passed for one is refused, and so is a call whose token lacks the
// claim (or carries it as anything but a string or a number).
std::optional<ToolArgumentError> bind_claims(CertifiedQueryCall& call, const Label& tool, const ServerDescription& server,
                                             const json* claims) {
  const auto bound = server.claim_parameters.find(call.name);
  if (bound == server.claim_parameters.end()) return std::nullopt;
  for (const auto& [parameter, claim] : bound->second) {
    const Label name = Label::checked(parameter);
    if (call.params.contains(parameter)) {
      return ToolArgumentError{tool, argument_error(name, ArgumentRule::unknown_parameter,
                                                    Literal("is set from the caller's identity; leave it out"))};
    }
    const auto value = claims != nullptr ? claims->find(claim) : json::const_iterator{};
    if (claims == nullptr || value == claims->end() || !(value->is_string() || value->is_number())) {
      return ToolArgumentError{tool, argument_error(name, ArgumentRule::missing,
                                                    Literal("is set from the caller's OAuth token, which does not carry "
                                                            "the claim it needs; the query cannot run for this caller"))};
    }
    call.params[parameter] = *value;
  }
  return std::nullopt;
}

ToolCallOrProblem read_tool_call(const json& params, const ServerDescription& server, const json* claims) {
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
  if (server.raw_path_enabled && tool == "raw_sql")
    return read_raw_sql(arguments, Label("raw_sql"), server.database_labels, server);
  if (server.raw_path_enabled && tool == "raw_sql_write" && !server.write_database_labels.empty())
    return read_raw_sql(arguments, Label("raw_sql_write"), server.write_database_labels, server);
  if (tool == "certified_query" && server.certified_query_tool) {
    const Label self("certified_query");
    if (auto problem = check_members(arguments, {"name", "params"}, self)) return ToolArgumentError{self, std::move(*problem)};
    auto query = string_argument(arguments, Label("name"));
    if (auto* problem = std::get_if<ArgumentError>(&query)) return ToolArgumentError{self, std::move(*problem)};
    auto& query_name = std::get<std::optional<std::string>>(query);
    if (!query_name)
      return ToolArgumentError{self, argument_error(Label("name"), ArgumentRule::missing,
                                                    Literal("is required: the name of a query describe_catalog lists"))};
    const auto& names = server.catalog_names;
    if (std::find(names.begin(), names.end(), *query_name) == names.end()) {
      // The caller's text is not echoed back; the catalog's names passed their grammar.
      return ToolArgumentError{
          self, argument_error(Label("name"), ArgumentRule::enum_value,
                               names.empty() ? Trusted(Literal("names no query: the catalog is empty"))
                                             : Trusted::format("names no query in the catalog; its queries are {}", label_list(names)))};
    }
    CertifiedQueryCall call{std::move(*query_name), json::object()};
    if (const auto bound = arguments.find("params"); bound != arguments.end()) {
      if (!bound->is_object())
        return ToolArgumentError{self, argument_type_error(Label("params"), "an object of parameter values", *bound)};
      call.params = *bound;
    }
    if (auto problem = bind_claims(call, self, server, claims)) return std::move(*problem);
    return ToolCall{std::move(call)};
  }
  for (const auto& [tool_name, query_name] : server.query_tools) {
    if (tool != tool_name) continue;
    // A per-query tool's arguments are the query's parameters; the Tool binds
    // and checks them, and names the parameter and the rule when one does not fit.
    CertifiedQueryCall call{query_name, arguments};
    if (auto problem = bind_claims(call, Label::checked(tool_name), server, claims)) return std::move(*problem);
    return ToolCall{std::move(call)};
  }
  if (tool == "describe_catalog") {
    const Label self("describe_catalog");
    if (auto problem = check_members(arguments, {}, self)) return ToolArgumentError{self, std::move(*problem)};
    return ToolCall{DescribeCatalogCall{server.all_database_labels}};
  }
  if (tool == "describe_schema") {
    auto read = schema_arguments_from_json(arguments);
    if (auto* problem = std::get_if<ArgumentError>(&read)) return ToolArgumentError{Label("describe_schema"), std::move(*problem)};
    auto& schema = std::get<SchemaArguments>(read);
    const auto& labels = server.all_database_labels;
    if (schema.database.empty() && !labels.empty()) {
      schema.database = labels.front();
    } else if (!schema.database.empty() && std::find(labels.begin(), labels.end(), schema.database) == labels.end()) {
      // A database the session does not reach reads as one not configured; the caller's text is not echoed back.
      return ToolArgumentError{Label("describe_schema"),
                               argument_error(Label("database"), ArgumentRule::unknown_database,
                                              Trusted::format("names no configured database; describe_schema runs on {}",
                                                              label_list(labels)))};
    }
    return ToolCall{DescribeSchemaCall{std::move(schema.request), std::move(schema.database)}};
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
                      const ServerDescription& server, const json* claims) {
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
  auto call = read_tool_call(params, server, claims);
  if (auto* problem = std::get_if<ParamsProblem>(&call)) {
    return send_error(id, ErrorCode::invalid_params, problem->message);
  }
  if (auto* problem = std::get_if<ToolArgumentError>(&call)) {
    auto rendered = render::render_argument_error(problem->tool, problem->error, server.render);
    return Send{result_response(id, call_result(rendered.text(), rendered.structured(), true, server.structured_content))};
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

Action handle_message(const json& message, Session& session, const ServerDescription& server, const json* claims) {
  if (message.is_array()) {
    return send_error(json(), ErrorCode::invalid_request, "batches are not supported: send one message at a time");
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
  return handle_request(id, method, *params, session, server, claims);
}

}  // namespace rawtool::mcp::detail
