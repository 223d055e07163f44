#include <algorithm>
#include <rawtool/config.hpp>

#include "lib/detail/json_fields.hpp"

#include <rawtool/render/escape.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <system_error>

namespace rawtool {
namespace {

using nlohmann::json;
using detail::fail;
using detail::member_field;

// Ranges for the numeric keys; documented in config.hpp.
constexpr std::int64_t max_timeout_ms = 86'400'000;
constexpr std::int64_t max_rows_limit = 10'000'000;
constexpr std::int64_t max_bytes_limit = 1'073'741'824;
constexpr std::int64_t max_notice_limit = 16'777'216;
constexpr std::int64_t max_statement_limit = 16'777'216;
constexpr std::int64_t max_pool_size = 256;
constexpr std::int64_t min_budget = 1024;
constexpr std::int64_t max_budget = 67'108'864;
constexpr std::int64_t max_calls = 1024;

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read once while parsing
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// What ConfigError::what() says after "field: ".
std::string problem_of(const ConfigError& e) {
  const std::string what = e.what();
  const std::string prefix = e.field() + ": ";
  return what.starts_with(prefix) ? what.substr(prefix.size()) : what;
}

bool ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ascii_digit(char c) { return c >= '0' && c <= '9'; }

// An environment variable's name as ${NAME} takes it: a letter or _, then
// letters, digits and _; at most 128 characters, so it can be shown in an error.
bool valid_variable_name(std::string_view name) {
  if (name.empty() || name.size() > 128 || ascii_digit(name.front())) return false;
  for (char c : name) {
    if (!ascii_letter(c) && !ascii_digit(c) && c != '_') return false;
  }
  return true;
}

// RFC 3986's unreserved characters stay; every other byte becomes %XX, which
// libpq decodes in every part of a postgresql:// URL.
std::string percent_encoded(std::string_view value) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : value) {
    if (ascii_letter(c) || ascii_digit(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out += '%';
      out += hex[byte >> 4U];
      out += hex[byte & 0x0FU];
    }
  }
  return out;
}

// `text` with each ${NAME} replaced by the environment variable NAME, and $${
// by a literal ${. Inside a postgresql:// URL the value is percent-encoded, so
// a password holding '@', '/' or '%' reaches libpq as it is.
std::string substitute_environment(std::string_view text, const std::string& field) {
  const bool in_url = libpq_form(text) == LibpqForm::url;
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
      continue;
    }
    if (text.compare(i, 2, "${") != 0) {
      out += text[i++];
      continue;
    }
    const std::size_t close = text.find('}', i + 2);
    const std::string_view name = close == std::string_view::npos ? std::string_view() : text.substr(i + 2, close - i - 2);
    if (!valid_variable_name(name)) {
      fail(field, "holds a ${ that does not begin a ${NAME} reference (NAME: a letter or _, then letters, digits "
                  "and _, then a closing brace); write $${ for a literal ${");
    }
    const std::string variable(name);
    auto value = environment(variable.c_str());
    if (!value) fail(field, "names ${" + variable + "}, but the environment variable " + variable + " is not set or is empty");
    out += in_url ? percent_encoded(*value) : *value;
    i = close + 1;
  }
  return out;
}

// The URI scheme `text` begins with ("mysql" for "mysql://..."), when it has one.
std::optional<std::string> scheme_of(std::string_view text) {
  if (text.empty() || !ascii_letter(text.front())) return std::nullopt;
  std::size_t i = 1;
  while (i < text.size() && (ascii_letter(text[i]) || ascii_digit(text[i]) || text[i] == '+' || text[i] == '.' || text[i] == '-')) ++i;
  if (i >= text.size() || text[i] != ':' || i > 32) return std::nullopt;
  return std::string(text.substr(0, i));
}

constexpr std::string_view engines_spoken =
    "rawtool speaks PostgreSQL (a postgresql: or postgres: URL, or a libpq keyword string) and SQLite "
    "(a sqlite: URL, or the path key)";

// "the scheme mysql" for a scheme of plain letters and digits, which an
// operator recognises; "a scheme" for any other, whose bytes are not repeated.
std::string scheme_named(std::string_view scheme) {
  const bool plain = std::all_of(scheme.begin(), scheme.end(), [](char c) { return ascii_letter(c) || ascii_digit(c); });
  return plain ? "the scheme " + std::string(scheme) : std::string("a scheme");
}

std::string resolve_path(std::string_view path, const std::filesystem::path& base_dir) {
  if (path == ":memory:") return std::string(path);
  std::filesystem::path p{std::string(path)};
  if (p.is_relative()) p = base_dir.empty() ? std::filesystem::absolute(p) : base_dir / p;
  return p.lexically_normal().string();
}

// The target of a database entry that names none: RAWTOOL_DATABASE_URL, then PG*.
std::optional<DatabaseConfig> database_from_environment(const std::filesystem::path& base_dir) {
  if (auto url = environment("RAWTOOL_DATABASE_URL")) {
    try {
      DatabaseConfig db = database_for_target(*url, base_dir);
      db.sqlite.create_if_missing = false;
      return db;
    } catch (const ConfigError& e) {
      fail("RAWTOOL_DATABASE_URL", problem_of(e));
    }
  }
  for (const char* name : {"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"}) {
    if (environment(name)) {
      DatabaseConfig db;
      db.kind = TargetKind::postgresql;
      db.target.clear();
      return db;
    }
  }
  return std::nullopt;
}

Limits parse_limits(const json& value, const std::string& field) {
  detail::require_object(value, field);
  detail::reject_unknown_keys(
      value, {"statement_timeout_ms", "lock_timeout_ms", "max_rows", "max_bytes", "max_statement_bytes", "max_notice_bytes"},
      field);
  Limits limits;
  if (auto it = value.find("statement_timeout_ms"); it != value.end()) {
    limits.statement_timeout = std::chrono::milliseconds(
        detail::read_integer(*it, member_field(field, "statement_timeout_ms"), 1, max_timeout_ms));
  }
  if (auto it = value.find("lock_timeout_ms"); it != value.end()) {
    limits.lock_timeout =
        std::chrono::milliseconds(detail::read_integer(*it, member_field(field, "lock_timeout_ms"), 1, max_timeout_ms));
  }
  if (auto it = value.find("max_rows"); it != value.end()) {
    limits.max_rows = static_cast<std::uint64_t>(detail::read_integer(*it, member_field(field, "max_rows"), 1, max_rows_limit));
  }
  if (auto it = value.find("max_bytes"); it != value.end()) {
    limits.max_bytes =
        static_cast<std::uint64_t>(detail::read_integer(*it, member_field(field, "max_bytes"), 1, max_bytes_limit));
  }
  if (auto it = value.find("max_statement_bytes"); it != value.end()) {
    limits.max_statement_bytes = static_cast<std::size_t>(
        detail::read_integer(*it, member_field(field, "max_statement_bytes"), 1, max_statement_limit));
  }
  if (auto it = value.find("max_notice_bytes"); it != value.end()) {
    limits.max_notice_bytes =
        static_cast<std::uint64_t>(detail::read_integer(*it, member_field(field, "max_notice_bytes"), 0, max_notice_limit));
  }
  return limits;
}

AccessMode parse_access(const json& value, const std::string& field) {
  std::string s = detail::read_string(value, field);
  if (s == "read_only") return AccessMode::read_only;
  if (s == "read_write") return AccessMode::read_write;
  fail(field, "must be \"read_only\" or \"read_write\"");
}

SqliteReadOnlyWal parse_read_only_wal(const json& value, const std::string& field) {
  const std::string s = detail::read_string(value, field);
  for (const SqliteReadOnlyWal choice :
       {SqliteReadOnlyWal::existing_files, SqliteReadOnlyWal::create_files, SqliteReadOnlyWal::immutable}) {
    if (s == sqlite_read_only_wal_name(choice)) return choice;
  }
  fail(field, "must be \"existing_files\", \"create_files\" or \"immutable\"");
}

// Checks that a password file can be read and holds a password, as the
// driver will read it at every connection.
void check_password_file(const std::filesystem::path& file, const std::string& field) {
  std::FILE* stream = std::fopen(file.c_str(), "rb");
  if (stream == nullptr) fail(field, "cannot be opened: " + std::generic_category().message(errno));
  char buffer[4] = {};
  const std::size_t got = std::fread(buffer, 1, sizeof buffer, stream);
  const bool failed = std::ferror(stream) != 0;
  std::fclose(stream);
  if (failed) fail(field, "cannot be read");
  const std::string_view start(buffer, got);
  if (start.empty() || start == "\n" || start == "\r\n") fail(field, "names an empty file: it must hold the password");
}

// "superuser, server_files, ...": every kind refuse_hazards takes.
std::string hazard_kind_list() {
  std::string list;
  for (const HazardKind kind : hazard_kinds()) {
    if (!list.empty()) list += ", ";
    list += hazard_kind_name(kind);
  }
  return list;
}

std::vector<HazardKind> parse_refuse_hazards(const json& value, const std::string& field) {
  if (!value.is_array()) fail(field, std::string("must be an array of hazard kind names, not ") + detail::json_kind(value));
  std::vector<HazardKind> kinds;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string item = field + "[" + std::to_string(i) + "]";
    const auto kind = hazard_kind_from_name(detail::read_string(value[i], item));
    if (!kind) fail(item, "names no hazard kind; the kinds are " + hazard_kind_list());
    if (std::find(kinds.begin(), kinds.end(), *kind) != kinds.end()) fail(item, "repeats an earlier kind");
    kinds.push_back(*kind);
  }
  return kinds;
}

DatabaseConfig parse_database(const json& value, std::size_t index, const std::filesystem::path& base_dir) {
  std::string field = "databases[" + std::to_string(index) + "]";
  detail::require_object(value, field);
  detail::reject_unknown_keys(value,
                              {"label", "url", "path", "access", "limits", "pool_size", "sqlite_read_only_wal",
                               "password_file", "create_if_missing", "refuse_hazards"},
                              field);

  auto url = value.find("url");
  auto path = value.find("path");
  if (url != value.end() && path != value.end()) fail(field, "give url or path, not both");

  DatabaseConfig db;
  if (url != value.end()) {
    const std::string key = member_field(field, "url");
    std::string s = detail::read_string(*url, key);
    if (s.empty()) fail(key, "must not be empty");
    s = substitute_environment(s, key);
    // A url names its engine: a SQLite file is sqlite:PATH here (or the path key), never a bare path.
    if (auto scheme = scheme_of(s)) {
      if (*scheme != "postgresql" && *scheme != "postgres" && *scheme != "sqlite") {
        fail(key, "uses " + scheme_named(*scheme) + ", which is not one rawtool speaks. " + std::string(engines_spoken));
      }
    } else if (libpq_form(s) == LibpqForm::none) {
      fail(key, "names no engine: a SQLite file is named with sqlite:PATH or the path key. " + std::string(engines_spoken));
    }
    try {
      db = database_for_target(s, base_dir);
    } catch (const ConfigError& e) {
      fail(key, problem_of(e));
    }
  } else if (path != value.end()) {
    const std::string key = member_field(field, "path");
    std::string s = detail::read_string(*path, key);
    if (s.empty()) fail(key, "must not be empty");
    s = substitute_environment(s, key);
    if (s.find('\0') != std::string::npos) fail(key, "must not contain a NUL character");
    db.kind = TargetKind::sqlite_path;
    db.target = resolve_path(s, base_dir);
  } else if (auto from_env = database_from_environment(base_dir)) {
    db = *from_env;
  } else {
    fail(field, "has no url or path, and neither RAWTOOL_DATABASE_URL nor the PG* environment names a database");
  }

  if (auto it = value.find("label"); it != value.end()) {
    db.label = detail::read_string(*it, member_field(field, "label"));
    if (!valid_database_label(db.label)) fail(member_field(field, "label"), "must be 1 to 64 of A-Z a-z 0-9 _ . -");
  } else if (index != 0) {
    fail(member_field(field, "label"), "is required for every database but the first");
  } else {
    db.label = "default";
  }
  if (auto it = value.find("access"); it != value.end()) db.access = parse_access(*it, member_field(field, "access"));
  if (auto it = value.find("limits"); it != value.end()) db.limits = parse_limits(*it, member_field(field, "limits"));
  if (auto it = value.find("pool_size"); it != value.end()) {
    db.pool_size = static_cast<std::size_t>(detail::read_integer(*it, member_field(field, "pool_size"), 1, max_pool_size));
  }
  if (auto it = value.find("sqlite_read_only_wal"); it != value.end()) {
    const std::string key = member_field(field, "sqlite_read_only_wal");
    db.sqlite.read_only_wal = parse_read_only_wal(*it, key);
    if (db.kind != TargetKind::sqlite_path) fail(key, "applies to SQLite databases only");
  }
  // A configuration file creates no database it does not ask for.
  db.sqlite.create_if_missing = false;
  if (auto it = value.find("create_if_missing"); it != value.end()) {
    const std::string key = member_field(field, "create_if_missing");
    db.sqlite.create_if_missing = detail::read_bool(*it, key);
    if (db.kind != TargetKind::sqlite_path) fail(key, "applies to SQLite databases only");
    if (db.access != AccessMode::read_write) fail(key, "applies to read_write databases only (read-only access creates nothing)");
  }
  if (auto it = value.find("password_file"); it != value.end()) {
    const std::string key = member_field(field, "password_file");
    std::string s = detail::read_string(*it, key);
    if (s.empty()) fail(key, "must not be empty");
    if (db.kind != TargetKind::postgresql) fail(key, "applies to PostgreSQL databases only");
    s = substitute_environment(s, key);
    if (s.find('\0') != std::string::npos) fail(key, "must not contain a NUL character");
    db.password_file = resolve_path(s, base_dir);
    check_password_file(db.password_file, key);
  }
  if (auto it = value.find("refuse_hazards"); it != value.end()) {
    const std::string key = member_field(field, "refuse_hazards");
    db.refuse_hazards = parse_refuse_hazards(*it, key);
    if (db.kind != TargetKind::postgresql) fail(key, "applies to PostgreSQL databases only");
    if (db.access != AccessMode::read_only) {
      fail(key, "applies to read_only databases only (the audit it acts on guards read-only mode)");
    }
  }
  return db;
}

void parse_render(const json& value, render::RenderOptions& options) {
  const std::string field = "render";
  detail::require_object(value, field);
  detail::reject_unknown_keys(value, {"ascii_only", "budget_bytes", "show_statement"}, field);
  if (auto it = value.find("ascii_only"); it != value.end()) {
    options.ascii_only = detail::read_bool(*it, "render.ascii_only");
  }
  if (auto it = value.find("budget_bytes"); it != value.end()) {
    options.budget = static_cast<std::size_t>(detail::read_integer(*it, "render.budget_bytes", min_budget, max_budget));
  }
  if (auto it = value.find("show_statement"); it != value.end()) {
    options.show_statement = detail::read_bool(*it, "render.show_statement");
  }
}

bool is_lower_hex_digest(std::string_view text) {
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Database labels, kept in configuration order (so a token's default is the
// first configured database it reaches).
std::vector<std::string> read_labels(const json& value, const std::string& field,
                                     const std::vector<DatabaseConfig>& databases, bool null_allowed) {
  if (!value.is_array() || value.empty()) {
    fail(field, null_allowed ? "must be a non-empty array of database labels, or null"
                             : "must be a non-empty array of database labels");
  }
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string label = detail::read_string(value[i], field + "[" + std::to_string(i) + "]");
    if (std::none_of(databases.begin(), databases.end(), [&](const DatabaseConfig& d) { return d.label == label; })) {
      fail(field + "[" + std::to_string(i) + "]", "names no configured database");
    }
  }
  for (const DatabaseConfig& database : databases) {
    if (std::find(value.begin(), value.end(), json(database.label)) != value.end()) labels.push_back(database.label);
  }
  return labels;
}

HttpToken parse_http_token(const json& value, std::size_t index, const std::vector<DatabaseConfig>& databases) {
  const std::string field = "http.tokens[" + std::to_string(index) + "]";
  detail::require_object(value, field);
  detail::reject_unknown_keys(value, {"name", "sha256", "databases"}, field);
  HttpToken token;
  const auto name = value.find("name");
  if (name == value.end()) fail(field + ".name", "is required");
  token.name = detail::read_string(*name, field + ".name");
  if (!valid_database_label(token.name)) fail(field + ".name", "must be 1-64 of A-Z a-z 0-9 _ . -");
  const auto digest = value.find("sha256");
  if (digest == value.end()) fail(field + ".sha256", "is required");
  token.sha256 = detail::read_string(*digest, field + ".sha256");
  std::transform(token.sha256.begin(), token.sha256.end(), token.sha256.begin(),
                 [](char c) { return c >= 'A' && c <= 'F' ? static_cast<char>(c - 'A' + 'a') : c; });
  if (!is_lower_hex_digest(token.sha256)) {
    fail(field + ".sha256", "must be the 64 hex digits of the token's SHA-256 (sha256sum prints them)");
  }
  if (const auto reach = value.find("databases"); reach != value.end()) {
    token.databases = read_labels(*reach, field + ".databases", databases, false);
  } else {
    for (const DatabaseConfig& database : databases) token.databases.push_back(database.label);
  }
  return token;
}

// A URL rawtool fetches or names: http:// or https://, a host, no fragment.
bool is_http_url(std::string_view url) {
  std::string_view rest;
  if (url.rfind("https://", 0) == 0) rest = url.substr(8);
  else if (url.rfind("http://", 0) == 0) rest = url.substr(7);
  else return false;
  return !rest.empty() && rest.front() != '/' && url.find('#') == std::string_view::npos &&
         std::none_of(url.begin(), url.end(), [](char c) { return static_cast<unsigned char>(c) <= ' '; });
}

OAuthConfig parse_oauth(const json& value, const std::vector<DatabaseConfig>& databases,
                        const std::filesystem::path& base_dir) {
  detail::require_object(value, "http.oauth");
  detail::reject_unknown_keys(value, {"issuer", "jwks_url", "jwks_file", "scopes", "required_scopes", "leeway_seconds",
                                      "jwks_min_refetch_seconds"},
                              "http.oauth");
  OAuthConfig oauth;
  const auto issuer = value.find("issuer");
  if (issuer == value.end()) fail("http.oauth.issuer", "is required: the authorization server's issuer URL");
  oauth.issuer = detail::read_string(*issuer, "http.oauth.issuer");
  if (oauth.issuer.empty()) fail("http.oauth.issuer", "must not be empty");
  const auto url = value.find("jwks_url");
  const auto file = value.find("jwks_file");
  if ((url == value.end()) == (file == value.end())) {
    fail("http.oauth", "needs exactly one of jwks_url and jwks_file: where the issuer's signing keys are");
  }
  if (url != value.end()) {
    oauth.jwks_url = detail::read_string(*url, "http.oauth.jwks_url");
    if (!is_http_url(oauth.jwks_url)) fail("http.oauth.jwks_url", "must be an http:// or https:// URL");
  } else {
    const std::string path = detail::read_string(*file, "http.oauth.jwks_file");
    if (path.empty()) fail("http.oauth.jwks_file", "must not be empty");
    oauth.jwks_file = std::filesystem::path(resolve_path(path, base_dir));
  }
  const auto scopes = value.find("scopes");
  if (scopes == value.end() || !scopes->is_object() || scopes->empty()) {
    fail("http.oauth.scopes", "is required: an object mapping each scope to database labels (or null for all)");
  }
  for (const auto& [scope, reach] : scopes->items()) {
    const std::string field = "http.oauth.scopes." + scope;
    // RFC 6749 section 3.3: a scope token is printable ASCII but space, '"' and '\\'.
    if (scope.empty() || !std::all_of(scope.begin(), scope.end(), [](char c) {
          return c > ' ' && c < 0x7f && c != '"' && c != '\\';
        }))
      fail(field, "a scope is printable ASCII without spaces, quotes or backslashes (RFC 6749)");
    OAuthScope entry{scope, std::nullopt};
    if (!reach.is_null()) entry.databases = read_labels(reach, field, databases, true);
    oauth.scopes.push_back(std::move(entry));
  }
  if (const auto required = value.find("required_scopes"); required != value.end()) {
    if (!required->is_array()) fail("http.oauth.required_scopes", "must be an array of scopes");
    for (std::size_t i = 0; i < required->size(); ++i) {
      oauth.required_scopes.push_back(
          detail::read_string((*required)[i], "http.oauth.required_scopes[" + std::to_string(i) + "]"));
    }
  }
  if (const auto leeway = value.find("leeway_seconds"); leeway != value.end()) {
    oauth.leeway_seconds = static_cast<std::size_t>(detail::read_integer(*leeway, "http.oauth.leeway_seconds", 0, 600));
  }
  if (const auto refetch = value.find("jwks_min_refetch_seconds"); refetch != value.end()) {
    oauth.jwks_min_refetch_seconds =
        static_cast<std::size_t>(detail::read_integer(*refetch, "http.oauth.jwks_min_refetch_seconds", 0, 86400));
  }
  return oauth;
}

HttpConfig parse_http(const json& value, const std::vector<DatabaseConfig>& databases,
                      const std::filesystem::path& base_dir) {
  detail::require_object(value, "http");
  detail::reject_unknown_keys(value,
                              {"tokens", "allowed_origins", "max_body_bytes", "allow_unauthenticated", "max_sessions",
                               "max_sessions_per_token", "max_calls_per_token", "session_idle_seconds",
                               "request_timeout_seconds", "idle_timeout_seconds", "head_timeout_seconds", "shutdown_grace_seconds", "sessions",
                               "max_connections", "max_memory_bytes", "resource", "oauth"},
                              "http");
  HttpConfig http;
  if (const auto oauth = value.find("oauth"); oauth != value.end()) {
    http.oauth = parse_oauth(*oauth, databases, base_dir);
  }
  if (const auto resource = value.find("resource"); resource != value.end()) {
    http.resource = detail::read_string(*resource, "http.resource");
    if (!is_http_url(http.resource)) fail("http.resource", "must be the MCP endpoint's https:// (or http://) URL");
    if (!http.oauth) fail("http.resource", "is used only with http.oauth");
  } else if (http.oauth) {
    fail("http.resource", "is required with http.oauth: the MCP endpoint's URL, which a token's aud must name");
  }
  if (const auto tokens = value.find("tokens"); tokens != value.end()) {
    if (!tokens->is_array()) fail("http.tokens", std::string("must be an array, not ") + detail::json_kind(*tokens));
    for (std::size_t i = 0; i < tokens->size(); ++i) {
      HttpToken token = parse_http_token((*tokens)[i], i, databases);
      for (const HttpToken& earlier : http.tokens) {
        const std::string field = "http.tokens[" + std::to_string(i) + "]";
        if (earlier.name == token.name) fail(field + ".name", "is used by an earlier token");
        if (earlier.sha256 == token.sha256) fail(field + ".sha256", "is an earlier token's digest");
      }
      http.tokens.push_back(std::move(token));
    }
  }
  if (const auto origins = value.find("allowed_origins"); origins != value.end()) {
    if (!origins->is_array()) {
      fail("http.allowed_origins", std::string("must be an array, not ") + detail::json_kind(*origins));
    }
    for (std::size_t i = 0; i < origins->size(); ++i) {
      const std::string field = "http.allowed_origins[" + std::to_string(i) + "]";
      std::string origin = detail::read_string((*origins)[i], field);
      if (origin.empty()) fail(field, "must not be empty");
      http.allowed_origins.push_back(std::move(origin));
    }
  }
  if (const auto limit = value.find("max_body_bytes"); limit != value.end()) {
    http.max_body_bytes = static_cast<std::size_t>(detail::read_integer(*limit, "http.max_body_bytes", 1024, 67108864));
  }
  if (const auto open = value.find("allow_unauthenticated"); open != value.end()) {
    http.allow_unauthenticated = detail::read_bool(*open, "http.allow_unauthenticated");
  }
  const auto count = [&](std::string_view key, std::int64_t maximum, std::size_t& into) {
    if (const auto found = value.find(key); found != value.end()) {
      into = static_cast<std::size_t>(detail::read_integer(*found, "http." + std::string(key), 1, maximum));
    }
  };
  count("max_sessions", 100000, http.max_sessions);
  count("max_connections", 1000000, http.max_connections);
  count("max_sessions_per_token", 100000, http.max_sessions_per_token);
  count("max_calls_per_token", 1024, http.max_calls_per_token);
  count("session_idle_seconds", 604800, http.session_idle_seconds);
  count("request_timeout_seconds", 3600, http.request_timeout_seconds);
  count("idle_timeout_seconds", 86400, http.idle_timeout_seconds);
  count("head_timeout_seconds", 3600, http.head_timeout_seconds);
  if (const auto found = value.find("max_memory_bytes"); found != value.end()) {
    http.max_memory_bytes = static_cast<std::size_t>(
        detail::read_integer(*found, "http.max_memory_bytes", 16 * 1024 * 1024, std::int64_t{1} << 40));
  }
  require_http_call_fits(http.max_memory_bytes, databases);
  if (const auto grace = value.find("shutdown_grace_seconds"); grace != value.end()) {
    http.shutdown_grace_seconds = static_cast<std::size_t>(detail::read_integer(*grace, "http.shutdown_grace_seconds", 0, 3600));
  }
  if (const auto sessions = value.find("sessions"); sessions != value.end()) {
    http.sessions = detail::read_bool(*sessions, "http.sessions");
  }
  return http;
}

LogConfig parse_log(const json& value, const std::filesystem::path& base_dir) {
  const std::string field = "log";
  detail::require_object(value, field);
  detail::reject_unknown_keys(value, {"destination", "path", "level"}, field);
  LogConfig log;
  if (auto it = value.find("destination"); it != value.end()) {
    std::string s = detail::read_string(*it, "log.destination");
    if (s == "file") {
      log.destination = LogDestination::file;
    } else if (s == "syslog") {
      log.destination = LogDestination::syslog;
    } else if (s == "stderr") {
      log.destination = LogDestination::standard_error;
    } else {
      fail("log.destination", "must be \"file\", \"syslog\" or \"stderr\"");
    }
  }
  if (auto it = value.find("path"); it != value.end()) {
    std::string s = detail::read_string(*it, "log.path");
    if (s.empty()) fail("log.path", "must not be empty");
    if (s.find('\0') != std::string::npos) fail("log.path", "must not contain a NUL character");
    if (log.destination && *log.destination != LogDestination::file) {
      fail("log.path", "is only for log.destination \"file\"");
    }
    log.destination = LogDestination::file;  // a path alone means a file
    std::filesystem::path file{s};
    if (file.is_relative()) file = base_dir.empty() ? std::filesystem::absolute(file) : base_dir / file;
    log.path = file.lexically_normal();
  }
  if (auto it = value.find("level"); it != value.end()) {
    std::string s = detail::read_string(*it, "log.level");
    auto level = log_level_from_name(s);
    if (!level) fail("log.level", "must be \"error\", \"warn\", \"info\" or \"debug\"");
    log.level = *level;
  }
  return log;
}

}  // namespace

bool valid_database_label(std::string_view label) noexcept { return Label::valid(label); }

DatabaseConfig database_for_target(std::string_view url_or_path, const std::filesystem::path& base_dir) {
  if (url_or_path.empty()) fail("database", "the target must not be empty");
  if (url_or_path.find("${") != std::string_view::npos) {
    fail("database", "holds ${, a variable nobody replaced: the value itself must be given (the shell replaces $NAME "
                     "on a command line; a configuration file's url and path replace ${NAME})");
  }
  if (auto scheme = scheme_of(url_or_path); scheme && url_or_path.substr(scheme->size(), 3) == "://" &&
                                            *scheme != "postgresql" && *scheme != "postgres" && *scheme != "sqlite") {
    fail("database", "uses " + scheme_named(*scheme) + ", which is not one rawtool speaks. " + std::string(engines_spoken));
  }
  DatabaseConfig db;
  if (libpq_form(url_or_path) != LibpqForm::none) {
    db.kind = TargetKind::postgresql;
    db.target = std::string(url_or_path);
    return db;
  }
  std::string_view path = url_or_path;
  if (starts_with(path, "sqlite:")) {
    path.remove_prefix(7);
    if (starts_with(path, "//")) path.remove_prefix(2);
    if (path.empty()) fail("database", "a sqlite: target needs a path");
  }
  db.kind = TargetKind::sqlite_path;
  db.target = resolve_path(path, base_dir);
  return db;
}

std::size_t http_call_reserve_bytes(const std::vector<DatabaseConfig>& databases) noexcept {
  std::size_t max_bytes = 0;
  for (const DatabaseConfig& database : databases) max_bytes = std::max<std::size_t>(max_bytes, database.limits.max_bytes);
  return 2 * mcp_max_reply_bytes + 8 * max_bytes;
}

void require_http_call_fits(std::size_t max_memory_bytes, const std::vector<DatabaseConfig>& databases) {
  if (const auto reserve = http_call_reserve_bytes(databases); max_memory_bytes < reserve) {
    fail("http.max_memory_bytes", "is less than one tool call may hold (" + std::to_string(reserve) +
                                      " bytes: twice the " + std::to_string(mcp_max_reply_bytes / (1024 * 1024)) +
                                      " MiB answer limit and 8 × the largest max_bytes), so no call could run; raise "
                                      "it to at least that, or lower limits.max_bytes");
  }
}

void validate_config(const Config& config) {
  if (config.databases.empty()) fail("databases", "no database is configured");
  std::set<std::string, std::less<>> labels;
  for (std::size_t i = 0; i < config.databases.size(); ++i) {
    const DatabaseConfig& db = config.databases[i];
    std::string field = "databases[" + std::to_string(i) + "]";
    if (!valid_database_label(db.label)) fail(field + ".label", "must be 1 to 64 of A-Z a-z 0-9 _ . -");
    if (!labels.insert(db.label).second) fail(field + ".label", "repeats the label of an earlier database");
    if (db.kind == TargetKind::sqlite_path && db.target.empty()) fail(field + ".path", "must not be empty");
    if (db.kind == TargetKind::sqlite_path && db.access == AccessMode::read_write && !db.sqlite.create_if_missing &&
        db.target != ":memory:") {
      std::error_code error;
      if (!std::filesystem::exists(db.target, error)) {
        fail(field, "is a read_write SQLite database whose file does not exist; rawtool creates it only when "
                    "create_if_missing is true");
      }
    }
    if (db.kind != TargetKind::postgresql && !db.password_file.empty()) {
      fail(field + ".password_file", "applies to PostgreSQL databases only");
    }
    if (!db.refuse_hazards.empty() && (db.kind != TargetKind::postgresql || db.access != AccessMode::read_only)) {
      fail(field + ".refuse_hazards", "applies to read_only PostgreSQL databases only");
    }
    if (db.kind != TargetKind::sqlite_path && db.sqlite.read_only_wal != SqliteOptions{}.read_only_wal) {
      fail(field + ".sqlite_read_only_wal", "applies to SQLite databases only");
    }
    if (db.pool_size < 1 || db.pool_size > static_cast<std::size_t>(max_pool_size)) {
      fail(field + ".pool_size", "must be an integer from 1 to " + std::to_string(max_pool_size));
    }
    const Limits& l = db.limits;
    if (l.statement_timeout.count() < 1 || l.statement_timeout.count() > max_timeout_ms) {
      fail(field + ".limits.statement_timeout_ms", "must be an integer from 1 to " + std::to_string(max_timeout_ms));
    }
    if (l.lock_timeout.count() < 1 || l.lock_timeout.count() > max_timeout_ms) {
      fail(field + ".limits.lock_timeout_ms", "must be an integer from 1 to " + std::to_string(max_timeout_ms));
    }
    if (l.max_rows < 1 || l.max_rows > static_cast<std::uint64_t>(max_rows_limit)) {
      fail(field + ".limits.max_rows", "must be an integer from 1 to " + std::to_string(max_rows_limit));
    }
    if (l.max_bytes < 1 || l.max_bytes > static_cast<std::uint64_t>(max_bytes_limit)) {
      fail(field + ".limits.max_bytes", "must be an integer from 1 to " + std::to_string(max_bytes_limit));
    }
    if (l.max_statement_bytes < 1 || l.max_statement_bytes > static_cast<std::size_t>(max_statement_limit)) {
      fail(field + ".limits.max_statement_bytes", "must be an integer from 1 to " + std::to_string(max_statement_limit));
    }
    if (l.max_notice_bytes > static_cast<std::uint64_t>(max_notice_limit)) {
      fail(field + ".limits.max_notice_bytes", "must be an integer from 0 to " + std::to_string(max_notice_limit));
    }
  }
  if (config.render.budget < static_cast<std::size_t>(min_budget) ||
      config.render.budget > static_cast<std::size_t>(max_budget)) {
    fail("render.budget_bytes",
         "must be an integer from " + std::to_string(min_budget) + " to " + std::to_string(max_budget));
  }
  if (config.max_concurrent_calls < 1 || config.max_concurrent_calls > static_cast<std::size_t>(max_calls)) {
    fail("max_concurrent_calls", "must be an integer from 1 to " + std::to_string(max_calls));
  }
  if (config.log.destination == LogDestination::file && config.log.path.empty()) {
    fail("log.path", "is required when log.destination is \"file\"");
  }
}

Config parse_config(std::string_view json_text, const std::filesystem::path& base_dir) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    fail("configuration", "is not valid JSON (at byte " + std::to_string(e.byte) + ")");
  } catch (const json::exception&) {
    // The parser's other complaints (a number too large for a double) quote
    // the input; say what is wrong in rawtool's words instead.
    fail("configuration", "holds a number this reader cannot represent (too large for a double)");
  }
  detail::require_object(root, "configuration");
  detail::reject_unknown_keys(
      root, {"databases", "raw_path", "catalog", "catalog_prose", "render", "max_concurrent_calls", "certified_tools", "structured_content", "log", "http", "metrics"},
      "");

  Config config;
  if (auto it = root.find("databases"); it != root.end()) {
    if (!it->is_array()) fail("databases", std::string("must be an array, not ") + detail::json_kind(*it));
    for (std::size_t i = 0; i < it->size(); ++i) config.databases.push_back(parse_database((*it)[i], i, base_dir));
  }
  if (config.databases.empty()) {
    auto from_env = database_from_environment(base_dir);
    if (!from_env) {
      fail("databases",
           "no database is configured: list databases here, or set RAWTOOL_DATABASE_URL or the PG* environment");
    }
    config.databases.push_back(*from_env);
  }
  if (auto it = root.find("raw_path"); it != root.end()) config.raw_path = detail::read_bool(*it, "raw_path");
  if (auto it = root.find("catalog"); it != root.end()) {
    std::string s = detail::read_string(*it, "catalog");
    if (s.empty()) fail("catalog", "must not be empty");
    config.catalog = std::filesystem::path(resolve_path(s, base_dir));
  }
  if (auto it = root.find("catalog_prose"); it != root.end()) {
    std::string s = detail::read_string(*it, "catalog_prose");
    if (s == "quoted") {
      config.render.catalog_prose = render::CatalogProse::quoted;
    } else if (s == "omitted") {
      config.render.catalog_prose = render::CatalogProse::omitted;
    } else {
      fail("catalog_prose", "must be \"quoted\" or \"omitted\"");
    }
  }
  if (auto it = root.find("render"); it != root.end()) parse_render(*it, config.render);
  if (auto it = root.find("structured_content"); it != root.end()) {
    const std::string s = detail::read_string(*it, "structured_content");
    if (s != "both" && s != "text") fail("structured_content", "must be \"both\" or \"text\"");
    config.structured_content = s == "both";
  }
  if (auto it = root.find("certified_tools"); it != root.end()) {
    const std::string s = detail::read_string(*it, "certified_tools");
    if (s == "single") {
      config.certified_tools = Config::CertifiedTools::single;
    } else if (s == "per_query") {
      config.certified_tools = Config::CertifiedTools::per_query;
    } else {
      fail("certified_tools", "must be \"single\" or \"per_query\"");
    }
  }
  if (auto it = root.find("max_concurrent_calls"); it != root.end()) {
    config.max_concurrent_calls =
        static_cast<std::size_t>(detail::read_integer(*it, "max_concurrent_calls", 1, max_calls));
  }
  if (auto it = root.find("log"); it != root.end()) config.log = parse_log(*it, base_dir);
  if (auto it = root.find("http"); it != root.end()) config.http = parse_http(*it, config.databases, base_dir);
  if (auto it = root.find("metrics"); it != root.end()) {
    detail::require_object(*it, "metrics");
    detail::reject_unknown_keys(*it, {"listen"}, "metrics");
    if (auto listen = it->find("listen"); listen != it->end()) {
      config.metrics.listen = detail::read_string(*listen, "metrics.listen");
      if (config.metrics.listen.empty()) fail("metrics.listen", "must be HOST:PORT, not empty");
    }
  }
  validate_config(config);
  return config;
}

Config load_config(const std::filesystem::path& file) {
  // The path is the operator's own, shown escaped so that an odd byte in it
  // cannot act on the terminal.
  const auto cannot = [&](std::string_view what, int error) {
    std::string shown = "\"";
    render::append_escaped(shown, Untrusted(file.string()), render::EscapeContext::cell, render::RenderOptions{});
    shown += '"';
    fail("configuration", "cannot " + std::string(what) + " the file " + shown + ": " +
                              std::generic_category().message(error));
  };
  std::FILE* stream = std::fopen(file.c_str(), "rb");
  if (stream == nullptr) cannot("open", errno);
  std::string text;
  char buffer[65536];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, stream)) > 0) text.append(buffer, got);
  const int error = std::ferror(stream) != 0 ? errno : 0;
  std::fclose(stream);
  if (error != 0) cannot("read", error);
  std::filesystem::path base = std::filesystem::absolute(file).parent_path();
  return parse_config(text, base);
}

}  // namespace rawtool
