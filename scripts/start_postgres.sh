#!/usr/bin/env bash
# Install (Debian package) and start a local PostgreSQL cluster, then create a least-privilege
# login role and its three databases (fairltr, fairltr_mlflow, fairltr_optuna), each owned by the
# role so that MLflow's and Optuna's schema migrations can create their tables there.
#
# The role is NOT a superuser and cannot create roles or databases. Its password is random
# (32 hex characters from /dev/urandom), kept for the next run in a file only the caller can read
# (${FAIRLTR_STATE_DIR:-~/.local/state/fairltr}/postgres-<port>.uri, mode 600), and printed only to
# the caller: the connection URI is the last line of stdout (CI: "$(bash scripts/start_postgres.sh | tail -1)").
# Idempotent: a second run reuses the saved password; a role without a saved one gets a new password.
#
#   PGPORT     port of the cluster (default 5432)
#   FAIRLTR_PG_CLUSTER  Debian cluster name (default main; use another name for a second cluster on another port)
#   FAIRLTR_PG_ROLE  the login role (default fairltr)
set -euo pipefail
umask 077
PGPORT="${PGPORT:-5432}"
CLUSTER="${FAIRLTR_PG_CLUSTER:-main}"
ROLE="${FAIRLTR_PG_ROLE:-fairltr}"
STATE="${FAIRLTR_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/fairltr}"
SAVED="$STATE/postgres-${PGPORT}.uri"
[[ "$ROLE" =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "FAIRLTR_PG_ROLE must be a lower-case SQL name, got '$ROLE'" >&2; exit 2; }

if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
VER="$(ls /usr/lib/postgresql | sort -V | tail -1)"
if ! pg_lsclusters -h | awk '{print $1"-"$2}' | grep -q "^${VER}-${CLUSTER}$"; then
  pg_createcluster "$VER" "$CLUSTER" -p "$PGPORT" >/dev/null
fi
pg_ctlcluster "$VER" "$CLUSTER" start >/dev/null 2>&1 || true
for _ in $(seq 1 30); do
  pg_isready -q -h 127.0.0.1 -p "$PGPORT" && break
  sleep 1
done
pg_isready -h 127.0.0.1 -p "$PGPORT" >/dev/null

as_postgres() {  # psql as the cluster's superuser over the local socket (peer authentication)
  su postgres -c "psql -v ON_ERROR_STOP=1 -q -X -p $PGPORT $*"
}

password=""
if [[ -r "$SAVED" ]]; then  # the password of an earlier run, if it still logs in
  password="$(sed -n 's#^postgresql://[^:]*:\([0-9a-f]*\)@.*#\1#p' "$SAVED" | tail -1)"
  if [[ -n "$password" ]] && ! PGPASSWORD="$password" psql -X -q -h 127.0.0.1 -p "$PGPORT" -U "$ROLE" -d postgres \
      -tc "SELECT 1" >/dev/null 2>&1; then
    password=""
  fi
fi
if [[ -z "$password" ]]; then
  password="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
fi
# the password travels on stdin, never on a command line (ps) or in the server log (no echo of the statement)
exists="$(as_postgres "-tAc \"SELECT 1 FROM pg_roles WHERE rolname='$ROLE'\"")"
verb=$([[ "$exists" == 1 ]] && echo ALTER || echo CREATE)
printf "SET log_statement = 'none';\n%s ROLE %s LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '%s';\n" \
  "$verb" "$ROLE" "$password" | as_postgres "-f -" >/dev/null
for db in fairltr fairltr_mlflow fairltr_optuna; do
  if [[ "$(as_postgres "-tAc \"SELECT 1 FROM pg_database WHERE datname='$db'\"")" != 1 ]]; then
    as_postgres "-c \"CREATE DATABASE $db OWNER $ROLE\"" >/dev/null
  else
    as_postgres "-c \"ALTER DATABASE $db OWNER TO $ROLE\"" >/dev/null
  fi
  # PostgreSQL < 15 lets every role create tables in public: only the owner may (as 15+ does)
  as_postgres "-d $db -c \"REVOKE CREATE ON SCHEMA public FROM PUBLIC; ALTER SCHEMA public OWNER TO $ROLE\"" >/dev/null
  as_postgres "-c \"REVOKE ALL ON DATABASE $db FROM PUBLIC; GRANT CONNECT, TEMPORARY ON DATABASE $db TO $ROLE\"" >/dev/null
done
uri="postgresql://${ROLE}:${password}@127.0.0.1:${PGPORT}/fairltr"
mkdir -p "$STATE"
printf '%s\n' "$uri" > "$SAVED"
chmod 600 "$SAVED"
echo "$uri"
