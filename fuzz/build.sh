#!/usr/bin/env bash
# Builds the store's fuzz targets with clang + libFuzzer (+ ASan/UBSan) and runs each of them:
#   store_decoder_fuzz  the frame decoder and the server's parsers (bytes off the network)
#   store_handler_fuzz  the request handling (bootstrap/store_state.*) on scripted connections
#   tls_info_fuzz       the TLS configuration string (tdist_set_conf_store_tls, TDIST_STORE_TLS_INFO)
#   fd_message_fuzz     the heap descriptor message a local socket's other end sends (SCM_RIGHTS)
#   fuzz/build.sh [seconds per target] [extra libFuzzer args...]     (default 30 s; 0 = build only)
# Output: $TDIST_FUZZ_DIR (default build-fuzz/): the binaries, one corpus per target
# (corpus/, corpus-handler/, corpus-tls/, corpus-fd/), any crash-* files. TDIST_FUZZ_TARGETS picks targets.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-30}
shift || true
OUT=${TDIST_FUZZ_DIR:-build-fuzz}
CXX=${TDIST_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++-19 || command -v clang++)}
TARGETS=(${TDIST_FUZZ_TARGETS:-store_decoder_fuzz store_handler_fuzz tls_info_fuzz fd_message_fuzz})
FLAGS=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iruntime -Iinclude)
mkdir -p "$OUT/corpus" "$OUT/corpus-handler" "$OUT/corpus-tls" "$OUT/corpus-fd"
for t in "${TARGETS[@]}"; do
  case $t in
    store_decoder_fuzz) SRC=(runtime/bootstrap/frame.cpp runtime/core/error.cpp) ;;
    store_handler_fuzz) SRC=(runtime/bootstrap/store_state.cpp runtime/bootstrap/frame.cpp runtime/core/error.cpp) ;;
    tls_info_fuzz) SRC=(runtime/bootstrap/tls.cpp runtime/core/error.cpp) ;;  # without OpenSSL: the parser
    fd_message_fuzz) SRC=(runtime/core/fd_message.cpp runtime/core/error.cpp) ;;
    *) echo "fuzz/build.sh: unknown target $t" >&2; exit 2 ;;
  esac
  "$CXX" "${FLAGS[@]}" "fuzz/$t.cpp" "${SRC[@]}" -o "$OUT/$t"
done
# Seed corpora. Decoder: a valid HELLO, a SET, a GET split over two frames, an oversize header.
# Handler: scripts that open connections, join, run a barrier and an all-gather, finalize.
# TLS info: the documented forms.
python3 - "$OUT" <<'PY'
import struct, sys, os
d = sys.argv[1]
def frame(op, k, v): return struct.pack("<IIII", 0x564b4454, op, len(k), len(v)) + k + v
seeds = {
  "hello": b"\x80" + frame(1, b"0", b"secret") + frame(2, b"key", b"value" * 10),
  "get": b"\x03" + frame(3, b"ag/1/0", b"") + frame(4, b"bar/0", b"-1"),
  "oversize": b"\x00" + struct.pack("<IIII", 0x564b4454, 2, 16, 0xFFFFFFF0),
  "watch": b"\x81" + frame(8, b"3", b"") + frame(101, b"2", b"rank 2 lost") + frame(9, b"", b""),
}
for name, data in seeds.items():
    open(os.path.join(d, "corpus", "seed-" + name), "wb").write(data)
# handler script: event byte = conn | clock << 3 | kind << 6 (0 open, 1 close, 2/3 frame);
# a frame is op index, key (kind, seq), value (kind); see store_handler_fuzz.cpp.
def ev(conn, kind, tick=0): return bytes([conn | (tick << 3) | (kind << 6)])
def fr(conn, op, k, seq, v): return ev(conn, 2) + bytes([op, k, seq, v])
hello = lambda c, r: fr(c, 0, r * 10, 0, 0)      # HELLO rank r, secret "s"
watch = lambda c, r: fr(c, 7, r * 10, 0, 0)
script = b"".join(ev(c, 0) for c in range(4)) + hello(0, 0) + hello(1, 1) + hello(2, 2) + watch(3, 0)
for seq in range(3):
    script += b"".join(fr(c, 3, 1, seq, 1) for c in range(3)) + fr(2, 1, 2, seq, 1) + \
        b"".join(fr(c, 2, 2, seq, 1) for c in range(3)) + fr(3, 8, 6, 0, 3)
script += b"".join(fr(c, 6, 6, 0, 3) for c in range(3)) + ev(3, 1, 31)
open(os.path.join(d, "corpus-handler", "seed-job"), "wb").write(script)
open(os.path.join(d, "corpus-handler", "seed-stranger"), "wb").write(ev(0, 0) + fr(0, 1, 5, 0, 1) + ev(1, 0) + fr(1, 0, 10, 0, 4) + b"x" * 4)
for name, s in {"mtls": b"\x01ca=ca.pem;cert=host.pem;key=host.key",
                "server-only": b"\x01ca=/etc/ca.pem, verify_client=0 ,verify_host=1",
                "bad": b"\x01cert", "off": b"\x00ca=x"}.items():
    open(os.path.join(d, "corpus-tls", "seed-" + name), "wb").write(s)
# descriptor message: [descriptors to attach, parts] + payload; the valid one, and broken ones
for name, s in {"valid": b"\x01\x00\x03\x00\x00\x00", "short": b"\x01\x00\x03", "two": b"\x02\x00\x03\x00\x00\x00",
                "none": b"\x00\x00\x03\x00\x00\x00", "split": b"\x01\x03\x03\x00\x00\x00abcdef"}.items():
    open(os.path.join(d, "corpus-fd", "seed-" + name), "wb").write(s)
PY
[ "$SECS" = 0 ] && exit 0
cd "$OUT"
for t in "${TARGETS[@]}"; do
  case $t in
    store_decoder_fuzz) C=corpus; LEN=65536 ;;
    store_handler_fuzz) C=corpus-handler; LEN=4096 ;;
    tls_info_fuzz) C=corpus-tls; LEN=1024 ;;
    fd_message_fuzz) C=corpus-fd; LEN=256 ;;
  esac
  echo "== fuzz: $t, $SECS s"
  "./$t" -max_total_time="$SECS" -max_len=$LEN -rss_limit_mb=2048 -print_final_stats=1 "$@" "$C"
done
