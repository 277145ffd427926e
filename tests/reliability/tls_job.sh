#!/usr/bin/env bash
# A whole job over a TLS bootstrap store: mutual TLS + shared secret, configured through the
# environment (TDIST_STORE_TLS / TDIST_STORE_TLS_INFO / TDIST_STORE_SECRET), running the
# multi-process runtime suite; then a job whose ranks trust a different CA must fail cleanly.
#   tls_job.sh MAKE_PKI TDIST_RUN MP_TESTS [N]
set -euo pipefail
MAKE_PKI=$1 TDIST_RUN=$2 MP_TESTS=$3 N=${4:-4}
DIR=$(mktemp -d /tmp/tdist-tls-job-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
"$MAKE_PKI" "$DIR"
export TDIST_STORE_TLS=1 TDIST_STORE_SECRET="job-$RANDOM-$RANDOM"
export TDIST_STORE_TLS_INFO="ca=$DIR/ca.pem;cert=$DIR/server.pem;key=$DIR/server.key"
"$TDIST_RUN" -n "$N" --timeout 300 -- "$MP_TESTS" --gtest_brief=1
echo "tls_job: $N-rank job over mutual TLS passed"
# Ranks that trust another CA refuse the store: the job fails (non-zero), naming verification.
export TDIST_STORE_TLS_INFO="ca=$DIR/rogue-ca.pem;cert=$DIR/server.pem;key=$DIR/server.key"
set +e
OUT=$("$TDIST_RUN" -n 2 --timeout 120 -- "$MP_TESTS" --gtest_brief=1 2>&1)
RC=$?
set -e
if [ $RC -eq 0 ] || ! grep -q "certificate verification failed" <<<"$OUT"; then
  echo "tls_job: a job with the wrong CA did not fail as expected (rc $RC):"
  echo "$OUT" | tail -20
  exit 1
fi
echo "tls_job: wrong-CA job failed as designed (rc $RC)"
