# Sourced by the scripts: the project's virtual environment comes first on PATH, so that python3,
# pip, pytest, lit and FileCheck are its own. scripts/install-deps.sh makes it (.venv, or
# $TDIST_VENV) from the system's python3: Debian 12's Python is externally managed, so nothing is
# pip-installed outside a virtual environment. Without one, the scripts use what PATH has.
TDIST_VENV=${TDIST_VENV:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv"}
if [ -x "$TDIST_VENV/bin/python" ]; then
  export VIRTUAL_ENV="$TDIST_VENV"
  export PATH="$TDIST_VENV/bin:$PATH"
fi
