//===- Passes.h - tdist conversions and pipelines ---------------*- C++ -*-===//
#ifndef TDIST_CONVERSION_PASSES_H
#define TDIST_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "tdist/Dialect/Distributed/Distributed.h"
#include "tdist/Dialect/HIVM/HIVM.h"

namespace mlir::tdist {

#define GEN_PASS_DECL
#include "tdist/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tdist/Conversion/Passes.h.inc"

/// The compilation pipelines. Each inserts the distributed conversion at one point,
/// first, before all other lowering (seed 000 section 4.1, stage "ttadapter"):
///   ascend:      convert-distributed-to-hivm (the single-device stages belong to triton-ascend)
///   ascend-ttir: raise-triton-distributed, convert-distributed-to-hivm{form=call}
///                (docs/COMPILE.md: generic TTIR in, generic TTIR for triton-adapter-opt out)
///   ascend-cpu:  lower-ascend-linalg-to-cpu on triton-ascend's ttadapter output, then
///                Linalg/tensor/memref -> LLVM (docs/COMPILE.md section 4)
///   gpu:    convert-distributed-to-llvm{target=gpu}, then scf/arith/cf/func/memref -> LLVM
///   cpu:    convert-distributed-to-llvm{target=cpu}, then the same standard lowering
/// Returns failure for an unknown target name.
LogicalResult buildTdistPipeline(OpPassManager &pm, llvm::StringRef target);

/// Registers `tdist-pipeline-<t>` for ascend, ascend-ttir, ascend-cpu, gpu and cpu.
void registerTdistPipelines();

}  // namespace mlir::tdist

#endif  // TDIST_CONVERSION_PASSES_H
