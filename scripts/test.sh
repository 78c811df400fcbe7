#!/usr/bin/env bash
# Runs the whole test suite: unit tests and integration tests against a real PostgreSQL.
# Uses DATABASE_URL when set; otherwise the tests start a throwaway cluster themselves.
# STRUCTPG_SCRATCH_PATH moves the build folder (docker compose uses it to keep the host's apart).
set -euo pipefail
cd "$(dirname "$0")/.."

PG_BINDIR=$(scripts/ensure-postgres.sh)
export PG_BINDIR
scratch=(--scratch-path "${STRUCTPG_SCRATCH_PATH:-.build}")
swift build "${scratch[@]}" --build-tests
swift test "${scratch[@]}" --skip-build "$@"
