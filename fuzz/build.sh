#!/usr/bin/env bash
# Builds the store-decoder fuzzer with clang + libFuzzer (+ ASan/UBSan) and runs it.
#   fuzz/build.sh [seconds] [extra libFuzzer args...]     (default 30 s; 0 = build only)
# Output: $TDIST_FUZZ_DIR (default build-fuzz/): the binary, the corpus, any crash-* files.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-30}
shift || true
OUT=${TDIST_FUZZ_DIR:-build-fuzz}
CXX=${TDIST_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++-19 || command -v clang++)}
mkdir -p "$OUT/corpus"
"$CXX" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iruntime -Iinclude fuzz/store_decoder_fuzz.cpp runtime/bootstrap/frame.cpp runtime/core/error.cpp \
  -o "$OUT/store_decoder_fuzz"
# Seed corpus: a valid HELLO, a SET, a GET split over two frames, an oversize header.
python3 - "$OUT/corpus" <<'PY'
import struct, sys, os
d = sys.argv[1]
def frame(op, k, v): return struct.pack("<IIII", 0x564b4454, op, len(k), len(v)) + k + v
seeds = {
  "hello": b"\x80" + frame(1, b"0", b"secret") + frame(2, b"key", b"value" * 10),
  "get": b"\x03" + frame(3, b"ag/1/0", b"") + frame(4, b"bar/0", b"-1"),
  "oversize": b"\x00" + struct.pack("<IIII", 0x564b4454, 2, 16, 0xFFFFFFF0),
  "watch": b"\x81" + frame(8, b"3", b"") + frame(101, b"2", b"rank 2 lost"),
}
for name, data in seeds.items():
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)
PY
[ "$SECS" = 0 ] && exit 0
cd "$OUT"
./store_decoder_fuzz -max_total_time="$SECS" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 "$@" corpus
