//===- HIVMOps.td - a minimal stand-in for AscendNPU-IR's HIVM dialect ----===//
//
// No HIVM dialect is available outside bishengir, so tdist defines the part of it that the
// distributed lowering produces: the `hivm.hir.custom` op and the attributes it carries. The
// custom assembly prints exactly the form bishengir parses, e.g.
//
//   %0 = hivm.hir.custom {hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>,
//          hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = #hivm.vf_mode<SIMD>,
//          symbol = "aclshmem_my_pe"} "dist.aclshmem_my_pe" ins(%c0 : i32) -> i32
//
// The `hivm.*`, `symbol`, `no_side_effect` and `gm_addr_args_indices` attributes are
// discardable attributes (as in bishengir), so the dictionary prints sorted by name.
//
//===----------------------------------------------------------------------===//

#ifndef TDIST_HIVM_OPS
#define TDIST_HIVM_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def HIVM_Dialect : Dialect {
  let name = "hivm";
  let cppNamespace = "::mlir::hivm";
  let summary = "Minimal HIVM (AscendNPU-IR) subset: hir.custom and its attributes";
  let description = [{
    Only what the Ascend lowering of the `distributed` dialect emits. Downstream (bishengir)
    resolves each `hir.custom` by its symbol against the aclshmem template library.
  }];
  let useDefaultAttributePrinterParser = 1;
}

def HIVM_Pipe : I32EnumAttr<"Pipe", "hardware pipeline an op is issued on", [
    I32EnumAttrCase<"PIPE_S", 0>, I32EnumAttrCase<"PIPE_V", 1>, I32EnumAttrCase<"PIPE_M", 2>,
    I32EnumAttrCase<"PIPE_MTE1", 3>, I32EnumAttrCase<"PIPE_MTE2", 4>,
    I32EnumAttrCase<"PIPE_MTE3", 5>, I32EnumAttrCase<"PIPE_FIX", 6>,
    I32EnumAttrCase<"PIPE_ALL", 7>]> {
  let cppNamespace = "::mlir::hivm";
  let genSpecializedAttr = 0;
}
def HIVM_PipeAttr : EnumAttr<HIVM_Dialect, HIVM_Pipe, "pipe"> {
  let assemblyFormat = "`<` $value `>`";
}

def HIVM_TCoreType : I32EnumAttr<"TCoreType", "which AI core kind runs an op", [
    I32EnumAttrCase<"CUBE", 0>, I32EnumAttrCase<"VECTOR", 1>,
    I32EnumAttrCase<"CUBE_OR_VECTOR", 2>, I32EnumAttrCase<"CUBE_AND_VECTOR", 3>]> {
  let cppNamespace = "::mlir::hivm";
  let genSpecializedAttr = 0;
}
def HIVM_TCoreTypeAttr : EnumAttr<HIVM_Dialect, HIVM_TCoreType, "tcore_type"> {
  let assemblyFormat = "`<` $value `>`";
}

def HIVM_VFMode : I32EnumAttr<"VFMode", "vector function mode", [
    I32EnumAttrCase<"SIMD", 0>, I32EnumAttrCase<"SIMT", 1>, I32EnumAttrCase<"MIX", 2>]> {
  let cppNamespace = "::mlir::hivm";
  let genSpecializedAttr = 0;
}
def HIVM_VFModeAttr : EnumAttr<HIVM_Dialect, HIVM_VFMode, "vf_mode"> {
  let assemblyFormat = "`<` $value `>`";
}

// Read (not produced) by tdist: triton-ascend's ttadapter output marks pointer_cast results with
// `annotation.mark {address_space = #hivm.address_space<gm>}` (the ascend-cpu pipeline).
def HIVM_AddressSpace : I32EnumAttr<"AddressSpace", "memory an address lives in", [
    I32EnumAttrCase<"Zero", 0, "zero">, I32EnumAttrCase<"GM", 1, "gm">,
    I32EnumAttrCase<"L1", 2, "cbuf">, I32EnumAttrCase<"L0A", 3, "ca">,
    I32EnumAttrCase<"L0B", 4, "cb">, I32EnumAttrCase<"L0C", 5, "cc">,
    I32EnumAttrCase<"UB", 6, "ub">]> {
  let cppNamespace = "::mlir::hivm";
  let genSpecializedAttr = 0;
}
def HIVM_AddressSpaceAttr : EnumAttr<HIVM_Dialect, HIVM_AddressSpace, "address_space"> {
  let assemblyFormat = "`<` $value `>`";
}

def HIVM_CustomOp : Op<HIVM_Dialect, "hir.custom", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "a call into a device template library, resolved by symbol at link time";
  let description = [{
    `name` is the op's identity for HIVM passes (`dist.<symbol>` for distributed ops); the
    `symbol` attribute is the bare library symbol. `ins` are read, `outs` are the
    destination-passing-style inits of the ranked-tensor results. The op has no memory effects
    when `no_side_effect` is present, otherwise it reads and writes memory.

    The link name is `_mlir_ciface_<symbol>` when no operand or result is a memref
    (seed 000 section 4.2); `hivm-custom-to-call` materialises it.

    Example:

    ```mlir
    %r = hivm.hir.custom {hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>,
           hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = #hivm.vf_mode<SIMD>,
           no_side_effect, symbol = "aclshmem_n_pes"} "dist.aclshmem_n_pes"
           ins(%c0 : i32) -> i32
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<AnyType>:$inputs, Variadic<AnyType>:$outputs);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    attr-dict $name (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    (`outs` `(` $outputs^ `:` type($outputs) `)`)? (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The name the backend links against (seed 000 section 4.2).
    std::string getLinkName();
  }];
}

#endif // TDIST_HIVM_OPS
