#!/bin/sh
# Runs once, when the PostgreSQL container initialises its data folder: the
# low-privilege role rawtool connects as. SELECT only, no superuser, no
# write grants; rawtool's READ ONLY transactions come on top of this.
set -eu
password="${RAWTOOL_READER_PASSWORD:-}"
psql -v ON_ERROR_STOP=1 -v password="$password" --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
SELECT CASE WHEN :'password' = '' THEN 'CREATE ROLE rawtool_reader LOGIN'
            ELSE format('CREATE ROLE rawtool_reader LOGIN PASSWORD %L', :'password') END \gexec
SELECT format('GRANT CONNECT ON DATABASE %I TO rawtool_reader', current_database()) \gexec
GRANT USAGE ON SCHEMA public TO rawtool_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO rawtool_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO rawtool_reader;
-- Every role may emit logical messages into the WAL by default; at wal_level
-- logical, read-only mode refuses a role that can (see docs/postgresql-role.md),
-- so the function is kept for the roles that are granted it. Each
-- of its forms, whatever the release: PostgreSQL 17 added an argument.
SELECT format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', p.oid::regprocedure)
  FROM pg_catalog.pg_proc p
 WHERE p.proname = 'pg_logical_emit_message' AND p.pronamespace = 'pg_catalog'::regnamespace \gexec
-- The server logs nothing the role's statements raise (a RAISE in a loop
-- would write to the log for the length of a call); the role cannot change it.
ALTER ROLE rawtool_reader SET log_min_messages = fatal;
SQL
