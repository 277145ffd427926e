// Errors of raise-triton-distributed.
// RUN: tdist-opt %s --allow-unregistered-dialect --split-input-file --verify-diagnostics --raise-triton-distributed

"tt.func"() <{function_type = (tensor<4x!tt.ptr<f32>>, i32) -> (), sym_name = "k"}> ({
^bb0(%p: tensor<4x!tt.ptr<f32>>, %pe: i32):
  %pi = "tt.ptr_to_int"(%p) : (tensor<4x!tt.ptr<f32>>) -> tensor<4xi64>
  %pes = "tt.splat"(%pe) : (i32) -> tensor<4xi32>
  // expected-error @+1 {{'tt.extern_elementwise' op dl.symm_at on a block of pointers cannot be lowered for ascend: translate a scalar base pointer and add the tile's offsets}}
  %ri = "tt.extern_elementwise"(%pi, %pes) <{libname = "libtdist_device", libpath = "", pure = true, symbol = "tdist_ptr_i64"}> : (tensor<4xi64>, tensor<4xi32>) -> tensor<4xi64>
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (tensor<4xi32>, i32) -> (), sym_name = "k"}> ({
^bb0(%v: tensor<4xi32>, %tok: i32):
  // expected-error @+1 {{'tt.extern_elementwise' op dl.consume_token on a block value cannot be lowered for ascend: translate a scalar base pointer and add the tile's offsets}}
  %c = "tt.extern_elementwise"(%v, %tok) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_consume_token_int32"}> : (tensor<4xi32>, i32) -> tensor<4xi32>
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (i64, i32) -> (), sym_name = "k"}> ({
^bb0(%a: i64, %pe: i32):
  // expected-error @+1 {{'tt.extern_elementwise' op dl.symm_at (tdist_ptr_i64) operand 'symmAddr': the pointer operand must be a tt.ptr_to_int of a pointer}}
  %ri = "tt.extern_elementwise"(%a, %pe) <{libname = "libtdist_device", libpath = "", pure = true, symbol = "tdist_ptr_i64"}> : (i64, i32) -> i64
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (!tt.ptr<f32>, i32) -> (), sym_name = "k"}> ({
^bb0(%p: !tt.ptr<f32>, %pe: i32):
  %pi = "tt.ptr_to_int"(%p) : (!tt.ptr<f32>) -> i64
  // expected-error @+1 {{'tt.extern_elementwise' op dl.symm_at (tdist_ptr_i64): the i64 result may only be used by tt.int_to_ptr to '!tt.ptr<f32>', found arith.addi}}
  %ri = "tt.extern_elementwise"(%pi, %pe) <{libname = "libtdist_device", libpath = "", pure = true, symbol = "tdist_ptr_i64"}> : (i64, i32) -> i64
  %x = "arith.addi"(%ri, %ri) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (!tt.ptr<i32>, i32) -> (), sym_name = "k"}> ({
^bb0(%s: !tt.ptr<i32>, %scope: i32):
  %si = "tt.ptr_to_int"(%s) : (!tt.ptr<i32>) -> i64
  %one = "arith.constant"() <{value = 1 : i32}> : () -> i32
  // expected-error @+1 {{'tt.extern_elementwise' op dl.wait (tdistx_wait_int32) operand 'scope' must be an arith.constant of type i32}}
  %t = "tt.extern_elementwise"(%si, %one, %one, %scope, %one) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_wait_int32"}> : (i64, i32, i32, i32, i32) -> i32
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (!tt.ptr<i32>) -> (), sym_name = "k"}> ({
^bb0(%s: !tt.ptr<i32>):
  %si = "tt.ptr_to_int"(%s) : (!tt.ptr<i32>) -> i64
  %one = "arith.constant"() <{value = 1 : i32}> : () -> i32
  %rel = "arith.constant"() <{value = 3 : i32}> : () -> i32
  // expected-error @+1 {{'tt.extern_elementwise' op dl.wait (tdistx_wait_int32) operand 'semantic' = 3 is not a legal value (relaxed=1, acquire=2)}}
  %t = "tt.extern_elementwise"(%si, %one, %one, %one, %rel) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_wait_int32"}> : (i64, i32, i32, i32, i32) -> i32
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (!tt.ptr<i32>) -> (), sym_name = "k"}> ({
^bb0(%s: !tt.ptr<i32>):
  %si = "tt.ptr_to_int"(%s) : (!tt.ptr<i32>) -> i64
  %one = "arith.constant"() <{value = 1 : i32}> : () -> i32
  %bad = "arith.constant"() <{value = 7 : i32}> : () -> i32
  // expected-error @+1 {{'tt.extern_elementwise' op dl.wait (tdistx_wait_int32) operand 'scope' = 7 is not a legal value (gpu=1, cta=2, sys=3)}}
  %t = "tt.extern_elementwise"(%si, %one, %one, %bad, %one) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_wait_int32"}> : (i64, i32, i32, i32, i32) -> i32
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (!tt.ptr<i32>, i64, i32) -> (), sym_name = "k"}> ({
^bb0(%s: !tt.ptr<i32>, %v: i64, %pe: i32):
  %si = "tt.ptr_to_int"(%s) : (!tt.ptr<i32>) -> i64
  %bad = "arith.constant"() <{value = 3 : i32}> : () -> i32
  %one = "arith.constant"() <{value = 1 : i32}> : () -> i32
  // expected-error @+1 {{'tt.extern_elementwise' op dl.notify (tdistx_notify_int32) operand 'sigOp' = 3 is not a legal value (set=1, add=2)}}
  %d = "tt.extern_elementwise"(%si, %v, %pe, %bad, %one) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_notify_int32"}> : (i64, i64, i32, i32, i32) -> i32
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (!tt.ptr<i32>, i64, i32) -> (), sym_name = "k"}> ({
^bb0(%s: !tt.ptr<i32>, %v: i64, %pe: i32):
  %si = "tt.ptr_to_int"(%s) : (!tt.ptr<i32>) -> i64
  %one = "arith.constant"() <{value = 1 : i32}> : () -> i32
  %bad = "arith.constant"() <{value = 5 : i32}> : () -> i32
  // expected-error @+1 {{'tt.extern_elementwise' op dl.notify (tdistx_notify_int32) operand 'commScope' = 5 is not a legal value (gpu=0, intra_node=1, inter_node=2)}}
  %d = "tt.extern_elementwise"(%si, %v, %pe, %one, %bad) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_notify_int32"}> : (i64, i64, i32, i32, i32) -> i32
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (!tt.ptr<i64>, i64, i32) -> (), sym_name = "k"}> ({
^bb0(%s: !tt.ptr<i64>, %v: i64, %pe: i32):
  %si = "tt.ptr_to_int"(%s) : (!tt.ptr<i64>) -> i64
  %one = "arith.constant"() <{value = 1 : i32}> : () -> i32
  // expected-error @+1 {{'tt.extern_elementwise' op dl.notify (tdistx_notify_int32): the symbol's int32 signal slot does not fit 'i64'}}
  %d = "tt.extern_elementwise"(%si, %v, %pe, %one, %one) <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_notify_int32"}> : (i64, i64, i32, i32, i32) -> i32
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (i32) -> (), sym_name = "k"}> ({
^bb0(%pe: i32):
  // expected-error @+1 {{'tt.extern_elementwise' op dl.symm_at (tdist_ptr_i64) expects 2 operands, got 1}}
  %ri = "tt.extern_elementwise"(%pe) <{libname = "libtdist_device", libpath = "", pure = true, symbol = "tdist_ptr_i64"}> : (i32) -> i64
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = () -> (), sym_name = "k"}> ({
  // expected-error @+1 {{'tt.extern_elementwise' op unknown libtdist_device symbol 'tdistx_wait_float' (device/dist_ops.def lists the dl.* markers)}}
  %x = "tt.extern_elementwise"() <{libname = "libtdist_device", libpath = "", pure = false, symbol = "tdistx_wait_float"}> : () -> i32
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = () -> (), sym_name = "k"}> ({
  // expected-error @+1 {{'tt.extern_elementwise' op libshmem_device.aclshmem_quiet returns nothing (a void library call), but its result is used}}
  %x = "tt.extern_elementwise"() <{libname = "libshmem_device", libpath = "", pure = false, symbol = "aclshmem_quiet"}> : () -> i32
  "test.keep"(%x) : (i32) -> ()
  "tt.return"() : () -> ()
}) : () -> ()

// -----

"tt.func"() <{function_type = (tensor<4xi64>, i32) -> (), sym_name = "k"}> ({
^bb0(%a: tensor<4xi64>, %pe: i32):
  // expected-error @+1 {{'tt.extern_elementwise' op libshmem_device.aclshmem_putmem on a block value cannot be lowered for ascend: translate a scalar base pointer and add the tile's offsets}}
  %x = "tt.extern_elementwise"(%a, %a, %a, %pe) <{libname = "libshmem_device", libpath = "", pure = false, symbol = "aclshmem_putmem"}> : (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, i32) -> tensor<4xi32>
  "tt.return"() : () -> ()
}) : () -> ()
