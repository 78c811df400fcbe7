#!/usr/bin/env bash
# A bounded load run of the book-with-reviews route: builds the server in release mode, starts it on a throwaway
# PostgreSQL (loopback only), seeds the example data, runs wrk (Debian's package) for DURATION seconds with
# CONNECTIONS connections, then checks that no request failed and that the pool's connections in use went back to 0.
#   Examples/BookstoreServer/scripts/load.sh            # 20 s, 32 connections
#   DURATION=60 CONNECTIONS=64 Examples/BookstoreServer/scripts/load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=../..
duration="${DURATION:-20}"
connections="${CONNECTIONS:-32}"
port="${PORT:-18080}"

PG_BINDIR=$("$root/scripts/ensure-postgres.sh")
export PG_BINDIR
if ! command -v wrk >/dev/null 2>&1; then
  echo "load.sh: installing wrk (apt-get install -y wrk)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >&2
fi
swift build -c release --product BookstoreServer
log=$(mktemp)
PORT="$port" LOG_LEVEL=warning SEED_EXAMPLE=1 .build/release/BookstoreServer >"$log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 300); do grep -q "Listening on" "$log" && break; sleep 0.1; done
grep -q "Listening on" "$log" || { cat "$log"; exit 1; }

book=00000000-0000-4000-8000-000000000101
for i in $(seq 1 20); do
  curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' -d "{\"content\": \"review $i\"}" \
    "http://127.0.0.1:$port/books/$book/reviews"
done
echo "GET /books/$book (author and 20+ reviews), $connections connections, ${duration}s:"
wrk -t2 -c"$connections" -d"${duration}s" --latency "http://127.0.0.1:$port/books/$book"
health=$(curl -sf "http://127.0.0.1:$port/health")
echo "after the run: $health"
echo "$health" | grep -q '"connectionsInUse":"0"' || { echo "load.sh: connections still in use after the run" >&2; exit 1; }
