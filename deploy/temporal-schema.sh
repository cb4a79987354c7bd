#!/bin/sh
# Creates Temporal's two PostgreSQL databases and migrates them to the schema
# of the temporal-sql-tool that runs this (its schemas are built in), as the
# deployment's one-shot setup step: docker-compose.yml runs it in the
# admin-tools image, `crawler cluster up` with the tool it built. Safe to run
# again: existing databases are kept and only newer migrations apply.
# Environment: SQL_PLUGIN, SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD (read by
# temporal-sql-tool itself), DBNAME, VISIBILITY_DBNAME; TEMPORAL_SQL_TOOL names
# the tool when it is not on PATH.
set -eu
tool="${TEMPORAL_SQL_TOOL:-temporal-sql-tool}"
migrate() {
  db="$1"
  schema="$2"
  "$tool" --db "$db" create-database
  # Version tables only, at 0.0 (kept when the database is already further on);
  # update-schema then applies every versioned migration above that.
  "$tool" --db "$db" setup-schema -v 0.0
  "$tool" --db "$db" update-schema --schema-name "$schema"
}
migrate "${DBNAME:-temporal}" "postgresql/v12/temporal"
migrate "${VISIBILITY_DBNAME:-temporal_visibility}" "postgresql/v12/visibility"
