// Errors of lower-ascend-linalg-to-cpu: what a CPU build cannot run is named, never dropped.
// RUN: tdist-opt %s --allow-unregistered-dialect --split-input-file --verify-diagnostics --lower-ascend-linalg-to-cpu

func.func @k(%m: memref<?xf32>) {
  // expected-error @+1 {{'hivm.hir.vadd' op has no CPU lowering}}
  "hivm.hir.vadd"(%m, %m, %m) : (memref<?xf32>, memref<?xf32>, memref<?xf32>) -> ()
  return
}

// -----

func.func @k(%t: tensor<4xi64>) {
  // expected-error @+1 {{'tt.extern_elementwise' op has no CPU lowering: only a scalar call with a symbol is supported}}
  %r = "tt.extern_elementwise"(%t) <{libname = "", libpath = "", pure = true, symbol = "f"}> : (tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @k(%a: i64, %n: index) {
  // expected-error @+1 {{'hivm.hir.pointer_cast' op has no CPU lowering: only an identity-layout memref in the default memory space is supported, got 'memref<?xf32, strided<[2]>>'}}
  %m = "hivm.hir.pointer_cast"(%a, %n) <{operandSegmentSizes = array<i32: 1, 1>}> : (i64, index) -> memref<?xf32, strided<[2]>>
  return
}

// -----

func.func @k(%a: i64) {
  // expected-error @+1 {{'hivm.hir.pointer_cast' op has no CPU lowering: expected one size per dynamic dimension of 'memref<?x?xf32>'}}
  %m = "hivm.hir.pointer_cast"(%a) <{operandSegmentSizes = array<i32: 1, 0>}> : (i64) -> memref<?x?xf32>
  return
}

// -----

func.func @k(%id: index) {
  // expected-error @+1 {{'hivm.hir.sync_block_wait' op has no CPU lowering: only a static_flag_id without operands is supported}}
  "hivm.hir.sync_block_wait"(%id) <{operandSegmentSizes = array<i32: 0, 1>}> : (index) -> ()
  return
}

// -----

func.func private @tdist_cpu_sync_block_all(i64)

func.func @k() {
  // expected-error @+1 {{'hivm.hir.sync_block_all' op has no CPU lowering: @tdist_cpu_sync_block_all is needed as '(i32) -> ()' but was declared as '(i64) -> ()'}}
  "hivm.hir.sync_block_all"() <{static_flag_id = 1 : index}> : () -> ()
  return
}

// -----

func.func @k(%x: i32) -> i32 {
  // expected-error @+1 {{'test.op' op has no CPU lowering}}
  %r = "test.op"(%x) : (i32) -> i32
  return %r : i32
}

// -----

func.func @k(%x: i32) {
  // expected-error @+1 {{'hivm.hir.custom' op has no CPU lowering}}
  %r = hivm.hir.custom {hivm.is_distributed, symbol = "aclshmem_my_pe"} "dist.aclshmem_my_pe" ins(%x : i32) -> i32
  return
}

// -----

// An atomic kind the CPU has no atomic_rmw for is refused, naming it.
#map = affine_map<(d0) -> (d0)>
func.func @k(%dst: memref<1xf32>, %v: memref<1xf32>) {
  // expected-error @+1 {{(triton-ascend atomic 'and') has no CPU lowering: unknown kind for element type f32}}
  linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%dst, %v : memref<1xf32>, memref<1xf32>) outs(%dst : memref<1xf32>) attrs = {GenericAtomicRMW = "and"} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    linalg.yield %b : f32
  }
  return
}
