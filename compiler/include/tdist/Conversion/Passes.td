//===- Passes.td - tdist conversions ---------------------------------------===//

#ifndef TDIST_CONVERSION_PASSES
#define TDIST_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def AscendExactAddresses : Pass<"tdist-ascend-exact-addresses", "ModuleOp"> {
  let summary = "Rewrite tt.ptr_to_int of a tt.addptr as base address + offset * element size";
  let description = [{
    triton-ascend 3.2 lowers `tt.ptr_to_int(tt.addptr(%p, %off))` to the aligned base pointer of
    the reinterpreted memref (`memref.extract_aligned_pointer_as_index`), which drops `%off`: a
    kernel that turns an offset pointer into an address (a bulk copy's source, an aclshmem call's
    operand) would read or write at the base. Part of the ttadapter-stage insertion
    (`--tdist-pipeline=ascend-ttir`), this pass rewrites every such address, scalar or tensor, as
    `ptr_to_int(root) + off * sizeof(T)` in arith, down to a kernel argument or a pointer made by
    `tt.int_to_ptr` (whose integer is used directly); those are exact in triton-ascend.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ConvertDistributedToHIVM : Pass<"convert-distributed-to-hivm", "ModuleOp"> {
  let summary = "Lower the distributed ops to hivm.hir.custom calls of the aclshmem library";
  let description = [{
    Seed 000 section 3 (ConvertTritonDistributedToHIVM). Every distributed op becomes a
    `hivm.hir.custom` naming an aclshmem template-library symbol; every other op is left as it
    was. Steps:

    1. `existDot`: does the module contain a matmul-like op (`linalg.matmul`,
       `linalg.batch_matmul` and their transposed forms, `linalg.contract`, `vector.contract`,
       `tt.dot`, `tt.dot_scaled`, or any op carrying the unit attribute `tdist.dot`)? Without
       one the kernel is a pure vector (AIV) kernel.
    2. Symbols (table 3.3): `aclshmem_ptr_<T>`, `aclshmem_my_pe`, `aclshmem_n_pes`,
       `aclshmemx_signal_op` (i32 notify), `aclshmem_int64_p` / `aclshmem_uint64_p`
       (64-bit notify, SET only), `aclshmem_consume_token_<T>`, `aclshmem_wait_<T>`, and
       extern_call's own `symbol`.
    3. Attributes (3.4): `hivm.tcore_type` from the prefix table, else `existDot ?
       CUBE_AND_VECTOR : VECTOR`; `hivm.pipe = PIPE_S`; `hivm.vf_mode = SIMD`;
       `hivm.is_distributed`; `symbol`; `no_side_effect` iff the source op has no memory
       effects; `gm_addr_args_indices` = indices of pointer operands that are entry-block
       arguments of the enclosing function.
    4. Results (3.5): each ranked-tensor result gets a `tensor.empty` init (DPS `outs`); the
       source op is erased when it has no results and replaced otherwise. One pattern per op
       (the seed's conversion template), applied once to each distributed op rather than by
       the greedy driver, which would erase a wait whose token is unused (a wait only reads,
       table 2.4, so it counts as trivially dead); no folding, so other IR is untouched.

    Type names `<T>`: f16 half, bf16 bfloat16, f32 float, f64 double, i1 bool, iN intN,
    uiN uintN; a pointer to T (`!tt.ptr<T>`) is `T_ptr`; a rank-r memref of T is `T_ptr_<r>d`
    (e.g. `aclshmem_consume_token_float_ptr_1d`); a rank-r tensor of T is `T_<r>d`.

    `form=call` (docs/COMPILE.md section 3, triton-ascend 3.2): instead of `hivm.hir.custom`,
    each op becomes a `func.call` of the same symbol, declared once as a module-level
    `func.func private` with `llvm.emit_c_interface`. `!tt.ptr` / `!llvm.ptr` operands are
    passed as i64 (`tt.ptr_to_int` / `llvm.ptrtoint`), pointer results come back through
    `tt.int_to_ptr` / `llvm.inttoptr`; i32 notify passes (sig_addr, signal, sig_op, pe), 64-bit
    notify (dst, value, pe); `hivm.vf_mode` is the string "SIMD". Tensor-typed ops are an error.
  }];
  let options = [
    Option<"form", "form", "std::string", /*default=*/"\"custom\"",
           "output form: custom (hivm.hir.custom) or call (func.call, triton-ascend 3.2)">,
  ];
  let dependentDialects = ["::mlir::hivm::HIVMDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def RaiseTritonDistributed : Pass<"raise-triton-distributed", "ModuleOp"> {
  let summary = "Turn the front end's tt.extern_elementwise marker calls into distributed ops";
  let description = [{
    docs/COMPILE.md section 1. Works on TTIR read in generic form (unregistered `tt` ops).
    A `tt.extern_elementwise` with libname "libtdist_device" and a symbol of
    device/dist_ops.def becomes its dialect op: `p:` operands are taken back out of their
    `tt.ptr_to_int`, `c:` operands must be i32 `arith.constant`s with legal enum values, an i64
    pointer result (symm_at, consume_token of a pointer) replaces its `tt.int_to_ptr` users,
    notify's dummy i32 result is replaced by 0, get_rank / get_num_ranks get axis 0. A marker
    with libname "libshmem_device" becomes `distributed.extern_call` of its symbol (operands
    that are `tt.ptr_to_int` of a pointer keep the pointer; a TDIST_ASCEND_VOID symbol of
    device/Ascend/symbols.def loses its i32 result). Block (tensor) operands or results and
    unknown libtdist_device symbols are errors.
  }];
  let dependentDialects = ["::mlir::triton::distributed::DistributedDialect",
                           "::mlir::arith::ArithDialect"];
}

def LowerAscendLinalgToCPU : Pass<"lower-ascend-linalg-to-cpu", "ModuleOp"> {
  let summary = "Make triton-ascend's ttadapter output (Linalg + HIVM bits) lowerable on a CPU";
  let description = [{
    docs/COMPILE.md section 4, the first step of `--tdist-pipeline=ascend-cpu`.
    `hivm.hir.pointer_cast(%addr : i64, sizes) : memref<?xT>` becomes a memref descriptor over
    the address (offset 0, stride 1); `annotation.mark` is erased;
    `hivm.hir.sync_block_{set,wait,all}` become calls of `tdist_cpu_sync_block_{set,wait,all}(i32
    static_flag_id)`; a scalar `tt.extern_elementwise` becomes a `func.call` of its symbol
    (declared with `llvm.emit_c_interface`). A masked store that triton-ascend wrote as a
    read-modify-write of the whole tile (copy, select, write back) stores the masked elements only.
    The public kernel gets `llvm.emit_c_interface`, its `tt.*`
    argument attributes and other discardable attributes are dropped. Any other unregistered op
    is an error ("<op> has no CPU lowering").
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ConvertDistributedToLLVM : Pass<"convert-distributed-to-llvm", "ModuleOp"> {
  let summary = "Lower the distributed ops to device-ABI calls: the NVIDIA bitcode (target=gpu) or the CPU ABI (target=cpu)";
  let description = [{
    Runs first, before any other lowering (the seed's "ttadapter" insertion point), and leaves
    every other op as it was. Pointers must be `!llvm.ptr`.

    target=cpu: calls into the CPU device ABI (include/tdist/abi.h): `tdist_my_pe`,
    `tdist_n_pes`, `tdist_ptr`, `tdistx_wait_<T>`, `tdistx_notify_<T>`,
    `tdistx_consume_token_ptr` / `_int64` (other consume_token types are the identity), and
    extern_call's symbol.

    target=gpu: every op calls the NVIDIA device bitcode (include/tdist/NVIDIA/device.cuh), so
    the waits and notifies are the device ABI's one implementation. Rank queries and symm_at call
    `tdist_my_pe`, `tdist_n_pes`, `tdist_ptr`. `wait %slots, %n, %v` is one call of the
    program-collective twin `tdistx_wait_<T>_i64(i64 slots, i32 n, T v, i64 timeout_ns) -> i32`
    (the slot address made generic, then as i64; `timeout_ns` is `wait-timeout-ns`): threads
    0..n-1 poll the slots (64 bytes apart) with `ld.acquire.sys`, then the CTA syncs; a wait
    that expires, or meets a fault recorded on its PE (a lost peer), records the fault, prints
    it once and traps. Its result is the token. The op's `scope` and `semantic` select nothing:
    the ABI's wait is always acquire at system scope, at least as strong as any scope and
    semantic the op can ask for. `notify` is one call of `tdistx_notify_<T>_i64(i64 slot, T v,
    i32 pe, i32 sig_op) -> i32` for every `comm_scope`: the CTA synchronises (`bar.sync`, so
    every thread's earlier stores are released) and thread 0 translates the slot and issues
    `st.release.sys` (set) or `red.release.sys` (add); how the update reaches the peer is the
    ABI's choice (the NVIDIA ABI has the load/store path only). Both must therefore be reached by every thread of the CTA with the same operands, as in a
    Triton program. `consume_token` is its input: the wait is a call that may write any memory
    and, once the bitcode is linked and inlined, ends in volatile asm that clobbers memory, so
    no access through the result moves above it.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "code generation target: gpu (calls of the NVIDIA device bitcode) or cpu (calls of the CPU device ABI)">,
    Option<"waitTimeoutNs", "wait-timeout-ns", "int64_t", /*default=*/"-1",
           "GPU: bound of each wait in ns, passed to the device ABI (-1: the runtime's TDIST_WAIT_TIMEOUT_MS, 0: forever)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::arith::ArithDialect"];
}

def HIVMCustomToCall : Pass<"hivm-custom-to-call", "ModuleOp"> {
  let summary = "Replace hivm.hir.custom by func.call of its link name (seed 000 section 4.2)";
  let description = [{
    Emits, for each `hivm.hir.custom`, a `func.call` of its link name (`_mlir_ciface_<symbol>`
    when no operand or result is a memref, else `<symbol>`) taking `ins` then `outs`, and a
    private `func.func` declaration. This is the step where bishengir resolves the symbol
    against the template library; it exists here to test the mangling rule.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def MarkGPUKernels : Pass<"tdist-mark-gpu-kernels", "ModuleOp"> {
  let summary = "Turn `tdist.kernel` on llvm.func into `nvvm.kernel`";
  let description = [{
    `nvvm.kernel` may only sit on an `llvm.func`, but kernels are written as `func.func`
    before lowering. Kernel authors mark them `tdist.kernel`; the gpu pipeline runs this pass
    after func-to-llvm so that the NVPTX back end emits them as `.entry`.
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

def MemRefCopyToLinalg : Pass<"tdist-memref-copy-to-linalg", "ModuleOp"> {
  let summary = "Replace memref.copy by linalg.copy";
  let description = [{
    finalize-memref-to-llvm lowers a copy between non-contiguous memrefs (e.g. strided subviews
    with dynamic sizes) to a call of `memrefCopy` from MLIR's C runner library. The ascend-cpu
    pipeline runs this after bufferization so that convert-linalg-to-loops turns every copy into
    loops and the kernel needs no runtime library.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

#endif // TDIST_CONVERSION_PASSES
