// Verifier of the minimal hivm.hir.custom.
// RUN: tdist-opt %s --split-input-file --verify-diagnostics

func.func @empty_name() {
  // expected-error @+1 {{'hivm.hir.custom' op name must not be empty}}
  hivm.hir.custom {} ""
  return
}

// -----

func.func @distributed_without_symbol(%a: i32) -> i32 {
  // expected-error @+1 {{'hivm.hir.custom' op a distributed hir.custom needs a string 'symbol' attribute}}
  %r = hivm.hir.custom {hivm.is_distributed} "dist.aclshmem_my_pe" ins(%a : i32) -> i32
  return %r : i32
}
