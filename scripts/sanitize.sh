#!/usr/bin/env bash
# Sanitizer builds of the CPU runtime and its tests (no CUDA, no MLIR):
#   build-asan/  -DTDIST_SANITIZE=address  (AddressSanitizer + UndefinedBehaviorSanitizer)
#   build-tsan/  -DTDIST_SANITIZE=thread   (ThreadSanitizer, suppressions in scripts/tsan.supp)
# and runs the unit, store-security and API-validation suites, the multi-process suite at 2 and
# 4 ranks, the rank-death tests (tests/reliability/fault_test.py: a rank SIGKILLed at every point,
# the survivors' reports, cleanup and timing) and a short 4-rank soak in each. Any sanitizer report
# fails the run (halt_on_error / exitcode; a survivor that exits with a sanitizer's code is a failed
# case of fault_test.py).
#   scripts/sanitize.sh [address|thread ...]      (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
KINDS=("$@")
[ ${#KINDS[@]} -eq 0 ] && KINDS=(address thread)
JOBS=${TDIST_SANITIZE_JOBS:-2}
TARGETS=(tdist_unit_tests tdist_mp_tests tdist_store_security_tests tdist_api_validation_tests tdist_soak
         tdist_fault_app)
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)

for kind in "${KINDS[@]}"; do
  case $kind in
    address) B=${TDIST_ASAN_BUILD_DIR:-build-asan} ;;
    thread) B=${TDIST_TSAN_BUILD_DIR:-build-tsan} ;;
    *) echo "sanitize.sh: unknown kind '$kind' (address or thread)" >&2; exit 2 ;;
  esac
  echo "== $kind: configure + build ($B)"
  cmake -S . -B "$B" "${GEN[@]}" -DTDIST_SANITIZE="$kind" -DTDIST_ENABLE_MLIR=OFF -DTDIST_ENABLE_CUDA=OFF -DTDIST_ENABLE_UCX=OFF \
    -DTDIST_BUILD_BENCHMARKS=OFF -DTDIST_BUILD_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PROJECT_tdist_INCLUDE="$ROOT/tests/reliability/standalone.cmake" >/dev/null
  cmake --build "$B" -j"$JOBS" --target "${TARGETS[@]}"
  if [ "$kind" = address ]; then
    # detect_leaks: LeakSanitizer needs ptrace, which some containers deny; it runs where it can.
    export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:exitcode=66:detect_stack_use_after_return=1:strict_string_checks=1"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=67"
  else
    export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$ROOT/scripts/tsan.supp"
  fi
  echo "== $kind: unit"
  "$B/tests/tdist_unit_tests" --gtest_brief=1
  echo "== $kind: store security, API validation"
  "$B/tests/reliability/tdist_store_security_tests" --gtest_brief=1
  "$B/tests/reliability/tdist_api_validation_tests" --gtest_brief=1
  for n in 2 4; do
    echo "== $kind: multi-process, $n ranks"
    "$B/tools/tdist-run" -n "$n" --timeout 600 -- "$B/tests/tdist_mp_tests" --gtest_brief=1
  done
  echo "== $kind: rank deaths (fault injection), 4 ranks"
  t0=$(date +%s)
  python3 tests/reliability/fault_test.py --app "$B/tests/reliability/tdist_fault_app" --tdist-run "$B/tools/tdist-run" -n 4
  echo "== $kind: rank deaths took $(($(date +%s) - t0)) s"
  echo "== $kind: soak, 4 ranks, ${TDIST_SANITIZE_SOAK_SECONDS:-10} s"
  TDIST_SOAK_SECONDS=${TDIST_SANITIZE_SOAK_SECONDS:-10} "$B/tools/tdist-run" -n 4 --timeout 300 -- "$B/tests/reliability/tdist_soak"
  unset ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS
done
echo "sanitize.sh: all sanitizer runs passed (${KINDS[*]})"
