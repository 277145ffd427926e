// raise-triton-distributed: the front end's marker calls (docs/COMPILE.md section 1) back to the
// dialect ops, in TTIR's generic form.
// RUN: tdist-opt %s --allow-unregistered-dialect --raise-triton-distributed | FileCheck %s

// CHECK-LABEL: "tt.func"
// CHECK-NOT: tt.extern_elementwise
// CHECK-NOT: tt.ptr_to_int
// CHECK: %[[AX:.*]] = arith.constant 0 : i32
// CHECK: %[[ME:.*]] = distributed.get_rank %[[AX]]
// CHECK: %[[AX2:.*]] = arith.constant 0 : i32
// CHECK: %[[N:.*]] = distributed.get_num_ranks %[[AX2]]
// CHECK: %[[R:.*]] = distributed.symm_at %arg0, %[[ME]] : !tt.ptr<f32>
// CHECK: "tt.store"(%[[R]],
// CHECK: %[[T:.*]] = distributed.wait %arg1, %{{.*}}, %{{.*}} scope = sys semantic = acquire : !tt.ptr<i32>, i32, i32
// CHECK: %[[T64:.*]] = distributed.wait %arg2, %{{.*}}, %{{.*}} scope = gpu semantic = relaxed : !tt.ptr<i64>, i32, i64
// CHECK: %[[C:.*]] = distributed.consume_token %arg0, %[[T]] : !tt.ptr<f32>, i32
// CHECK: %[[CI:.*]] = distributed.consume_token %[[N]], %[[T64]] : i32, i32
// CHECK: distributed.notify %arg1, %{{.*}}, %[[ME]] sig_op = add comm_scope = intra_node : !tt.ptr<i32>
// The notify's dummy result, used here, is 0.
// CHECK: distributed.notify %arg2, %{{.*}}, %[[ME]] sig_op = set comm_scope = inter_node : !tt.ptr<i64>
// CHECK: %[[Z:.*]] = arith.constant 0 : i32
// CHECK: distributed.extern_call "aclshmem_putmem"(%arg0, %[[R]], %{{.*}}, %[[ME]]) {libname = "libshmem_device", libpath = "", pure = false} : (!tt.ptr<f32>, !tt.ptr<f32>, i64, i32) -> ()
// CHECK: distributed.extern_call "aclshmem_quiet"() {libname = "libshmem_device", libpath = "", pure = false} : () -> ()
// CHECK: %[[TM:.*]] = distributed.extern_call "aclshmem_team_my_pe"(%{{.*}}) {libname = "libshmem_device", libpath = "", pure = true} : (i32) -> i32
// CHECK: "test.keep"(%[[C]], %[[CI]], %[[Z]], %[[TM]])
// Markers of other libraries are left alone.
// CHECK: "tt.extern_elementwise"(%{{.*}}) <{libname = "libdevice"
"builtin.module"() ({
  "tt.func"() <{function_type = (!tt.ptr<f32>, !tt.ptr<i32>, !tt.ptr<i64>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<f32>, %s32: !tt.ptr<i32>, %s64: !tt.ptr<i64>):
    %me = "tt.extern_elementwise"() <{libname = "libtdist_device", libpath = "", pure = true, symbol = "tdist_my_pe"}> : () -> i32
    %n = "tt.extern_elementwise"() <{libname = "libtdist_device", libpath = "", pure = true, symbol = "tdist_n_pes"}> : () -> i32
    %pi = "tt.ptr_to_int"(%p) : (!tt.ptr<f32>) -> i64
    %ri = "tt.extern_elementwise"(%pi, %me) <{libname = "libtdist_device", libpath = "", pure = true, symbol = "tdist_ptr_i64"}> : (i64, i32) -> i64
    %r = "tt.int_to_ptr"(%ri) : (i64) -> !tt.ptr<f32>
    %f = "arith.constant"() <{value = 1.0 : f32}> : () -> f32
    "tt.store"(%r, %f) <{cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<f32>, f32) -> ()
    %one = "arith.constant"() <{value = 1 : i32}> : () -> i32
    %one64 = "arith.constant"() <{value = 1 : i64}> : () -> i64
    %sys = "arith.constant"() <{value = 3 : i32}> : () -> i32
    %gpu = "arith.constant"() <{value = 1 : i32}> : () -> i32
    %acq = "arith.constant"() <{value = 2 : i32}> : () -> i32
    %rlx = "arith.constant"() <{value = 1 : i32}> : () -> i32
    %s32i = "tt.ptr_to_int"(%s32) : (!tt.ptr<i32>) -> i64
    %t = "tt.extern_elementwise"(%s32i, %one, %one, %sys, %acq) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_wait_int32"}> : (i64, i32, i32, i32, i32) -> i32
    %s64i = "tt.ptr_to_int"(%s64) : (!tt.ptr<i64>) -> i64
    %t64 = "tt.extern_elementwise"(%s64i, %one, %one64, %gpu, %rlx) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_wait_uint64"}> : (i64, i32, i64, i32, i32) -> i32
    %pi2 = "tt.ptr_to_int"(%p) : (!tt.ptr<f32>) -> i64
    %ci = "tt.extern_elementwise"(%pi2, %t) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_consume_token_ptr"}> : (i64, i32) -> i64
    %c = "tt.int_to_ptr"(%ci) : (i64) -> !tt.ptr<f32>
    %cn = "tt.extern_elementwise"(%n, %t64) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_consume_token_int32"}> : (i32, i32) -> i32
    %add = "arith.constant"() <{value = 2 : i32}> : () -> i32
    %set = "arith.constant"() <{value = 1 : i32}> : () -> i32
    %intra = "arith.constant"() <{value = 1 : i32}> : () -> i32
    %inter = "arith.constant"() <{value = 2 : i32}> : () -> i32
    %s32j = "tt.ptr_to_int"(%s32) : (!tt.ptr<i32>) -> i64
    %d0 = "tt.extern_elementwise"(%s32j, %one64, %me, %add, %intra) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_notify_int32"}> : (i64, i64, i32, i32, i32) -> i32
    %s64j = "tt.ptr_to_int"(%s64) : (!tt.ptr<i64>) -> i64
    %d1 = "tt.extern_elementwise"(%s64j, %one64, %me, %set, %inter) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_notify_int64"}> : (i64, i64, i32, i32, i32) -> i32
    %dst = "tt.ptr_to_int"(%p) : (!tt.ptr<f32>) -> i64
    %src = "tt.ptr_to_int"(%r) : (!tt.ptr<f32>) -> i64
    %bytes = "arith.constant"() <{value = 64 : i64}> : () -> i64
    %v0 = "tt.extern_elementwise"(%dst, %src, %bytes, %me) <{libname = "libshmem_device", libpath = "", pure = false, symbol = "aclshmem_putmem"}> : (i64, i64, i64, i32) -> i32
    %v1 = "tt.extern_elementwise"() <{libname = "libshmem_device", libpath = "", pure = false, symbol = "aclshmem_quiet"}> : () -> i32
    %team = "arith.constant"() <{value = 0 : i32}> : () -> i32
    %tm = "tt.extern_elementwise"(%team) <{libname = "libshmem_device", libpath = "", pure = true, symbol = "aclshmem_team_my_pe"}> : (i32) -> i32
    "test.keep"(%c, %cn, %d1, %tm) : (!tt.ptr<f32>, i32, i32, i32) -> ()
    %x = "tt.extern_elementwise"(%f) <{libname = "libdevice", libpath = "/x.bc", pure = true, symbol = "__nv_expf"}> : (f32) -> f32
    "tt.return"() : () -> ()
  }) {noinline = false} : () -> ()
}) : () -> ()
