// Round trip of every op and every enum value: print, re-parse, print again, and the generic form
// parses too.
// RUN: tdist-opt %s | tdist-opt | FileCheck %s
// RUN: tdist-opt %s --mlir-print-op-generic | tdist-opt | FileCheck %s

// CHECK-LABEL: func.func @wait_forms
func.func @wait_forms(%p: !llvm.ptr<1>, %m: memref<?xi64>, %tp: tensor<4x!llvm.ptr<1>>,
                      %n: i32, %v32: i32, %v64: i64, %u: ui64, %nt: tensor<4xi32>) {
  // CHECK: %{{.*}} = distributed.wait %{{.*}}, %{{.*}}, %{{.*}} scope = sys semantic = acquire : !llvm.ptr<1>, i32, i32
  %t0 = distributed.wait %p, %n, %v32 scope = sys semantic = acquire : !llvm.ptr<1>, i32, i32
  // CHECK: distributed.wait %{{.*}} scope = gpu semantic = relaxed : memref<?xi64>, i32, i64
  %t1 = distributed.wait %m, %n, %v64 scope = gpu semantic = relaxed : memref<?xi64>, i32, i64
  // CHECK: distributed.wait %{{.*}} scope = cta semantic = acquire : !llvm.ptr<1>, i32, ui64
  %t2 = distributed.wait %p, %n, %u scope = cta semantic = acquire : !llvm.ptr<1>, i32, ui64
  // CHECK: distributed.wait %{{.*}} : tensor<4x!llvm.ptr<1>>, tensor<4xi32>, i32
  %t3 = distributed.wait %tp, %nt, %v32 scope = sys semantic = acquire : tensor<4x!llvm.ptr<1>>, tensor<4xi32>, i32
  return
}

// CHECK-LABEL: func.func @consume_token_forms
func.func @consume_token_forms(%p: !llvm.ptr<1>, %t: tensor<16xf32>, %m: memref<8xf32>,
                               %tok: i32, %tok64: i64) -> (!llvm.ptr<1>, tensor<16xf32>, memref<8xf32>) {
  // CHECK: distributed.consume_token %{{.*}}, %{{.*}} : !llvm.ptr<1>, i32
  %a = distributed.consume_token %p, %tok : !llvm.ptr<1>, i32
  // CHECK: distributed.consume_token %{{.*}}, %{{.*}} : tensor<16xf32>, i64
  %b = distributed.consume_token %t, %tok64 : tensor<16xf32>, i64
  // CHECK: distributed.consume_token %{{.*}}, %{{.*}} : memref<8xf32>, i32
  %c = distributed.consume_token %m, %tok : memref<8xf32>, i32
  return %a, %b, %c : !llvm.ptr<1>, tensor<16xf32>, memref<8xf32>
}

// CHECK-LABEL: func.func @rank_queries
func.func @rank_queries() -> (i32, i32) {
  %c0 = arith.constant 0 : i32
  // CHECK: distributed.get_rank %{{.*}}{{$}}
  %r = distributed.get_rank %c0
  // CHECK: distributed.get_num_ranks %{{.*}}{{$}}
  %n = distributed.get_num_ranks %c0
  return %r, %n : i32, i32
}

// CHECK-LABEL: func.func @symm_at_forms
func.func @symm_at_forms(%p: !llvm.ptr<1>, %m: memref<?xf32>, %pe: i32) {
  // CHECK: distributed.symm_at %{{.*}}, %{{.*}} : !llvm.ptr<1>
  %a = distributed.symm_at %p, %pe : !llvm.ptr<1>
  // CHECK: distributed.symm_at %{{.*}}, %{{.*}} {elem_type = bf16} : !llvm.ptr<1>
  %b = distributed.symm_at %p, %pe {elem_type = bf16} : !llvm.ptr<1>
  // CHECK: distributed.symm_at %{{.*}}, %{{.*}} : memref<?xf32>
  %c = distributed.symm_at %m, %pe : memref<?xf32>
  return
}

// CHECK-LABEL: func.func @notify_forms
func.func @notify_forms(%p: !llvm.ptr<1>, %m: memref<?xi32>, %v: i64, %pe: i32) {
  // CHECK: distributed.notify %{{.*}}, %{{.*}}, %{{.*}} sig_op = set comm_scope = gpu : !llvm.ptr<1>
  distributed.notify %p, %v, %pe sig_op = set comm_scope = gpu : !llvm.ptr<1>
  // CHECK: distributed.notify %{{.*}} sig_op = add comm_scope = intra_node {elem_type = i32} : !llvm.ptr<1>
  distributed.notify %p, %v, %pe sig_op = add comm_scope = intra_node {elem_type = i32} : !llvm.ptr<1>
  // CHECK: distributed.notify %{{.*}} sig_op = set comm_scope = inter_node {elem_type = ui64} : !llvm.ptr<1>
  distributed.notify %p, %v, %pe sig_op = set comm_scope = inter_node {elem_type = ui64} : !llvm.ptr<1>
  // CHECK: distributed.notify %{{.*}} sig_op = add comm_scope = intra_node : memref<?xi32>
  distributed.notify %m, %v, %pe sig_op = add comm_scope = intra_node : memref<?xi32>
  return
}

// CHECK-LABEL: func.func @extern_call_forms
func.func @extern_call_forms(%d: !llvm.ptr<1>, %s: !llvm.ptr<1>, %n: i64, %pe: i32) -> i32 {
  // CHECK: distributed.extern_call "aclshmem_putmem"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {libname = "libshmem_device", libpath = "/opt/lib", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_putmem"(%d, %s, %n, %pe) {libname = "libshmem_device", libpath = "/opt/lib", pure = false} : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
  // CHECK: distributed.extern_call "aclshmem_team_my_pe"(%{{.*}}) {libname = "", libpath = "", pure = true} : (i32) -> i32
  %r = distributed.extern_call "aclshmem_team_my_pe"(%pe) {libname = "", libpath = "", pure = true} : (i32) -> i32
  return %r : i32
}
