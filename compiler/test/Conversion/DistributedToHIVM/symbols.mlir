// Table 3.3 (symbol per op and type), the fixed attributes (PIPE_S, SIMD, is_distributed) and
// the exact printed form bishengir parses. No matmul in this module: every op is VECTOR.
// RUN: tdist-opt %s --allow-unregistered-dialect --convert-distributed-to-hivm | FileCheck %s
// RUN: tdist-opt %s --allow-unregistered-dialect --tdist-pipeline=ascend | FileCheck %s
// The output parses back through the hivm dialect and prints the same.
// RUN: tdist-opt %s --allow-unregistered-dialect --convert-distributed-to-hivm \
// RUN:   | tdist-opt --allow-unregistered-dialect | FileCheck %s

// CHECK-LABEL: func.func @rank
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK: %{{.*}} = hivm.hir.custom {hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = #hivm.vf_mode<SIMD>, no_side_effect, symbol = "aclshmem_my_pe"} "dist.aclshmem_my_pe" ins(%[[C0]] : i32) -> i32
// CHECK: %{{.*}} = hivm.hir.custom {hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = #hivm.vf_mode<SIMD>, no_side_effect, symbol = "aclshmem_n_pes"} "dist.aclshmem_n_pes" ins(%[[C0]] : i32) -> i32
// CHECK-NOT: distributed.
func.func @rank() -> (i32, i32) {
  %c0 = arith.constant 0 : i32
  %r = distributed.get_rank %c0
  %n = distributed.get_num_ranks %c0
  return %r, %n : i32, i32
}

// symm_at: aclshmem_ptr_<T> for each element type, from the memref or elem_type.
// CHECK-LABEL: func.func @symm_at
// CHECK: symbol = "aclshmem_ptr_float"} "dist.aclshmem_ptr_float" ins(%{{.*}}, %{{.*}} : memref<?xf32>, i32) -> memref<?xf32>
// CHECK: symbol = "aclshmem_ptr_half"} "dist.aclshmem_ptr_half"
// CHECK: symbol = "aclshmem_ptr_bfloat16"}
// CHECK: symbol = "aclshmem_ptr_double"}
// CHECK: symbol = "aclshmem_ptr_int8"}
// CHECK: symbol = "aclshmem_ptr_int16"}
// CHECK: symbol = "aclshmem_ptr_int32"}
// CHECK: symbol = "aclshmem_ptr_int64"}
// CHECK: symbol = "aclshmem_ptr_uint8"}
// CHECK: symbol = "aclshmem_ptr_uint32"}
// CHECK: symbol = "aclshmem_ptr_uint16"}
// CHECK: symbol = "aclshmem_ptr_float"} "dist.aclshmem_ptr_float" ins(%{{.*}}, %{{.*}} : !llvm.ptr<1>, i32) -> !llvm.ptr<1>
func.func @symm_at(%f32: memref<?xf32>, %f16: memref<?xf16>, %bf16: memref<?xbf16>,
                   %f64: memref<?xf64>, %i8: memref<?xi8>, %i16: memref<?xi16>,
                   %i32: memref<?xi32>, %i64: memref<?xi64>, %u8: memref<?xui8>,
                   %u32: memref<?xui32>, %b: memref<?xui16>, %p: !llvm.ptr<1>, %pe: i32) {
  %0 = distributed.symm_at %f32, %pe : memref<?xf32>
  %1 = distributed.symm_at %f16, %pe : memref<?xf16>
  %2 = distributed.symm_at %bf16, %pe : memref<?xbf16>
  %3 = distributed.symm_at %f64, %pe : memref<?xf64>
  %4 = distributed.symm_at %i8, %pe : memref<?xi8>
  %5 = distributed.symm_at %i16, %pe : memref<?xi16>
  %6 = distributed.symm_at %i32, %pe : memref<?xi32>
  %7 = distributed.symm_at %i64, %pe : memref<?xi64>
  %8 = distributed.symm_at %u8, %pe : memref<?xui8>
  %9 = distributed.symm_at %u32, %pe : memref<?xui32>
  %10 = distributed.symm_at %b, %pe : memref<?xui16>
  %11 = distributed.symm_at %p, %pe {elem_type = f32} : !llvm.ptr<1>
  "test.keep"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11) : (memref<?xf32>, memref<?xf16>, memref<?xbf16>, memref<?xf64>, memref<?xi8>, memref<?xi16>, memref<?xi32>, memref<?xi64>, memref<?xui8>, memref<?xui32>, memref<?xui16>, !llvm.ptr<1>) -> ()
  return
}

// notify: i32 -> aclshmemx_signal_op(sig, value, sig_op, pe); i64 / ui64 -> aclshmem_<T>_p.
// CHECK-LABEL: func.func @notify
// CHECK: %[[SET:.*]] = arith.constant 1 : i32
// CHECK: hivm.hir.custom {{{.*}}symbol = "aclshmemx_signal_op"} "dist.aclshmemx_signal_op" ins(%{{.*}}, %{{.*}}, %[[SET]], %{{.*}} : memref<?xi32>, i64, i32, i32){{$}}
// CHECK: %[[ADD:.*]] = arith.constant 2 : i32
// CHECK: hivm.hir.custom {{{.*}}symbol = "aclshmemx_signal_op"} "dist.aclshmemx_signal_op" ins(%{{.*}}, %{{.*}}, %[[ADD]], %{{.*}} : memref<?xi32>, i64, i32, i32){{$}}
// CHECK: hivm.hir.custom {{{.*}}symbol = "aclshmem_int64_p"} "dist.aclshmem_int64_p" ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?xi64>, i64, i32){{$}}
// CHECK: hivm.hir.custom {{{.*}}symbol = "aclshmem_uint64_p"} "dist.aclshmem_uint64_p" ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?xui64>, i64, i32){{$}}
// CHECK: symbol = "aclshmem_int64_p"} "dist.aclshmem_int64_p" ins(%{{.*}}, %{{.*}}, %{{.*}} : !llvm.ptr<1>, i64, i32)
// CHECK: symbol = "aclshmemx_signal_op"} "dist.aclshmemx_signal_op" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !llvm.ptr<1>, i64, i32, i32)
func.func @notify(%s32: memref<?xi32>, %s64: memref<?xi64>, %su64: memref<?xui64>,
                  %p: !llvm.ptr<1>, %v: i64, %pe: i32) {
  distributed.notify %s32, %v, %pe sig_op = set comm_scope = intra_node : memref<?xi32>
  distributed.notify %s32, %v, %pe sig_op = add comm_scope = intra_node : memref<?xi32>
  distributed.notify %s64, %v, %pe sig_op = set comm_scope = intra_node : memref<?xi64>
  distributed.notify %su64, %v, %pe sig_op = set comm_scope = inter_node : memref<?xui64>
  distributed.notify %p, %v, %pe sig_op = set comm_scope = gpu : !llvm.ptr<1>
  distributed.notify %p, %v, %pe sig_op = add comm_scope = gpu {elem_type = i32} : !llvm.ptr<1>
  return
}

// wait: aclshmem_wait_<T> by the slot type.
// CHECK-LABEL: func.func @wait
// CHECK: %{{.*}} = hivm.hir.custom {{{.*}}symbol = "aclshmem_wait_int32"} "dist.aclshmem_wait_int32" ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?xi32>, i32, i32) -> i32
// CHECK: symbol = "aclshmem_wait_int64"} "dist.aclshmem_wait_int64" ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?xi64>, i32, i64) -> i32
// CHECK: symbol = "aclshmem_wait_uint64"} "dist.aclshmem_wait_uint64"
func.func @wait(%s32: memref<?xi32>, %s64: memref<?xi64>, %su64: memref<?xui64>,
                %n: i32, %v32: i32, %v64: i64, %vu: ui64) -> (i32, i32, i32) {
  %a = distributed.wait %s32, %n, %v32 scope = sys semantic = acquire : memref<?xi32>, i32, i32
  %b = distributed.wait %s64, %n, %v64 scope = sys semantic = acquire : memref<?xi64>, i32, i64
  %c = distributed.wait %su64, %n, %vu scope = sys semantic = acquire : memref<?xui64>, i32, ui64
  return %a, %b, %c : i32, i32, i32
}

// consume_token: aclshmem_consume_token_<T> by the input type.
// CHECK-LABEL: func.func @consume_token
// CHECK: symbol = "aclshmem_consume_token_float_ptr_1d"} "dist.aclshmem_consume_token_float_ptr_1d" ins(%{{.*}}, %{{.*}} : memref<?xf32>, i32) -> memref<?xf32>
// CHECK: symbol = "aclshmem_consume_token_int32_ptr_2d"}
// CHECK: symbol = "aclshmem_consume_token_float_ptr"}
// CHECK: symbol = "aclshmem_consume_token_ptr"}
// CHECK: symbol = "aclshmem_consume_token_int64"}
// CHECK: symbol = "aclshmem_consume_token_half_1d"}
// CHECK: symbol = "aclshmem_consume_token_ptr_1d"}
func.func @consume_token(%m1: memref<?xf32>, %m2: memref<4x4xi32>, %m0: memref<f32>,
                         %p: !llvm.ptr<1>, %i: i64, %t: tensor<8xf16>,
                         %tp: tensor<8x!llvm.ptr<1>>, %tok: i32) {
  %0 = distributed.consume_token %m1, %tok : memref<?xf32>, i32
  %1 = distributed.consume_token %m2, %tok : memref<4x4xi32>, i32
  %2 = distributed.consume_token %m0, %tok : memref<f32>, i32
  %3 = distributed.consume_token %p, %tok : !llvm.ptr<1>, i32
  %4 = distributed.consume_token %i, %tok : i64, i32
  %5 = distributed.consume_token %t, %tok : tensor<8xf16>, i32
  %6 = distributed.consume_token %tp, %tok : tensor<8x!llvm.ptr<1>>, i32
  "test.keep"(%0, %1, %2, %3, %4, %5, %6) : (memref<?xf32>, memref<4x4xi32>, memref<f32>, !llvm.ptr<1>, i64, tensor<8xf16>, tensor<8x!llvm.ptr<1>>) -> ()
  return
}

// extern_call keeps its own symbol; operands and results pass through.
// CHECK-LABEL: func.func @extern_call
// CHECK: hivm.hir.custom {{{.*}}symbol = "aclshmem_quiet"} "dist.aclshmem_quiet"{{$}}
// CHECK: %{{.*}} = hivm.hir.custom {{{.*}}no_side_effect, symbol = "aclshmem_team_n_pes"} "dist.aclshmem_team_n_pes" ins(%{{.*}} : i32) -> i32
func.func @extern_call(%team: i32) -> i32 {
  distributed.extern_call "aclshmem_quiet"() {libname = "libshmem_device", libpath = "", pure = false} : () -> ()
  %n = distributed.extern_call "aclshmem_team_n_pes"(%team) {libname = "libshmem_device", libpath = "", pure = true} : (i32) -> i32
  return %n : i32
}

// Every aclshmem symbol emitted here is listed in device/Ascend/symbols.def.
// RUN: tdist-opt %s --allow-unregistered-dialect --convert-distributed-to-hivm \
// RUN:   | %python %check_symbols %ascend_symbols | FileCheck %s --check-prefix=TABLE
// TABLE: check_symbols: {{[0-9]+}} symbols, all in symbols.def
