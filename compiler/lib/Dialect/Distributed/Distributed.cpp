//===- Distributed.cpp - the `distributed` dialect: verifiers and effects -===//
//
// Memory effects follow seed 000 table 2.4 and are written here, not in ODS, because two of them
// depend on the op (extern_call's `pure`) and consume_token must have none at all:
//
//   wait           Read            (polls the slots, never writes them)
//   consume_token  (none)          (an IR anchor; ordering comes from the data dependency)
//   symm_at        Read            (reads the heap bases of the device state)
//   notify         Read + Write    (read-modify-write of a remote slot)
//   extern_call    none if pure, else Read + Write
//   get_rank, get_num_ranks: Pure (ODS trait)
//
//===----------------------------------------------------------------------===//

#include "tdist/Dialect/Distributed/Distributed.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Matchers.h"
#include "mlir/AsmParser/AsmParser.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::triton::distributed;

#include "tdist/Dialect/Distributed/DistributedDialect.cpp.inc"
#include "tdist/Dialect/Distributed/DistributedEnums.cpp.inc"

void DistributedDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tdist/Dialect/Distributed/DistributedOps.cpp.inc"
      >();
}

bool mlir::triton::distributed::isTritonPointerType(Type type) {
  auto opaque = dyn_cast<OpaqueType>(type);
  return opaque && opaque.getDialectNamespace() == "tt" && opaque.getTypeData().starts_with("ptr<") &&
         opaque.getTypeData().ends_with(">");
}

bool mlir::triton::distributed::isPointerType(Type type) {
  return isa<LLVM::LLVMPointerType, MemRefType>(type) || isTritonPointerType(type);
}

Type mlir::triton::distributed::getPointeeType(Type type) {
  if (auto m = dyn_cast<MemRefType>(type)) return m.getElementType();
  if (!isTritonPointerType(type)) return {};
  // `ptr<T>` or `ptr<T, N>`: T is the text up to the last top-level comma.
  StringRef body = cast<OpaqueType>(type).getTypeData().drop_front(4).drop_back(1);
  int depth = 0;
  size_t split = StringRef::npos;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '<' || c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == '>' || c == ')' || c == ']' || c == '}')
      --depth;
    else if (c == ',' && depth == 0)
      split = i;
  }
  StringRef pointee = body.substr(0, split).trim();
  // A nested Triton type (`ptr<ptr<f32>>`) is written without its `!tt.` prefix.
  std::string text = pointee.starts_with("ptr<") ? ("!tt." + pointee).str() : pointee.str();
  return mlir::parseType(text, type.getContext());
}

bool mlir::triton::distributed::isSignalType(Type type) {
  auto it = dyn_cast<IntegerType>(type);
  if (!it) return false;
  if (it.isSignless()) return it.getWidth() == 32 || it.getWidth() == 64;
  return it.isUnsigned() && it.getWidth() == 64;
}

/// The pointee a pointer (or a tensor of pointers) carries, or null if the type does not say.
static Type pointeeOf(Type ptr) {
  if (auto t = dyn_cast<RankedTensorType>(ptr)) ptr = t.getElementType();
  return getPointeeType(ptr);
}

/// `elem_type` must agree with the pointee a memref or !tt.ptr carries (it is redundant there,
/// but harmless).
static LogicalResult verifyElemType(Operation *op, Type ptr, std::optional<Type> elemType) {
  if (!elemType) return success();
  if (Type me = pointeeOf(ptr); me && me != *elemType)
    return op->emitOpError() << "elem_type " << *elemType << " does not match the "
                             << (isa<MemRefType>(ptr) ? "memref element" : "!tt.ptr pointee") << " type "
                             << me;
  return success();
}

//===----------------------------------------------------------------------===//
// WaitOp
//===----------------------------------------------------------------------===//

LogicalResult WaitOp::verify() {
  Type valueType = getWaitValue().getType();
  if (!isSignalType(valueType))
    return emitOpError() << "waitValue must be i32, i64 or ui64 (a signal slot type), got " << valueType;
  if (Type me = pointeeOf(getBarrierPtr().getType()); me && me != valueType)
    return emitOpError() << "barrierPtr element type " << me << " does not match waitValue type "
                         << valueType;
  if (getSemantic() != MemSemantic::ACQUIRE && getSemantic() != MemSemantic::RELAXED)
    return emitOpError() << "semantic must be 'acquire' or 'relaxed' (a wait never releases), got '"
                         << stringifyMemSemantic(getSemantic()) << "'";
  return success();
}

void WaitOp::getEffects(SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), &getBarrierPtrMutable(),
                       SideEffects::DefaultResource::get());
}

//===----------------------------------------------------------------------===//
// ConsumeTokenOp
//===----------------------------------------------------------------------===//

void ConsumeTokenOp::getEffects(SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &) {
  // Deliberately none: see the file comment.
}

//===----------------------------------------------------------------------===//
// GetRankOp / GetNumRanksOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyAxis(Operation *op, Value axis) {
  APInt value;
  if (matchPattern(axis, m_ConstantInt(&value)) && value.isNegative())
    return op->emitOpError() << "axis must be non-negative, got " << value.getSExtValue();
  return success();
}

LogicalResult GetRankOp::verify() { return verifyAxis(*this, getAxis()); }
LogicalResult GetNumRanksOp::verify() { return verifyAxis(*this, getAxis()); }

//===----------------------------------------------------------------------===//
// SymmAtOp
//===----------------------------------------------------------------------===//

Type SymmAtOp::getPointeeType() {
  if (Type me = pointeeOf(getSymmAddr().getType())) return me;
  if (auto t = getElemType()) return *t;
  return {};
}

LogicalResult SymmAtOp::verify() { return verifyElemType(*this, getSymmAddr().getType(), getElemType()); }

void SymmAtOp::getEffects(SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), SideEffects::DefaultResource::get());
}

//===----------------------------------------------------------------------===//
// NotifyOp
//===----------------------------------------------------------------------===//

Type NotifyOp::getSignalType() {
  if (Type me = pointeeOf(getSigAddr().getType())) return me;
  if (auto t = getElemType()) return *t;
  return IntegerType::get(getContext(), 64);
}

LogicalResult NotifyOp::verify() {
  if (failed(verifyElemType(*this, getSigAddr().getType(), getElemType()))) return failure();
  Type sigType = getSignalType();
  if (!isSignalType(sigType))
    return emitOpError() << "signal slot type must be i32, i64 or ui64, got " << sigType;
  return success();
}

void NotifyOp::getEffects(SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), &getSigAddrMutable(), SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), &getSigAddrMutable(),
                       SideEffects::DefaultResource::get());
}

//===----------------------------------------------------------------------===//
// ExternCallOp
//===----------------------------------------------------------------------===//

LogicalResult ExternCallOp::verify() {
  StringRef sym = getSymbol();
  if (sym.empty()) return emitOpError() << "symbol must not be empty";
  bool valid = (llvm::isAlpha(sym.front()) || sym.front() == '_') &&
               llvm::all_of(sym, [](char c) { return llvm::isAlnum(c) || c == '_'; });
  if (!valid) return emitOpError() << "symbol '" << sym << "' is not a valid C identifier";
  if (getPure() && getNumResults() == 0)
    return emitOpError() << "a pure extern_call without results does nothing; "
                            "mark it pure = false or give it a result";
  return success();
}

void ExternCallOp::getEffects(SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  if (getPure()) return;
  effects.emplace_back(MemoryEffects::Read::get(), SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), SideEffects::DefaultResource::get());
}

Speculation::Speculatability ExternCallOp::getSpeculatability() {
  return getPure() ? Speculation::Speculatable : Speculation::NotSpeculatable;
}

#define GET_OP_CLASSES
#include "tdist/Dialect/Distributed/DistributedOps.cpp.inc"
