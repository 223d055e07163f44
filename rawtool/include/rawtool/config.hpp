#pragma once

#include <rawtool/driver.hpp>
#include <rawtool/log.hpp>
#include <rawtool/render/options.hpp>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rawtool {

/// A configuration that cannot be served. what() names the field, e.g.
/// "databases[0].limits.max_rows: must be a positive integer". The catalog's
/// errors use the field "catalog: queries[3] (top_customers).parameters[0].type".
/// Messages never quote the offending value: only field names, indexes and
/// validated identifiers.
class ConfigError : public std::runtime_error {
public:
  ConfigError(std::string field, const std::string& problem);
  [[nodiscard]] const std::string& field() const noexcept { return field_; }

private:
  std::string field_;
};

/// Which engine serves a database, decided from the configuration, never by
/// connecting.
enum class TargetKind {
  postgresql,   ///< `target` is a libpq URL or key=value string; empty means the PG* environment
  sqlite_path,  ///< `target` is a SQLite file path (absolute once parsed) or ":memory:"
};

struct DatabaseConfig {
  /// Operator's name for the database: 1-64 of [A-Za-z0-9_.-]; shown in provenance.
  std::string label = "default";
  /// PostgreSQL URL or libpq string, or a SQLite path / ":memory:" (see `kind`).
  std::string target;
  TargetKind kind = TargetKind::postgresql;
  AccessMode access = AccessMode::read_only;
  Limits limits;
  /// Connections kept for this database, made on first use; calls beyond it wait.
  std::size_t pool_size = 4;
  /// How a SQLite database is opened (what read-only mode does with a WAL
  /// database whose -wal and -shm are missing; whether a read-write database
  /// that does not exist is created). read_only_wal must be left at its
  /// default for a PostgreSQL database.
  SqliteOptions sqlite;
  /// PostgreSQL only: a file holding the password, read each time a
  /// connection is made (absolute once parsed); empty for none.
  std::filesystem::path password_file;
  /// PostgreSQL, read_only only: hazard kinds read-only mode refuses when the
  /// audit finds them, beyond the ones it always refuses (see PostgresOptions).
  std::vector<HazardKind> refuse_hazards;
};

/// The configuration file, a JSON object. Every key is optional; a key not
/// listed here is an error (a typo must not silently fall back to a default),
/// and so is a value of the wrong type or out of range.
///
///   databases             array of objects, see below. Default: one database
///                         from the environment (see parse_config).
///     label               string, 1-64 of [A-Za-z0-9_.-], unique. Default
///                         "default" for the first database, required for the others.
///     url                 string: "postgresql://..." / "postgres://..." URL,
///                         a libpq "key=value ..." string (see libpq_form), or "sqlite:PATH".
///                         Any other scheme, or a bare path, is an error.
///     path                string: a SQLite file path (relative to the
///                         configuration file's folder) or ":memory:".
///                         At most one of url and path; with neither, the
///                         target comes from the environment. In both, each
///                         ${NAME} is replaced by the environment variable
///                         NAME (percent-encoded inside a postgresql:// or
///                         postgres:// URL, as it is elsewhere); an unset or
///                         empty one is an error naming it; $${ is a literal ${.
///     password_file       string, PostgreSQL only: a file whose content is
///                         the password (one trailing line break dropped),
///                         relative to the configuration file's folder, ${NAME}
///                         replaced as above; read at load (so a missing one
///                         is an error now) and at every connection.
///     create_if_missing   boolean, default false; SQLite with access
///                         read_write only: create the file if it does not
///                         exist. Without it, a read-write path that does not
///                         exist is an error.
///     refuse_hazards      array of hazard kind names (hazard_kind_name;
///                         `rawtool check-config --connect` prints them),
///                         PostgreSQL with access read_only only: kinds that
///                         read-only mode refuses whenever the audit finds
///                         them, beyond the ones it always refuses, e.g.
///                         ["security_definer", "server_log"]. Default none.
///     access              "read_only" (default) or "read_write".
///     limits              object:
///       statement_timeout_ms  integer 1..86400000, default 5000
///       lock_timeout_ms       integer 1..86400000, default 1000
///       max_rows              integer 1..10000000, default 1000
///       max_bytes             integer 1..1073741824, default 1048576
///       max_statement_bytes   integer 1..16777216, default 262144
///       max_notice_bytes      integer 0..16777216, default 8192: NOTICE and WARNING text
///                             kept per statement; notices past it are counted, not kept
///     pool_size           integer 1..256, default 4
///     sqlite_read_only_wal  SQLite only: "existing_files" (default), "create_files"
///                         or "immutable"; what read-only access does with a
///                         database in WAL mode whose -wal and -shm files do
///                         not both exist (see SqliteReadOnlyWal). An error on
///                         a PostgreSQL database.
///   raw_path              boolean, default true. false: the raw path does not
///                         exist (raw() refuses; the MCP server does not list it).
///   catalog               string: path of the catalog of pinned queries
///                         (relative to the configuration file's folder).
///                         Default: none, an empty catalog.
///   catalog_prose         "quoted" (default) or "omitted".
///   render                object:
///     ascii_only          boolean, default false
///     budget_bytes        integer 1024..67108864, default 16384
///     show_statement      boolean, default true
///   max_concurrent_calls  integer 1..1024, default 4
///   certified_tools       "single" (default): the MCP server offers the
///                         catalog through one tool, certified_query; or
///                         "per_query": one tool per catalog query, named as
///                         the query, its inputSchema made from the query's
///                         parameters. A query named as one of rawtool's own
///                         tools is then a configuration error.
///   structured_content    "both" (default): MCP replies carry structuredContent
///                         beside their text and tools declare outputSchema;
///                         "text": the text alone, for hosts that show the
///                         model both and so pay for every reply twice.
///   log                   object:
///     destination         "file", "syslog" or "stderr". Default: not set, the
///                         program decides (see LogConfig::destination).
///     path                string: the file (relative to the configuration
///                         file's folder); required with "file", implies it
///                         when destination is left out, refused with the others.
///     level               "error", "warn", "info" (default) or "debug".
///   http                  object, read by `rawtool mcp --http` only:
///     tokens              array of objects, default none:
///       name              string, 1-64 of [A-Za-z0-9_.-], unique; logged
///                         with every call the token makes
///       sha256            string: 64 hex digits, the SHA-256 of the token
///                         (the token itself is never stored)
///       databases         array of database labels the token reaches, at
///                         least one; default every database
///     allowed_origins     array of strings: Origin header values accepted;
///                         a request with any other Origin gets 403. Default
///                         none (only requests without an Origin header).
///     max_body_bytes      integer 1024..67108864, default 1048576
///     allow_unauthenticated  boolean, default false: serve without tokens
///                         on an address that is not loopback.
///     max_sessions        integer 1..100000, default 1024: MCP sessions open
///                         at once; an initialize beyond it gets 503
///     max_sessions_per_token  integer 1..100000, default max_sessions
///     max_calls_per_token integer 1..1024, default none (the server's
///                         workers and queue bound all tokens together): tool
///                         calls one token may have accepted at once; one
///                         more is answered with error -32000
///     session_idle_seconds  integer 1..604800, default 3600: a session with
///                         no request and no call for this long is ended
///     max_memory_bytes    integer 16777216..1099511627776, default 268435456
///                         (256 MiB): what requests may hold at once, in all:
///                         request bodies, running tool calls (each reserves
///                         twice its answer's 8 MiB limit and 8 × the
///                         largest max_bytes)
///                         and answers not yet taken by their clients. Past
///                         it a request gets 503, a call -32000 ("busy, try
///                         again"). At least one call's reservation.
///     resource            string: the canonical URL of this server's MCP
///                         endpoint (e.g. "https://db.example.com/mcp"); an
///                         OAuth token's `aud` must name it. Required with
///                         oauth, refused without it.
///     oauth               object: OAuth 2.1 access tokens (JWT, RS256 or
///                         ES256) accepted beside `tokens`:
///       issuer            string: the authorization server; `iss` must be it exactly
///       jwks_url          string: http:// or https:// URL of its key set; or
///       jwks_file         string: a file holding it (relative to the
///                         configuration file's folder); exactly one of the two
///       scopes            object, required, at least one key: scope → array
///                         of database labels, or null for every database; a
///                         token reaches the union over its scopes
///       required_scopes   array of strings, default none: a token must carry
///                         every one (else 403 insufficient_scope)
///       leeway_seconds    integer 0..600, default 60: clock skew allowed on
///                         `exp` and `nbf`
///       jwks_min_refetch_seconds  integer 0..86400, default 10: a token
///                         naming a key the set lacks fetches the set again
///                         (a key rotation), at most once per this long
struct HttpToken {
  std::string name;
  /// Lower-case hex SHA-256 of the token.
  std::string sha256;
  /// Labels of the databases it reaches, in configuration order; every
  /// configured database when the key was left out.
  std::vector<std::string> databases;
};

/// One scope of `http.oauth.scopes`.
struct OAuthScope {
  std::string scope;
  /// Labels of the databases it reaches, in configuration order; nullopt:
  /// every database.
  std::optional<std::vector<std::string>> databases;
};

struct OAuthConfig {
  std::string issuer;
  /// Exactly one of the two is set.
  std::string jwks_url;
  std::optional<std::filesystem::path> jwks_file;
  std::vector<OAuthScope> scopes;
  std::vector<std::string> required_scopes;
  std::size_t leeway_seconds = 60;
  std::size_t jwks_min_refetch_seconds = 10;
};

struct HttpConfig {
  /// Empty: requests are not authenticated (allowed on loopback only, unless
  /// allow_unauthenticated), unless oauth is set.
  std::vector<HttpToken> tokens;
  /// The MCP endpoint's canonical URL; set exactly when oauth is.
  std::string resource;
  std::optional<OAuthConfig> oauth;
  std::vector<std::string> allowed_origins;
  std::size_t max_body_bytes = 1024 * 1024;
  /// Connections open at once. One more closes the oldest connection waiting
  /// for a request (first those that never carried a valid token); when none
  /// waits, it is closed as soon as it is accepted.
  std::size_t max_connections = 1024;
  bool allow_unauthenticated = false;
  std::size_t max_sessions = 1024;
  /// 0: max_sessions.
  std::size_t max_sessions_per_token = 0;
  /// 0: no limit per token.
  std::size_t max_calls_per_token = 0;
  /// The transport's memory budget (see above).
  std::size_t max_memory_bytes = 256 * 1024 * 1024;
  std::size_t session_idle_seconds = 3600;
  /// A request's headers and body must arrive within this long of its first
  /// byte, and a response must be taken by the client within it.
  std::size_t request_timeout_seconds = 30;
  /// A connection with no request for this long is closed.
  std::size_t idle_timeout_seconds = 60;
  /// A request's headers must be complete within this long: of the
  /// connection's opening for its first request (a client that connects and
  /// sends nothing is gone sooner than idle_timeout), of its first byte for
  /// the others.
  std::size_t head_timeout_seconds = 10;
  /// On SIGTERM or SIGINT: how long calls in flight may still finish.
  std::size_t shutdown_grace_seconds = 5;
  /// False: stateless, no Mcp-Session-Id; every request stands alone.
  bool sessions = true;
};

/// The configuration file's "metrics" object: where `rawtool mcp` serves
/// Prometheus metrics.
struct MetricsConfig {
  /// HOST:PORT for GET /metrics; empty: no metrics are served.
  std::string listen;
};

struct Config {
  /// The first database is the default one.
  std::vector<DatabaseConfig> databases;
  /// When false the raw path does not exist (not merely refusing).
  bool raw_path = true;
  /// Path of the catalog of pinned queries (JSON); none means an empty catalog.
  std::optional<std::filesystem::path> catalog;
  /// Rendering settings; `render.catalog_prose` is the file's top-level
  /// "catalog_prose" key.
  render::RenderOptions render;
  /// Tool calls served at once by the MCP server.
  std::size_t max_concurrent_calls = 4;
  /// How the MCP server offers the catalog.
  enum class CertifiedTools { single, per_query };
  CertifiedTools certified_tools = CertifiedTools::single;
  /// structured_content "both" (true) or "text" (false).
  bool structured_content = true;
  /// The operator log.
  LogConfig log;
  /// The MCP server's HTTP transport.
  HttpConfig http;
  /// Prometheus metrics of the MCP server (either transport).
  MetricsConfig metrics;
};

/// Parses a JSON configuration. Relative paths resolve against `base_dir`.
/// Database targets left out come from RAWTOOL_DATABASE_URL (same forms as the
/// "url" key, or a SQLite path), then the PG* environment (PGHOST, PGHOSTADDR,
/// PGPORT, PGDATABASE, PGUSER, PGSERVICE: a PostgreSQL target with an empty
/// conninfo). No database at all is an error. Throws ConfigError naming the field.
Config parse_config(std::string_view json_text, const std::filesystem::path& base_dir);

/// Reads and parses a configuration file; relative paths resolve against the
/// file's folder. Throws ConfigError; one that cannot be read names the path
/// (escaped) and the reason.
Config load_config(const std::filesystem::path& file);

/// A database for `url_or_path`, as the command line's --db and
/// RAWTOOL_DATABASE_URL take it: libpq connection strings (libpq_form) are
/// PostgreSQL; "sqlite:PATH", ":memory:" and any other
/// string are SQLite paths (relative ones resolved against `base_dir`). Other
/// members keep their defaults. Throws ConfigError (field "database") for an
/// empty string, a "scheme://" URL of another engine, and an unreplaced
/// "${" (a variable the shell or the environment did not fill in).
DatabaseConfig database_for_target(std::string_view url_or_path, const std::filesystem::path& base_dir = {});

/// Validates a configuration built in code (parse_config's checks on labels,
/// limits and pool sizes, and that a read-write SQLite file exists unless
/// sqlite.create_if_missing). Tool::open calls it. Throws ConfigError.
void validate_config(const Config& config);

/// The largest answer the MCP server sends to a tool call; a larger one is
/// replaced by a refusal that names its size.
inline constexpr std::size_t mcp_max_reply_bytes = 8 * 1024 * 1024;

/// What one running tool call reserves of http.max_memory_bytes: its rows
/// (up to 5 × max_bytes in rawtool's own structures, measured with 1,600
/// columns of NULL; more while they are escaped) and its answer twice over
/// while it is made (the JSON value and its text; measured, a 5.3 MB answer
/// took a call 14 MiB at its peak): 2 × mcp_max_reply_bytes + 8 × the
/// largest max_bytes of `databases`.
[[nodiscard]] std::size_t http_call_reserve_bytes(const std::vector<DatabaseConfig>& databases) noexcept;

/// Throws ConfigError (field http.max_memory_bytes) when `max_memory_bytes`
/// is less than http_call_reserve_bytes(databases): no call could run. The
/// configuration file's `http` key is checked when it is read, and
/// `rawtool mcp --http` checks again before it starts.
void require_http_call_fits(std::size_t max_memory_bytes, const std::vector<DatabaseConfig>& databases);

/// True when `label` is 1-64 of [A-Za-z0-9_.-].
[[nodiscard]] bool valid_database_label(std::string_view label) noexcept;

}  // namespace rawtool
