# Shared by platform/up and platform/test: make .venv at the repository root and install
# the project into it (again only when pyproject.toml changed). BATON_VENV=/path/to/venv
# names a virtual environment of your own instead (e.g. one made with
# `pip install ./clients/python '.[scaled]'`): it is used as it is, nothing is installed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${BATON_VENV:-$ROOT/.venv}/bin/python"

python_pick() {
  for candidate in python3 python3.13 python3.12 python3.11; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  echo "Baton needs Python 3.11 or newer." >&2; return 1
}

venv_ready() {  # $1: extras, e.g. "" or "[test]"
  local extras="${1:-}"
  if [ -n "${BATON_VENV:-}" ]; then
    if [ ! -x "$PY" ]; then echo "BATON_VENV=$BATON_VENV: no $PY" >&2; return 1; fi
    return 0
  fi
  local stamp="$ROOT/.venv/.installed${extras}"
  local client="$ROOT/clients/python/pyproject.toml"  # the client distribution, which the server imports
  if { [ -z "$extras" ] || [ "$extras" = "[scaled]" ]; } && [ -f "$ROOT/.venv/.installed[test]" ] \
     && [ ! "$ROOT/pyproject.toml" -nt "$ROOT/.venv/.installed[test]" ] && [ ! "$client" -nt "$ROOT/.venv/.installed[test]" ]; then
    stamp="$ROOT/.venv/.installed[test]"  # the test install includes everything the platform needs, scaled out too
  fi
  if [ ! -x "$PY" ]; then
    echo "==> creating .venv"
    "$(python_pick)" -m venv "$ROOT/.venv"
  fi
  if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ] || [ "$client" -nt "$stamp" ]; then
    echo "==> installing Baton into .venv (first run takes a few minutes: PySpark is large)"
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet -e ./clients/python -e ".${extras}"
    touch "$stamp"
  fi
}

java_ready() {  # Spark needs a Java runtime
  if ! command -v java >/dev/null 2>&1; then
    echo "==> installing a Java runtime for Spark"
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless >/dev/null
    else
      echo "warning: no java on PATH; Spark jobs will not run (install a JRE 17+)" >&2
    fi
  fi
}

postgres_start() {  # a throwaway PostgreSQL server for the tests; sets BATON_PG_URL
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$bin" ]; then
    echo "==> installing PostgreSQL (Debian packages)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  PG_DIR=$(mktemp -d /tmp/baton-pg.XXXXXX)
  local as_pg=()
  if [ "$(id -u)" = 0 ]; then chown postgres "$PG_DIR"; as_pg=(runuser -u postgres --); fi
  PG_PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${as_pg[@]}" "$bin/initdb" -D "$PG_DIR/data" -A trust -U baton >/dev/null
  "${as_pg[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -o \
    "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200" \
    start >/dev/null
  PG_STOP=("${as_pg[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -m fast stop)
  export BATON_PG_URL="postgres://baton@127.0.0.1:$PG_PORT/baton"
  "${as_pg[@]}" "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U baton baton
}

redis_ready() {  # Debian's redis-server, for the scaled-out tests (they start and stop their own)
  if ! command -v redis-server >/dev/null 2>&1 && [ ! -x /usr/bin/redis-server ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      echo "==> installing Redis (Debian packages)"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    else
      echo "warning: no redis-server; the scaled-out tests will be skipped" >&2
    fi
  fi
}

rabbitmq_ready() {  # Debian's rabbitmq-server (rabbitmq_stomp), for the differential STOMP tests (they start their own)
  if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      echo "==> installing RabbitMQ (Debian packages)"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server >/dev/null
      # the package starts its system service where there is an init: not ours, stopped
      service rabbitmq-server stop >/dev/null 2>&1 || true
    else
      echo "warning: no rabbitmq-server; the differential STOMP tests (tests/stomp/test_differential.py) will fail" >&2
    fi
  fi
}

valgrind_ready() {  # Debian's Valgrind, for bench.instructions (its test counts a few calls)
  if ! command -v valgrind >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      echo "==> installing Valgrind (Debian packages)"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
    else
      echo "warning: no valgrind; the instruction-count benchmark's test will be skipped" >&2
    fi
  fi
}

postgres_stop() {
  if [ -n "${PG_DIR:-}" ]; then "${PG_STOP[@]}" >/dev/null 2>&1 || true; rm -rf "$PG_DIR"; fi
}

assets_ready() {  # the dashboard's front-end assets: npm packages from the lockfile, bundled by esbuild
  local dir="$ROOT/dashboard/frontend" stamp="$ROOT/dashboard/static/dashboard/dist/.built"
  if ! command -v npm >/dev/null 2>&1; then
    echo "Baton's dashboard needs Node.js 18+ and npm to build its assets." >&2; return 1
  fi
  if [ ! -f "$stamp" ] || [ -n "$(find "$dir/package-lock.json" "$dir/build.mjs" "$dir/src" -newer "$stamp" 2>/dev/null)" ]; then
    echo "==> building the dashboard's assets (npm ci, esbuild)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
    touch "$stamp"
  fi
}

chromium_ready() {  # the browser tests drive Debian's Chromium (never a downloaded one)
  if [ ! -x /usr/bin/chromium ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      echo "==> installing Chromium for the dashboard's browser tests"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      echo "warning: no /usr/bin/chromium; the dashboard's browser tests will be skipped" >&2
    fi
  fi
}
