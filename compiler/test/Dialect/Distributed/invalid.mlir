// Every verifier message of the distributed dialect.
// RUN: tdist-opt %s --split-input-file --verify-diagnostics

func.func @wait_bad_value_type(%p: !llvm.ptr, %n: i32, %v: i8) {
  // expected-error @+1 {{'distributed.wait' op waitValue must be i32, i64 or ui64 (a signal slot type), got 'i8'}}
  %t = distributed.wait %p, %n, %v scope = sys semantic = acquire : !llvm.ptr, i32, i8
  return
}

// -----

func.func @wait_memref_mismatch(%m: memref<?xi64>, %n: i32, %v: i32) {
  // expected-error @+1 {{'distributed.wait' op barrierPtr element type 'i64' does not match waitValue type 'i32'}}
  %t = distributed.wait %m, %n, %v scope = sys semantic = acquire : memref<?xi64>, i32, i32
  return
}

// -----

func.func @wait_release(%p: !llvm.ptr, %n: i32, %v: i32) {
  // expected-error @+1 {{'distributed.wait' op semantic must be 'acquire' or 'relaxed' (a wait never releases), got 'release'}}
  %t = distributed.wait %p, %n, %v scope = sys semantic = release : !llvm.ptr, i32, i32
  return
}

// -----

func.func @wait_acq_rel(%p: !llvm.ptr, %n: i32, %v: i32) {
  // expected-error @+1 {{semantic must be 'acquire' or 'relaxed' (a wait never releases), got 'acq_rel'}}
  %t = distributed.wait %p, %n, %v scope = sys semantic = acq_rel : !llvm.ptr, i32, i32
  return
}

// -----

func.func @wait_bad_pointer(%p: i64, %n: i32, %v: i32) {
  // expected-error @+1 {{'distributed.wait' op operand #0 must be pointer-like (!llvm.ptr, memref, !tt.ptr, or tensor of !llvm.ptr or !tt.ptr)}}
  %t = "distributed.wait"(%p, %n, %v) {scope = 3 : i32, semantic = 2 : i32} : (i64, i32, i32) -> i32
  return
}

// -----

func.func @wait_token_type(%p: !llvm.ptr, %n: i32, %v: i32) {
  // expected-error @+1 {{'distributed.wait' op failed to verify that token type matches numBarriers type}}
  %t = "distributed.wait"(%p, %n, %v) {scope = 3 : i32, semantic = 2 : i32} : (!llvm.ptr, i32, i32) -> i64
  return
}

// -----

func.func @consume_token_type(%p: !llvm.ptr, %t: i32) {
  // expected-error @+1 {{'distributed.consume_token' op failed to verify that all of {input, result} have same type}}
  %r = "distributed.consume_token"(%p, %t) : (!llvm.ptr, i32) -> !llvm.ptr<1>
  return
}

// -----

func.func @get_rank_negative_axis() -> i32 {
  %c = arith.constant -1 : i32
  // expected-error @+1 {{'distributed.get_rank' op axis must be non-negative, got -1}}
  %r = distributed.get_rank %c
  return %r : i32
}

// -----

func.func @get_num_ranks_negative_axis() -> i32 {
  %c = arith.constant -2 : i32
  // expected-error @+1 {{'distributed.get_num_ranks' op axis must be non-negative, got -2}}
  %r = distributed.get_num_ranks %c
  return %r : i32
}

// -----

func.func @symm_at_elem_mismatch(%m: memref<?xf32>, %pe: i32) {
  // expected-error @+1 {{'distributed.symm_at' op elem_type 'f64' does not match the memref element type 'f32'}}
  %r = distributed.symm_at %m, %pe {elem_type = f64} : memref<?xf32>
  return
}

// -----

func.func @symm_at_result_type(%p: !llvm.ptr, %pe: i32) {
  // expected-error @+1 {{'distributed.symm_at' op failed to verify that remoteAddr type matches symmAddr type}}
  %r = "distributed.symm_at"(%p, %pe) : (!llvm.ptr, i32) -> !llvm.ptr<1>
  return
}

// -----

func.func @notify_bad_signal_type(%p: !llvm.ptr, %v: i64, %pe: i32) {
  // expected-error @+1 {{'distributed.notify' op signal slot type must be i32, i64 or ui64, got 'f32'}}
  distributed.notify %p, %v, %pe sig_op = set comm_scope = gpu {elem_type = f32} : !llvm.ptr
  return
}

// -----

func.func @notify_memref_signal_type(%m: memref<4xi16>, %v: i64, %pe: i32) {
  // expected-error @+1 {{'distributed.notify' op signal slot type must be i32, i64 or ui64, got 'i16'}}
  distributed.notify %m, %v, %pe sig_op = set comm_scope = gpu : memref<4xi16>
  return
}

// -----

func.func @notify_elem_mismatch(%m: memref<4xi32>, %v: i64, %pe: i32) {
  // expected-error @+1 {{'distributed.notify' op elem_type 'i64' does not match the memref element type 'i32'}}
  distributed.notify %m, %v, %pe sig_op = set comm_scope = gpu {elem_type = i64} : memref<4xi32>
  return
}

// -----

func.func @notify_bad_value(%p: !llvm.ptr, %v: i32, %pe: i32) {
  // expected-error @+1 {{'distributed.notify' op operand #1 must be 64-bit signless integer, but got 'i32'}}
  "distributed.notify"(%p, %v, %pe) {sigOp = 1 : i32, commScope = 0 : i32} : (!llvm.ptr, i32, i32) -> ()
  return
}

// -----

func.func @notify_bad_sig_op(%p: !llvm.ptr, %v: i64, %pe: i32) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'sigOp' [set, add]}}
  distributed.notify %p, %v, %pe sig_op = xor comm_scope = gpu : !llvm.ptr
  return
}

// -----

func.func @extern_call_empty_symbol(%a: i32) {
  // expected-error @+1 {{'distributed.extern_call' op symbol must not be empty}}
  distributed.extern_call ""(%a) {libname = "", libpath = "", pure = false} : (i32) -> ()
  return
}

// -----

func.func @extern_call_bad_symbol(%a: i32) {
  // expected-error @+1 {{'distributed.extern_call' op symbol 'aclshmem-putmem' is not a valid C identifier}}
  distributed.extern_call "aclshmem-putmem"(%a) {libname = "", libpath = "", pure = false} : (i32) -> ()
  return
}

// -----

func.func @extern_call_digit_symbol(%a: i32) {
  // expected-error @+1 {{'distributed.extern_call' op symbol '9lives' is not a valid C identifier}}
  distributed.extern_call "9lives"(%a) {libname = "", libpath = "", pure = false} : (i32) -> ()
  return
}

// -----

func.func @extern_call_pure_no_result(%a: i32) {
  // expected-error @+1 {{'distributed.extern_call' op a pure extern_call without results does nothing; mark it pure = false or give it a result}}
  distributed.extern_call "aclshmem_quiet"(%a) {libname = "", libpath = "", pure = true} : (i32) -> ()
  return
}

// -----

func.func @extern_call_missing_pure(%a: i32) {
  // expected-error @+1 {{'distributed.extern_call' op requires attribute 'pure'}}
  distributed.extern_call "aclshmem_quiet"(%a) {libname = "", libpath = ""} : (i32) -> ()
  return
}
