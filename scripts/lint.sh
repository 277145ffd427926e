#!/usr/bin/env bash
# Formatting and lint of the whole tree: clang-format (.clang-format) on every tracked C, C++ and
# CUDA file, ruff (ruff.toml) on every Python file. Both tools are pinned and installed into their
# own virtual environment ($TDIST_LINT_VENV, default .venv-lint), so every machine formats alike.
#   scripts/lint.sh          check (exit 1 and list the files that differ)
#   scripts/lint.sh --fix    rewrite the files in place
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${TDIST_LINT_VENV:-.venv-lint}
if [ ! -x "$VENV/bin/ruff" ] || [ ! -x "$VENV/bin/clang-format" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q clang-format==19.1.7 ruff==0.8.0
fi
mapfile -t cxx < <(git ls-files '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh')
# Python programs without a .py suffix (ruff's directory walk skips them)
pyscripts=(tools/tdist-bench tools/tdist-run)
if [ "${1:-}" = "--fix" ]; then
  "$VENV/bin/clang-format" -i "${cxx[@]}"
  "$VENV/bin/ruff" check --fix . "${pyscripts[@]}"
  exit 0
fi
status=0
bad=()
for f in "${cxx[@]}"; do
  "$VENV/bin/clang-format" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "lint: ${#bad[@]} file(s) not formatted as .clang-format says (run scripts/lint.sh --fix):"
  printf '  %s\n' "${bad[@]}"
  status=1
fi
"$VENV/bin/ruff" check . "${pyscripts[@]}" || status=1
exit $status
