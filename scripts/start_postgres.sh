#!/usr/bin/env bash
# Install (Debian package) and start a local PostgreSQL, then create role+database "fairltr".
# Prints the connection URI on its last line. Idempotent; used by .ci/run and by developers.
set -euo pipefail
PGPORT="${PGPORT:-5432}"
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
VER="$(ls /usr/lib/postgresql | sort -V | tail -1)"
if ! pg_lsclusters -h | awk '{print $1"-"$2}' | grep -q "^${VER}-main$"; then
  pg_createcluster "$VER" main -p "$PGPORT" >/dev/null
fi
pg_ctlcluster "$VER" main start 2>/dev/null || true
for _ in $(seq 1 30); do
  pg_isready -q -h 127.0.0.1 -p "$PGPORT" && break
  sleep 1
done
pg_isready -h 127.0.0.1 -p "$PGPORT" >/dev/null
su postgres -c "psql -q -p $PGPORT -tc \"SELECT 1 FROM pg_roles WHERE rolname='fairltr'\"" | grep -q 1 \
  || su postgres -c "psql -q -p $PGPORT -c \"CREATE ROLE fairltr LOGIN SUPERUSER PASSWORD 'fairltr'\""
for db in fairltr fairltr_mlflow fairltr_optuna; do
  su postgres -c "psql -q -p $PGPORT -tc \"SELECT 1 FROM pg_database WHERE datname='$db'\"" | grep -q 1 \
    || su postgres -c "psql -q -p $PGPORT -c \"CREATE DATABASE $db OWNER fairltr\""
done
echo "postgresql://fairltr:fairltr@127.0.0.1:${PGPORT}/fairltr"
