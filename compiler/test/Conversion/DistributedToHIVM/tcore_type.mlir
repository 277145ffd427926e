// Table 3.4: TCoreType by the prefix table first, then by existDot. Each split is one module.
// RUN: tdist-opt %s --split-input-file --convert-distributed-to-hivm | FileCheck %s

// No matmul: every row of the prefix table, and the fallback (VECTOR).
// CHECK-LABEL: func.func @no_dot
// CHECK: tcore_type<CUBE_AND_VECTOR>, {{.*}}symbol = "aclshmem_barrier_all"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmemx_barrier_all_vec"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_putmem"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_getmem"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_putmem_nbi"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_getmem_nbi"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_putmem_signal"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_putmem_signal_nbi"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_quiet"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_my_pe"}
func.func @no_dot(%d: !llvm.ptr<1>, %s: !llvm.ptr<1>, %n: i64, %pe: i32) -> i32 {
  distributed.extern_call "aclshmem_barrier_all"() {libname = "", libpath = "", pure = false} : () -> ()
  distributed.extern_call "aclshmemx_barrier_all_vec"() {libname = "", libpath = "", pure = false} : () -> ()
  distributed.extern_call "aclshmem_putmem"(%d, %s, %n, %pe) {libname = "", libpath = "", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_getmem"(%d, %s, %n, %pe) {libname = "", libpath = "", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_putmem_nbi"(%d, %s, %n, %pe) {libname = "", libpath = "", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_getmem_nbi"(%d, %s, %n, %pe) {libname = "", libpath = "", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_putmem_signal"(%d, %s, %n, %pe) {libname = "", libpath = "", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_putmem_signal_nbi"(%d, %s, %n, %pe) {libname = "", libpath = "", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_quiet"() {libname = "", libpath = "", pure = false} : () -> ()
  %c0 = arith.constant 0 : i32
  %r = distributed.get_rank %c0
  return %r : i32
}

// -----

// With a matmul (linalg.matmul) the prefix table still wins; everything else is CUBE_AND_VECTOR.
// CHECK-LABEL: func.func @linalg_matmul
// CHECK: tcore_type<CUBE_AND_VECTOR>, {{.*}}symbol = "aclshmem_barrier_all"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmemx_barrier_all_vec"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_putmem"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_getmem_nbi"}
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_putmem_signal_nbi"}
// CHECK: tcore_type<CUBE_AND_VECTOR>, {{.*}}symbol = "aclshmem_quiet"}
// CHECK: tcore_type<CUBE_AND_VECTOR>, {{.*}}symbol = "aclshmem_my_pe"}
// CHECK: linalg.matmul
func.func @linalg_matmul(%d: !llvm.ptr<1>, %s: !llvm.ptr<1>, %n: i64, %pe: i32,
                         %a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> (i32, tensor<4x4xf32>) {
  distributed.extern_call "aclshmem_barrier_all"() {libname = "", libpath = "", pure = false} : () -> ()
  distributed.extern_call "aclshmemx_barrier_all_vec"() {libname = "", libpath = "", pure = false} : () -> ()
  distributed.extern_call "aclshmem_putmem"(%d, %s, %n, %pe) {libname = "", libpath = "", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_getmem_nbi"(%d, %s, %n, %pe) {libname = "", libpath = "", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_putmem_signal_nbi"(%d, %s, %n, %pe) {libname = "", libpath = "", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_quiet"() {libname = "", libpath = "", pure = false} : () -> ()
  %c0 = arith.constant 0 : i32
  %r = distributed.get_rank %c0
  %m = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r, %m : i32, tensor<4x4xf32>
}

// -----

// linalg.batch_matmul in another function of the module counts too (the scan is module-wide).
// CHECK-LABEL: func.func @rank_only
// CHECK: tcore_type<CUBE_AND_VECTOR>, {{.*}}symbol = "aclshmem_n_pes"}
func.func @rank_only() -> i32 {
  %c0 = arith.constant 0 : i32
  %r = distributed.get_num_ranks %c0
  return %r : i32
}
func.func @bmm(%a: tensor<2x4x4xf32>, %b: tensor<2x4x4xf32>, %c: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %m = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%c : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %m : tensor<2x4x4xf32>
}

// -----

// vector.contract is matmul-like.
// CHECK-LABEL: func.func @vector_contract
// CHECK: tcore_type<CUBE_AND_VECTOR>, {{.*}}symbol = "aclshmem_my_pe"}
#map_a = affine_map<(m, n, k) -> (m, k)>
#map_b = affine_map<(m, n, k) -> (k, n)>
#map_c = affine_map<(m, n, k) -> (m, n)>
func.func @vector_contract(%a: vector<4x4xf32>, %b: vector<4x4xf32>, %c: vector<4x4xf32>) -> (i32, vector<4x4xf32>) {
  %c0 = arith.constant 0 : i32
  %r = distributed.get_rank %c0
  %m = vector.contract {indexing_maps = [#map_a, #map_b, #map_c], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %a, %b, %c : vector<4x4xf32>, vector<4x4xf32> into vector<4x4xf32>
  return %r, %m : i32, vector<4x4xf32>
}

// -----

// Any op marked with the unit attribute `tdist.dot` (e.g. a front end's own dot) is matmul-like.
// CHECK-LABEL: func.func @marked_dot
// CHECK: tcore_type<CUBE_AND_VECTOR>, {{.*}}symbol = "aclshmem_my_pe"}
func.func @marked_dot(%x: f32, %y: f32) -> (i32, f32) {
  %c0 = arith.constant 0 : i32
  %r = distributed.get_rank %c0
  %m = arith.mulf %x, %y {tdist.dot} : f32
  return %r, %m : i32, f32
}

// -----

// An unmarked elementwise multiply is not a dot: VECTOR.
// CHECK-LABEL: func.func @not_a_dot
// CHECK: tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_my_pe"}
func.func @not_a_dot(%x: f32, %y: f32) -> (i32, f32) {
  %c0 = arith.constant 0 : i32
  %r = distributed.get_rank %c0
  %m = arith.mulf %x, %y : f32
  return %r, %m : i32, f32
}

// RUN: tdist-opt %s --split-input-file --convert-distributed-to-hivm \
// RUN:   | %python %check_symbols %ascend_symbols | FileCheck %s --check-prefix=TABLE
// TABLE: check_symbols: {{[0-9]+}} symbols, all in symbols.def
