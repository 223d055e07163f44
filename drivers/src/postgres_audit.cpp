// The read-only audit of a PostgreSQL session (see PostgresOptions in
// driver.hpp). One query asks the server what the session can become and
// do; the hazards and the words for them are decided here, from codes and
// counts only, so that no name the server sent reaches rawtool's own text.
#include "detail/postgres_audit.hpp"
#include "detail/postgres_round_trip.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <span>
#include <utility>
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
// is simply absent (to_regprocedure gives NULL), and one whose arguments
// changed is listed in each form (pg_logical_emit_message took a fourth in
// PostgreSQL 17); through any role reached, EXECUTE on one of them is the
// hazard. Only effects that a rollback does not
// undo count: a function that writes catalogs (pg_import_system_collations)
// is undone with the transaction. Each row is a kind and a name.
//
// Ownership, by any role reached, as checked against PostgreSQL 15 inside
// BEGIN READ ONLY ... ROLLBACK:
//   - a table's owner (also a partitioned table, materialized view or foreign
//     table; ANALYZE takes no other kind) and the database's owner (every
//     table but the shared catalogs) can ANALYZE. ANALYZE runs in a read-only
//     transaction, and the pg_class.reltuples and relpages it writes in place
//     and the analyze_count it reports stay after the rollback: refused. On
//     PostgreSQL 17 pg_maintain and the MAINTAIN privilege give the same.
//   - the owner of a table can also CLUSTER and REINDEX it (allowed in a
//     read-only transaction, but the new files are dropped with the rollback,
//     relfilenode unchanged) and LOCK it ACCESS EXCLUSIVE for the length of
//     the call; ALTER, COMMENT, GRANT, SECURITY LABEL, CREATE INDEX are
//     refused by the READ ONLY transaction and VACUUM by the transaction block.
//   - a schema's owner cannot ANALYZE the tables in it owned by others
//     ("only table or database owner can analyze it"), and DROP, ALTER,
//     CREATE in it are refused as read-only. A sequence's owner gets no more
//     than USAGE gives (nextval, setval, ALTER SEQUENCE are refused as
//     read-only); a function's owner cannot ALTER or replace it (refused as
//     read-only). Reported, so that the operator knows the role owns them.
// A SECURITY DEFINER function runs as its owner: one owned by a superuser can
// run COPY ... TO PROGRAM from inside a READ ONLY transaction (checked). One
// whose owner the session can become gives it nothing new and is left out.
// What such a function does is up to its code, so it is reported, not
// refused; the superuser-owned and server-file/program-owned ones come first.
//
// A kind's rows may carry an order after a dot ('security_definer.0': owned
// by a superuser), which the names are sorted by, the worst first. Each kind
// lists at most 20 names; a 'more.<kind>' row counts the others, and
// 'count.<what>' rows give counts for the explanations.
//
// The server log: a message is written to it when its level reaches the
// effective log_min_messages (the role's ALTER ROLE ... SET included), and
// then with the statement's whole text when it reaches
// log_min_error_statement. LOG ranks above ERROR there, so at
// log_min_messages = error a RAISE LOG in a loop still writes each message
// and, at the default log_min_error_statement, the statement with it (checked:
// 100 RAISE LOG wrote 200 lines); only fatal and panic stop what a statement
// can raise. Neither can be set by the role (superuser-only settings:
// "permission denied to set parameter", also for SET LOCAL).
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
  ('logical_message', 'pg_catalog.pg_logical_emit_message(boolean,text,text,boolean)'),
  ('logical_message', 'pg_catalog.pg_logical_emit_message(boolean,text,bytea,boolean)'),
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
), maintain_known AS (
  SELECT pg_catalog.current_setting('server_version_num')::integer >= 170000 AS yes
), owned(kind, rank, name) AS (
  SELECT 'database_owner', 0, d.datname::text FROM pg_catalog.pg_database d
  WHERE d.datname = pg_catalog.current_database() AND d.datdba IN (SELECT oid FROM reach)
  UNION ALL
  SELECT 'schema_owner', 0, n.nspname::text FROM pg_catalog.pg_namespace n WHERE n.nspowner IN (SELECT oid FROM reach)
  UNION ALL
  SELECT CASE WHEN c.relkind = 'S' THEN 'sequence_owner' ELSE 'table_owner' END, 0, c.oid::pg_catalog.regclass::text
  FROM pg_catalog.pg_class c
  WHERE c.relkind IN ('r', 'p', 'm', 'f', 'S') AND c.relpersistence <> 't' AND c.relowner IN (SELECT oid FROM reach)
  UNION ALL
  SELECT 'function_owner', 0, p.oid::pg_catalog.regprocedure::text FROM pg_catalog.pg_proc p
  WHERE p.proowner IN (SELECT oid FROM reach)
  UNION ALL
  SELECT 'maintain', 0, rolname::text FROM reach WHERE rolname = 'pg_maintain'
  UNION ALL
  SELECT 'maintain', 1, c.oid::pg_catalog.regclass::text FROM pg_catalog.pg_class c, maintain_known m
  WHERE m.yes AND c.relkind IN ('r', 'p', 'm', 'f') AND c.relpersistence <> 't'
    AND c.relowner NOT IN (SELECT oid FROM reach)
    AND EXISTS (SELECT 1 FROM reach
                WHERE CASE WHEN m.yes THEN pg_catalog.has_table_privilege(reach.oid, c.oid, 'MAINTAIN') END)
  UNION ALL
  SELECT 'security_definer',
         CASE WHEN o.rolsuper THEN 0
              WHEN pg_catalog.pg_has_role(o.oid, 'pg_execute_server_program', 'MEMBER')
                OR pg_catalog.pg_has_role(o.oid, 'pg_write_server_files', 'MEMBER')
                OR pg_catalog.pg_has_role(o.oid, 'pg_read_server_files', 'MEMBER') THEN 1
              ELSE 2 END,
         pg_catalog.format('%s owned by %I', p.oid::pg_catalog.regprocedure, o.rolname)
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_roles o ON o.oid = p.proowner
  WHERE p.prosecdef AND p.proowner NOT IN (SELECT oid FROM reach)
    AND EXISTS (SELECT 1 FROM reach WHERE pg_catalog.has_function_privilege(reach.oid, p.oid, 'EXECUTE'))
), ranked AS (
  SELECT kind, rank, name, pg_catalog.row_number() OVER (PARTITION BY kind ORDER BY rank, name) AS n,
         pg_catalog.count(*) OVER (PARTITION BY kind) AS total
  FROM owned
), log_levels(level, rank) AS (VALUES
  ('debug5', 0), ('debug4', 0), ('debug3', 0), ('debug2', 0), ('debug1', 0), ('info', 1), ('notice', 2),
  ('warning', 3), ('error', 4), ('log', 5), ('fatal', 6), ('panic', 7)
)
)sql";
constexpr std::string_view audit_rows = R"sql(
UNION ALL SELECT kind || '.' || rank, name FROM ranked WHERE n <= 20
UNION ALL SELECT 'more.' || kind, (total - 20)::text FROM ranked WHERE n = 1 AND total > 20
UNION ALL SELECT 'count.security_definer_superuser', pg_catalog.count(*)::text FROM owned
  WHERE kind = 'security_definer' AND rank = 0
UNION ALL SELECT 'count.security_definer_server_access', pg_catalog.count(*)::text FROM owned
  WHERE kind = 'security_definer' AND rank = 1
UNION ALL SELECT 'server_log.' || v.i, v.name FROM log_levels l, LATERAL (VALUES
    (1, pg_catalog.format('ALTER ROLE %I SET log_min_messages = fatal', session_user)),
    (2, 'log_min_messages = ' || pg_catalog.current_setting('log_min_messages')),
    (3, 'log_min_error_statement = ' || pg_catalog.current_setting('log_min_error_statement'))) AS v(i, name)
  WHERE l.level = pg_catalog.current_setting('log_min_messages') AND l.rank < 6
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
     "text, bytea) FROM PUBLIC (on PostgreSQL 17 and later, the forms with a fourth, boolean argument too), and "
     "grant it back to the roles that need it."},
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
    {HazardKind::database_owner, "database_owner", true, "it owns the database, so it can ANALYZE every table",
     "a role the session can become owns this database, and a database's owner may ANALYZE every table in it: the "
     "statistics ANALYZE writes (pg_class.reltuples and relpages, the analyze counters) are not undone by the "
     "rollback. Connect as a role that owns nothing (ALTER DATABASE ... OWNER TO another role)."},
    {HazardKind::schema_owner, "schema_owner", false, "",
     "a role the session can become owns the schemas named. A read-only transaction refuses what their owner could "
     "do beyond others (CREATE, ALTER, DROP in them), but a role that owns nothing is safer: REASSIGN OWNED BY the "
     "role TO another, or ALTER SCHEMA ... OWNER TO."},
    {HazardKind::table_owner, "table_owner", true, "it owns tables, so it can ANALYZE them",
     "a role the session can become owns the tables or materialized views named: their owner may ANALYZE them, and "
     "the statistics ANALYZE writes (pg_class.reltuples and relpages, the analyze counters) are not undone by the "
     "rollback; it may also lock them against every other session for the length of a call. REASSIGN OWNED BY the "
     "role TO another, or ALTER TABLE ... OWNER TO."},
    {HazardKind::sequence_owner, "sequence_owner", false, "",
     "a role the session can become owns the sequences named; a read-only transaction refuses nextval, setval and "
     "ALTER SEQUENCE, so owning them gives no more than USAGE. A role that owns nothing is safer: REASSIGN OWNED BY "
     "the role TO another, or ALTER SEQUENCE ... OWNER TO."},
    {HazardKind::function_owner, "function_owner", false, "",
     "a role the session can become owns the functions named; a read-only transaction refuses ALTER FUNCTION and "
     "CREATE OR REPLACE, so owning them gives nothing here. A role that owns nothing is safer: REASSIGN OWNED BY the "
     "role TO another, or ALTER FUNCTION ... OWNER TO."},
    {HazardKind::maintain, "maintain", true, "it can ANALYZE tables (pg_maintain or MAINTAIN)",
     "the session can become pg_maintain, or holds the MAINTAIN privilege on the tables named (PostgreSQL 17 and "
     "later): it may ANALYZE them, and the statistics ANALYZE writes (pg_class.reltuples and relpages, the analyze "
     "counters) are not undone by the rollback. REVOKE the membership or the privilege."},
    {HazardKind::security_definer, "security_definer", false, "",
     "the session can EXECUTE the SECURITY DEFINER functions named, which run as their owner, a role it cannot "
     "become. What each does is up to its code, and a read-only transaction does not stop what its owner may do "
     "outside the database: one owned by a superuser can run COPY ... TO PROGRAM on the server host. REVOKE "
     "EXECUTE ON FUNCTION ... FROM PUBLIC (and from the role) where the role needs none, or list security_definer "
     "in the database's refuse_hazards to refuse read-only mode while any is found."},
    {HazardKind::server_log, "server_log", false, "",
     "the server writes to its log what this role's statements raise at its log_min_messages and above (and the "
     "statement's whole text with each, at log_min_error_statement and above): a statement raising messages in a "
     "loop writes as fast as it can for the length of its call. The role cannot change either setting; a superuser "
     "can, with the ALTER ROLE statement named (the next connection takes it). fatal is needed: LOG ranks above "
     "ERROR there, so at error a RAISE LOG still reaches the log. It also keeps the role's own LOG lines "
     "(log_statement, log_min_duration_statement, auditing extensions) out of the log."},
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
std::optional<std::string> guard_expression(PGconn* conn, SteadyClock::time_point deadline) {
  std::string conditions;
  for (const RefusedRole& role : refused_roles) {
    conditions += fmt::format("{}({})", conditions.empty() ? "" : " OR ", role.condition);
  }
  const std::string query = fmt::format(
      "SELECT (SELECT s.oid FROM pg_catalog.pg_roles s WHERE s.rolname = session_user)::text, "
      "pg_catalog.string_agg(r.oid::text, ',') FROM pg_catalog.pg_roles r WHERE {}",
      conditions);
  const Result result = round_trip(conn, query.c_str(), deadline);
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

// A count the query sent, or 0.
std::uint64_t count_of(std::string_view text) {
  std::uint64_t count = 0;
  std::from_chars(text.data(), text.data() + text.size(), count);
  return count;
}

// "security_definer.2" is the kind "security_definer", its names ordered 2.
std::pair<std::string_view, unsigned> kind_and_order(std::string_view code) {
  const std::size_t dot = code.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == code.size()) return {code, 0};
  unsigned order = 0;
  const char* end = code.data() + code.size();
  if (std::from_chars(code.data() + dot + 1, end, order).ptr != end) return {code, 0};
  return {code.substr(0, dot), order};
}

}  // namespace

std::optional<SessionAudit> audit_session(PGconn* conn, SteadyClock::time_point deadline,
                                         std::span<const HazardKind> refuse_hazards) {
  const Result result = round_trip(conn, audit_query().c_str(), deadline);
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK || PQnfields(result.get()) != 2) return std::nullopt;

  SessionAudit audit;
  audit.report.engine = Engine::postgresql;
  std::map<HazardKind, Hazard> found;
  // Per kind, each name with the order the query gave it.
  std::map<HazardKind, std::vector<std::pair<unsigned, std::string_view>>> named;
  std::map<HazardKind, std::uint64_t> left_out;
  std::string wal_level;
  std::uint64_t shared_sessions = 0;
  std::uint64_t definers_superuser = 0;
  std::uint64_t definers_server_access = 0;
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
      shared_sessions = count_of(text);
    } else if (code == "count.security_definer_superuser") {
      definers_superuser = count_of(text);
    } else if (code == "count.security_definer_server_access") {
      definers_server_access = count_of(text);
    } else if (code.starts_with("more.")) {
      const KindWords* words = words_for(code.substr(5));
      if (words == nullptr) return std::nullopt;
      left_out[words->kind] = count_of(text);
    } else if (const auto [kind, order] = kind_and_order(code); const KindWords* words = words_for(kind)) {
      found[words->kind].kind = words->kind;
      named[words->kind].emplace_back(order, text);
    } else {
      return std::nullopt;  // a row this query does not make
    }
  }
  for (auto& [kind, names] : named) {
    std::stable_sort(names.begin(), names.end());
    for (const auto& [order, name] : names) found[kind].names.emplace_back(name);
  }
  for (const auto& [kind, count] : left_out) {
    found[kind].kind = kind;
    found[kind].names_left_out = count;
  }
  if (shared_sessions > 0) {
    Hazard& hazard = found[HazardKind::shared_role];
    hazard.kind = HazardKind::shared_role;
  }
  if (audit.prepared_transactions) found[HazardKind::prepared_transactions].kind = HazardKind::prepared_transactions;
  std::optional<std::string> guard = guard_expression(conn, deadline);
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
    if (kind == HazardKind::security_definer) {
      hazard.explanation += Trusted::format(" Of those found, {} {} owned by a superuser and {} by a role that "
                                            "reaches server files or programs; they are named first.",
                                            definers_superuser, definers_superuser == 1 ? Literal("is") : Literal("are"),
                                            definers_server_access);
    }
    if (!hazard.refused &&
        std::find(refuse_hazards.begin(), refuse_hazards.end(), kind) != refuse_hazards.end()) {
      hazard.refused = true;
      hazard.explanation += Trusted::format(" The configuration's refuse_hazards lists {}, so read-only mode refuses "
                                            "to run while it is found.",
                                            Label::checked(hazard_kind_name(kind)));
      audit.refused_by_setting.push_back(kind);
    }
    audit.report.hazards.push_back(std::move(hazard));
  }
  return audit;
}

std::optional<Refusal> read_only_refusal(const SessionAudit& audit) {
  // A reachable superuser can do everything else the list names: saying so is enough.
  const bool superuser = std::any_of(audit.report.hazards.begin(), audit.report.hazards.end(),
                                     [](const Hazard& hazard) { return hazard.kind == HazardKind::superuser; });
  const auto by_setting = [&](HazardKind kind) {
    return std::find(audit.refused_by_setting.begin(), audit.refused_by_setting.end(), kind) !=
           audit.refused_by_setting.end();
  };
  Trusted phrases;
  Trusted listed;
  for (const Hazard& hazard : audit.report.hazards) {
    if (!hazard.refused || (superuser && hazard.kind != HazardKind::superuser)) continue;
    if (by_setting(hazard.kind)) {
      if (!listed.empty()) listed += ", ";
      listed += Label::checked(hazard_kind_name(hazard.kind));
      continue;
    }
    if (!phrases.empty()) phrases += "; ";
    phrases += words_for(hazard.kind).phrase;
  }
  if (phrases.empty() && listed.empty()) return std::nullopt;
  Trusted why;
  if (!phrases.empty()) {
    why = Trusted::format("because of what its role can do that a read-only transaction does not stop: {}", phrases);
  }
  if (!listed.empty()) {
    if (!why.empty()) why += "; and ";
    why += Trusted::format("because the audit found hazards the configuration's refuse_hazards lists: {}", listed);
  }
  return Refusal{RefusalReason::not_permitted,
                 Trusted::format("Read-only mode refuses to run on this connection, {}. `rawtool check-config --connect` "
                                 "names the roles, objects and functions; connect as a role without them.",
                                 why)};
}

}  // namespace rawtool::detail
