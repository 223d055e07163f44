#pragma once

// The JSON-RPC and MCP layer as pure functions: one message and the
// session's state in, one action out. No I/O, no threads, no database, so it
// can be unit-tested and fuzzed on its own; the Dispatcher carries the
// actions out.

#include <rawtool/render/bytes.hpp>
#include <rawtool/render/options.hpp>
#include <rawtool/arguments.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rawtool::mcp::detail {

/// JSON-RPC 2.0 error codes the server answers with.
enum class ErrorCode : int {
  parse_error = -32700,
  invalid_request = -32600,
  method_not_found = -32601,
  invalid_params = -32602,
  internal_error = -32603,
  /// Implementation-defined: no room now (the queue of waiting tool calls,
  /// a token's calls, the memory budget); the same request may succeed later.
  server_busy = -32000,
};

/// Protocol versions the server speaks, newest first.
inline constexpr std::string_view latest_protocol_version = "2025-11-25";
/// Returns `requested` when the server speaks it, otherwise the latest version.
std::string_view negotiate_protocol_version(std::string_view requested) noexcept;

/// Limits applied to one line before it is parsed.
struct LineLimits {
  /// Deepest nesting of arrays and objects accepted (checked before parsing,
  /// so the parser never sees a deeper document).
  std::size_t max_depth = 64;
};

/// A call of one of the server's tools, with arguments already validated
/// against the tool's inputSchema.
struct RawSqlCall {
  std::string sql;
  /// The configured database to run on; empty means the first.
  std::string database;
};
struct CertifiedQueryCall {
  std::string name;
  nlohmann::json params = nlohmann::json::object();
};
struct DescribeCatalogCall {
  /// The labels of the databases whose queries the session is shown.
  std::vector<std::string> databases;
};
struct DescribeSchemaCall {
  SchemaRequest request;
  /// The configured database to describe; empty means the first.
  std::string database;
};
using ToolCall = std::variant<RawSqlCall, CertifiedQueryCall, DescribeCatalogCall, DescribeSchemaCall>;

/// What the server shows one session, and what that session may use: the
/// tools it lists and the databases raw_sql may name. Plain data, computed
/// from the tool's configuration; a transport with several sessions may give
/// each its own.
struct ServerDescription {
  std::string version;
  /// The tools/list result's "tools" array.
  nlohmann::json tools = nlohmann::json::array();
  std::string instructions;
  bool raw_path_enabled = true;
  /// The labels raw_sql may name, the default first: every configured
  /// database when they share one access mode, else the read-only ones.
  /// raw_sql's optional `database` argument must be one of them; left out, it
  /// is the first. Empty: no `database` argument is accepted, and the call
  /// goes to the backend's own default.
  std::vector<std::string> database_labels;
  /// The labels raw_sql_write may name, the default first; empty when there
  /// is no raw_sql_write (every database has one access mode, and raw_sql
  /// covers them all).
  std::vector<std::string> write_database_labels;
  /// Every label the session reaches (every configured one, unless its
  /// client is limited to some), the first the default: describe_schema's
  /// `database` must be one of them, and raw_sql names one of them when it
  /// names a database it does not run on.
  std::vector<std::string> all_database_labels;
  /// The names of the catalog's queries on those databases, which
  /// certified_query's `name` must be one of.
  std::vector<std::string> catalog_names;
  /// Query name → its parameters bound from a claim of the caller's token,
  /// as (parameter, claim): the agent may not pass them (ParameterSpec::from_claim).
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> claim_parameters;
  /// certified_query is listed (certified_tools "single").
  bool certified_query_tool = true;
  /// Per-query certified tools: (tool name, query name).
  std::vector<std::pair<std::string, std::string>> query_tools;
  /// How argument errors are rendered (ascii_only).
  render::RenderOptions render;
  /// Replies carry structuredContent (structured_content "both").
  bool structured_content = true;
};

/// The session state the dispatcher reads and updates.
struct Session {
  /// Set once initialize has been answered.
  bool initialized = false;
  /// The notifications/initialized notification arrived.
  bool client_ready = false;
  std::string protocol_version;
};

/// Send this message now (a response or an error).
struct Send {
  nlohmann::json message;
};
/// Run this tool call on a worker and answer request `id` with its result.
struct StartCall {
  nlohmann::json id;
  ToolCall call;
  /// params._meta.progressToken when the caller asked for progress; null otherwise.
  nlohmann::json progress_token;
};
/// The client gave up on request `request_id`: stop it, send nothing for it.
struct CancelCall {
  nlohmann::json request_id;
};
/// Nothing to do (a notification, a stray response).
struct Ignore {
  /// Why, for the log; empty when nothing is worth logging.
  std::string note;
};
using Action = std::variant<Send, StartCall, CancelCall, Ignore>;

/// Checks one message's text (UTF-8, nesting) and parses it: the parsed
/// value, any JSON at all, or the error to answer the text with (a parse
/// error or an invalid request, without an id). Never throws.
std::variant<nlohmann::json, Send> read_message(std::string_view text, const LineLimits& limits = {});

/// Validates and dispatches one parsed message. Never throws for anything a
/// message can hold; every malformed message (a batch, a non-object, a bad
/// member) becomes a JSON-RPC error (without an id when none could be read)
/// or, for a notification, Ignore. Updates `session` on initialize and
/// notifications/initialized.
/// `claims`: the caller's validated token's claims, which parameters bound
/// to a claim take their values from; nullptr when the caller has none.
Action handle_message(const nlohmann::json& message, Session& session, const ServerDescription& server,
                      const nlohmann::json* claims = nullptr);

/// read_message, then handle_message: one line (without its LF) in, one
/// action out.
Action handle_line(std::string_view line, Session& session, const ServerDescription& server,
                   const LineLimits& limits = {});

/// The error answer for a line longer than the reader accepts.
nlohmann::json oversized_line_error(std::size_t max_line_bytes);

/// A JSON-RPC error response. `id` null means the id could not be read and is
/// left out of the message.
nlohmann::json error_response(const nlohmann::json& id, ErrorCode code, std::string_view message);
nlohmann::json result_response(const nlohmann::json& id, nlohmann::json result);

/// A notifications/progress message for `token` (a string or an integer).
nlohmann::json progress_notification(const nlohmann::json& token, double progress, std::string_view message);

/// Well-formed UTF-8, as the renderer defines it (no overlongs, surrogates or
/// code points past U+10FFFF).
using render::is_valid_utf8;

/// True when `text`, read as JSON, nests arrays and objects deeper than
/// `max_depth` (brackets inside strings do not count).
bool nests_deeper_than(std::string_view text, std::size_t max_depth) noexcept;

/// A stable key for a request id, for tables of running calls: ids 1 and "1"
/// are different requests and get different keys.
std::string id_key(const nlohmann::json& id);

}  // namespace rawtool::mcp::detail
