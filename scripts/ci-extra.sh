#!/usr/bin/env bash
# Extra CI steps of the reliability tier (called from .ci/run after scripts/test.sh):
#   1. ASan+UBSan and TSan builds of the CPU runtime; unit, store-security and multi-process
#      (2 and 4 ranks) suites under each (scripts/sanitize.sh);
#   2. the fuzz targets under libFuzzer (the store's frame decoder and request handling, the TLS
#      info parser, the heap descriptor message), TDIST_FUZZ_SECONDS (default 20) s each.
# The fault-injection, API-validation, store-security and soak tests themselves run in ctest
# (tests/reliability). Budget: about 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
./scripts/sanitize.sh address thread
t1=$(date +%s)
if command -v clang++-14 >/dev/null || command -v clang++-19 >/dev/null || command -v clang++ >/dev/null; then
  ./fuzz/build.sh "${TDIST_FUZZ_SECONDS:-20}"
else
  echo "ci-extra: no clang with libFuzzer: fuzzing skipped" >&2
  exit 1
fi
t2=$(date +%s)
echo "ci-extra: sanitizers $((t1 - t0)) s, fuzzing $((t2 - t1)) s"
