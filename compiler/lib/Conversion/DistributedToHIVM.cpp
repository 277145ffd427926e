//===- DistributedToHIVM.cpp - distributed -> hivm.hir.custom (Ascend) ----===//
//
// Seed 000 section 3. See Passes.td for the rules; this file keeps each rule in one place:
//   - symbolFor():      table 3.3 (symbol per op and type)
//   - tcoreTypeFor():   table 3.4 (prefix table, then existDot)
//   - DistToCustom<Op>: the conversion template (attributes, gm_addr_args_indices, DPS inits,
//                       erase/replace); form=call emits func.call of the same symbol instead
//                       (docs/COMPILE.md section 3)
//
//===----------------------------------------------------------------------===//

#include "tdist/Conversion/Passes.h"
#include "tdist/Dialect/Distributed/Distributed.h"
#include "tdist/Dialect/HIVM/HIVM.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "ApplyOnce.h"
#include "Declare.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::tdist {
#define GEN_PASS_DEF_ASCENDEXACTADDRESSES
#define GEN_PASS_DEF_CONVERTDISTRIBUTEDTOHIVM
#include "tdist/Conversion/Passes.h.inc"
}  // namespace mlir::tdist

using namespace mlir;
using namespace mlir::triton::distributed;

namespace {

//===----------------------------------------------------------------------===//
// Type names (the <T> of aclshmem_<op>_<T>)
//===----------------------------------------------------------------------===//

/// Name of a scalar element type, or "" if the template library has no variant for it.
std::string scalarName(Type t) {
  if (t.isF16()) return "half";
  if (t.isBF16()) return "bfloat16";
  if (t.isF32()) return "float";
  if (t.isF64()) return "double";
  if (auto it = dyn_cast<IntegerType>(t)) {
    if (it.getWidth() == 1) return "bool";
    return (it.isUnsigned() ? "uint" : "int") + std::to_string(it.getWidth());
  }
  return "";
}

/// Name of a value type: scalars as above; `T_ptr` for a pointer to T; `T_ptr_<r>d` for a
/// rank-r memref of T; `T_<r>d` for a rank-r tensor of T (`ptr_<r>d` for a tensor of pointers).
std::string valueName(Type t) {
  if (isa<LLVM::LLVMPointerType>(t)) return "ptr";
  if (isTritonPointerType(t)) {
    Type pointee = getPointeeType(t);
    std::string elem = pointee ? scalarName(pointee) : "";
    return elem.empty() ? "" : elem + "_ptr";
  }
  if (auto m = dyn_cast<MemRefType>(t)) {
    std::string elem = scalarName(m.getElementType());
    if (elem.empty()) return "";
    return m.getRank() == 0 ? elem + "_ptr" : elem + "_ptr_" + std::to_string(m.getRank()) + "d";
  }
  if (auto r = dyn_cast<RankedTensorType>(t)) {
    std::string elem = valueName(r.getElementType());
    if (elem.empty()) return "";
    return elem + "_" + std::to_string(r.getRank()) + "d";
  }
  return scalarName(t);
}

//===----------------------------------------------------------------------===//
// Table 3.3: symbols
//===----------------------------------------------------------------------===//

/// The aclshmem symbol for `op`; on failure emits an error at `op`.
FailureOr<std::string> symbolFor(Operation *op) {
  auto fail = [&](const Twine &why) -> FailureOr<std::string> {
    op->emitOpError() << "cannot be lowered to HIVM: " << why;
    return failure();
  };
  if (auto symm = dyn_cast<SymmAtOp>(op)) {
    Type pointee = symm.getPointeeType();
    if (!pointee) return fail("an opaque !llvm.ptr needs an 'elem_type' attribute to pick aclshmem_ptr_<T>");
    std::string name = scalarName(pointee);
    static const llvm::StringLiteral kPtrTypes[] = {
#define TDIST_ASCEND_PTR_TYPE(tname) #tname,
#include "symbols.def"
    };
    if (!llvm::is_contained(kPtrTypes, name))
      return fail(
          "no aclshmem_ptr variant for element type (device/Ascend/symbols.def lists "
          "the 12 the template library has)");
    return "aclshmem_ptr_" + name;
  }
  if (isa<GetRankOp>(op)) return std::string("aclshmem_my_pe");
  if (isa<GetNumRanksOp>(op)) return std::string("aclshmem_n_pes");
  if (auto notify = dyn_cast<NotifyOp>(op)) {
    auto sig = cast<IntegerType>(notify.getSignalType());
    if (sig.getWidth() == 32) return std::string("aclshmemx_signal_op");
    // 64-bit signals go through aclshmem_<T>_p, a plain put: there is no add.
    if (notify.getSigOp() != SignalOp::SET)
      return fail(
          "a 64-bit signal supports only sig_op = set on Ascend "
          "(aclshmem_int64_p / aclshmem_uint64_p are puts); use an i32 signal to add");
    return std::string(sig.isUnsigned() ? "aclshmem_uint64_p" : "aclshmem_int64_p");
  }
  if (auto ct = dyn_cast<ConsumeTokenOp>(op)) {
    std::string name = valueName(ct.getInput().getType());
    if (name.empty()) return fail("no aclshmem_consume_token variant for the input type");
    return "aclshmem_consume_token_" + name;
  }
  if (auto wait = dyn_cast<WaitOp>(op)) return "aclshmem_wait_" + scalarName(wait.getWaitValue().getType());
  if (auto call = dyn_cast<ExternCallOp>(op)) return call.getSymbol().str();
  return fail("unknown distributed op");
}

//===----------------------------------------------------------------------===//
// Table 3.4: core type
//===----------------------------------------------------------------------===//

struct PrefixRule {
  llvm::StringLiteral prefix;
  hivm::TCoreType core;
};

// Checked in order; the first matching prefix wins.
constexpr PrefixRule kCorePrefixTable[] = {
    {"aclshmem_barrier_all", hivm::TCoreType::CUBE_AND_VECTOR},
    {"aclshmemx_barrier_all_vec", hivm::TCoreType::VECTOR},
    {"aclshmem_putmem_signal_nbi", hivm::TCoreType::VECTOR},
    {"aclshmem_putmem_signal", hivm::TCoreType::VECTOR},
    {"aclshmem_putmem_nbi", hivm::TCoreType::VECTOR},
    {"aclshmem_getmem_nbi", hivm::TCoreType::VECTOR},
    {"aclshmem_putmem", hivm::TCoreType::VECTOR},
    {"aclshmem_getmem", hivm::TCoreType::VECTOR},
};

hivm::TCoreType tcoreTypeFor(StringRef symbol, bool existDot) {
  for (const PrefixRule &rule : kCorePrefixTable)
    if (symbol.starts_with(rule.prefix)) return rule.core;
  // Without a dot the kernel is a pure vector (AIV) kernel; with one, a communication op must
  // exist in both the cube and the vector function after the mix-kernel split.
  return existDot ? hivm::TCoreType::CUBE_AND_VECTOR : hivm::TCoreType::VECTOR;
}

/// The seed's symbol-to-pipe table is declared but empty: everything is PIPE_S (scalar).
hivm::Pipe pipeFor(StringRef) { return hivm::Pipe::PIPE_S; }

bool isMatmulLike(Operation *op) {
  if (op->hasAttr("tdist.dot")) return true;
  StringRef name = op->getName().getStringRef();
  return llvm::is_contained(
      {"linalg.matmul", "linalg.batch_matmul", "linalg.matmul_transpose_a", "linalg.matmul_transpose_b",
       "linalg.batch_matmul_transpose_a", "linalg.batch_matmul_transpose_b", "linalg.batch_reduce_matmul",
       "linalg.contract", "vector.contract", "tt.dot", "tt.dot_scaled"},
      name);
}

//===----------------------------------------------------------------------===//
// Operands and results
//===----------------------------------------------------------------------===//

/// The `ins` of the custom op: the source operands, plus the SignalOp code for signal_op.
SmallVector<Value> customInputs(Operation *op, PatternRewriter &rewriter) {
  if (auto notify = dyn_cast<NotifyOp>(op)) {
    if (cast<IntegerType>(notify.getSignalType()).getWidth() == 32) {
      // aclshmemx_signal_op(sig_addr, signal, sig_op, pe)
      Value code =
          arith::ConstantIntOp::create(rewriter, op->getLoc(), static_cast<int64_t>(notify.getSigOp()), 32);
      return {notify.getSigAddr(), notify.getSignalVal(), code, notify.getRank()};
    }
    // aclshmem_<T>_p(dst, value, pe)
    return {notify.getSigAddr(), notify.getSignalVal(), notify.getRank()};
  }
  return llvm::to_vector(op->getOperands());
}

/// The operands of the link-time call (docs/COMPILE.md section 3): the custom op's, except that
/// aclshmem_my_pe / aclshmem_n_pes take no axis.
SmallVector<Value> callInputs(Operation *op, PatternRewriter &rewriter) {
  if (isa<GetRankOp, GetNumRanksOp>(op)) return {};
  return customInputs(op, rewriter);
}

/// A ranked-tensor result with dynamic dimensions takes its sizes from an operand of the same
/// type; null if there is none.
Value sizeSourceFor(Operation *op, RankedTensorType type) {
  for (Value v : op->getOperands())
    if (v.getType() == type) return v;
  return {};
}

/// The two output forms (docs/COMPILE.md section 3).
enum class Form { Custom, Call };

bool isTensorTyped(Operation *op) {
  auto isTensor = [](Type t) { return isa<TensorType>(t); };
  return llvm::any_of(op->getOperandTypes(), isTensor) || llvm::any_of(op->getResultTypes(), isTensor);
}

/// Errors found before rewriting, so that no op is left half-converted.
LogicalResult checkLowerable(Operation *op, Form form) {
  if (failed(symbolFor(op))) return failure();
  if (form == Form::Call && isTensorTyped(op))
    return op->emitOpError() << "on a block (tensor) value cannot be lowered for ascend "
                                "(triton-ascend 3.2): the link-time form takes scalars; translate "
                                "a scalar base pointer and add the tile's offsets";
  if (form == Form::Call && isa<GetRankOp, GetNumRanksOp>(op) && !matchPattern(op->getOperand(0), m_Zero()))
    return op->emitOpError() << "cannot be lowered for ascend (triton-ascend 3.2): "
                                "aclshmem_my_pe / aclshmem_n_pes take no axis, only axis 0 (the "
                                "world) has a link-time form";
  for (auto [i, type] : llvm::enumerate(op->getResultTypes())) {
    auto rt = dyn_cast<RankedTensorType>(type);
    if (rt && !rt.hasStaticShape() && !sizeSourceFor(op, rt))
      return op->emitOpError() << "cannot be lowered to HIVM: result #" << i
                               << " is a dynamically shaped tensor and no operand of type " << rt
                               << " gives the sizes of its DPS init";
  }
  return success();
}

/// Indices into `inputs` of pointer operands that are entry-block arguments of the enclosing
/// function (the global-memory kernel arguments). Pointers computed in the body (e.g. by
/// address arithmetic or symm_at) and tensors of pointers are not included.
/// The kernel is the nearest enclosing FunctionOpInterface or `tt.func` (unregistered in TTIR
/// read in generic form); its first region's entry block arguments are the kernel arguments.
SmallVector<int32_t> gmAddrArgIndices(Operation *op, ValueRange inputs) {
  SmallVector<int32_t> indices;
  Operation *func = op->getParentOp();
  while (func && !isa<FunctionOpInterface>(func) && func->getName().getStringRef() != "tt.func")
    func = func->getParentOp();
  if (!func || func->getNumRegions() == 0 || func->getRegion(0).empty()) return indices;
  Block *entry = &func->getRegion(0).front();
  for (auto [i, v] : llvm::enumerate(inputs)) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (arg && arg.getOwner() == entry && isPointerType(v.getType()))
      indices.push_back(static_cast<int32_t>(i));
  }
  return indices;
}

bool hasNoMemoryEffect(Operation *op) {
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  return iface && iface.hasNoEffect();
}

/// The seed's attributes (table 3.4) on the lowered op `target` of `source`; `inputs` are the
/// lowered op's operands before any i64 cast.
void setDistributedAttrs(Operation *target, Operation *source, StringRef symbol, bool existDot,
                         ValueRange inputs, Form form) {
  MLIRContext *ctx = target->getContext();
  Builder b(ctx);
  target->setAttr(hivm::kIsDistributedAttr, b.getUnitAttr());
  target->setAttr(hivm::kPipeAttr, hivm::PipeAttr::get(ctx, pipeFor(symbol)));
  target->setAttr(hivm::kTCoreTypeAttr, hivm::TCoreTypeAttr::get(ctx, tcoreTypeFor(symbol, existDot)));
  // triton-ascend 3.2's HIVM has no vf_mode attribute: the call form carries a string.
  if (form == Form::Call)
    target->setAttr(hivm::kVFModeAttr, b.getStringAttr(hivm::stringifyVFMode(hivm::VFMode::SIMD)));
  else
    target->setAttr(hivm::kVFModeAttr, hivm::VFModeAttr::get(ctx, hivm::VFMode::SIMD));
  target->setAttr(hivm::kSymbolAttr, b.getStringAttr(symbol));
  if (hasNoMemoryEffect(source)) target->setAttr(hivm::kNoSideEffectAttr, b.getUnitAttr());
  SmallVector<int32_t> gm = gmAddrArgIndices(source, inputs);
  if (!gm.empty()) target->setAttr(hivm::kGmAddrArgsIndicesAttr, b.getDenseI32ArrayAttr(gm));
}

//===----------------------------------------------------------------------===//
// The link-time form: pointers as i64
//===----------------------------------------------------------------------===//

/// The type a value has in a link-time signature: i64 for a !tt.ptr or !llvm.ptr.
Type callType(Type t) {
  if (isTritonPointerType(t) || isa<LLVM::LLVMPointerType>(t)) return IntegerType::get(t.getContext(), 64);
  return t;
}

/// The exact address of a `!tt.ptr` (or a tensor of them) as i64 (or a tensor of i64), for
/// triton-ascend 3.2: through `tt.addptr` chains down to a kernel argument or a `tt.int_to_ptr`,
/// adding `offset * sizeof(T)` in arith, because that toolchain lowers `tt.ptr_to_int` of an addptr
/// to the reinterpreted memref's aligned base and so drops the offset (AscendExactAddresses).
Value exactAddress(OpBuilder &b, Location loc, Value ptr) {
  Type i64 = b.getI64Type();
  auto shaped = dyn_cast<RankedTensorType>(ptr.getType());
  Type intType = shaped ? Type(RankedTensorType::get(shaped.getShape(), i64)) : i64;
  Operation *def = ptr.getDefiningOp();
  // A pointer made from an integer (an earlier call's result): that integer.
  if (def && def->getName().getStringRef() == "tt.int_to_ptr" && def->getNumOperands() == 1 &&
      def->getOperand(0).getType() == intType)
    return def->getOperand(0);
  if (def && def->getName().getStringRef() == "tt.addptr" && def->getNumOperands() == 2) {
    Value base = exactAddress(b, loc, def->getOperand(0));
    Value off = def->getOperand(1);
    Type offElem = getElementTypeOrSelf(off.getType());
    if (offElem.isInteger(64) || offElem.isInteger(32) || offElem.isInteger(16) || offElem.isInteger(8)) {
      if (!offElem.isInteger(64)) off = arith::ExtSIOp::create(b, loc, intType, off);
      Type pointee = getPointeeType(getElementTypeOrSelf(def->getOperand(0).getType()));
      int64_t bytes = pointee && pointee.isIntOrFloat()
                          ? std::max<int64_t>(1, pointee.getIntOrFloatBitWidth() / 8)
                          : 8;  // a pointer to a pointer
      Value scale =
          shaped
              ? Value(arith::ConstantOp::create(
                    b, loc,
                    DenseElementsAttr::get(cast<ShapedType>(intType), b.getI64IntegerAttr(bytes).getValue())))
              : Value(arith::ConstantIntOp::create(b, loc, bytes, 64));
      Value delta = arith::MulIOp::create(b, loc, off, scale);
      return arith::AddIOp::create(b, loc, base, delta);
    }
  }
  OperationState state(loc, "tt.ptr_to_int");
  state.addOperands(ptr);
  state.addTypes(intType);
  return b.create(state)->getResult(0);
}

/// `v` as an i64 address: the exact address of a `!tt.ptr`, llvm.ptrtoint of an `!llvm.ptr`.
Value toCallValue(OpBuilder &b, Location loc, Value v) {
  if (isTritonPointerType(v.getType())) return exactAddress(b, loc, v);
  if (isa<LLVM::LLVMPointerType>(v.getType())) return LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), v);
  return v;
}

struct AscendExactAddressesPass : mlir::tdist::impl::AscendExactAddressesBase<AscendExactAddressesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> casts;
    getOperation().walk([&](Operation *op) {
      if (op->getName().getStringRef() == "tt.ptr_to_int" && op->getNumOperands() == 1) {
        Operation *def = op->getOperand(0).getDefiningOp();
        if (def && def->getName().getStringRef() == "tt.addptr") casts.push_back(op);
      }
    });
    for (Operation *op : casts) {
      OpBuilder b(op);
      Value exact = exactAddress(b, op->getLoc(), op->getOperand(0));
      if (exact.getType() != op->getResult(0).getType()) {
        op->emitOpError() << "address of type " << exact.getType() << " for a result of type "
                          << op->getResult(0).getType();
        return signalPassFailure();
      }
      op->getResult(0).replaceAllUsesWith(exact);
      op->erase();
    }
  }
};

/// The call result `v` (i64 for a pointer) as a value of `type`.
Value fromCallValue(OpBuilder &b, Location loc, Value v, Type type) {
  if (isTritonPointerType(type)) {
    OperationState state(loc, "tt.int_to_ptr");
    state.addOperands(v);
    state.addTypes(type);
    return b.create(state)->getResult(0);
  }
  if (isa<LLVM::LLVMPointerType>(type)) return LLVM::IntToPtrOp::create(b, loc, type, v);
  return v;
}

//===----------------------------------------------------------------------===//
// The conversion template
//===----------------------------------------------------------------------===//

template <typename SourceOp>
struct DistToCustom : OpRewritePattern<SourceOp> {
  DistToCustom(MLIRContext *ctx, bool existDot, Form form)
      : OpRewritePattern<SourceOp>(ctx), existDot(existDot), form(form) {}

  LogicalResult matchAndRewrite(SourceOp concreteOp, PatternRewriter &rewriter) const override {
    Operation *op = concreteOp.getOperation();
    FailureOr<std::string> symbol = symbolFor(op);
    if (failed(symbol)) return failure();
    Location loc = op->getLoc();

    if (form == Form::Call) return rewriteAsCall(op, *symbol, callInputs(op, rewriter), rewriter);
    SmallVector<Value> inputs = customInputs(op, rewriter);

    // DPS: every ranked-tensor result gets a tensor.empty init in `outs`.
    SmallVector<Value> outputs;
    for (Type type : op->getResultTypes()) {
      auto rt = dyn_cast<RankedTensorType>(type);
      if (!rt) continue;
      SmallVector<Value> dynSizes;
      if (!rt.hasStaticShape()) {
        Value source = sizeSourceFor(op, rt);
        for (int64_t d = 0; d < rt.getRank(); ++d)
          if (rt.isDynamicDim(d)) dynSizes.push_back(tensor::DimOp::create(rewriter, loc, source, d));
      }
      outputs.push_back(tensor::EmptyOp::create(rewriter, loc, rt.getShape(), rt.getElementType(), dynSizes));
    }

    auto custom = hivm::CustomOp::create(rewriter, loc, op->getResultTypes(),
                                         rewriter.getStringAttr("dist." + *symbol), inputs, outputs);
    setDistributedAttrs(custom, op, *symbol, existDot, inputs, form);

    if (op->getNumResults() == 0)
      rewriter.eraseOp(op);
    else
      rewriter.replaceOp(op, custom->getResults());
    return success();
  }

  /// form=call: `func.call @symbol` with pointers as i64 (docs/COMPILE.md section 3).
  LogicalResult rewriteAsCall(Operation *op, StringRef symbol, ArrayRef<Value> inputs,
                              PatternRewriter &rewriter) const {
    Location loc = op->getLoc();
    SmallVector<Type> argTypes, resultTypes;
    for (Value v : inputs) argTypes.push_back(callType(v.getType()));
    for (Type t : op->getResultTypes()) resultTypes.push_back(callType(t));
    FailureOr<func::FuncOp> decl =
        mlir::tdist::declarePrivate(op, symbol, rewriter.getFunctionType(argTypes, resultTypes),
                                    /*cInterface=*/true, "cannot be lowered for ascend");
    if (failed(decl)) return failure();
    SmallVector<Value> args;
    for (Value v : inputs) args.push_back(toCallValue(rewriter, loc, v));
    auto call = func::CallOp::create(rewriter, loc, *decl, args);
    setDistributedAttrs(call, op, symbol, existDot, inputs, form);
    SmallVector<Value> results;
    for (auto [r, type] : llvm::zip(call.getResults(), op->getResultTypes()))
      results.push_back(fromCallValue(rewriter, loc, r, type));
    if (op->getNumResults() == 0)
      rewriter.eraseOp(op);
    else
      rewriter.replaceOp(op, results);
    return success();
  }

  bool existDot;
  Form form;
};

struct ConvertDistributedToHIVMPass
    : mlir::tdist::impl::ConvertDistributedToHIVMBase<ConvertDistributedToHIVMPass> {
  using ConvertDistributedToHIVMBase::ConvertDistributedToHIVMBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (form != "custom" && form != "call") {
      module.emitError() << "convert-distributed-to-hivm: unknown form '" << form
                         << "' (expected custom or call)";
      return signalPassFailure();
    }
    Form outForm = form == "call" ? Form::Call : Form::Custom;

    // 1. existDot.
    bool existDot = module
                        .walk([](Operation *op) {
                          return isMatmulLike(op) ? WalkResult::interrupt() : WalkResult::advance();
                        })
                        .wasInterrupted();

    SmallVector<Operation *> distOps;
    bool ok = true;
    module.walk([&](Operation *op) {
      if (isDistributedOp(op)) {
        distOps.push_back(op);
        ok &= succeeded(checkLowerable(op, outForm));
      }
    });
    if (!ok) return signalPassFailure();
    if (distOps.empty()) return;

    // 2. One pattern per op.
    RewritePatternSet patterns(ctx);
    patterns.add<DistToCustom<WaitOp>, DistToCustom<ConsumeTokenOp>, DistToCustom<GetRankOp>,
                 DistToCustom<GetNumRanksOp>, DistToCustom<SymmAtOp>, DistToCustom<NotifyOp>,
                 DistToCustom<ExternCallOp>>(ctx, existDot, outForm);

    // 3. Each pattern once per distributed op (see ApplyOnce.h for why not the greedy driver);
    // every other op of the module reaches the single-device stages exactly as it was.
    // A pattern fails only after reporting why (form=call: conflicting declarations).
    if (failed(mlir::tdist::applyPatternsOnce(ctx, distOps, std::move(patterns)))) return signalPassFailure();

    WalkResult left = module.walk([](Operation *op) {
      if (!isDistributedOp(op)) return WalkResult::advance();
      op->emitOpError() << "was not lowered to HIVM";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted()) signalPassFailure();
  }
};

}  // namespace
