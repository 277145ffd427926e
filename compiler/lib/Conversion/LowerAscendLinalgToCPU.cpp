//===- LowerAscendLinalgToCPU.cpp - triton-ascend ttadapter output -> CPU --===//
//
// docs/COMPILE.md section 4. triton-ascend's ttadapter output is Linalg / tensor / memref plus a
// few HIVM and annotation ops (unregistered here: read in generic form). This pass replaces
// those by upstream constructs so that the standard MLIR lowering reaches LLVM:
//   hivm.hir.pointer_cast(addr : i64, sizes) : memref  -> a descriptor over the address
//   annotation.mark                                     -> erased
//   hivm.hir.sync_block_{set,wait,all}                  -> call tdist_cpu_sync_block_*(i32 id)
//   scalar tt.extern_elementwise                        -> func.call of its symbol
//   linalg.generic {GenericAtomicRMW = kind, ...}       -> memref.atomic_rmw per element
//   masked store read-modify-write (copy, select, write) -> a store of the masked elements only
// and marks the public kernel `llvm.emit_c_interface`.
//
//===----------------------------------------------------------------------===//

#include "tdist/Conversion/Passes.h"

#include "Declare.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::tdist {
#define GEN_PASS_DEF_LOWERASCENDLINALGTOCPU
#define GEN_PASS_DEF_MEMREFCOPYTOLINALG
#include "tdist/Conversion/Passes.h.inc"
}  // namespace mlir::tdist

using namespace mlir;

namespace {

bool isNamed(Operation *op, StringRef name) { return op->getName().getStringRef() == name; }

Attribute inherentAttr(Operation *op, StringRef name) {
  if (auto props = dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute()))
    if (Attribute a = props.get(name)) return a;
  return op->getAttr(name);
}

/// hivm.hir.pointer_cast(%addr : i64, dynamic sizes...) : memref<...xT> over that address:
/// a row-major descriptor {ptr, ptr, 0, sizes, strides} cast to the memref type (the cast
/// cancels against finalize-memref-to-llvm's and reconcile-unrealized-casts removes both).
LogicalResult lowerPointerCast(Operation *op) {
  auto type = op->getNumResults() == 1 ? dyn_cast<MemRefType>(op->getResult(0).getType()) : MemRefType();
  if (!type || op->getNumOperands() < 1 || !op->getOperand(0).getType().isInteger(64))
    return op->emitOpError() << "has no CPU lowering: expected (i64 address, sizes...) -> memref";
  if (!type.getLayout().isIdentity() || type.getMemorySpace())
    return op->emitOpError() << "has no CPU lowering: only an identity-layout memref in the "
                                "default memory space is supported, got "
                             << type;
  if (op->getNumOperands() != 1 + static_cast<unsigned>(type.getNumDynamicDims()))
    return op->emitOpError() << "has no CPU lowering: expected one size per dynamic dimension of " << type;
  OpBuilder b(op);
  Location loc = op->getLoc();
  MLIRContext *ctx = op->getContext();
  Type i64 = b.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  int64_t rank = type.getRank();
  SmallVector<Type> fields = {ptrType, ptrType, i64};
  if (rank > 0) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
  }
  auto descType = LLVM::LLVMStructType::getLiteral(ctx, fields);
  auto constant = [&](int64_t v) -> Value {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
  };

  SmallVector<Value> sizes;
  unsigned dyn = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (!type.isDynamicDim(d)) {
      sizes.push_back(constant(type.getDimSize(d)));
      continue;
    }
    Value size = op->getOperand(dyn++);
    if (size.getType().isIndex())
      size = arith::IndexCastOp::create(b, loc, i64, size);
    else if (!size.getType().isInteger(64))
      return op->emitOpError() << "has no CPU lowering: size operands must be index or i64";
    sizes.push_back(size);
  }
  SmallVector<Value> strides(rank);
  Value stride = constant(1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    if (d > 0) stride = LLVM::MulOp::create(b, loc, stride, sizes[d]);
  }

  Value ptr = LLVM::IntToPtrOp::create(b, loc, ptrType, op->getOperand(0));
  Value desc = LLVM::UndefOp::create(b, loc, descType);
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{0});
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{1});
  desc = LLVM::InsertValueOp::create(b, loc, desc, constant(0), ArrayRef<int64_t>{2});
  for (int64_t d = 0; d < rank; ++d) {
    desc = LLVM::InsertValueOp::create(b, loc, desc, sizes[d], ArrayRef<int64_t>{3, d});
    desc = LLVM::InsertValueOp::create(b, loc, desc, strides[d], ArrayRef<int64_t>{4, d});
  }
  Value memref = UnrealizedConversionCastOp::create(b, loc, type, desc).getResult(0);
  op->getResult(0).replaceAllUsesWith(memref);
  op->erase();
  return success();
}

/// hivm.hir.sync_block_<kind> -> call @tdist_cpu_sync_block_<kind>(i32 static_flag_id).
LogicalResult lowerSyncBlock(Operation *op, StringRef kind, ModuleOp module) {
  auto id = dyn_cast_or_null<IntegerAttr>(inherentAttr(op, "static_flag_id"));
  if (!id || op->getNumOperands() != 0 || op->getNumResults() != 0)
    return op->emitOpError() << "has no CPU lowering: only a static_flag_id without operands is "
                                "supported";
  OpBuilder b(op);
  FailureOr<func::FuncOp> fn = mlir::tdist::declarePrivate(op, ("tdist_cpu_sync_block_" + kind).str(),
                                                           b.getFunctionType({b.getI32Type()}, {}),
                                                           /*cInterface=*/false, "has no CPU lowering");
  if (failed(fn)) return failure();
  Value event = arith::ConstantIntOp::create(b, op->getLoc(), id.getInt(), 32);
  func::CallOp::create(b, op->getLoc(), *fn, ValueRange{event});
  op->erase();
  return success();
}

/// A scalar tt.extern_elementwise -> func.call of its symbol (link name _mlir_ciface_<symbol>).
LogicalResult lowerExternElementwise(Operation *op, ModuleOp module) {
  auto isTensor = [](Type t) { return isa<ShapedType>(t); };
  auto symbol = dyn_cast_or_null<StringAttr>(inherentAttr(op, "symbol"));
  if (!symbol || llvm::any_of(op->getOperandTypes(), isTensor) ||
      llvm::any_of(op->getResultTypes(), isTensor))
    return op->emitOpError() << "has no CPU lowering: only a scalar call with a symbol is "
                                "supported";
  OpBuilder b(op);
  FailureOr<func::FuncOp> fn = mlir::tdist::declarePrivate(
      op, symbol.getValue(), b.getFunctionType(op->getOperandTypes(), op->getResultTypes()),
      /*cInterface=*/true, "has no CPU lowering");
  if (failed(fn)) return failure();
  auto call = func::CallOp::create(b, op->getLoc(), *fn, op->getOperands());
  op->replaceAllUsesWith(call->getResults());
  op->erase();
  return success();
}

/// Discardable attributes a CPU build does not understand (mlir-translate cannot parse
/// #hivm.* attributes): every `hivm.*` / `tt.*` one.
void dropForeignAttrs(Operation *op) {
  SmallVector<StringAttr> names;
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    StringRef name = attr.getName().getValue();
    Dialect *d = &attr.getValue().getDialect();
    if (name.starts_with("hivm.") || name.starts_with("tt.") || (d && d->getNamespace() == "hivm"))
      names.push_back(attr.getName());
  }
  for (StringAttr name : names) op->removeDiscardableAttr(name);
}

/// The memref.atomic_rmw kind of triton-ascend's GenericAtomicRMW string for element type `t`.
std::optional<arith::AtomicRMWKind> atomicKind(StringRef kind, Type t) {
  bool f = isa<FloatType>(t);
  using K = arith::AtomicRMWKind;
  if (kind == "add" || kind == "fadd") return f ? K::addf : K::addi;
  if (kind == "exch" || kind == "xchg") return K::assign;
  if (kind == "max") return f ? K::maximumf : K::maxs;
  if (kind == "min") return f ? K::minimumf : K::mins;
  if (kind == "fmax") return K::maximumf;
  if (kind == "fmin") return K::minimumf;
  if (f) return std::nullopt;
  if (kind == "umax") return K::maxu;
  if (kind == "umin") return K::minu;
  if (kind == "and") return K::andi;
  if (kind == "or") return K::ori;
  if (kind == "xor") return K::xori;
  return std::nullopt;
}

/// Builds at `b` a loop nest over every element of memref `m` (scf.for from 0 to each dimension)
/// and calls `body` innermost with the element's indices.
void forEachElement(OpBuilder &b, Location loc, Value m,
                    llvm::function_ref<void(OpBuilder &, ValueRange)> body) {
  const int64_t rank = cast<MemRefType>(m.getType()).getRank();
  SmallVector<Value> ivs;
  std::function<void(OpBuilder &, int64_t)> nest = [&](OpBuilder &bb, int64_t d) {
    if (d == rank) return body(bb, ivs);
    Value lb = arith::ConstantIndexOp::create(bb, loc, 0);
    Value ub = memref::DimOp::create(bb, loc, m, d);
    Value one = arith::ConstantIndexOp::create(bb, loc, 1);
    scf::ForOp::create(bb, loc, lb, ub, one, ValueRange{},
                       [&](OpBuilder &ib, Location, Value iv, ValueRange) {
                         ivs.push_back(iv);
                         nest(ib, d + 1);
                         ivs.pop_back();
                         scf::YieldOp::create(ib, loc);
                       });
  };
  nest(b, 0);
}

/// triton-ascend 3.2 writes `tl.atomic_*(ptr, val)` as
///   memref.copy %dst, %old                     (the value returned to the kernel)
///   linalg.generic {GenericAtomicRMW = "add", MemSemantic, MemSyncScope}
///       ins(%dst, %val) outs(%dst) { combine }
/// which, lowered as it stands, is a plain read-modify-write with the old value read separately:
/// two programs adding at once lose an update and may both see the same old value. On a CPU each
/// element becomes one memref.atomic_rmw (acq_rel), whose result is the old value; the fetch copy
/// just before (same %dst, only allocations and casts in between) is replaced by those results.
LogicalResult lowerAtomicGeneric(linalg::GenericOp op) {
  auto kindAttr = op->getAttrOfType<StringAttr>("GenericAtomicRMW");
  auto fail = [&](const Twine &why) {
    return op->emitOpError() << "(triton-ascend atomic '" << kindAttr.getValue()
                             << "') has no CPU lowering: " << why;
  };
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return fail("expected ins(%dst, %value) outs(%dst)");
  Value dst = op.getDpsInits()[0];
  Value val = op.getDpsInputs()[1];
  if (op.getDpsInputs()[0] != dst) return fail("the first input is not the output memref");
  auto dstType = dyn_cast<MemRefType>(dst.getType());
  auto valType = dyn_cast<MemRefType>(val.getType());
  if (!dstType || !valType || dstType.getRank() != valType.getRank())
    return fail("expected memrefs of one rank");
  std::optional<arith::AtomicRMWKind> kind = atomicKind(kindAttr.getValue(), dstType.getElementType());
  if (!kind) {
    std::string t;
    llvm::raw_string_ostream os(t);
    os << dstType.getElementType();
    return fail("unknown kind for element type " + t);
  }

  // The fetch of the old value, if the kernel uses it.
  memref::CopyOp fetch;
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (auto copy = dyn_cast<memref::CopyOp>(prev)) {
      if (copy.getSource() == dst) fetch = copy;
      break;
    }
    if (!isa<memref::AllocOp, memref::AllocaOp, bufferization::ToTensorOp, bufferization::ToBufferOp,
             arith::ConstantOp>(prev))
      break;
  }

  OpBuilder b(op);
  Location loc = op.getLoc();
  forEachElement(b, loc, dst, [&](OpBuilder &bb, ValueRange ivs) {
    Value v = memref::LoadOp::create(bb, loc, val, ivs);
    Value old = memref::AtomicRMWOp::create(bb, loc, *kind, v, dst, ivs);
    if (fetch) memref::StoreOp::create(bb, loc, old, fetch.getTarget(), ivs);
  });
  if (fetch) fetch->erase();
  op->erase();
  return success();
}

/// triton-ascend 3.2 writes `tl.store(ptr, v, mask=m)` whose mask is not a range of the tile (a
/// mask from data, e.g. `hit | (j == 0)`) as a read-modify-write of the whole tile:
///   memref.copy %dst, %old_buf;  %old = bufferization.to_tensor %old_buf
///   %v = arith.select %m, %new, %old
///   bufferization.materialize_in_destination %v in writable %dst
/// Masked-off elements are written back with the values read before. Two programs that store
/// disjoint elements of one tile at once then lose each other's stores (the MoE dispatch's
/// handle: programs (source, expert) fill entries of the same rows), which Triton's masked store
/// never does. On a CPU the store becomes what the kernel wrote: the masked elements only, one
/// conditional store each; the copy and its buffer go when nothing else reads them. Returns
/// false (nothing changed) when `op` is not of that form.
bool lowerMaskedStore(bufferization::MaterializeInDestinationOp op) {
  Value dst = op.getDest();
  auto dstType = dyn_cast<MemRefType>(dst.getType());
  auto sel = op.getSource().getDefiningOp<arith::SelectOp>();
  if (!dstType || !sel || !sel->hasOneUse()) return false;
  auto old = sel.getFalseValue().getDefiningOp<bufferization::ToTensorOp>();
  if (!old || !old->hasOneUse()) return false;
  Value oldBuf = old->getOperand(0);
  memref::CopyOp fill;
  for (Operation *user : oldBuf.getUsers())
    if (auto copy = dyn_cast<memref::CopyOp>(user);
        copy && copy.getTarget() == oldBuf && copy.getSource() == dst)
      fill = copy;
  if (!fill || fill->getBlock() != op->getBlock() || !fill->isBeforeInBlock(op)) return false;
  Value mask = sel.getCondition();
  Value value = sel.getTrueValue();
  if (!isa<RankedTensorType>(mask.getType())) return false;  // (a tile-wide condition is a subview)

  OpBuilder b(op);
  Location loc = op.getLoc();
  forEachElement(b, loc, dst, [&](OpBuilder &bb, ValueRange ivs) {
    Value m = tensor::ExtractOp::create(bb, loc, mask, ivs);
    scf::IfOp::create(bb, loc, m, [&](OpBuilder &ib, Location) {
      Value v = tensor::ExtractOp::create(ib, loc, value, ivs);
      memref::StoreOp::create(ib, loc, v, dst, ivs);
      scf::YieldOp::create(ib, loc);
    });
  });
  op->erase();
  sel->erase();
  old->erase();
  if (llvm::all_of(oldBuf.getUsers(), [&](Operation *u) { return u == fill.getOperation(); })) {
    fill->erase();
    if (Operation *alloc = oldBuf.getDefiningOp(); alloc && isa<memref::AllocOp>(alloc) && alloc->use_empty())
      alloc->erase();
  }
  return true;
}

struct LowerAscendLinalgToCPUPass
    : mlir::tdist::impl::LowerAscendLinalgToCPUBase<LowerAscendLinalgToCPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Pointer round trips triton-ascend leaves around the aclshmem calls:
    // tt.ptr_to_int(tt.int_to_ptr(%i64)) is %i64; a tt.int_to_ptr nothing uses is dropped.
    SmallVector<Operation *> toInt, toPtr;
    module.walk([&](Operation *op) {
      if (isNamed(op, "tt.ptr_to_int"))
        toInt.push_back(op);
      else if (isNamed(op, "tt.int_to_ptr"))
        toPtr.push_back(op);
    });
    for (Operation *op : toInt) {
      Operation *def = op->getNumOperands() == 1 ? op->getOperand(0).getDefiningOp() : nullptr;
      if (def && isNamed(def, "tt.int_to_ptr") && def->getNumOperands() == 1 &&
          def->getOperand(0).getType() == op->getResult(0).getType()) {
        op->getResult(0).replaceAllUsesWith(def->getOperand(0));
        op->erase();
      }
    }
    for (Operation *op : llvm::reverse(toPtr))
      if (op->use_empty()) op->erase();

    bool ok = true;
    SmallVector<linalg::GenericOp> atomics;
    module.walk([&](linalg::GenericOp g) {
      if (g->hasAttr("GenericAtomicRMW")) atomics.push_back(g);
    });
    for (linalg::GenericOp g : atomics) ok &= succeeded(lowerAtomicGeneric(g));

    SmallVector<bufferization::MaterializeInDestinationOp> stores;
    module.walk([&](bufferization::MaterializeInDestinationOp m) { stores.push_back(m); });
    for (bufferization::MaterializeInDestinationOp m : stores) lowerMaskedStore(m);

    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (!op->isRegistered()) ops.push_back(op);
    });
    for (Operation *op : ops) {
      StringRef name = op->getName().getStringRef();
      LogicalResult done = success();
      if (name == "hivm.hir.pointer_cast")
        done = lowerPointerCast(op);
      else if (name == "annotation.mark")
        op->erase();
      else if (name.consume_front("hivm.hir.sync_block_") && llvm::is_contained({"set", "wait", "all"}, name))
        done = lowerSyncBlock(op, name, module);
      else if (name == "tt.extern_elementwise")
        done = lowerExternElementwise(op, module);
      else
        done = op->emitOpError() << "has no CPU lowering";
      ok &= succeeded(done);
    }
    // Our hivm stand-in (hir.custom) has no CPU lowering either.
    module.walk([&](Operation *op) {
      if (op->isRegistered() && op->getDialect()->getNamespace() == "hivm") {
        op->emitOpError() << "has no CPU lowering";
        ok = false;
      }
    });
    if (!ok) return signalPassFailure();

    MLIRContext *ctx = &getContext();
    StringRef cInterface = LLVM::LLVMDialect::getEmitCWrapperAttrName();
    module.walk([&](Operation *op) { dropForeignAttrs(op); });
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal()) {
        // The aclshmem declarations are called through their C interface.
        if (fn.getName().starts_with("aclshmem")) fn->setAttr(cInterface, UnitAttr::get(ctx));
        continue;
      }
      if (!fn.isPublic()) continue;
      // The kernel: only its C interface matters (tt.tensor_kind, mix_mode, ... are dropped).
      fn->setDiscardableAttrs(
          DictionaryAttr::get(ctx, {NamedAttribute(StringAttr::get(ctx, cInterface), UnitAttr::get(ctx))}));
      fn.removeArgAttrsAttr();
      fn.removeResAttrsAttr();
    }
  }
};

struct MemRefCopyToLinalgPass : mlir::tdist::impl::MemRefCopyToLinalgBase<MemRefCopyToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp op) { copies.push_back(op); });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};

}  // namespace
