#!/usr/bin/env bash
# Runs the example app: the book store, written to and read back from PostgreSQL.
# Uses DATABASE_URL when set; otherwise the app starts a throwaway cluster and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_BINDIR=$(scripts/ensure-postgres.sh)
export PG_BINDIR
swift run Bookstore "$@"
