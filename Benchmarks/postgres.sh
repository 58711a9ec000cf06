# Sourced by compare-askar.sh --postgres: a private PostgreSQL cluster for one benchmark run.
#   postgres_start   initdb in a new temporary folder, a server on a free loopback port (no Unix
#                    socket), a database user with a random password; sets POSTGRES_URL_BASE
#                    (postgres://USER:PASS@127.0.0.1:PORT) and POSTGRES_DIR.
#   postgres_create_database NAME   a database on it, owned by that user.
#   postgres_stop    stops the server (fast shutdown) and removes the folder; safe to call twice.
# POSTGRES_OPTIONS adds server settings (e.g. "-c shared_preload_libraries=pg_stat_statements
# -c log_checkpoints=on" to see where a run's time goes).
# PostgreSQL's binaries come from $POSTGRES_BIN (default: the newest /usr/lib/postgresql/*/bin;
# Debian package postgresql). The server refuses to run as root: when this script runs as root,
# the server runs as the user postgres (runuser) and the folder is handed to that user.

postgres_bin() {
    if [ -n "${POSTGRES_BIN:-}" ]; then echo "$POSTGRES_BIN"; return; fi
    local newest
    newest="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    echo "${newest:-}"
}

# Runs a PostgreSQL binary as the cluster's owner.
postgres_as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

postgres_start() {
    local bin port password
    bin="$(postgres_bin)"
    if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
        echo "error: PostgreSQL's server binaries are not installed (Debian: apt-get install postgresql; or set POSTGRES_BIN)" >&2
        return 2
    fi
    if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
        echo "error: running as root, and PostgreSQL refuses root: create the user postgres or run as another user" >&2
        return 2
    fi
    POSTGRES_DIR="$(mktemp -d "${TMPDIR:-/tmp}/coffer-postgres.XXXXXX")"
    POSTGRES_BINDIR="$bin"
    password="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
    printf '%s\n' "$password" > "$POSTGRES_DIR/pwfile"
    if [ "$(id -u)" = 0 ]; then chown -R postgres "$POSTGRES_DIR"; fi
    postgres_as_owner "$bin/initdb" -D "$POSTGRES_DIR/data" -U bench --pwfile="$POSTGRES_DIR/pwfile" \
        --auth=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >"$POSTGRES_DIR/initdb.log" 2>&1 || {
        cat "$POSTGRES_DIR/initdb.log" >&2
        return 6
    }
    rm -f "$POSTGRES_DIR/pwfile"
    # A free loopback port: bound once by the kernel's choice, then given to the server.
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    postgres_as_owner "$bin/pg_ctl" -D "$POSTGRES_DIR/data" -l "$POSTGRES_DIR/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories='' -c max_connections=200 ${POSTGRES_OPTIONS:-}" \
        start >/dev/null || {
        cat "$POSTGRES_DIR/server.log" >&2
        return 6
    }
    POSTGRES_URL_BASE="postgres://bench:$password@127.0.0.1:$port"
    POSTGRES_PASSWORD="$password"
    POSTGRES_PORT="$port"
    echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $POSTGRES_DIR)" >&2
}

# Creates database $1 on the cluster (the benchmark user owns it).
postgres_create_database() {
    PGPASSWORD="$POSTGRES_PASSWORD" "$POSTGRES_BINDIR/psql" -q -h 127.0.0.1 -p "$POSTGRES_PORT" -U bench -d postgres -v ON_ERROR_STOP=1 \
        -c "CREATE DATABASE \"$1\"" >/dev/null
}

postgres_stop() {
    if [ -n "${POSTGRES_DIR:-}" ] && [ -d "$POSTGRES_DIR" ]; then
        postgres_as_owner "$POSTGRES_BINDIR/pg_ctl" -D "$POSTGRES_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
        rm -rf "$POSTGRES_DIR"
    fi
    POSTGRES_DIR=""
}
