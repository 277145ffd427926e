//===- DistributedOps.td - the `distributed` dialect (seed 000 section 2) -===//
//
// The seven platform-agnostic distributed ops. Each platform maps them to its communication
// library by symbol name in one conversion pass (convert-distributed-to-hivm for Ascend,
// convert-distributed-to-llvm for GPU and CPU). The dialect depends on no other dialect
// (`dependentDialects` is empty), which is what lets it lower to both LLVM and HIVM.
//
// Pointer operands. Without Triton there is no `!tt.ptr<T>`; the dialect accepts the pointer
// types that exist in upstream MLIR:
//   - `!llvm.ptr<N>` (opaque, any address space): the form the LLVM lowerings consume. Where the
//     element type matters (slot width of notify, the `<T>` of aclshmem_ptr_<T>) an optional
//     `elem_type` attribute names it;
//   - `memref<...xT>`: the form the HIVM (Ascend) lowering sees after Triton-to-Linalg; the
//     element type is the memref's.
//   - `!tt.ptr<T>` and tensors of it (TT_PtrLike, docs/COMPILE.md section 2): tdist-opt does not
//     link Triton, so in TTIR read in generic form with unregistered `tt` ops it is an opaque
//     type (dialect `tt`, data `ptr<T>` or `ptr<T, N>`) whose pointee is parsed from the text.
//
//===----------------------------------------------------------------------===//

#ifndef TDIST_DISTRIBUTED_OPS
#define TDIST_DISTRIBUTED_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Dialect/LLVMIR/LLVMTypes.td"

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

def Distributed_Dialect : Dialect {
  let name = "distributed";
  let cppNamespace = "::mlir::triton::distributed";
  let summary = "Platform-agnostic tile-level communication ops (Triton-distributed)";
  let description = [{
    The `distributed` dialect carries the seven communication primitives of
    Triton-distributed (`dl.wait`, `dl.consume_token`, `dl.rank`, `dl.num_ranks`,
    `dl.symm_at`, `dl.notify`, `libshmem_device.*` via `extern_call`). It deliberately has
    no dependent dialects: each platform lowers it by symbol name in one conversion pass.
  }];
  // Deliberately empty (seed 000 section 2.1).
  let dependentDialects = [];
}

//===----------------------------------------------------------------------===//
// Enumerations (values shared with include/tdist/abi.h and the Python layer)
//===----------------------------------------------------------------------===//

def Dist_SignalOp : I32EnumAttr<"SignalOp", "signal update operation", [
    I32EnumAttrCase<"SET", 1, "set">,
    I32EnumAttrCase<"ADD", 2, "add">]> {
  let cppNamespace = "::mlir::triton::distributed";
}

def Dist_MemSyncScope : I32EnumAttr<"MemSyncScope", "memory synchronisation scope", [
    I32EnumAttrCase<"GPU", 1, "gpu">,
    I32EnumAttrCase<"CTA", 2, "cta">,
    I32EnumAttrCase<"SYSTEM", 3, "sys">]> {
  let cppNamespace = "::mlir::triton::distributed";
}

def Dist_MemSemantic : I32EnumAttr<"MemSemantic", "memory ordering semantic", [
    I32EnumAttrCase<"RELAXED", 1, "relaxed">,
    I32EnumAttrCase<"ACQUIRE", 2, "acquire">,
    I32EnumAttrCase<"RELEASE", 3, "release">,
    I32EnumAttrCase<"ACQUIRE_RELEASE", 4, "acq_rel">]> {
  let cppNamespace = "::mlir::triton::distributed";
}

def Dist_CommScope : I32EnumAttr<"CommScope", "reach of a notify", [
    I32EnumAttrCase<"GPU", 0, "gpu">,
    I32EnumAttrCase<"INTRA_NODE", 1, "intra_node">,
    I32EnumAttrCase<"INTER_NODE", 2, "inter_node">]> {
  let cppNamespace = "::mlir::triton::distributed";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Triton's `!tt.ptr<T>`, seen as an opaque type (tdist-opt does not link Triton).
def Dist_TTPtr : Type<CPred<"::mlir::triton::distributed::isTritonPointerType($_self)">,
                      "!tt.ptr", "::mlir::OpaqueType">;
def Dist_Ptr : AnyTypeOf<[LLVM_AnyPointer, AnyMemRef, Dist_TTPtr],
                         "pointer (!llvm.ptr, memref or !tt.ptr)">;
def Dist_PtrLike : AnyTypeOf<[LLVM_AnyPointer, AnyMemRef, Dist_TTPtr,
                              RankedTensorOf<[LLVM_AnyPointer, Dist_TTPtr]>],
                             "pointer-like (!llvm.ptr, memref, !tt.ptr, or tensor of !llvm.ptr "
                             "or !tt.ptr)">;
def Dist_Int : AnyTypeOf<[AnySignlessInteger, AnyUnsignedInteger], "integer">;
def Dist_IntLike : AnyTypeOf<[Dist_Int, RankedTensorOf<[AnyInteger]>], "integer or integer tensor">;

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Distributed_Dialect, mnemonic, traits>;

def Dist_WaitOp : Dist_Op<"wait", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    TypesMatchWith<"token type matches numBarriers type",
                   "numBarriers", "token", "$_self">]> {
  let summary = "wait until `numBarriers` signal slots equal `waitValue` (non-consuming)";
  let description = [{
    Spins until each of the `numBarriers` signal slots starting at `barrierPtr`, 64 bytes
    apart (one cache line per slot, TDIST_SIGNAL_SLOT_BYTES), equals `waitValue`. The wait
    only reads the slots; whoever reuses a slot resets it. `semantic` is `acquire` (loads
    after the wait, ordered through `consume_token`, see what the notifier wrote before its
    release) or `relaxed`. The slot type is the type of `waitValue` (i32, i64 or ui64); with
    a memref pointer it must equal the memref's element type.

    The result is a token consumed by `distributed.consume_token`.

    Example:

    ```mlir
    %tok = distributed.wait %slots, %n, %one scope = sys semantic = acquire
        : !llvm.ptr<1>, i32, i32
    ```
  }];
  let arguments = (ins Dist_PtrLike:$barrierPtr, Dist_IntLike:$numBarriers, Dist_Int:$waitValue,
                       Dist_MemSyncScope:$scope, Dist_MemSemantic:$semantic);
  let results = (outs Dist_IntLike:$token);
  let assemblyFormat = [{
    $barrierPtr `,` $numBarriers `,` $waitValue `scope` `=` $scope `semantic` `=` $semantic
    attr-dict `:` type($barrierPtr) `,` type($numBarriers) `,` type($waitValue)
  }];
  let hasVerifier = 1;
}

def Dist_ConsumeTokenOp : Dist_Op<"consume_token", [
    Elementwise,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "order uses of `input` after the wait that produced `token`";
  let description = [{
    Returns `input` unchanged. Its only purpose is a data dependency: loads and stores through
    the result cannot be scheduled before the `distributed.wait` whose token it consumes. It has
    no memory effects (it is an IR anchor, seed table 2.4) and no run-time cost.

    Example:

    ```mlir
    %p2 = distributed.consume_token %p, %tok : !llvm.ptr<1>, i32
    ```
  }];
  let arguments = (ins AnyType:$input, Dist_IntLike:$token);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$input `,` $token attr-dict `:` type($input) `,` type($token)";
}

class Dist_RankQueryOp<string mnemonic, string what> : Dist_Op<mnemonic, [Pure]> {
  let arguments = (ins I32:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict";
  let hasVerifier = 1;
  let summary = what;
}

def Dist_GetRankOp : Dist_RankQueryOp<"get_rank", "this PE's rank (dl.rank)"> {
  let description = [{
    The calling PE's rank along `axis` (0 is the world). Pure: on Ascend the device state lives
    at a fixed GM address, on GPU and CPU it is read from the device ABI (`tdist_my_pe`).

    Example:

    ```mlir
    %c0 = arith.constant 0 : i32
    %me = distributed.get_rank %c0
    ```
  }];
}

def Dist_GetNumRanksOp : Dist_RankQueryOp<"get_num_ranks", "number of PEs (dl.num_ranks)"> {
  let description = [{
    The number of PEs along `axis` (0 is the world). Pure.

    Example:

    ```mlir
    %n = distributed.get_num_ranks %c0
    ```
  }];
}

def Dist_SymmAtOp : Dist_Op<"symm_at", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    TypesMatchWith<"remoteAddr type matches symmAddr type",
                   "symmAddr", "remoteAddr", "$_self">]> {
  let summary = "the address of a symmetric object on another PE (dl.symm_at)";
  let description = [{
    Translates `symmAddr`, an address in this PE's symmetric heap, into the address of the same
    object on PE `rank` (`heap_base[rank] + (symmAddr - heap_base[me])`). The result has the
    operand's type. For `!llvm.ptr` the optional `elem_type` names the pointee type, which the
    Ascend lowering needs to pick `aclshmem_ptr_<T>`.

    Example:

    ```mlir
    %peer = distributed.symm_at %buf, %next {elem_type = f32} : !llvm.ptr<1>
    %peerm = distributed.symm_at %m, %next : memref<?xf32>
    ```
  }];
  let arguments = (ins Dist_Ptr:$symmAddr, I32:$rank, OptionalAttr<TypeAttr>:$elem_type);
  let results = (outs Dist_Ptr:$remoteAddr);
  let assemblyFormat = "$symmAddr `,` $rank attr-dict `:` type($symmAddr)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The pointee type: the memref element type, the !tt.ptr pointee, or `elem_type`; null if
    /// unknown.
    ::mlir::Type getPointeeType();
  }];
}

def Dist_NotifyOp : Dist_Op<"notify", [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "update a signal slot on PE `rank` with release ordering (dl.notify)";
  let description = [{
    Sets (`sig_op = set`) or adds to (`sig_op = add`) the signal slot at `sigAddr` (a symmetric
    address; the slot updated is the one on PE `rank`) with `signalVal`, after every earlier
    store of the caller (release). On GPU the update is issued by one thread of the program.

    The slot type is the memref element type, or `elem_type` for `!llvm.ptr` (default i64);
    it must be i32, i64 or ui64. `comm_scope` says how far the notify travels (`gpu`,
    `intra_node`, `inter_node`).

    Example:

    ```mlir
    distributed.notify %sig, %v, %peer sig_op = set comm_scope = intra_node
        {elem_type = i32} : !llvm.ptr<1>
    ```
  }];
  let arguments = (ins Dist_Ptr:$sigAddr, I64:$signalVal, I32:$rank, Dist_SignalOp:$sigOp,
                       Dist_CommScope:$commScope, OptionalAttr<TypeAttr>:$elem_type);
  let assemblyFormat = [{
    $sigAddr `,` $signalVal `,` $rank `sig_op` `=` $sigOp `comm_scope` `=` $commScope
    attr-dict `:` type($sigAddr)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The signal slot type: memref element type or !tt.ptr pointee, else `elem_type`, else i64.
    ::mlir::Type getSignalType();
  }];
}

def Dist_ExternCallOp : Dist_Op<"extern_call", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<ConditionallySpeculatable>]> {
  let summary = "call a function of the platform's device library by symbol";
  let description = [{
    Calls `symbol` from the device library `libname` (found at `libpath`) with `srcs`. This is
    how `libshmem_device.*` reaches the platform library (e.g. `aclshmem_putmem`). When `pure`
    is true the call has no memory effects and may be speculated, CSE'd or erased when unused;
    otherwise it reads and writes memory.

    Example:

    ```mlir
    distributed.extern_call "aclshmem_putmem"(%dst, %src, %bytes, %pe)
        {libname = "libshmem_device", libpath = "", pure = false}
        : (!llvm.ptr<1>, !llvm.ptr<1>, i64, i32) -> ()
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$srcs, StrAttr:$libname, StrAttr:$libpath,
                       StrAttr:$symbol, BoolAttr:$pure);
  let results = (outs Variadic<AnyType>:$result);
  let assemblyFormat = "$symbol `(` $srcs `)` attr-dict `:` functional-type($srcs, $result)";
  let hasVerifier = 1;
}

#endif // TDIST_DISTRIBUTED_OPS
