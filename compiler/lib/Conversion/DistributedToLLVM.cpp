//===- DistributedToLLVM.cpp - distributed -> LLVM/NVVM (gpu) or ABI calls (cpu) -===//
//
// Every symbol called here is declared in include/tdist/abi.h and exported by the runtime's
// device ABI (device/CPU for target=cpu, the NVIDIA bitcode for target=gpu), so the lowered code
// links against them unchanged. The pass runs before any other lowering: it produces LLVM-dialect
// ops plus structured control flow (scf.for / scf.while / scf.if), which is legal inside any
// region (e.g. an scf.for body) and is lowered later by the standard pipeline.
//
//===----------------------------------------------------------------------===//

#include "tdist/Conversion/Passes.h"
#include "tdist/Dialect/Distributed/Distributed.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "ApplyOnce.h"

namespace mlir::tdist {
#define GEN_PASS_DEF_CONVERTDISTRIBUTEDTOLLVM
#include "tdist/Conversion/Passes.h.inc"
} // namespace mlir::tdist

using namespace mlir;
using namespace mlir::triton::distributed;

namespace {

enum class Target { CPU, GPU };

/// Bytes between consecutive signal slots (TDIST_SIGNAL_SLOT_BYTES in abi.h).
constexpr int64_t kSlotBytes = 64;

struct Options {
  Target target;
  uint64_t spinBudget;
};

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Looks up or declares `llvm.func @name : type` at the start of the module. Fails (with an
/// error at `user`) if the name is taken by something else.
FailureOr<LLVM::LLVMFuncOp> getOrDeclare(PatternRewriter &rewriter, Operation *user,
                                         StringRef name, LLVM::LLVMFunctionType type) {
  auto module = user->getParentOfType<ModuleOp>();
  Operation *existing = SymbolTable::lookupSymbolIn(module, name);
  if (auto fn = dyn_cast_or_null<LLVM::LLVMFuncOp>(existing)) {
    if (fn.getFunctionType() != type) {
      user->emitOpError() << "needs @" << name << " of type " << type
                          << " but the module declares it as " << fn.getFunctionType();
      return failure();
    }
    return fn;
  }
  if (existing) {
    user->emitOpError() << "needs @" << name << " as an llvm.func but the module defines it as '"
                        << existing->getName() << "'";
    return failure();
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  return LLVM::LLVMFuncOp::create(rewriter, module.getLoc(), name, type);
}

/// Looks up or defines an internal constant NUL-terminated string global at the start of the
/// module (fails with an error at `user` if the name is taken by something else).
FailureOr<LLVM::GlobalOp> getOrDefineString(PatternRewriter &rewriter, Operation *user, StringRef name,
                                            StringRef text) {
  auto module = user->getParentOfType<ModuleOp>();
  Operation *existing = SymbolTable::lookupSymbolIn(module, name);
  if (auto g = dyn_cast_or_null<LLVM::GlobalOp>(existing))
    return g;
  if (existing) {
    user->emitOpError() << "needs @" << name << " for its diagnostic string but the module defines it as '"
                        << existing->getName() << "'";
    return failure();
  }
  std::string bytes = text.str();
  bytes.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(rewriter.getI8Type(), bytes.size());
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  return LLVM::GlobalOp::create(rewriter, module.getLoc(), type, /*isConstant=*/true,
                                LLVM::Linkage::Internal, name, rewriter.getStringAttr(bytes));
}

/// Calls an ABI function, declaring it if needed. Returns the call (null on failure).
LLVM::CallOp callABI(PatternRewriter &rewriter, Operation *user, StringRef name, Type result,
                     ValueRange args) {
  MLIRContext *ctx = rewriter.getContext();
  Type ret = result ? result : LLVM::LLVMVoidType::get(ctx);
  auto type = LLVM::LLVMFunctionType::get(ret, llvm::to_vector(args.getTypes()));
  FailureOr<LLVM::LLVMFuncOp> fn = getOrDeclare(rewriter, user, name, type);
  if (failed(fn))
    return {};
  return LLVM::CallOp::create(rewriter, user->getLoc(), *fn, args);
}

/// The device ABI takes generic (address space 0) pointers.
Value toGeneric(PatternRewriter &rewriter, Location loc, Value ptr) {
  auto type = cast<LLVM::LLVMPointerType>(ptr.getType());
  if (type.getAddressSpace() == 0)
    return ptr;
  return LLVM::AddrSpaceCastOp::create(rewriter, loc, LLVM::LLVMPointerType::get(type.getContext()),
                                       ptr);
}

Value fromGeneric(PatternRewriter &rewriter, Location loc, Value ptr, Type target) {
  if (ptr.getType() == target)
    return ptr;
  return LLVM::AddrSpaceCastOp::create(rewriter, loc, target, ptr);
}

/// Signless integer cast (truncate or sign-extend) to `width` bits.
Value castInt(PatternRewriter &rewriter, Location loc, Value v, unsigned width) {
  auto type = cast<IntegerType>(v.getType());
  auto to = rewriter.getIntegerType(width);
  if (type.getWidth() == width)
    return v;
  if (type.getWidth() > width)
    return arith::TruncIOp::create(rewriter, loc, to, v);
  return arith::ExtSIOp::create(rewriter, loc, to, v);
}

/// "int32" / "int64" / "uint64": the <T> of tdistx_wait_<T> / tdistx_notify_<T>.
std::string abiTypeName(Type t) {
  auto it = cast<IntegerType>(t);
  return (it.isUnsigned() ? "uint" : "int") + std::to_string(it.getWidth());
}

bool isScalarSignless(Type t) { return isa<IntegerType>(t) && t.isSignlessInteger(); }

/// Errors for ops this lowering cannot handle; reported before any rewrite.
LogicalResult checkLowerable(Operation *op) {
  auto fail = [&](const Twine &why) {
    return op->emitOpError() << "cannot be lowered to LLVM: " << why;
  };
  auto needLLVMPtr = [&](Value v, StringRef what) -> LogicalResult {
    if (!isa<LLVM::LLVMPointerType>(v.getType()))
      return fail(what + " must be an !llvm.ptr (memref and tensor pointers are for the HIVM "
                         "lowering)");
    return success();
  };
  if (auto wait = dyn_cast<WaitOp>(op)) {
    if (failed(needLLVMPtr(wait.getBarrierPtr(), "barrierPtr")))
      return failure();
    if (!isScalarSignless(wait.getNumBarriers().getType()))
      return fail("numBarriers must be a signless scalar integer");
    if (!isScalarSignless(wait.getWaitValue().getType()))
      return fail("waitValue must be a signless i32 or i64 (use i64 for a ui64 slot)");
    return success();
  }
  if (auto symm = dyn_cast<SymmAtOp>(op))
    return needLLVMPtr(symm.getSymmAddr(), "symmAddr");
  if (auto notify = dyn_cast<NotifyOp>(op))
    return needLLVMPtr(notify.getSigAddr(), "sigAddr");
  if (auto call = dyn_cast<ExternCallOp>(op)) {
    for (Type t : call->getOperandTypes())
      if (!LLVM::isCompatibleType(t))
        return fail("extern_call operand type is not an LLVM type");
    for (Type t : call->getResultTypes())
      if (!LLVM::isCompatibleType(t))
        return fail("extern_call result type is not an LLVM type");
    if (call->getNumResults() > 1)
      return fail("an LLVM call returns at most one value");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Patterns common to both targets
//===----------------------------------------------------------------------===//

template <typename SourceOp>
struct DistPattern : OpRewritePattern<SourceOp> {
  DistPattern(MLIRContext *ctx, Options options)
      : OpRewritePattern<SourceOp>(ctx), options(options) {}
  Options options;
};

template <typename SourceOp>
struct RankQueryLowering : DistPattern<SourceOp> {
  using DistPattern<SourceOp>::DistPattern;
  LogicalResult matchAndRewrite(SourceOp op, PatternRewriter &rewriter) const override {
    // The ABI exposes the world only; `axis` selects a team in a future extension.
    StringRef fn = std::is_same_v<SourceOp, GetRankOp> ? "tdist_my_pe" : "tdist_n_pes";
    LLVM::CallOp call = callABI(rewriter, op, fn, rewriter.getI32Type(), {});
    if (!call)
      return failure();
    rewriter.replaceOp(op, call.getResult());
    return success();
  }
};

struct SymmAtLowering : DistPattern<SymmAtOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(SymmAtOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value ptr = toGeneric(rewriter, loc, op.getSymmAddr());
    LLVM::CallOp call =
        callABI(rewriter, op, "tdist_ptr", ptr.getType(), ValueRange{ptr, op.getRank()});
    if (!call)
      return failure();
    rewriter.replaceOp(op, fromGeneric(rewriter, loc, call.getResult(), op.getType()));
    return success();
  }
};

struct ExternCallLowering : DistPattern<ExternCallOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(ExternCallOp op, PatternRewriter &rewriter) const override {
    Type result = op->getNumResults() ? op->getResult(0).getType() : Type();
    LLVM::CallOp call = callABI(rewriter, op, op.getSymbol(), result, op.getSrcs());
    if (!call)
      return failure();
    if (op->getNumResults())
      rewriter.replaceOp(op, call.getResult());
    else
      rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// CPU: calls into the device ABI
//===----------------------------------------------------------------------===//

struct CpuWaitLowering : DistPattern<WaitOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(WaitOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type slotType = op.getWaitValue().getType();
    // int32_t tdistx_wait_<T>(T *slots, int32_t n, T value): acquire, 64-byte slot stride.
    Value ptr = toGeneric(rewriter, loc, op.getBarrierPtr());
    Value n = castInt(rewriter, loc, op.getNumBarriers(), 32);
    LLVM::CallOp call = callABI(rewriter, op, "tdistx_wait_" + abiTypeName(slotType),
                                rewriter.getI32Type(), ValueRange{ptr, n, op.getWaitValue()});
    if (!call)
      return failure();
    unsigned tokenWidth = cast<IntegerType>(op.getType()).getWidth();
    rewriter.replaceOp(op, castInt(rewriter, loc, call.getResult(), tokenWidth));
    return success();
  }
};

struct CpuNotifyLowering : DistPattern<NotifyOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(NotifyOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto slotType = cast<IntegerType>(op.getSignalType());
    // void tdistx_notify_<T>(T *slot, T value, int32_t pe, int32_t sig_op): release.
    Value ptr = toGeneric(rewriter, loc, op.getSigAddr());
    Value value = castInt(rewriter, loc, op.getSignalVal(), slotType.getWidth());
    Value code = arith::ConstantIntOp::create(rewriter, loc, static_cast<int64_t>(op.getSigOp()),
                                              32);
    if (!callABI(rewriter, op, "tdistx_notify_" + abiTypeName(slotType), Type(),
                 ValueRange{ptr, value, op.getRank(), code}))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};

struct CpuConsumeTokenLowering : DistPattern<ConsumeTokenOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(ConsumeTokenOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type inType = op.getInput().getType();
    Type tokType = op.getToken().getType();
    // Pointers and i64 go through the ABI's opaque identity, so the optimiser cannot move
    // accesses through the result above the wait; anything else is ordered by the wait call
    // itself (an external call with unknown effects) and becomes the identity.
    if (isScalarSignless(tokType)) {
      Value token = castInt(rewriter, loc, op.getToken(), 32);
      if (isa<LLVM::LLVMPointerType>(inType)) {
        Value ptr = toGeneric(rewriter, loc, op.getInput());
        LLVM::CallOp call = callABI(rewriter, op, "tdistx_consume_token_ptr", ptr.getType(),
                                    ValueRange{ptr, token});
        if (!call)
          return failure();
        rewriter.replaceOp(op, fromGeneric(rewriter, loc, call.getResult(), inType));
        return success();
      }
      if (inType.isSignlessInteger(64)) {
        LLVM::CallOp call = callABI(rewriter, op, "tdistx_consume_token_int64", inType,
                                    ValueRange{op.getInput(), token});
        if (!call)
          return failure();
        rewriter.replaceOp(op, call.getResult());
        return success();
      }
    }
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// GPU: inline PTX
//===----------------------------------------------------------------------===//

StringRef ptxScope(MemSyncScope scope) {
  switch (scope) {
  case MemSyncScope::CTA:
    return "cta";
  case MemSyncScope::GPU:
    return "gpu";
  case MemSyncScope::SYSTEM:
    return "sys";
  }
  llvm_unreachable("scope");
}

struct GpuWaitLowering : DistPattern<WaitOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(WaitOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value expected = op.getWaitValue();
    unsigned width = cast<IntegerType>(expected.getType()).getWidth();
    Type i64 = rewriter.getI64Type();
    Type i1 = rewriter.getI1Type();
    Type i8 = rewriter.getI8Type();

    // ld.<acquire|relaxed>.<scope>.b<w>: an ordered load the compiler cannot move or merge
    // (volatile inline asm with a memory clobber).
    std::string sem = op.getSemantic() == MemSemantic::ACQUIRE ? "acquire" : "relaxed";
    std::string asmText = "ld." + sem + "." + ptxScope(op.getScope()).str() + ".b" +
                          std::to_string(width) + " $0, [$1];";
    std::string constraints = width == 64 ? "=l,l,~{memory}" : "=r,l,~{memory}";

    Value base = op.getBarrierPtr();
    Value n = op.getNumBarriers();
    Type nType = n.getType();
    Value zeroN = arith::ConstantIntOp::create(rewriter, loc, nType, 0);
    Value oneN = arith::ConstantIntOp::create(rewriter, loc, nType, 1);
    Value zero64 = arith::ConstantIntOp::create(rewriter, loc, i64, 0);
    Value stride = arith::ConstantIntOp::create(rewriter, loc, i64, kSlotBytes);
    Value budget =
        arith::ConstantIntOp::create(rewriter, loc, i64, static_cast<int64_t>(options.spinBudget));

    // The expiry diagnostic: CUDA's device printf (vprintf(format, argument buffer)) and one
    // module-level format string.
    MLIRContext *ctx = rewriter.getContext();
    Type ptrTy = LLVM::LLVMPointerType::get(ctx);
    Type argsTy = LLVM::LLVMStructType::getLiteral(ctx, {i64, i64, i64, i64});
    FailureOr<LLVM::LLVMFuncOp> vprintf = getOrDeclare(
        rewriter, op, "vprintf",
        LLVM::LLVMFunctionType::get(rewriter.getI32Type(), {ptrTy, ptrTy}));
    if (failed(vprintf))
      return failure();
    FailureOr<LLVM::GlobalOp> msg = getOrDefineString(
        rewriter, op, "__tdist_wait_expired",
        "tdist: distributed.wait gave up after %llu polls: slot 0x%llx, expected %lld, last seen "
        "%lld\n");
    if (failed(msg))
      return failure();

    scf::ForOp::create(
        rewriter, loc, zeroN, n, oneN, ValueRange{},
        [&](OpBuilder &b, Location l, Value i, ValueRange) {
          Value i64v = castIntB(b, l, i, 64);
          Value off = arith::MulIOp::create(b, l, i64v, stride);
          Value slot = LLVM::GEPOp::create(b, l, base.getType(), i8, base, ValueRange{off});
          Value addr = LLVM::PtrToIntOp::create(b, l, i64, slot);
          // Spin until the slot holds `expected` or the budget is spent; the last value read
          // comes out too, for the diagnostic.
          auto spin = scf::WhileOp::create(
              b, l, TypeRange{i64, i1, expected.getType()}, ValueRange{zero64},
              [&](OpBuilder &bb, Location ll, ValueRange args) {
                auto load = LLVM::InlineAsmOp::create(
                    bb, ll, expected.getType(), ValueRange{addr}, asmText, constraints,
                    /*has_side_effects=*/true, /*is_align_stack=*/false,
                    LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
                Value ne = arith::CmpIOp::create(bb, ll, arith::CmpIPredicate::ne,
                                                 load.getResult(0), expected);
                Value more =
                    arith::CmpIOp::create(bb, ll, arith::CmpIPredicate::ult, args[0], budget);
                Value again = arith::AndIOp::create(bb, ll, ne, more);
                scf::ConditionOp::create(bb, ll, again,
                                         ValueRange{args[0], ne, load.getResult(0)});
              },
              [&](OpBuilder &bb, Location ll, ValueRange args) {
                Value one = arith::ConstantIntOp::create(bb, ll, i64, 1);
                scf::YieldOp::create(bb, ll,
                                     ValueRange{arith::AddIOp::create(bb, ll, args[0], one)});
              });
          // Budget spent with the slot still not equal: say what was waited for (vprintf: polls,
          // slot address, expected, last seen), then trap (the host sees a launch failure).
          scf::IfOp::create(b, l, spin.getResult(1), [&](OpBuilder &bb, Location ll) {
            Value fmt = LLVM::AddressOfOp::create(bb, ll, ptrTy, msg->getSymName());
            Value one = arith::ConstantIntOp::create(bb, ll, i64, 1);
            Value args = LLVM::AllocaOp::create(bb, ll, ptrTy, argsTy, one, 8);
            Value fields[] = {spin.getResult(0), addr, castIntB(bb, ll, expected, 64),
                              castIntB(bb, ll, spin.getResult(2), 64)};
            for (int f = 0; f < 4; ++f) {
              Value at = LLVM::GEPOp::create(bb, ll, ptrTy, argsTy, args,
                                             ArrayRef<LLVM::GEPArg>{0, f});
              LLVM::StoreOp::create(bb, ll, fields[f], at);
            }
            LLVM::CallOp::create(bb, ll, *vprintf, ValueRange{fmt, args});
            LLVM::Trap::create(bb, ll);
            scf::YieldOp::create(bb, ll);
          });
          scf::YieldOp::create(b, l);
        });
    // The token carries no value on GPU; ordering comes from the asm above.
    rewriter.replaceOp(op, arith::ConstantIntOp::create(rewriter, loc, nType, 0).getResult());
    return success();
  }

  static Value castIntB(OpBuilder &b, Location loc, Value v, unsigned width) {
    auto type = cast<IntegerType>(v.getType());
    if (type.getWidth() == width)
      return v;
    auto to = b.getIntegerType(width);
    if (type.getWidth() > width)
      return arith::TruncIOp::create(b, loc, to, v);
    return arith::ExtSIOp::create(b, loc, to, v);
  }
};

struct GpuNotifyLowering : DistPattern<NotifyOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(NotifyOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto slotType = cast<IntegerType>(op.getSignalType());
    unsigned width = slotType.getWidth();
    Type i32 = rewriter.getI32Type();
    Type i64 = rewriter.getI64Type();
    Type slotInt = rewriter.getIntegerType(width);
    std::string abiNotify = "tdistx_notify_" + abiTypeName(slotType);

    // Declare the ABI functions up front (outside the scf.if regions built below).
    Type genericPtr = LLVM::LLVMPointerType::get(ctx);
    auto ptrType = LLVM::LLVMFunctionType::get(genericPtr, {genericPtr, i32});
    auto notifyType =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {genericPtr, slotInt, i32, i32});
    FailureOr<LLVM::LLVMFuncOp> ptrFn = getOrDeclare(rewriter, op, "tdist_ptr", ptrType);
    FailureOr<LLVM::LLVMFuncOp> notifyFn = getOrDeclare(rewriter, op, abiNotify, notifyType);
    if (failed(ptrFn) || failed(notifyFn))
      return failure();

    Value slot = toGeneric(rewriter, loc, op.getSigAddr());
    Value value = castInt(rewriter, loc, op.getSignalVal(), width);
    Value rank = op.getRank();
    Value code =
        arith::ConstantIntOp::create(rewriter, loc, static_cast<int64_t>(op.getSigOp()), 32);
    bool interNode = op.getCommScope() == CommScope::INTER_NODE;

    // Every thread of the block reaches the notify; bar.sync orders all their earlier stores
    // before thread 0's release (PTX: bar.sync synchronises at CTA scope, release.sys is
    // cumulative). The notify must therefore be reached by the whole block, as in Triton.
    NVVM::Barrier0Op::create(rewriter, loc);
    Value tx = NVVM::ThreadIdXOp::create(rewriter, loc, i32);
    Value ty = NVVM::ThreadIdYOp::create(rewriter, loc, i32);
    Value tz = NVVM::ThreadIdZOp::create(rewriter, loc, i32);
    Value any = arith::OrIOp::create(rewriter, loc, arith::OrIOp::create(rewriter, loc, tx, ty), tz);
    Value zero = arith::ConstantIntOp::create(rewriter, loc, i32, 0);
    Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, any, zero);

    auto callNotify = [&](OpBuilder &b, Location l) {
      LLVM::CallOp::create(b, l, *notifyFn, ValueRange{slot, value, rank, code});
    };
    scf::IfOp::create(rewriter, loc, first, [&](OpBuilder &b, Location l) {
      if (interNode) {
        // Across nodes the ABI picks the engine.
        callNotify(b, l);
        scf::YieldOp::create(b, l);
        return;
      }
      Value remote = LLVM::CallOp::create(b, l, *ptrFn, ValueRange{slot, rank}).getResult();
      Value null = LLVM::ZeroOp::create(b, l, genericPtr);
      Value unreachable = LLVM::ICmpOp::create(b, l, LLVM::ICmpPredicate::eq, remote, null);
      scf::IfOp::create(
          b, l, unreachable,
          [&](OpBuilder &bb, Location ll) {
            // Not load/store reachable (another node): let the ABI deliver it.
            callNotify(bb, ll);
            scf::YieldOp::create(bb, ll);
          },
          [&](OpBuilder &bb, Location ll) {
            Value addr = LLVM::PtrToIntOp::create(bb, ll, i64, remote);
            std::string w = std::to_string(width);
            std::string reg = width == 64 ? "l" : "r";
            if (op.getSigOp() == SignalOp::SET)
              LLVM::InlineAsmOp::create(bb, ll, Type(), ValueRange{addr, value},
                                        "st.release.sys.b" + w + " [$0], $1;",
                                        "l," + reg + ",~{memory}", true, false,
                                        LLVM::tailcallkind::TailCallKind::None,
                                        LLVM::AsmDialectAttr(), ArrayAttr());
            else
              LLVM::InlineAsmOp::create(bb, ll, slotInt, ValueRange{addr, value},
                                        "atom.add.release.sys.u" + w + " $0, [$1], $2;",
                                        "=" + reg + ",l," + reg + ",~{memory}", true, false,
                                        LLVM::tailcallkind::TailCallKind::None,
                                        LLVM::AsmDialectAttr(), ArrayAttr());
            scf::YieldOp::create(bb, ll);
          });
      scf::YieldOp::create(b, l);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct GpuConsumeTokenLowering : DistPattern<ConsumeTokenOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(ConsumeTokenOp op, PatternRewriter &rewriter) const override {
    // The wait is volatile asm with a memory clobber: nothing moves above it, so the anchor
    // has done its job once the wait is lowered.
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

struct ConvertDistributedToLLVMPass
    : mlir::tdist::impl::ConvertDistributedToLLVMBase<ConvertDistributedToLLVMPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Options opts;
    if (target == "cpu") {
      opts.target = Target::CPU;
    } else if (target == "gpu") {
      opts.target = Target::GPU;
    } else {
      module.emitError() << "convert-distributed-to-llvm: unknown target '" << target
                         << "' (expected 'gpu' or 'cpu')";
      return signalPassFailure();
    }
    opts.spinBudget = spinBudget;

    SmallVector<Operation *> distOps;
    bool ok = true;
    module.walk([&](Operation *op) {
      if (isDistributedOp(op)) {
        distOps.push_back(op);
        ok &= succeeded(checkLowerable(op));
      }
    });
    if (!ok)
      return signalPassFailure();
    if (distOps.empty())
      return;

    RewritePatternSet patterns(ctx);
    patterns.add<RankQueryLowering<GetRankOp>, RankQueryLowering<GetNumRanksOp>, SymmAtLowering,
                 ExternCallLowering>(ctx, opts);
    if (opts.target == Target::CPU)
      patterns.add<CpuWaitLowering, CpuNotifyLowering, CpuConsumeTokenLowering>(ctx, opts);
    else
      patterns.add<GpuWaitLowering, GpuNotifyLowering, GpuConsumeTokenLowering>(ctx, opts);

    (void)mlir::tdist::applyPatternsOnce(ctx, distOps, std::move(patterns));

    WalkResult left = module.walk([](Operation *op) {
      if (!isDistributedOp(op))
        return WalkResult::advance();
      op->emitOpError() << "was not lowered to LLVM";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
