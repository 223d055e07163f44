#include <rawtool/shared_roles.hpp>

#include <algorithm>
#include <optional>

namespace rawtool {

namespace {

/// A token's scope as a set: the labels, sorted (configuration order is not
/// part of what a token reaches).
std::vector<std::string> scope_of(const HttpToken& token) {
  std::vector<std::string> scope = token.databases;
  std::sort(scope.begin(), scope.end());
  return scope;
}

bool reaches(const HttpToken& token, const std::string& label) {
  return std::find(token.databases.begin(), token.databases.end(), label) != token.databases.end();
}

}  // namespace

bool scopes_may_share_roles(const Config& config) {
  const auto& tokens = config.http.tokens;
  const bool different = std::any_of(tokens.begin(), tokens.end(),
                                     [&](const HttpToken& token) { return scope_of(token) != scope_of(tokens.front()); });
  const bool postgres = std::any_of(config.databases.begin(), config.databases.end(),
                                    [](const DatabaseConfig& db) { return db.kind == TargetKind::postgresql; });
  return different && postgres;
}

std::vector<SharedRole> find_shared_roles(const Config& config, const std::vector<DatabaseCheck>& checks) {
  // The databases that connect as one role on one server, in configuration order.
  struct Group {
    Untrusted server;
    SharedRole shared;
  };
  std::vector<Group> groups;
  for (const DatabaseCheck& check : checks) {
    if (check.engine != Engine::postgresql || !check.report || check.report->role.empty() ||
        check.report->server.empty()) {
      continue;
    }
    const auto found = std::find_if(groups.begin(), groups.end(), [&](const Group& group) {
      return group.server == check.report->server && group.shared.role == check.report->role;
    });
    if (found != groups.end()) {
      found->shared.databases.push_back(check.label);
    } else {
      groups.push_back({check.report->server, SharedRole{check.report->role, {check.label}, {}}});
    }
  }
  std::vector<SharedRole> shared;
  for (Group& group : groups) {
    std::optional<std::vector<std::string>> first_scope;
    bool different = false;
    for (const HttpToken& token : config.http.tokens) {
      const bool reached = std::any_of(group.shared.databases.begin(), group.shared.databases.end(),
                                       [&](const std::string& label) { return reaches(token, label); });
      if (!reached) continue;
      group.shared.tokens.push_back(token.name);
      if (!first_scope) first_scope = scope_of(token);
      different = different || *first_scope != scope_of(token);
    }
    if (different) shared.push_back(std::move(group.shared));
  }
  return shared;
}

}  // namespace rawtool
