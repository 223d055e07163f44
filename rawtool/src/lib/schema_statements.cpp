#include "lib/detail/schema_statements.hpp"

#include "lib/detail/crypto.hpp"

namespace rawtool::detail {

namespace {

using render::SchemaColumn;

// The columns every engine's statements return, section by section.
const std::vector<SchemaColumn> schemas_columns{{"schema"}, {"comment", true}};
const std::vector<SchemaColumn> objects_columns{{"schema"}, {"name"}, {"kind"}, {"row_estimate"}, {"comment", true}};
const std::vector<SchemaColumn> table_columns{{"schema"}, {"name"}, {"kind"}, {"row_estimate"}, {"comment", true}, {"definition", true}};
const std::vector<SchemaColumn> column_columns{{"position"}, {"name"},        {"type"}, {"nullable"},
                                               {"default_value"}, {"primary_key"}, {"comment", true}};
const std::vector<SchemaColumn> constraint_columns{{"name"},       {"kind"},           {"columns"},           {"references_schema"},
                                                   {"references_table"}, {"references_columns"}, {"definition", true}};
// The foreign keys of other tables that point at this one.
const std::vector<SchemaColumn> referenced_by_columns{{"name"}, {"schema"}, {"table"}, {"columns"}, {"references_columns"}};
const std::vector<SchemaColumn> index_columns{{"name"}, {"is_primary"}, {"is_unique"}, {"columns"}, {"definition", true}, {"comment", true}};

// ---- PostgreSQL: pg_catalog, what the session's role can use ----------------
// An object is shown when the role has USAGE on its schema and SELECT on it or
// on one of its columns; a column when the role can SELECT it.

#define RAWTOOL_PG_VISIBLE                                                                                  \
  "c.relkind IN ('r','p','v','m','f') AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%' " \
  "AND pg_catalog.has_schema_privilege(n.oid, 'USAGE') "                                                   \
  "AND (pg_catalog.has_table_privilege(c.oid, 'SELECT') OR pg_catalog.has_any_column_privilege(c.oid, 'SELECT')) "

#define RAWTOOL_PG_KIND                                                                                        \
  "CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' WHEN 'v' THEN 'view' "              \
  "WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' END"

#define RAWTOOL_PG_ROW_ESTIMATE "CASE WHEN c.relkind IN ('r','p','m') AND c.reltuples >= 0 THEN c.reltuples::bigint::text END"

#define RAWTOOL_PG_TARGET                                                                                              \
  "WITH target AS (SELECT c.oid, n.nspname, c.relname, c.relkind, c.reltuples FROM pg_catalog.pg_class c "           \
  "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE " RAWTOOL_PG_VISIBLE                               \
  "AND ((c.relname::text = $2::text AND ($1::text IS NULL OR n.nspname::text = $1::text)) OR ($1::text IS NULL AND n.nspname || '.' || c.relname::text = $2::text)) " \
  "ORDER BY c.relname::text = $2::text DESC, n.nspname = ANY (pg_catalog.current_schemas(false)) DESC, "                          \
  "pg_catalog.array_position(pg_catalog.current_schemas(false), n.nspname), n.nspname LIMIT 1) "

const SchemaStatements postgres{
    {"schemas", schemas_columns,
     "SELECT n.nspname AS schema, pg_catalog.obj_description(n.oid, 'pg_namespace') AS comment "
     "FROM pg_catalog.pg_namespace n WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%' "
     "AND pg_catalog.has_schema_privilege(n.oid, 'USAGE') AND ($1::text IS NULL OR n.nspname::text = $1::text) ORDER BY 1"},
    {"objects", objects_columns,
     "SELECT n.nspname AS schema, c.relname AS name, " RAWTOOL_PG_KIND " AS kind, " RAWTOOL_PG_ROW_ESTIMATE
     " AS row_estimate, pg_catalog.obj_description(c.oid, 'pg_class') AS comment "
     "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE " RAWTOOL_PG_VISIBLE
     "AND ($1::text IS NULL OR n.nspname::text = $1::text) AND ($2::text IS NULL OR c.relname::text ILIKE $2::text) "
     "ORDER BY n.nspname, c.relname LIMIT $3 OFFSET $4"},
    {
        {"table", table_columns,
         RAWTOOL_PG_TARGET "SELECT t.nspname AS schema, t.relname AS name, "
                           "CASE t.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' WHEN 'v' THEN 'view' "
                           "WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' END AS kind, "
                           "CASE WHEN t.relkind IN ('r','p','m') AND t.reltuples >= 0 THEN t.reltuples::bigint::text END AS row_estimate, "
                           "pg_catalog.obj_description(t.oid, 'pg_class') AS comment, "
                           "CASE WHEN t.relkind IN ('v','m') THEN pg_catalog.pg_get_viewdef(t.oid) END AS definition FROM target t"},
        {"columns", column_columns,
         RAWTOOL_PG_TARGET "SELECT a.attnum::text AS position, a.attname AS name, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type, "
                           "CASE WHEN a.attnotnull THEN 'no' ELSE 'yes' END AS nullable, "
                           "pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS default_value, "
                           "CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conrelid = a.attrelid "
                           "AND k.contype = 'p' AND a.attnum = ANY (k.conkey)) THEN 'yes' ELSE 'no' END AS primary_key, "
                           "pg_catalog.col_description(a.attrelid, a.attnum) AS comment "
                           "FROM target t JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid "
                           "LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
                           "WHERE a.attnum > 0 AND NOT a.attisdropped AND pg_catalog.has_column_privilege(a.attrelid, a.attnum, 'SELECT') "
                           "ORDER BY a.attnum"},
        {"constraints", constraint_columns,
         RAWTOOL_PG_TARGET "SELECT k.conname AS name, CASE k.contype WHEN 'p' THEN 'primary key' WHEN 'u' THEN 'unique' "
                           "WHEN 'f' THEN 'foreign key' WHEN 'c' THEN 'check' WHEN 'x' THEN 'exclusion' ELSE 'other' END AS kind, "
                           "(SELECT pg_catalog.json_agg(a.attname ORDER BY u.ord)::text FROM pg_catalog.unnest(k.conkey) "
                           "WITH ORDINALITY u(attnum, ord) JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum) AS columns, "
                           "rn.nspname AS references_schema, rc.relname AS references_table, "
                           "(SELECT pg_catalog.json_agg(a.attname ORDER BY u.ord)::text FROM pg_catalog.unnest(k.confkey) "
                           "WITH ORDINALITY u(attnum, ord) JOIN pg_catalog.pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.attnum) "
                           "AS references_columns, pg_catalog.pg_get_constraintdef(k.oid) AS definition "
                           "FROM target t JOIN pg_catalog.pg_constraint k ON k.conrelid = t.oid "
                           "LEFT JOIN pg_catalog.pg_class rc ON rc.oid = k.confrelid LEFT JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace "
                           "ORDER BY k.contype, k.conname"},
        {"indexes", index_columns,
         RAWTOOL_PG_TARGET "SELECT ic.relname AS name, CASE WHEN i.indisprimary THEN 'yes' ELSE 'no' END AS is_primary, "
                           "CASE WHEN i.indisunique THEN 'yes' ELSE 'no' END AS is_unique, "
                           "(SELECT pg_catalog.json_agg(pg_catalog.pg_get_indexdef(i.indexrelid, k.n, true) ORDER BY k.n)::text "
                           "FROM pg_catalog.generate_series(1, i.indnkeyatts) k(n)) AS columns, "
                           "pg_catalog.pg_get_indexdef(i.indexrelid) AS definition, "
                           "pg_catalog.obj_description(i.indexrelid, 'pg_class') AS comment "
                           "FROM target t JOIN pg_catalog.pg_index i ON i.indrelid = t.oid "
                           "JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid ORDER BY ic.relname"},
        // Only tables the role can use: a key on a table it cannot see stays unseen.
        {"referenced_by", referenced_by_columns,
         RAWTOOL_PG_TARGET "SELECT k.conname AS name, n.nspname AS schema, c.relname AS \"table\", "
                           "(SELECT pg_catalog.json_agg(a.attname ORDER BY u.ord)::text FROM pg_catalog.unnest(k.conkey) "
                           "WITH ORDINALITY u(attnum, ord) JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum) AS columns, "
                           "(SELECT pg_catalog.json_agg(a.attname ORDER BY u.ord)::text FROM pg_catalog.unnest(k.confkey) "
                           "WITH ORDINALITY u(attnum, ord) JOIN pg_catalog.pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.attnum) "
                           "AS references_columns "
                           "FROM target t JOIN pg_catalog.pg_constraint k ON k.confrelid = t.oid AND k.contype = 'f' "
                           "JOIN pg_catalog.pg_class c ON c.oid = k.conrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                           "WHERE " RAWTOOL_PG_VISIBLE "ORDER BY n.nspname, c.relname, k.conname"},
    }};

#undef RAWTOOL_PG_TARGET
#undef RAWTOOL_PG_ROW_ESTIMATE
#undef RAWTOOL_PG_KIND
#undef RAWTOOL_PG_VISIBLE

// ---- SQLite: sqlite_schema and the table-valued pragmas ---------------------
// Everything in the file is readable by whoever can open it; SQLite keeps no
// comments, so each object's CREATE statement (which holds any comment its
// author wrote) is its definition.

#define RAWTOOL_SQLITE_VISIBLE "s.type IN ('table','view') AND s.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "

#define RAWTOOL_SQLITE_TARGET                                                                                  \
  "WITH target AS (SELECT s.name, s.type, s.sql FROM sqlite_schema s WHERE " RAWTOOL_SQLITE_VISIBLE            \
  "AND (?1 IS NULL OR ?1 = 'main') AND (s.name = ?2 OR (?1 IS NULL AND 'main.' || s.name = ?2)) "              \
  "ORDER BY s.name = ?2 DESC LIMIT 1) "

const SchemaStatements sqlite{
    {"schemas", schemas_columns, "SELECT 'main' AS schema, NULL AS comment WHERE ?1 IS NULL OR ?1 = 'main'"},
    {"objects", objects_columns,
     "SELECT 'main' AS schema, s.name AS name, s.type AS kind, NULL AS row_estimate, NULL AS comment "
     "FROM sqlite_schema s WHERE " RAWTOOL_SQLITE_VISIBLE "AND (?1 IS NULL OR ?1 = 'main') AND (?2 IS NULL OR s.name LIKE ?2) "
     "ORDER BY s.name LIMIT ?3 OFFSET ?4"},
    {
        {"table", table_columns,
         RAWTOOL_SQLITE_TARGET "SELECT 'main' AS schema, t.name AS name, t.type AS kind, NULL AS row_estimate, NULL AS comment, "
                               "t.sql AS definition FROM target t"},
        {"columns", column_columns,
         RAWTOOL_SQLITE_TARGET "SELECT CAST(p.cid + 1 AS TEXT) AS position, p.name AS name, p.type AS type, "
                               "CASE WHEN p.\"notnull\" THEN 'no' ELSE 'yes' END AS nullable, p.dflt_value AS default_value, "
                               "CASE WHEN p.pk > 0 THEN 'yes' ELSE 'no' END AS primary_key, NULL AS comment "
                               "FROM target t, pragma_table_info(t.name) p ORDER BY p.cid"},
        {"constraints", constraint_columns,
         RAWTOOL_SQLITE_TARGET
         "SELECT NULL AS name, 'primary key' AS kind, "
         "(SELECT json_group_array(name) FROM (SELECT p.name FROM target t, pragma_table_info(t.name) p WHERE p.pk > 0 ORDER BY p.pk)) AS columns, "
         "NULL AS references_schema, NULL AS references_table, NULL AS references_columns, NULL AS definition "
         "WHERE EXISTS (SELECT 1 FROM target t, pragma_table_info(t.name) p WHERE p.pk > 0) "
         "UNION ALL "
         "SELECT l.name, 'unique', (SELECT json_group_array(name) FROM (SELECT x.name FROM pragma_index_info(l.name) x ORDER BY x.seqno)), "
         "NULL, NULL, NULL, NULL FROM target t, pragma_index_list(t.name) l WHERE l.origin = 'u' "
         "UNION ALL "
         "SELECT NULL, 'foreign key', json_group_array(f.\"from\"), 'main', f.\"table\", json_group_array(f.\"to\"), NULL "
         "FROM target t, pragma_foreign_key_list(t.name) f GROUP BY f.id"},
        {"indexes", index_columns,
         RAWTOOL_SQLITE_TARGET "SELECT l.name AS name, CASE WHEN l.origin = 'pk' THEN 'yes' ELSE 'no' END AS is_primary, "
                               "CASE WHEN l.\"unique\" THEN 'yes' ELSE 'no' END AS is_unique, "
                               "(SELECT json_group_array(name) FROM (SELECT x.name FROM pragma_index_info(l.name) x ORDER BY x.seqno)) AS columns, "
                               "(SELECT s.sql FROM sqlite_schema s WHERE s.type = 'index' AND s.name = l.name) AS definition, "
                               "NULL AS comment FROM target t, pragma_index_list(t.name) l ORDER BY l.name"},
        {"referenced_by", referenced_by_columns,
         RAWTOOL_SQLITE_TARGET "SELECT NULL AS name, 'main' AS schema, s.name AS \"table\", json_group_array(f.\"from\") AS columns, "
                               "json_group_array(f.\"to\") AS references_columns "
                               "FROM target t, sqlite_schema s, pragma_foreign_key_list(s.name) f "
                               "WHERE s.type = 'table' AND s.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND f.\"table\" = t.name COLLATE NOCASE "
                               "GROUP BY s.name, f.id ORDER BY s.name, f.id"},
    }};

#undef RAWTOOL_SQLITE_TARGET
#undef RAWTOOL_SQLITE_VISIBLE

std::string statements_sha256(const SchemaStatements& statements) {
  std::string all(statements.schemas.sql);
  all += '\n';
  all += statements.objects.sql;
  for (const auto& statement : statements.table) {
    all += '\n';
    all += statement.sql;
  }
  return sha256_hex(all);
}

}  // namespace

const SchemaStatements& schema_statements(Engine engine) { return engine == Engine::sqlite ? sqlite : postgres; }

const std::string& schema_statements_sha256(Engine engine) {
  static const std::string postgres_hash = statements_sha256(postgres);
  static const std::string sqlite_hash = statements_sha256(sqlite);
  return engine == Engine::sqlite ? sqlite_hash : postgres_hash;
}

}  // namespace rawtool::detail
