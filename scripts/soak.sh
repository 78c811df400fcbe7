#!/usr/bin/env bash
# A soak with faults, for memory (not part of CI: it runs for minutes). Mixed book store operations from many
# tasks while backends are terminated and calls cancelled; prints resident memory every ten seconds and fails when
# it grew by more than 10 percent between minute 1 and the end.
#   scripts/soak.sh               # five minutes, release build, a throwaway PostgreSQL (or DATABASE_URL)
#   scripts/soak.sh --minutes 2
set -euo pipefail
cd "$(dirname "$0")/.."

PG_BINDIR=$(scripts/ensure-postgres.sh)
export PG_BINDIR
swift build -c release --product StructPostgresSoak
.build/release/StructPostgresSoak "$@"
