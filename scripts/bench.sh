#!/usr/bin/env bash
# Runs the benchmarks: StructPostgres against hand-written PostgresNIO and Fluent, every workload in one
# process on one throwaway PostgreSQL (or DATABASE_URL), release build; every result is checked in the database.
#   scripts/bench.sh                 # the issue's sizes: 10,000 books ... W1 also at 100,000 and 1,000,000 rows
#   scripts/bench.sh --quick         # the smallest configuration (well under two minutes with the build done)
#   scripts/bench.sh --help          # every option (sizes, rounds, --only W1,W3, --no-fluent, --markdown)
#   scripts/bench.sh --durable       # the throwaway server with PostgreSQL's default durability (fsync on)
#   scripts/bench.sh --only P --costs  # the point calls' thread sleeps and allocations per call (malloc-interposer)
# Not part of CI: the Benchmarks package is separate from the library's, so users and CI never build Fluent.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_BINDIR=$(scripts/ensure-postgres.sh --pgbouncer)
export PG_BINDIR
# SwiftPM keeps the build plan of the path dependency (the library) and misses a source file added to it since.
rm -f Benchmarks/.build/release.yaml Benchmarks/.build/release/description.json
swift build -c release --package-path Benchmarks
# --costs: allocations per call counted by ordo-one's malloc-interposer, preloaded (see Benchmarks/README.md).
preload=()
args=()
for arg in "$@"; do
  if [ "$arg" = "--costs" ]; then
    swift build -c release --package-path Benchmarks --product MallocInterposerSwift
    preload=(env "LD_PRELOAD=$PWD/Benchmarks/.build/release/libMallocInterposerSwift.so")
  else
    args+=("$arg")
  fi
done
"${preload[@]}" Benchmarks/.build/release/Bench "${args[@]}"
