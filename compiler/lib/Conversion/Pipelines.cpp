//===- Pipelines.cpp - the ascend / gpu / cpu pipelines --------------------===//

#include "tdist/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Pass/PassRegistry.h"

namespace mlir::tdist {
#define GEN_PASS_DEF_MARKGPUKERNELS
#include "tdist/Conversion/Passes.h.inc"
} // namespace mlir::tdist

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
} // namespace

LogicalResult mlir::tdist::buildTdistPipeline(OpPassManager &pm, llvm::StringRef target) {
  // The one insertion point: the distributed conversion runs first, on the whole module, before
  // any single-device lowering (seed 000 section 4.1, stage "ttadapter").
  if (target == "ascend") {
    pm.addPass(createConvertDistributedToHIVM());
    // Everything after this belongs to triton-ascend / bishengir (TTIR -> Linalg -> HIVM).
    return success();
  }
  if (target != "gpu" && target != "cpu")
    return failure();
  ConvertDistributedToLLVMOptions options;
  options.target = target.str();
  pm.addPass(createConvertDistributedToLLVM(options));
  // Standard single-device lowering of what is left (scf from the GPU waits, arith, func, ...).
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (target == "gpu")
    pm.addPass(createMarkGPUKernels());
  return success();
}

void mlir::tdist::registerTdistPipelines() {
  for (StringRef target : {"ascend", "gpu", "cpu"}) {
    // Static storage: the registry keeps the strings by reference.
    static llvm::SmallVector<std::string> names, docs;
    names.push_back(("tdist-pipeline-" + target).str());
    docs.push_back(("tdist " + target +
                    " pipeline: the distributed conversion first, then the standard lowering")
                       .str());
    std::string t = target.str();
    PassPipelineRegistration<>(names.back(), docs.back(), [t](OpPassManager &pm) {
      (void)buildTdistPipeline(pm, t);
    });
  }
}
