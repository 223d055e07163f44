#pragma once

// Tokens whose database scopes differ but whose databases connect as one
// PostgreSQL role on one server: the scopes keep each token's statements to
// its own databases, and the server does not keep the tenants apart at all.

#include <rawtool/config.hpp>
#include <rawtool/tool.hpp>
#include <rawtool/untrusted.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace rawtool {

/// One PostgreSQL role on one server that tokens of different database
/// scopes reach. For operators (rawtool check-config --connect, the HTTP
/// server's start-up log), never for an agent.
struct SharedRole {
  Untrusted role;                      ///< as the server named it (DatabaseReport::role)
  std::vector<std::string> databases;  ///< configured labels that connect as it there, in configuration order
  std::vector<std::string> tokens;     ///< configured names of the tokens that reach them, in configuration order
};

/// What a tenant can do to another that shares its role, and what to do
/// about it: rawtool's words, for the lines that name a SharedRole.
inline constexpr std::string_view shared_role_consequence =
    "each of these tokens can see the others' statements in pg_stat_activity (the whole server's, whatever the "
    "database) and cancel or end their sessions (pg_cancel_backend, pg_terminate_backend), as every session of a "
    "role may do to another of the same role; where tenants must not see each other, give each token scope a role "
    "of its own";

/// True when `config` has tokens with different database scopes and a
/// PostgreSQL database: only then can find_shared_roles find anything, and
/// only then is it worth connecting to look.
bool scopes_may_share_roles(const Config& config);

/// The roles that tokens of two or more different database scopes reach on
/// one server, from what inspect_databases() found (DatabaseReport::role
/// and ::server; a database that was not reached, or whose server did not
/// say which it is, is left out). A token reaches a role when its scope holds
/// a database that connects as that role.
std::vector<SharedRole> find_shared_roles(const Config& config, const std::vector<DatabaseCheck>& checks);

}  // namespace rawtool
