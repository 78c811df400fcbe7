#!/usr/bin/env bash
# Runs the benchmarks: StructPostgres against hand-written PostgresNIO, in one process, on one throwaway
# PostgreSQL (or DATABASE_URL), release build. Options: --books N --authors N --rounds N --singles N.
# Not part of CI: the Benchmarks package is separate from the library's.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_BINDIR=$(scripts/ensure-postgres.sh)
export PG_BINDIR
swift build -c release --package-path Benchmarks
Benchmarks/.build/release/Bench "$@"
