"""Fails if an aclshmem symbol in the HIVM output (stdin) is missing from device/Ascend/symbols.def.

consume_token names are open-ended (one per value type) and only checked for their prefix;
extern_call symbols outside the aclshmem namespaces are user library calls and are skipped.
"""
import re
import sys

FORMS = {
    "TDIST_ASCEND_SYMBOL": "{}",
    "TDIST_ASCEND_PTR_TYPE": "aclshmem_ptr_{}",
    "TDIST_ASCEND_WAIT_TYPE": "aclshmem_wait_{}",
    "TDIST_ASCEND_P_TYPE": "aclshmem_{}_p",
    "TDIST_ASCEND_VOID": "{}",
}

table = set()
for macro, arg in re.findall(r"^(TDIST_ASCEND_\w+)\((\w+)\)\s*$", open(sys.argv[1]).read(), re.M):
    table.add(FORMS[macro].format(arg))

emitted = set(re.findall(r'symbol = "(\w+)"', sys.stdin.read()))
missing = sorted(s for s in emitted
                 if s.startswith(("aclshmem_", "aclshmemx_"))
                 and not s.startswith("aclshmem_consume_token_") and s not in table)
if not emitted:
    sys.exit("check_symbols: no symbols in the input")
if missing:
    sys.exit("check_symbols: not in symbols.def: " + ", ".join(missing))
print("check_symbols: %d symbols, all in symbols.def" % len(emitted))
