# Sourced by the scripts: a throwaway PostgreSQL cluster on 127.0.0.1, run as the `postgres` OS user when root.
#   start_cluster BINDIR [MAX_CONNECTIONS]   sets CLUSTER_DIR, CLUSTER_PORT and CLUSTER_URL (user `postgres` with
#                                            password `structpg`, scram-sha-256, as an ordinary server asks one;
#                                            database `postgres`)
#   stop_cluster                             stops it and removes its folder
start_cluster() {
  local bindir=$1 max=${2:-100}
  CLUSTER_BINDIR=$bindir
  CLUSTER_DIR=$(mktemp -d)
  chmod 755 "$CLUSTER_DIR"
  CLUSTER_AS_OWNER=()
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres "$CLUSTER_DIR"
    CLUSTER_AS_OWNER=(runuser -u postgres --)
  fi
  CLUSTER_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  echo structpg > "$CLUSTER_DIR/password"
  chmod 644 "$CLUSTER_DIR/password"
  "${CLUSTER_AS_OWNER[@]}" "$bindir/initdb" -D "$CLUSTER_DIR/data" -A scram-sha-256 -U postgres --pwfile "$CLUSTER_DIR/password" >/dev/null
  "${CLUSTER_AS_OWNER[@]}" "$bindir/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/log" -w -o \
    "-c listen_addresses=127.0.0.1 -p $CLUSTER_PORT -c unix_socket_directories=$CLUSTER_DIR -c max_connections=$max -c fsync=off" \
    start >/dev/null
  CLUSTER_URL="postgres://postgres:structpg@127.0.0.1:$CLUSTER_PORT/postgres?sslmode=disable"
}

stop_cluster() {
  [ -n "${CLUSTER_DIR:-}" ] || return 0
  "${CLUSTER_AS_OWNER[@]}" "$CLUSTER_BINDIR/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$CLUSTER_DIR"
  CLUSTER_DIR=""
}
