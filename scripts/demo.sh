#!/usr/bin/env bash
# Runs the example app: the book store, written to and read back from PostgreSQL.
# Uses DATABASE_URL when set; otherwise the app starts a throwaway cluster and stops it at the end.
#   scripts/demo.sh            # the command-line example (Sources/Bookstore)
#   scripts/demo.sh --server   # the web service (Examples/BookstoreServer) on http://127.0.0.1:8080, until Ctrl-C
#   scripts/demo.sh --vapor    # the same on Vapor (Examples/BookstoreVapor), on a throwaway PostgreSQL unless
#                              # DATABASE_URL is set; Vapor's `serve` options after it (--port 8081)
# STRUCTPG_SCRATCH_PATH moves the build folder, as for scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_BINDIR=$(scripts/ensure-postgres.sh)
export PG_BINDIR
if [ "${1:-}" = "--server" ]; then
  shift
  # The library's build folder: the dependencies both packages share are compiled once.
  swift build --package-path Examples/BookstoreServer --scratch-path .build --product BookstoreServer
  port="${PORT:-8080}"
  book=00000000-0000-4000-8000-000000000101
  cat <<TRY
The book store web service, on a throwaway PostgreSQL unless DATABASE_URL is set. Try, from another terminal:
  curl http://127.0.0.1:$port/stores
  curl http://127.0.0.1:$port/books/$book
  curl "http://127.0.0.1:$port/books/$book/reviews?limit=5"
  curl -N http://127.0.0.1:$port/books/$book/reviews/live     # server-sent events, one per change; then, elsewhere:
  curl -X POST -H 'Content-Type: application/json' -d '{"content": "Loved it."}' http://127.0.0.1:$port/books/$book/reviews
Ctrl-C stops it gracefully.
TRY
  PORT="$port" SEED_EXAMPLE=1 exec .build/debug/BookstoreServer "$@"
fi
if [ "${1:-}" = "--vapor" ]; then
  shift
  scratch="${STRUCTPG_SCRATCH_PATH:-.build}"
  # The library's build folder: the dependencies both packages share are compiled once.
  swift build --package-path Examples/BookstoreVapor --scratch-path "$scratch" --product BookstoreVapor
  app="$(swift build --package-path Examples/BookstoreVapor --scratch-path "$scratch" --show-bin-path)/BookstoreVapor"
  if [ -z "${DATABASE_URL:-}" ]; then
    # The app itself never starts a database: a missing one is its startup error. The demo starts a throwaway one.
    # shellcheck source=lib/cluster.sh
    . scripts/lib/cluster.sh
    start_cluster "$PG_BINDIR" 100
    trap stop_cluster EXIT
    export DATABASE_URL="$CLUSTER_URL"
  fi
  port="${PORT:-8080}"
  book=00000000-0000-4000-8000-000000000101
  cat <<TRY
The book store on Vapor. Try, from another terminal (Examples/BookstoreVapor/README.md has every route):
  curl http://127.0.0.1:$port/stores
  curl "http://127.0.0.1:$port/books?title=earth"
  curl http://127.0.0.1:$port/books/$book
  curl -N http://127.0.0.1:$port/books/$book/reviews/live     # server-sent events, one per change; then, elsewhere:
  curl -X POST -H 'Content-Type: application/json' -d '{"content": "Loved it."}' http://127.0.0.1:$port/books/$book/reviews
Ctrl-C stops it.
TRY
  # Not exec: the throwaway server is stopped when the app has stopped.
  status=0
  SEED_EXAMPLE=1 "$app" serve --hostname 127.0.0.1 --port "$port" "$@" || status=$?
  exit "$status"
fi
swift run Bookstore "$@"
