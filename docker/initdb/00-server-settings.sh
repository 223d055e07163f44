#!/bin/sh
# Runs once, when the PostgreSQL container initialises its data folder: when
# RAWTOOL_PG_SETTINGS names a file of server settings (postgresql.conf lines),
# appends it to the cluster's postgresql.conf, where it takes effect at the
# start that follows initialisation. docker/compose.test.yaml sets it to the
# test suite's settings, .ci/pg-settings.conf; docker/compose.yaml does not.
set -eu
if [ -n "${RAWTOOL_PG_SETTINGS:-}" ]; then
  { printf '\n# from %s\n' "$RAWTOOL_PG_SETTINGS"; cat "$RAWTOOL_PG_SETTINGS"; } >>"$PGDATA/postgresql.conf"
fi
