// convert-distributed-to-hivm{form=call}: the link-time form for triton-ascend 3.2
// (docs/COMPILE.md section 3): func.call of the aclshmem symbol, pointers as i64.
// RUN: tdist-opt %s --allow-unregistered-dialect --convert-distributed-to-hivm=form=call | FileCheck %s
// RUN: tdist-opt %s --allow-unregistered-dialect --convert-distributed-to-hivm=form=call \
// RUN:   | %python %check_symbols %ascend_symbols | FileCheck %s --check-prefix=TABLE
// TABLE: check_symbols: {{[0-9]+}} symbols, all in symbols.def

// One private declaration per symbol, with the C interface (link name _mlir_ciface_<symbol>).
// CHECK-DAG: func.func private @aclshmem_my_pe() -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @aclshmem_n_pes() -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @aclshmem_ptr_float(i64, i32) -> i64 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @aclshmem_wait_int32(i64, i32, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @aclshmem_consume_token_float_ptr(i64, i32) -> i64 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @aclshmemx_signal_op(i64, i64, i32, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @aclshmem_int64_p(i64, i64, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @aclshmem_putmem(i64, i64, i64, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @aclshmem_ptr_int64(i64, i32) -> i64 attributes {llvm.emit_c_interface}
// CHECK-NOT: func.func private @aclshmem_ptr_float(

// CHECK-LABEL: "tt.func"
// CHECK: %[[ME:.*]] = func.call @aclshmem_my_pe() {hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", no_side_effect, symbol = "aclshmem_my_pe"} : () -> i32
// CHECK: func.call @aclshmem_n_pes() {{.*}}no_side_effect, symbol = "aclshmem_n_pes"}
// CHECK: %[[P:.*]] = "tt.ptr_to_int"(%arg0) : (!tt.ptr<f32>) -> i64
// CHECK: %[[R:.*]] = func.call @aclshmem_ptr_float(%[[P]], %arg3) {gm_addr_args_indices = array<i32: 0>, hivm.is_distributed, {{.*}}hivm.vf_mode = "SIMD", symbol = "aclshmem_ptr_float"} : (i64, i32) -> i64
// CHECK: %[[RP:.*]] = "tt.int_to_ptr"(%[[R]]) : (i64) -> !tt.ptr<f32>
// CHECK: func.call @aclshmem_ptr_float({{.*}}) {gm_addr_args_indices = array<i32: 0>,
// CHECK: %[[S:.*]] = "tt.ptr_to_int"(%arg1) : (!tt.ptr<i32>) -> i64
// CHECK: %[[T:.*]] = func.call @aclshmem_wait_int32(%[[S]], %[[ONE:.*]], %[[ONE]]) {gm_addr_args_indices = array<i32: 0>, {{.*}}symbol = "aclshmem_wait_int32"} : (i64, i32, i32) -> i32
// CHECK: %[[C:.*]] = func.call @aclshmem_consume_token_float_ptr(%[[R]], %[[T]]) {hivm.is_distributed, {{.*}}no_side_effect, symbol = "aclshmem_consume_token_float_ptr"} : (i64, i32) -> i64
// CHECK: "tt.int_to_ptr"(%[[C]]) : (i64) -> !tt.ptr<f32>
// CHECK: %[[ADD:.*]] = arith.constant 2 : i32
// CHECK: func.call @aclshmemx_signal_op(%{{.*}}, %arg4, %[[ADD]], %arg3) {gm_addr_args_indices = array<i32: 0>, {{.*}}symbol = "aclshmemx_signal_op"} : (i64, i64, i32, i32) -> ()
// CHECK: func.call @aclshmem_int64_p(%{{.*}}, %arg4, %arg3) {gm_addr_args_indices = array<i32: 0>, {{.*}}symbol = "aclshmem_int64_p"} : (i64, i64, i32) -> ()
// CHECK: func.call @aclshmem_putmem(%{{.*}}, %{{.*}}, %arg4, %arg3) {gm_addr_args_indices = array<i32: 0, 1>, hivm.is_distributed, {{.*}}symbol = "aclshmem_putmem"} : (i64, i64, i64, i32) -> ()
"tt.func"() <{function_type = (!tt.ptr<f32>, !tt.ptr<i32>, !tt.ptr<i64>, i32, i64) -> (), sym_name = "k"}> ({
^bb0(%p: !tt.ptr<f32>, %s32: !tt.ptr<i32>, %s64: !tt.ptr<i64>, %pe: i32, %v: i64):
  %c0 = arith.constant 0 : i32
  %me = distributed.get_rank %c0
  %n = distributed.get_num_ranks %c0
  %r = distributed.symm_at %p, %pe : !tt.ptr<f32>
  %r2 = distributed.symm_at %p, %me : !tt.ptr<f32>
  %one = arith.constant 1 : i32
  %t = distributed.wait %s32, %one, %one scope = sys semantic = acquire : !tt.ptr<i32>, i32, i32
  %c = distributed.consume_token %r, %t : !tt.ptr<f32>, i32
  distributed.notify %s32, %v, %pe sig_op = add comm_scope = intra_node : !tt.ptr<i32>
  distributed.notify %s64, %v, %pe sig_op = set comm_scope = intra_node : !tt.ptr<i64>
  distributed.extern_call "aclshmem_putmem"(%p, %p, %v, %pe) {libname = "libshmem_device", libpath = "", pure = false} : (!tt.ptr<f32>, !tt.ptr<f32>, i64, i32) -> ()
  "test.keep"(%c, %r2, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
  "tt.return"() : () -> ()
}) : () -> ()

// A pointer an earlier call returned goes on as its i64 (no int_to_ptr / ptr_to_int round trip).
// CHECK-LABEL: func.func @round_trip
// CHECK: %[[R:.*]] = call @aclshmem_ptr_float(
// CHECK-NEXT: "tt.int_to_ptr"(%[[R]])
// CHECK-NEXT: %[[D:.*]] = "tt.ptr_to_int"(%arg0)
// CHECK-NEXT: call @aclshmem_putmem(%[[D]], %[[R]], %arg2, %arg1) {gm_addr_args_indices = array<i32: 0>,
func.func @round_trip(%p: !tt.ptr<f32>, %pe: i32, %n: i64) {
  %r = distributed.symm_at %p, %pe : !tt.ptr<f32>
  distributed.extern_call "aclshmem_putmem"(%p, %r, %n, %pe) {libname = "libshmem_device", libpath = "", pure = false} : (!tt.ptr<f32>, !tt.ptr<f32>, i64, i32) -> ()
  return
}

// !llvm.ptr goes through llvm.ptrtoint / llvm.inttoptr.
// CHECK-LABEL: func.func @llvm_ptr
// CHECK: %[[I:.*]] = llvm.ptrtoint %arg0 : !llvm.ptr<1> to i64
// CHECK: %[[R:.*]] = call @aclshmem_ptr_int64(%[[I]], %arg1) {gm_addr_args_indices = array<i32: 0>,
// CHECK: llvm.inttoptr %[[R]] : i64 to !llvm.ptr<1>
func.func @llvm_ptr(%p: !llvm.ptr<1>, %pe: i32) -> !llvm.ptr<1> {
  %r = distributed.symm_at %p, %pe {elem_type = i64} : !llvm.ptr<1>
  return %r : !llvm.ptr<1>
}
