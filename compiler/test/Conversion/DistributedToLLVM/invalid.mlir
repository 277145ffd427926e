// Errors of convert-distributed-to-llvm.
// RUN: tdist-opt %s --split-input-file --verify-diagnostics --convert-distributed-to-llvm=target=cpu
// RUN: tdist-opt %s --split-input-file --verify-diagnostics --convert-distributed-to-llvm=target=gpu

func.func @memref_wait(%m: memref<?xi32>, %n: i32, %v: i32) -> i32 {
  // expected-error @+1 {{'distributed.wait' op cannot be lowered to LLVM: barrierPtr must be an !llvm.ptr (memref and tensor pointers are for the HIVM lowering)}}
  %t = distributed.wait %m, %n, %v scope = sys semantic = acquire : memref<?xi32>, i32, i32
  return %t : i32
}

// -----

func.func @tensor_n(%p: !llvm.ptr, %n: tensor<4xi32>, %v: i32) -> tensor<4xi32> {
  // expected-error @+1 {{'distributed.wait' op cannot be lowered to LLVM: numBarriers must be a signless scalar integer}}
  %t = distributed.wait %p, %n, %v scope = sys semantic = acquire : !llvm.ptr, tensor<4xi32>, i32
  return %t : tensor<4xi32>
}

// -----

func.func @unsigned_value(%p: !llvm.ptr, %n: i32, %v: ui64) -> i32 {
  // expected-error @+1 {{'distributed.wait' op cannot be lowered to LLVM: waitValue must be a signless i32 or i64 (use i64 for a ui64 slot)}}
  %t = distributed.wait %p, %n, %v scope = sys semantic = acquire : !llvm.ptr, i32, ui64
  return %t : i32
}

// -----

func.func @memref_symm_at(%m: memref<?xf32>, %pe: i32) -> memref<?xf32> {
  // expected-error @+1 {{'distributed.symm_at' op cannot be lowered to LLVM: symmAddr must be an !llvm.ptr}}
  %r = distributed.symm_at %m, %pe : memref<?xf32>
  return %r : memref<?xf32>
}

// -----

func.func @memref_notify(%m: memref<?xi32>, %v: i64, %pe: i32) {
  // expected-error @+1 {{'distributed.notify' op cannot be lowered to LLVM: sigAddr must be an !llvm.ptr}}
  distributed.notify %m, %v, %pe sig_op = set comm_scope = gpu : memref<?xi32>
  return
}

// -----

func.func @extern_bad_operand(%t: tensor<4xf32>) {
  // expected-error @+1 {{'distributed.extern_call' op cannot be lowered to LLVM: extern_call operand type is not an LLVM type}}
  distributed.extern_call "f"(%t) {libname = "", libpath = "", pure = false} : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @extern_bad_result(%a: i32) -> memref<4xf32> {
  // expected-error @+1 {{'distributed.extern_call' op cannot be lowered to LLVM: extern_call result type is not an LLVM type}}
  %r = distributed.extern_call "f"(%a) {libname = "", libpath = "", pure = false} : (i32) -> memref<4xf32>
  return %r : memref<4xf32>
}

// -----

func.func @extern_two_results(%a: i32) -> (i32, i32) {
  // expected-error @+1 {{'distributed.extern_call' op cannot be lowered to LLVM: an LLVM call returns at most one value}}
  %r:2 = distributed.extern_call "f"(%a) {libname = "", libpath = "", pure = false} : (i32) -> (i32, i32)
  return %r#0, %r#1 : i32, i32
}

// -----

llvm.func @tdist_my_pe() -> i64
func.func @abi_conflict() -> i32 {
  %c0 = arith.constant 0 : i32
  // expected-error @+2 {{'distributed.get_rank' op needs @tdist_my_pe of type '!llvm.func<i32 ()>' but the module declares it as '!llvm.func<i64 ()>'}}
  // expected-error @+1 {{'distributed.get_rank' op was not lowered to LLVM}}
  %r = distributed.get_rank %c0
  return %r : i32
}

// -----

func.func private @tdist_n_pes() -> i32
func.func @abi_conflict_func() -> i32 {
  %c0 = arith.constant 0 : i32
  // expected-error @+2 {{'distributed.get_num_ranks' op needs @tdist_n_pes as an llvm.func but the module defines it as 'func.func'}}
  // expected-error @+1 {{'distributed.get_num_ranks' op was not lowered to LLVM}}
  %r = distributed.get_num_ranks %c0
  return %r : i32
}
