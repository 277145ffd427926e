//===- HIVM.cpp - minimal HIVM dialect -------------------------------------===//

#include "tdist/Dialect/HIVM/HIVM.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::hivm;

#include "tdist/Dialect/HIVM/HIVMDialect.cpp.inc"
#include "tdist/Dialect/HIVM/HIVMEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tdist/Dialect/HIVM/HIVMAttrs.cpp.inc"

void HIVMDialect::initialize() {
  // A stand-in: the rest of HIVM (hir.pointer_cast, hir.sync_block_*, ... in triton-ascend's
  // ttadapter output) is read as unknown ops of this dialect.
  allowUnknownOperations();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tdist/Dialect/HIVM/HIVMAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tdist/Dialect/HIVM/HIVMOps.cpp.inc"
      >();
}

LogicalResult CustomOp::verify() {
  if (getName().empty()) return emitOpError() << "name must not be empty";
  // A distributed custom op must say which library symbol it calls.
  if ((*this)->hasAttr(kIsDistributedAttr) && !(*this)->getAttrOfType<StringAttr>(kSymbolAttr))
    return emitOpError() << "a distributed hir.custom needs a string '" << kSymbolAttr << "' attribute";
  return success();
}

void CustomOp::getEffects(SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  if ((*this)->hasAttr(kNoSideEffectAttr)) return;
  effects.emplace_back(MemoryEffects::Read::get(), SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), SideEffects::DefaultResource::get());
}

std::string CustomOp::getLinkName() {
  std::string symbol;
  if (auto s = (*this)->getAttrOfType<StringAttr>(kSymbolAttr))
    symbol = s.str();
  else
    symbol = getName().str();
  auto isMemRef = [](Type t) { return isa<MemRefType>(t); };
  bool hasMemRef = llvm::any_of(getInputs().getTypes(), isMemRef) ||
                   llvm::any_of(getOutputs().getTypes(), isMemRef) ||
                   llvm::any_of(getResultTypes(), isMemRef);
  // Seed 000 section 4.2: functions without memref arguments or results use the C interface
  // wrapper name; memref-taking ones are linked by their plain symbol (the template library
  // unpacks the memref descriptor itself). No type suffix: every template-library symbol the
  // lowering emits is already type-specific (aclshmem_ptr_float, aclshmem_wait_int32, ...).
  return hasMemRef ? symbol : (kCIfacePrefix + symbol).str();
}

#define GET_OP_CLASSES
#include "tdist/Dialect/HIVM/HIVMOps.cpp.inc"
