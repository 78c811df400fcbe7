#!/usr/bin/env bash
# Runs the whole test suite: unit tests and integration tests against a real PostgreSQL.
# Uses DATABASE_URL when set; otherwise the tests start a throwaway cluster themselves.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_BINDIR=$(scripts/ensure-postgres.sh)
export PG_BINDIR
swift build --build-tests
swift test --skip-build "$@"
