//===- Declare.h - one private function declaration per symbol --------------===//
//
// The link-time form (docs/COMPILE.md sections 3 and 4) calls library functions by symbol. Every
// pass that emits such a call declares the callee here: one `func.func private @name` per module,
// created on first use, optionally with `llvm.emit_c_interface` (link name `_mlir_ciface_<name>`);
// a later use with another signature, or a symbol already defined by something else, is an error
// at the using op that names both.
//
//===----------------------------------------------------------------------===//

#ifndef TDIST_CONVERSION_DECLARE_H
#define TDIST_CONVERSION_DECLARE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tdist {

inline FailureOr<func::FuncOp> declarePrivate(Operation *user, StringRef name, FunctionType type,
                                              bool cInterface, StringRef what) {
  ModuleOp module = isa<ModuleOp>(user) ? cast<ModuleOp>(user) : user->getParentOfType<ModuleOp>();
  while (ModuleOp outer = module->getParentOfType<ModuleOp>()) module = outer;
  if (Operation *existing = SymbolTable::lookupSymbolIn(module, name)) {
    auto fn = dyn_cast<func::FuncOp>(existing);
    if (!fn) {
      user->emitOpError() << what << ": @" << name << " is already defined by a '" << existing->getName()
                          << "'";
      return failure();
    }
    if (fn.getFunctionType() != type) {
      user->emitOpError() << what << ": @" << name << " is needed as " << type << " but was declared as "
                          << fn.getFunctionType();
      return failure();
    }
    return fn;
  }
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name, type);
  fn.setPrivate();
  if (cInterface) fn->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), b.getUnitAttr());
  return fn;
}

}  // namespace mlir::tdist

#endif
