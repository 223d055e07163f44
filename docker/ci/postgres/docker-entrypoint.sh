#!/usr/bin/env bash
# The entrypoint of CI's stand-in for the official postgres image, following the
# official image's docker-entrypoint.sh in what docker/compose*.yaml use:
#
#   POSTGRES_USER (default postgres)   the superuser initdb creates
#   POSTGRES_PASSWORD                  its password; required unless
#   POSTGRES_HOST_AUTH_METHOD          is trust (default scram-sha-256), the
#                                      method for every host in pg_hba.conf
#   POSTGRES_DB (default the user)     created when it is not "postgres"
#   POSTGRES_INITDB_ARGS               extra initdb arguments
#   /docker-entrypoint-initdb.d/       *.sh (run if executable, else sourced)
#                                      and *.sql, in name order, once, against
#                                      a server listening on the socket only
#
# On an empty data folder it initialises the cluster and runs the scripts, then
# starts the server as `postgres` on 0.0.0.0:5432. The *_FILE variants,
# POSTGRES_INITDB_WALDIR and compressed *.sql.gz files are not supported.
# -u is left off, as in the official entrypoint: sourced scripts run in this shell.
set -Eeo pipefail

if [ "${1:0:1}" = - ]; then set -- postgres "$@"; fi
if [ "$1" != postgres ]; then exec "$@"; fi

export POSTGRES_USER="${POSTGRES_USER:-postgres}"
export POSTGRES_PASSWORD="${POSTGRES_PASSWORD:-}"
export POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"
export POSTGRES_HOST_AUTH_METHOD="${POSTGRES_HOST_AUTH_METHOD:-}"
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  chmod 3775 /var/run/postgresql
  find "$PGDATA" /var/run/postgresql \! -user postgres -exec chown postgres:postgres '{}' +
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
fi

sql() {
  PGHOST= PGHOSTADDR= psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc "$@"
}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
    echo "docker-entrypoint: set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust for a throwaway database" >&2
    exit 1
  fi
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of arguments
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") $POSTGRES_INITDB_ARGS >/dev/null
  printf '\nhost all all all %s\n' "${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >>"$PGDATA/pg_hba.conf"

  export PGPASSWORD="${PGPASSWORD:-$POSTGRES_PASSWORD}"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    sql --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";' >/dev/null
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh)
        echo "docker-entrypoint: running $f"
        if [ -x "$f" ]; then "$f"; else . "$f"; fi ;;
      *.sql)
        echo "docker-entrypoint: running $f"
        sql --dbname "$POSTGRES_DB" -f "$f" ;;
      */\*) ;;  # the folder is empty
      *) echo "docker-entrypoint: ignoring $f" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  unset PGPASSWORD
  echo "docker-entrypoint: PostgreSQL init process complete; ready for start up."
fi

exec "$@"
