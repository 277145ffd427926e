//===- Distributed.h - the `distributed` dialect ----------------*- C++ -*-===//
#ifndef TDIST_DIALECT_DISTRIBUTED_H
#define TDIST_DIALECT_DISTRIBUTED_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tdist/Dialect/Distributed/DistributedDialect.h.inc"
#include "tdist/Dialect/Distributed/DistributedEnums.h.inc"

namespace mlir::triton::distributed {
/// True for Triton's `!tt.ptr<T>` (`!tt.ptr<T, N>`), an opaque type when Triton is not linked.
bool isTritonPointerType(Type type);
}  // namespace mlir::triton::distributed

#define GET_OP_CLASSES
#include "tdist/Dialect/Distributed/DistributedOps.h.inc"

namespace mlir::triton::distributed {

/// True for the pointer types the dialect accepts as an address (!llvm.ptr, memref, !tt.ptr).
bool isPointerType(Type type);

/// The pointee of a pointer type: a memref's element type, a !tt.ptr's pointee (parsed from the
/// opaque type's text); null for !llvm.ptr (opaque) and for non-pointers.
Type getPointeeType(Type type);

/// True if `type` may be a signal slot: i32, i64 or ui64.
bool isSignalType(Type type);

/// True if `op` is one of the seven distributed ops.
inline bool isDistributedOp(Operation *op) {
  return op->getDialect() && isa<DistributedDialect>(op->getDialect());
}

}  // namespace mlir::triton::distributed

#endif  // TDIST_DIALECT_DISTRIBUTED_H
