//===- HIVMCustomToCall.cpp - hivm.hir.custom -> func.call of the link name -===//
//
// Seed 000 section 4.2, step 1: the link name is `_mlir_ciface_<symbol>` unless an operand or a
// result is a memref (hivm::CustomOp::getLinkName). Arguments are `ins` then `outs`.
//
//===----------------------------------------------------------------------===//

#include "tdist/Conversion/Passes.h"
#include "tdist/Dialect/HIVM/HIVM.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tdist {
#define GEN_PASS_DEF_HIVMCUSTOMTOCALL
#include "tdist/Conversion/Passes.h.inc"
}  // namespace mlir::tdist

using namespace mlir;

namespace {
struct HIVMCustomToCallPass : mlir::tdist::impl::HIVMCustomToCallBase<HIVMCustomToCallPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<hivm::CustomOp> customs;
    module.walk([&](hivm::CustomOp op) { customs.push_back(op); });

    IRRewriter rewriter(&getContext());
    for (hivm::CustomOp op : customs) {
      std::string name = op.getLinkName();
      SmallVector<Value> args(op.getInputs());
      llvm::append_range(args, op.getOutputs());
      auto type = FunctionType::get(&getContext(), ValueRange(args).getTypes(), op.getResultTypes());
      Operation *existing = SymbolTable::lookupSymbolIn(module, name);
      auto decl = dyn_cast_or_null<func::FuncOp>(existing);
      if (existing && (!decl || decl.getFunctionType() != type)) {
        op.emitOpError() << "link name @" << name << " is already used with a different type";
        return signalPassFailure();
      }
      if (!decl) {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(module.getBody());
        decl = func::FuncOp::create(rewriter, module.getLoc(), name, type);
        decl.setPrivate();
      }
      rewriter.setInsertionPoint(op);
      auto call = func::CallOp::create(rewriter, op.getLoc(), decl, args);
      rewriter.replaceOp(op, call.getResults());
    }
  }
};
}  // namespace
