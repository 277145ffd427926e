// Errors of convert-distributed-to-hivm.
// RUN: tdist-opt %s --split-input-file --verify-diagnostics --convert-distributed-to-hivm

func.func @symm_at_opaque(%p: !llvm.ptr<1>, %pe: i32) -> !llvm.ptr<1> {
  // expected-error @+1 {{'distributed.symm_at' op cannot be lowered to HIVM: an opaque !llvm.ptr needs an 'elem_type' attribute to pick aclshmem_ptr_<T>}}
  %r = distributed.symm_at %p, %pe : !llvm.ptr<1>
  return %r : !llvm.ptr<1>
}

// -----

func.func @symm_at_no_variant(%m: memref<?xcomplex<f32>>, %pe: i32) -> memref<?xcomplex<f32>> {
  // expected-error @+1 {{'distributed.symm_at' op cannot be lowered to HIVM: no aclshmem_ptr variant for element type (device/Ascend/symbols.def lists the 12 the template library has)}}
  %r = distributed.symm_at %m, %pe : memref<?xcomplex<f32>>
  return %r : memref<?xcomplex<f32>>
}

// -----

func.func @notify_add_i64(%m: memref<?xi64>, %v: i64, %pe: i32) {
  // expected-error @+1 {{'distributed.notify' op cannot be lowered to HIVM: a 64-bit signal supports only sig_op = set on Ascend (aclshmem_int64_p / aclshmem_uint64_p are puts); use an i32 signal to add}}
  distributed.notify %m, %v, %pe sig_op = add comm_scope = intra_node : memref<?xi64>
  return
}

// -----

func.func @consume_token_no_variant(%x: index, %tok: i32) -> index {
  // expected-error @+1 {{'distributed.consume_token' op cannot be lowered to HIVM: no aclshmem_consume_token variant for the input type}}
  %r = distributed.consume_token %x, %tok : index, i32
  return %r : index
}

// -----

func.func @dynamic_result(%tok: i32) -> tensor<?xf32> {
  // expected-error @+1 {{'distributed.extern_call' op cannot be lowered to HIVM: result #0 is a dynamically shaped tensor and no operand of type 'tensor<?xf32>' gives the sizes of its DPS init}}
  %r = distributed.extern_call "make"(%tok) {libname = "", libpath = "", pure = true} : (i32) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

func.func @symm_at_bool(%m: memref<?xi1>, %pe: i32) -> memref<?xi1> {
  // expected-error @+1 {{no aclshmem_ptr variant for element type}}
  %r = distributed.symm_at %m, %pe : memref<?xi1>
  return %r : memref<?xi1>
}
