// rawtool::mcp::HttpServer: the MCP server over rawtool::Tool, on HTTP.

#include <rawtool/mcp.hpp>
#include <rawtool/render/json.hpp>
#include <rawtool/shared_roles.hpp>

#include "mcp/http_server.hpp"
#include "mcp/startup_check.hpp"
#include "mcp/tool_backend.hpp"

#include <rawtool/log.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

namespace rawtool::mcp {

namespace {

detail::HttpServerConfig http_server_config(Tool& tool, std::string_view listen, detail::Metrics* metrics) {
  const auto& config = tool.config();
  detail::HttpServerConfig server;
  server.metrics = metrics;
  server.unusable_databases = [&tool](Cancellation& cancellation) { return tool.unusable_databases(&cancellation); };
  const auto address = detail::parse_listen_address(listen);
  if (!address) throw ConfigError("http", "the listen address must be HOST:PORT (an IPv6 address in brackets)");
  const auto loopback = detail::is_loopback_host(address->host);
  if (!loopback) throw ConfigError("http", "the listen host must be an IP address or localhost");
  server.listen = *address;
  if (server.listen.host == "localhost") server.listen.host = "127.0.0.1";
  if (!*loopback && config.http.tokens.empty() && !config.http.oauth && !config.http.allow_unauthenticated) {
    throw ConfigError("http.tokens", "none are configured, and the address is not loopback: anyone who reaches it "
                                     "could run statements; configure tokens or http.oauth, or set "
                                     "http.allow_unauthenticated");
  }
  if (const auto& oauth = config.http.oauth) {
    detail::OAuthSettings settings;
    settings.rules = {oauth->issuer, config.http.resource, std::chrono::seconds(oauth->leeway_seconds)};
    settings.jwks_url = oauth->jwks_url;
    if (oauth->jwks_file) settings.jwks_file = *oauth->jwks_file;
    for (const OAuthScope& scope : oauth->scopes) settings.scopes.emplace_back(scope.scope, scope.databases);
    settings.required_scopes = oauth->required_scopes;
    settings.refetch_interval = std::chrono::seconds(oauth->jwks_min_refetch_seconds);
    for (const DatabaseConfig& database : config.databases) settings.databases.push_back(database.label);
    server.oauth = std::move(settings);
    server.describe = [&tool](const std::vector<std::string>& databases) {
      return detail::describe_server(tool, databases);
    };
  }
  for (const HttpToken& token : config.http.tokens) {
    detail::HttpClient client;
    client.name = token.name;
    client.sha256 = token.sha256;
    client.description = std::make_shared<const detail::ServerDescription>(detail::describe_server(tool, token.databases));
    server.clients.push_back(std::move(client));
  }
  server.open = detail::describe_server(tool);
  server.allowed_origins = config.http.allowed_origins;
  server.max_body_bytes = config.http.max_body_bytes;
  server.max_connections = config.http.max_connections;
  server.max_concurrent_calls = config.max_concurrent_calls;
  server.max_sessions = config.http.max_sessions;
  server.max_sessions_per_token =
      config.http.max_sessions_per_token != 0 ? config.http.max_sessions_per_token : config.http.max_sessions;
  server.max_calls_per_token = config.http.max_calls_per_token;
  // Checked here too: a configuration made in code, or one with no `http`
  // key, was not checked against it.
  server.max_reply_bytes = mcp_max_reply_bytes;
  server.call_reserve_bytes = http_call_reserve_bytes(config.databases);
  server.max_memory_bytes = config.http.max_memory_bytes;
  require_http_call_fits(server.max_memory_bytes, config.databases);
  server.session_idle = std::chrono::seconds(config.http.session_idle_seconds);
  server.request_timeout = std::chrono::seconds(config.http.request_timeout_seconds);
  server.idle_timeout = std::chrono::seconds(config.http.idle_timeout_seconds);
  server.head_timeout = std::chrono::seconds(config.http.head_timeout_seconds);
  server.shutdown_grace = std::chrono::seconds(config.http.shutdown_grace_seconds);
  server.sessions = config.http.sessions;
  return server;
}

/// Returns the databases' checks when it made them: with scopes that may
/// share a role, before the server starts.
std::optional<std::vector<DatabaseCheck>> warn_of_shared_roles(Tool& tool) {
  const auto& config = tool.config();
  const auto& log = tool.log();
  if (scopes_may_share_roles(config) && log.enabled(LogLevel::warn)) {
    // Tenants apart in rawtool but together on the server: connecting to
    // every database now is the one way to learn each one's role and server.
    std::vector<DatabaseCheck> checks = tool.inspect_databases();
    for (const DatabaseCheck& check : checks) {
      if (check.engine != Engine::postgresql || check.report) continue;
      log.write(LogLevel::warn, "mcp", "shared_role_unchecked",
                nlohmann::json{{"detail", "could not connect at start-up to learn which role the database connects as"},
                               {"database", check.label}});
    }
    for (const SharedRole& shared : find_shared_roles(config, checks)) {
      log.write(LogLevel::warn, "mcp", "shared_role",
                nlohmann::json{{"detail", "tokens with different database scopes connect as one PostgreSQL role on one "
                                          "server: " + std::string(shared_role_consequence)},
                               {"role", render::to_log_json(shared.role)},
                               {"tokens", shared.tokens},
                               {"databases", shared.databases}});
    }
    return checks;
  }
  return std::nullopt;
}

}  // namespace

std::string check_oauth_keys(const Config& config) {
  const auto& oauth = config.http.oauth;
  if (!oauth) throw std::logic_error("check_oauth_keys: no http.oauth");
  detail::OAuthSettings settings;
  settings.jwks_url = oauth->jwks_url;
  if (oauth->jwks_file) settings.jwks_file = *oauth->jwks_file;
  const std::string source = settings.jwks_url.empty() ? settings.jwks_file.string() : settings.jwks_url;
  detail::KeySet keys;
  try {
    keys = detail::parse_key_set(detail::read_key_set(settings));
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(source + ": " + error.what());
  }
  if (keys.keys.empty()) throw std::runtime_error(source + ": the key set holds no RS256 or ES256 signing key");
  return std::to_string(keys.keys.size()) + (keys.keys.size() == 1 ? " signing key" : " signing keys") + " usable, " +
         std::to_string(keys.ignored) + " ignored";
}

/// Declared in the order of start: the server, which uses the others, is
/// destroyed (stopped and waited for) first.
struct HttpServer::Impl {
  Impl(Tool& tool, std::string_view listen, detail::Metrics* metrics)
      : config(http_server_config(tool, listen, metrics)),
        backend(tool, metrics),
        server(backend, config, tool.log()) {
    if (auto checks = warn_of_shared_roles(tool)) {
      check.emplace(tool, *checks);
    } else {
      check.emplace(tool);
    }
  }
  detail::HttpServerConfig config;
  detail::ToolBackend backend;
  detail::HttpServer server;
  std::optional<detail::StartupCheck> check;  ///< waited for before the server is destroyed
};

HttpServer::HttpServer(Tool& tool, std::string_view listen, MetricsServer* metrics)
    : impl_(std::make_unique<Impl>(tool, listen, metrics != nullptr ? &metrics->recorder() : nullptr)) {}
HttpServer::~HttpServer() = default;
void HttpServer::start() { impl_->server.start(); }
std::uint16_t HttpServer::port() const noexcept { return impl_->server.port(); }
void HttpServer::stop() noexcept { impl_->server.stop(); }
int HttpServer::wait() { return impl_->server.wait(); }

}  // namespace rawtool::mcp
