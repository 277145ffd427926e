//===- Pipelines.cpp - the ascend / ascend-ttir / ascend-cpu / gpu / cpu pipelines -===//

#include "tdist/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"

namespace mlir::tdist {
#define GEN_PASS_DEF_MARKGPUKERNELS
#include "tdist/Conversion/Passes.h.inc"
}  // namespace mlir::tdist

using namespace mlir;

namespace {
struct MarkGPUKernelsPass : mlir::tdist::impl::MarkGPUKernelsBase<MarkGPUKernelsPass> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::LLVMFuncOp fn) {
      if (fn->removeAttr("tdist.kernel"))
        fn->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), UnitAttr::get(fn.getContext()));
    });
  }
};
}  // namespace

LogicalResult mlir::tdist::buildTdistPipeline(OpPassManager &pm, llvm::StringRef target) {
  // The one insertion point: the distributed conversion runs first, on the whole module, before
  // any single-device lowering (seed 000 section 4.1, stage "ttadapter").
  if (target == "ascend") {
    pm.addPass(createConvertDistributedToHIVM());
    // Everything after this belongs to triton-ascend / bishengir (TTIR -> Linalg -> HIVM).
    return success();
  }
  if (target == "ascend-ttir") {
    // docs/COMPILE.md sections 1 and 3: generic TTIR from triton-ascend's "ttir" stage in, the
    // link-time form out (print it generic for triton-adapter-opt).
    pm.addPass(createRaiseTritonDistributed());
    ConvertDistributedToHIVMOptions options;
    options.form = "call";
    pm.addPass(createConvertDistributedToHIVM(options));
    // Every address the kernel takes of an offset pointer, its own code's included.
    pm.addPass(createAscendExactAddresses());
    return success();
  }
  if (target == "ascend-cpu") {
    // docs/COMPILE.md section 4: triton-ascend's ttadapter output (generic form) to LLVM.
    pm.addPass(createLowerAscendLinalgToCPU());
    // triton-ascend leaves elementwise arithmetic on whole tiles as arith ops on tensors (a loop's
    // accumulator, the select of a tl.where), which one-shot bufferization cannot take and
    // arith-to-llvm refuses for a tensor condition: they become linalg.generic first.
    pm.addPass(createConvertElementwiseToLinalgPass());
    pm.addPass(createConvertLinalgToAffineLoopsPass());
    pm.addPass(bufferization::createEmptyTensorEliminationPass());
    pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
    bufferization::OneShotBufferizePassOptions bufferize;
    bufferize.allowReturnAllocsFromLoops = true;
    pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
    // Every buffer the kernel allocates (tile staging, memref.alloc in the ttadapter form) is freed
    // before the program returns: a launch must not leak per program.
    bufferization::buildBufferDeallocationPipeline(pm);
    // Copies as loops: no memrefCopy from MLIR's runner library.
    pm.addPass(createMemRefCopyToLinalg());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createConvertLinalgToLoopsPass());
    pm.addPass(createSCFToControlFlowPass());
    pm.addPass(createArithToLLVMConversionPass());
    pm.addPass(createConvertMathToLLVMPass());
    pm.addPass(createConvertIndexToLLVMPass());
    pm.addPass(memref::createExpandOpsPass());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createFinalizeMemRefToLLVMConversionPass());
    pm.addPass(createConvertFuncToLLVMPass());
    // After memref and func: a loop that carries a tile (a memref once bufferized) has memref
    // block arguments, which only func-to-llvm's region conversion turns into LLVM types.
    pm.addPass(createConvertControlFlowToLLVMPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createArithToLLVMConversionPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
    return success();
  }
  if (target != "gpu" && target != "cpu") return failure();
  ConvertDistributedToLLVMOptions options;
  options.target = target.str();
  pm.addPass(createConvertDistributedToLLVM(options));
  // Standard single-device lowering of what is left (scf, arith, func, ...).
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (target == "gpu") pm.addPass(createMarkGPUKernels());
  return success();
}

void mlir::tdist::registerTdistPipelines() {
  for (StringRef target : {"ascend", "ascend-ttir", "ascend-cpu", "gpu", "cpu"}) {
    // Static storage: the registry keeps the strings by reference.
    static llvm::SmallVector<std::string> names, docs;
    names.push_back(("tdist-pipeline-" + target).str());
    docs.push_back(
        ("tdist " + target + " pipeline: the distributed conversion first, then the standard lowering")
            .str());
    std::string t = target.str();
    PassPipelineRegistration<>(names.back(), docs.back(),
                               [t](OpPassManager &pm) { (void)buildTdistPipeline(pm, t); });
  }
}
