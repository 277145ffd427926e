// Errors of convert-distributed-to-hivm{form=call}.
// RUN: tdist-opt %s --allow-unregistered-dialect --split-input-file --verify-diagnostics --convert-distributed-to-hivm=form=call

func.func @block(%ts: tensor<4x!tt.ptr<i32>>, %t: i32) {
  // expected-error @+1 {{'distributed.consume_token' op on a block (tensor) value cannot be lowered for ascend (triton-ascend 3.2): the link-time form takes scalars; translate a scalar base pointer and add the tile's offsets}}
  %c = distributed.consume_token %ts, %t : tensor<4x!tt.ptr<i32>>, i32
  "test.keep"(%c) : (tensor<4x!tt.ptr<i32>>) -> ()
  return
}

// -----

func.func private @aclshmem_ptr_float(!tt.ptr<f32>, i32) -> !tt.ptr<f32>

func.func @signature(%p: !tt.ptr<f32>, %pe: i32) -> !tt.ptr<f32> {
  // expected-error @+1 {{'distributed.symm_at' op cannot be lowered for ascend: @aclshmem_ptr_float is needed as '(i64, i32) -> i64' but was declared as '(!tt.ptr<f32>, i32) -> !tt.ptr<f32>'}}
  %r = distributed.symm_at %p, %pe : !tt.ptr<f32>
  return %r : !tt.ptr<f32>
}

// -----

func.func @two_uses(%a: memref<?xf32>, %b: !tt.ptr<f32>, %pe: i32) {
  distributed.extern_call "lib_f"(%a, %pe) {libname = "", libpath = "", pure = false} : (memref<?xf32>, i32) -> ()
  // expected-error @+1 {{'distributed.extern_call' op cannot be lowered for ascend: @lib_f is needed as '(i64, i32) -> ()' but was declared as '(memref<?xf32>, i32) -> ()'}}
  distributed.extern_call "lib_f"(%b, %pe) {libname = "", libpath = "", pure = false} : (!tt.ptr<f32>, i32) -> ()
  return
}

// -----

func.func @team_rank(%axis: i32) -> i32 {
  // expected-error @+1 {{'distributed.get_rank' op cannot be lowered for ascend (triton-ascend 3.2): aclshmem_my_pe / aclshmem_n_pes take no axis, only axis 0 (the world) has a link-time form}}
  %r = distributed.get_rank %axis
  return %r : i32
}
