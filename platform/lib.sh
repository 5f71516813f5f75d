# Shared by platform/up and platform/test: make .venv at the repository root and install
# the project into it (again only when pyproject.toml changed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"

python_pick() {
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      echo "$candidate"; return 0
    fi
  done
  echo "Baton needs Python 3.11 or newer." >&2; return 1
}

venv_ready() {  # $1: extras, e.g. "" or "[test]"
  local extras="${1:-}" stamp="$ROOT/.venv/.installed${extras}"
  if [ ! -x "$PY" ]; then
    echo "==> creating .venv"
    "$(python_pick)" -m venv "$ROOT/.venv"
  fi
  if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    echo "==> installing Baton into .venv (first run takes a few minutes: PySpark is large)"
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet -e ".${extras}"
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
