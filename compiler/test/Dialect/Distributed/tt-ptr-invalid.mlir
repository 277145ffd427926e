// Verifier errors of the ops on !tt.ptr (the pointee stands where a memref's element type does).
// RUN: tdist-opt %s --allow-unregistered-dialect --split-input-file --verify-diagnostics

func.func @wait_pointee(%p: !tt.ptr<i64>, %n: i32, %v: i32) {
  // expected-error @+1 {{'distributed.wait' op barrierPtr element type 'i64' does not match waitValue type 'i32'}}
  %t = distributed.wait %p, %n, %v scope = sys semantic = acquire : !tt.ptr<i64>, i32, i32
  return
}

// -----

func.func @symm_at_elem_type(%p: !tt.ptr<f32>, %pe: i32) {
  // expected-error @+1 {{'distributed.symm_at' op elem_type 'f64' does not match the !tt.ptr pointee type 'f32'}}
  %r = distributed.symm_at %p, %pe {elem_type = f64} : !tt.ptr<f32>
  return
}

// -----

func.func @notify_slot(%p: !tt.ptr<f32>, %v: i64, %pe: i32) {
  // expected-error @+1 {{'distributed.notify' op signal slot type must be i32, i64 or ui64, got 'f32'}}
  distributed.notify %p, %v, %pe sig_op = set comm_scope = gpu : !tt.ptr<f32>
  return
}

// -----

func.func @not_a_ptr(%p: !tt.tensordesc<f32>, %pe: i32) {
  // expected-error @+1 {{custom op 'distributed.symm_at' 'symmAddr' must be pointer (!llvm.ptr, memref or !tt.ptr), but got '!tt.tensordesc<f32>'}}
  %r = distributed.symm_at %p, %pe : !tt.tensordesc<f32>
  return
}
