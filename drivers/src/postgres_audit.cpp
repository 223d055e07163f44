// The read-only audit of a PostgreSQL session (see PostgresOptions in
// driver.hpp). One query asks the server what the session can become and
// do; the hazards and the words for them are decided here, from codes and
// counts only, so that no name the server sent reaches rawtool's own text.
#include "detail/postgres_audit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rawtool::detail {
namespace {

// Every role the session can become: SET ROLE reaches every role the session
// user (or the current user, when a connection option set one) is a member
// of, directly or through other roles, whatever their INHERIT setting, and
// a DO block can run SET ROLE. 'MEMBER' asks exactly that, of a pg_roles row r.
constexpr std::string_view reachable =
    "pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER') OR pg_catalog.pg_has_role(current_user, r.oid, 'MEMBER')";

// The roles read-only mode refuses a session for being able to become, as a
// condition on a pg_roles row: the audit names each reachable role that meets
// one, and the guard (SessionAudit::guard) looks for any in every call.
// Their words are in `kinds` below.
struct RefusedRole {
  std::string_view kind;
  std::string_view condition;
};
constexpr RefusedRole refused_roles[] = {
    {"superuser", "rolsuper"},
    {"replication", "rolreplication"},
    {"server_files", "rolname IN ('pg_read_server_files', 'pg_write_server_files')"},
    {"server_program", "rolname = 'pg_execute_server_program'"},
    {"signal_any_backend", "rolname = 'pg_signal_backend'"},
};

// The query is built around those two pieces (audit_query below).
//
// The functions are named by signature, so that one a server version lacks
// is simply absent (to_regprocedure gives NULL); through any role reached,
// EXECUTE on one of them is the hazard. Only effects that a rollback does not
// undo count: a function that writes catalogs (pg_import_system_collations)
// is undone with the transaction. Each row is a kind and a name.
constexpr std::string_view audit_reach = R"sql(
WITH reach AS (
  SELECT r.oid, r.rolname, r.rolsuper, r.rolreplication
  FROM pg_catalog.pg_roles r
  WHERE )sql";
constexpr std::string_view audit_body = R"sql(
), listed(kind, signature) AS (VALUES
  ('server_state_function', 'pg_catalog.pg_switch_wal()'),
  ('server_state_function', 'pg_catalog.pg_create_restore_point(text)'),
  ('server_state_function', 'pg_catalog.pg_backup_start(text,boolean)'),
  ('server_state_function', 'pg_catalog.pg_backup_stop(boolean)'),
  ('server_state_function', 'pg_catalog.pg_start_backup(text,boolean,boolean)'),
  ('server_state_function', 'pg_catalog.pg_stop_backup(boolean,boolean)'),
  ('server_state_function', 'pg_catalog.pg_promote(boolean,integer)'),
  ('server_state_function', 'pg_catalog.pg_reload_conf()'),
  ('server_state_function', 'pg_catalog.pg_rotate_logfile()'),
  ('server_state_function', 'pg_catalog.pg_wal_replay_pause()'),
  ('server_state_function', 'pg_catalog.pg_wal_replay_resume()'),
  ('server_state_function', 'pg_catalog.pg_stat_reset()'),
  ('server_state_function', 'pg_catalog.pg_stat_reset_shared(text)'),
  ('server_state_function', 'pg_catalog.pg_stat_reset_single_table_counters(oid)'),
  ('server_state_function', 'pg_catalog.pg_stat_reset_single_function_counters(oid)'),
  ('server_state_function', 'pg_catalog.pg_stat_reset_slru(text)'),
  ('server_state_function', 'pg_catalog.pg_stat_reset_replication_slot(text)'),
  ('server_state_function', 'pg_catalog.pg_stat_reset_subscription_stats(oid)'),
  ('server_state_function', 'pg_catalog.pg_replication_origin_advance(text,pg_lsn)'),
  ('server_file_function', 'pg_catalog.pg_read_file(text)'),
  ('server_file_function', 'pg_catalog.pg_read_file(text,boolean)'),
  ('server_file_function', 'pg_catalog.pg_read_file(text,bigint,bigint)'),
  ('server_file_function', 'pg_catalog.pg_read_file(text,bigint,bigint,boolean)'),
  ('server_file_function', 'pg_catalog.pg_read_binary_file(text)'),
  ('server_file_function', 'pg_catalog.pg_read_binary_file(text,boolean)'),
  ('server_file_function', 'pg_catalog.pg_read_binary_file(text,bigint,bigint)'),
  ('server_file_function', 'pg_catalog.pg_read_binary_file(text,bigint,bigint,boolean)'),
  ('server_file_function', 'pg_catalog.pg_ls_dir(text)'),
  ('server_file_function', 'pg_catalog.pg_ls_dir(text,boolean,boolean)'),
  ('server_file_function', 'pg_catalog.pg_stat_file(text)'),
  ('server_file_function', 'pg_catalog.pg_stat_file(text,boolean)'),
  ('server_file_function', 'pg_catalog.lo_import(text)'),
  ('server_file_function', 'pg_catalog.lo_import(text,oid)'),
  ('server_file_function', 'pg_catalog.lo_export(oid,text)'),
  ('logical_message', 'pg_catalog.pg_logical_emit_message(boolean,text,text)'),
  ('logical_message', 'pg_catalog.pg_logical_emit_message(boolean,text,bytea)'),
  ('signal_same_role', 'pg_catalog.pg_cancel_backend(integer)'),
  ('signal_same_role', 'pg_catalog.pg_terminate_backend(integer)'),
  ('signal_same_role', 'pg_catalog.pg_terminate_backend(integer,bigint)'),
  ('transaction_ids', 'pg_catalog.pg_current_xact_id()'),
  ('transaction_ids', 'pg_catalog.txid_current()')
), functions AS (
  SELECT l.kind, pg_catalog.to_regprocedure(l.signature) AS oid FROM listed l
  UNION ALL
  SELECT 'remote_connection', p.oid
  FROM pg_catalog.pg_extension e
  JOIN pg_catalog.pg_depend d ON d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
    AND d.refobjid = e.oid AND d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.deptype = 'e'
  JOIN pg_catalog.pg_proc p ON p.oid = d.objid
  WHERE e.extname = 'dblink'
)
)sql";
constexpr std::string_view audit_rows = R"sql(
UNION ALL SELECT f.kind, f.oid::pg_catalog.regprocedure::text FROM functions f
  WHERE f.oid IS NOT NULL
    AND EXISTS (SELECT 1 FROM reach WHERE pg_catalog.has_function_privilege(reach.oid, f.oid, 'EXECUTE'))
UNION ALL SELECT 'foreign_server', s.srvname::text FROM pg_catalog.pg_foreign_server s
  WHERE EXISTS (SELECT 1 FROM reach WHERE pg_catalog.has_server_privilege(reach.oid, s.oid, 'USAGE'))
UNION ALL SELECT 'shared_role', pg_catalog.count(*)::text FROM pg_catalog.pg_stat_activity a
  WHERE a.pid <> pg_catalog.pg_backend_pid() AND a.backend_type = 'client backend'
    AND a.usesysid IN (SELECT oid FROM reach) AND a.application_name IS DISTINCT FROM 'rawtool'
  HAVING pg_catalog.count(*) > 0
UNION ALL SELECT 'setting.server_version', pg_catalog.current_setting('server_version')
UNION ALL SELECT 'setting.server_encoding', pg_catalog.current_setting('server_encoding')
UNION ALL SELECT 'setting.session_user', session_user::text
UNION ALL SELECT 'setting.max_prepared_transactions', pg_catalog.current_setting('max_prepared_transactions')
UNION ALL SELECT 'setting.wal_level', pg_catalog.current_setting('wal_level')
)sql";

struct KindWords {
  HazardKind kind;
  std::string_view code;  ///< as the query names it
  bool refused;
  Literal phrase;       ///< for the refusal: "it can become a superuser role"
  Literal explanation;  ///< for the operator
};

// The logical_message entry is refused only at wal_level logical (below).
constexpr KindWords kinds[] = {
    {HazardKind::superuser, "superuser", true, "it can become a superuser role",
     "the session can become a superuser role (SET ROLE reaches every role it is a member of, directly or through "
     "others, also inside a DO block); a superuser can write server files, run programs and change anything. Connect "
     "as a role that is not a member of one."},
    {HazardKind::server_files, "server_files", true, "it can become a role that reads or writes server files",
     "the session can become pg_read_server_files or pg_write_server_files: COPY to and from server files and "
     "reading any file the server can read. REVOKE the membership."},
    {HazardKind::server_program, "server_program", true, "it can become a role that runs programs on the server",
     "the session can become pg_execute_server_program: COPY ... PROGRAM runs commands as the server's operating "
     "system user. REVOKE the membership."},
    {HazardKind::replication, "replication", true, "it can become a REPLICATION role",
     "the session can become a role with REPLICATION: replication slots it creates outlive any transaction and hold "
     "back WAL removal. Use a role without REPLICATION (ALTER ROLE ... NOREPLICATION)."},
    {HazardKind::signal_any_backend, "signal_any_backend", true, "it can become pg_signal_backend",
     "the session can become pg_signal_backend: it can cancel or end the sessions of other roles. REVOKE the "
     "membership."},
    {HazardKind::server_state_function, "server_state_function", true,
     "it can execute functions whose effects outlive a transaction",
     "the session can EXECUTE functions whose effects outlive a rolled-back transaction (WAL switches, restore "
     "points, backups, configuration reloads, statistics resets, replication origin progress). REVOKE EXECUTE on "
     "the functions named."},
    {HazardKind::server_file_function, "server_file_function", true, "it can execute functions that reach server files",
     "the session can EXECUTE functions that read or write files on the server (pg_read_file, pg_ls_dir, "
     "lo_import, lo_export and the like). REVOKE EXECUTE on the functions named."},
    {HazardKind::logical_message, "logical_message", false, "it can write logical messages into the WAL",
     "the session can EXECUTE pg_logical_emit_message, which writes text of the statement's choosing into the WAL "
     "outside any transaction; at wal_level logical, change-data-capture consumers read it. REVOKE EXECUTE ON "
     "FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, text), pg_catalog.pg_logical_emit_message(boolean, "
     "text, bytea) FROM PUBLIC, and grant it back to the roles that need it."},
    {HazardKind::remote_connection, "remote_connection", true, "it can execute dblink",
     "the session can EXECUTE dblink's functions, which open other connections that are not inside rawtool's "
     "read-only transaction. REVOKE EXECUTE on them."},
    {HazardKind::foreign_server, "foreign_server", false, "",
     "the session can use foreign servers; writes through foreign tables are refused in a read-only transaction, "
     "but what the remote side runs is up to its own role. Check the user mappings of the servers named."},
    {HazardKind::signal_same_role, "signal_same_role", false, "",
     "a statement can cancel or end other sessions of the roles this session can become (pg_cancel_backend, "
     "pg_terminate_backend are executable by every role by default). Use a role that only rawtool uses; rawtool "
     "itself uses pg_terminate_backend to end a statement of its own that ignores cancellation."},
    {HazardKind::transaction_ids, "transaction_ids", false, "",
     "a statement can consume transaction IDs (pg_current_xact_id, txid_current), which advances the server "
     "towards wraparound vacuuming; a call's cost is one ID."},
    {HazardKind::shared_role, "shared_role", false, "",
     "other sessions are connected as a role this session can become; a statement can cancel or end them. Use a "
     "role that only rawtool uses."},
    {HazardKind::prepared_transactions, "prepared_transactions", false, "",
     "max_prepared_transactions is above zero, so a statement can try PREPARE TRANSACTION; rawtool refuses a "
     "statement that prepares or ends its read-only transaction and rolls the prepared transaction back."},
};

// A refused role is refused whatever the guard or the audit finds it by.
constexpr bool refused_roles_have_refused_words() {
  for (const RefusedRole& role : refused_roles) {
    bool refused = false;
    for (const KindWords& words : kinds) refused = refused || (words.code == role.kind && words.refused);
    if (!refused) return false;
  }
  return true;
}
static_assert(refused_roles_have_refused_words(), "every kind of refused_roles has refused words in kinds");

const std::string& audit_query() {
  static const std::string text = [] {
    std::string query = fmt::format("{}{}{}", audit_reach, reachable, audit_body);
    for (const RefusedRole& role : refused_roles) {
      query += fmt::format("{}SELECT '{}', rolname::text FROM reach WHERE {}", &role == refused_roles ? "" : "\nUNION ALL ",
                           role.kind, role.condition);
    }
    query += audit_rows;
    return query;
  }();
  return text;
}

struct ResultDeleter {
  void operator()(PGresult* result) const noexcept { PQclear(result); }
};

// The guard checks the session user's membership in every role of the
// cluster that the audit refuses a session for reaching, by OID, as this
// query finds them when the session is audited: one pg_has_role each, on the
// server's cached membership. Scanning pg_roles (a view) in every call
// instead cost a read-only SELECT 1 about four times the server time this
// does (tests/bench/drivers). The current user needs no check of its own: a
// connection option can set it only to a role the session user is a member
// of (or as a superuser), so it reaches nothing the session user does not.
//
// So a GRANT of any of these roles is seen at the next call. A role made
// SUPERUSER or REPLICATION (CREATE or ALTER ROLE) after the audit, EXECUTE
// granted on one of the functions the audit lists (checking those in every
// call would cost it about twenty times its wrapping), and wal_level are
// seen when the audit is asked again (audit_lifetime in postgres_driver.cpp).
std::optional<std::string> guard_expression(PGconn* conn) {
  std::string conditions;
  for (const RefusedRole& role : refused_roles) {
    conditions += fmt::format("{}({})", conditions.empty() ? "" : " OR ", role.condition);
  }
  const std::string query = fmt::format(
      "SELECT (SELECT s.oid FROM pg_catalog.pg_roles s WHERE s.rolname = session_user)::text, "
      "pg_catalog.string_agg(r.oid::text, ',') FROM pg_catalog.pg_roles r WHERE {}",
      conditions);
  std::unique_ptr<PGresult, ResultDeleter> result(PQexec(conn, query.c_str()));
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK || PQntuples(result.get()) != 1 || PQnfields(result.get()) != 2)
    return std::nullopt;
  // OIDs, read as numbers and written again: nothing the server sent is spliced as it came.
  const auto oid_of = [](std::string_view text) -> std::optional<Oid> {
    Oid oid = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), oid);
    if (error != std::errc{} || end != text.data() + text.size() || oid == 0) return std::nullopt;
    return oid;
  };
  const std::optional<Oid> session = oid_of(PQgetvalue(result.get(), 0, 0));
  if (!session) return std::nullopt;
  std::string checks;
  std::string_view list = PQgetvalue(result.get(), 0, 1);
  while (!list.empty()) {
    const std::size_t comma = std::min(list.find(','), list.size());
    const std::optional<Oid> role = oid_of(list.substr(0, comma));
    if (!role) return std::nullopt;
    checks += fmt::format("{}pg_catalog.pg_has_role({}::pg_catalog.oid, {}::pg_catalog.oid, 'MEMBER'::pg_catalog.text)",
                          checks.empty() ? "" : " OR ", *session, *role);
    list.remove_prefix(std::min(comma + 1, list.size()));
  }
  if (checks.empty()) return std::string("1");
  // The division is the one way plain SQL has to raise an error on a
  // condition; qualified, so that no operator of the search path stands in for it.
  return fmt::format("1 OPERATOR(pg_catalog./) CASE WHEN {} THEN 0 ELSE 1 END", checks);
}

const KindWords* words_for(std::string_view code) {
  for (const KindWords& words : kinds)
    if (words.code == code) return &words;
  return nullptr;
}

const KindWords& words_for(HazardKind kind) {
  for (const KindWords& words : kinds)
    if (words.kind == kind) return words;
  return kinds[0];
}

}  // namespace

std::optional<SessionAudit> audit_session(PGconn* conn) {
  std::unique_ptr<PGresult, ResultDeleter> result(PQexec(conn, audit_query().c_str()));
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK || PQnfields(result.get()) != 2) return std::nullopt;

  SessionAudit audit;
  audit.report.engine = Engine::postgresql;
  std::map<HazardKind, Hazard> found;
  std::string wal_level;
  std::uint64_t shared_sessions = 0;
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    const std::string_view code = PQgetvalue(result.get(), row, 0);
    const char* value = PQgetvalue(result.get(), row, 1);
    const auto length = static_cast<std::size_t>(PQgetlength(result.get(), row, 1));
    const std::string_view text(value, length);
    if (code == "setting.server_version") {
      audit.report.server_version = Untrusted(text);
    } else if (code == "setting.server_encoding") {
      audit.report.encoding = Untrusted(text);
    } else if (code == "setting.session_user") {
      audit.report.role = Untrusted(text);
    } else if (code == "setting.max_prepared_transactions") {
      audit.prepared_transactions = text != "0";
    } else if (code == "setting.wal_level") {
      wal_level = std::string(text);
    } else if (code == "shared_role") {
      std::from_chars(text.data(), text.data() + text.size(), shared_sessions);
    } else if (const KindWords* words = words_for(code)) {
      Hazard& hazard = found[words->kind];
      hazard.kind = words->kind;
      hazard.names.emplace_back(text);
    } else {
      return std::nullopt;  // a row this query does not make
    }
  }
  if (shared_sessions > 0) {
    Hazard& hazard = found[HazardKind::shared_role];
    hazard.kind = HazardKind::shared_role;
  }
  if (audit.prepared_transactions) found[HazardKind::prepared_transactions].kind = HazardKind::prepared_transactions;
  std::optional<std::string> guard = guard_expression(conn);
  if (!guard) return std::nullopt;
  audit.guard = std::move(*guard);

  for (auto& [kind, hazard] : found) {
    const KindWords& words = words_for(kind);
    hazard.refused = words.refused;
    hazard.explanation = words.explanation;
    if (kind == HazardKind::logical_message) {
      hazard.refused = wal_level == "logical";
      hazard.explanation += hazard.refused ? Literal(" wal_level is logical here, so read-only mode refuses to run.")
                                           : Literal(" wal_level is not logical here, so nothing decodes it yet.");
    }
    if (kind == HazardKind::shared_role) {
      hazard.explanation += Trusted::format(" Seen when the audit ran: {} other session{}.", shared_sessions,
                                            shared_sessions == 1 ? Literal("") : Literal("s"));
    }
    audit.report.hazards.push_back(std::move(hazard));
  }
  return audit;
}

std::optional<Refusal> read_only_refusal(const SessionAudit& audit) {
  // A reachable superuser can do everything else the list names: saying so is enough.
  const bool superuser = std::any_of(audit.report.hazards.begin(), audit.report.hazards.end(),
                                     [](const Hazard& hazard) { return hazard.kind == HazardKind::superuser; });
  Trusted phrases;
  for (const Hazard& hazard : audit.report.hazards) {
    if (!hazard.refused || (superuser && hazard.kind != HazardKind::superuser)) continue;
    if (!phrases.empty()) phrases += "; ";
    phrases += words_for(hazard.kind).phrase;
  }
  if (phrases.empty()) return std::nullopt;
  return Refusal{RefusalReason::not_permitted,
                 Trusted::format("Read-only mode refuses to run on this connection, because of what its role can do "
                                 "that a read-only transaction does not stop: {}. `rawtool check-config --connect` names "
                                 "the roles and functions; connect as a role without them.",
                                 phrases)};
}

}  // namespace rawtool::detail
