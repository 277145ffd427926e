//===- HIVM.h - minimal HIVM dialect ----------------------------*- C++ -*-===//
#ifndef TDIST_DIALECT_HIVM_H
#define TDIST_DIALECT_HIVM_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tdist/Dialect/HIVM/HIVMDialect.h.inc"
#include "tdist/Dialect/HIVM/HIVMEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tdist/Dialect/HIVM/HIVMAttrs.h.inc"

#define GET_OP_CLASSES
#include "tdist/Dialect/HIVM/HIVMOps.h.inc"

namespace mlir::hivm {
// Discardable attribute names carried by hir.custom (spelled as bishengir spells them).
inline constexpr llvm::StringLiteral kIsDistributedAttr = "hivm.is_distributed";
inline constexpr llvm::StringLiteral kPipeAttr = "hivm.pipe";
inline constexpr llvm::StringLiteral kTCoreTypeAttr = "hivm.tcore_type";
inline constexpr llvm::StringLiteral kVFModeAttr = "hivm.vf_mode";
inline constexpr llvm::StringLiteral kSymbolAttr = "symbol";
inline constexpr llvm::StringLiteral kNoSideEffectAttr = "no_side_effect";
inline constexpr llvm::StringLiteral kGmAddrArgsIndicesAttr = "gm_addr_args_indices";
inline constexpr llvm::StringLiteral kCIfacePrefix = "_mlir_ciface_";
}  // namespace mlir::hivm

#endif  // TDIST_DIALECT_HIVM_H
