//===- DistributedToLLVM.cpp - distributed -> calls into the device ABI (gpu, cpu) -===//
//
// Every op becomes LLVM-dialect calls of the runtime's device ABI: for target=cpu the thread form
// declared in include/tdist/abi.h (runtime/CPU), for target=gpu the same queries plus the
// Triton-facing `_i64` twins of the wait and the notify, exported by the NVIDIA bitcode
// (include/tdist/NVIDIA/device.cuh), so the lowered code links against them unchanged and every
// wait and notify is the ABI's one implementation. The pass runs before any other lowering and
// produces only LLVM and arith ops, legal inside any region (e.g. an scf.for body).
//
//===----------------------------------------------------------------------===//

#include "tdist/Conversion/Passes.h"
#include "tdist/Dialect/Distributed/Distributed.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "ApplyOnce.h"

namespace mlir::tdist {
#define GEN_PASS_DEF_CONVERTDISTRIBUTEDTOLLVM
#include "tdist/Conversion/Passes.h.inc"
}  // namespace mlir::tdist

using namespace mlir;
using namespace mlir::triton::distributed;

namespace {

enum class Target { CPU, GPU };

struct Options {
  Target target;
  /// GPU: the wait's bound in ns (< 0: the runtime's TDIST_WAIT_TIMEOUT_MS, 0: forever).
  int64_t waitTimeoutNs;
};

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Looks up or declares `llvm.func @name : type` at the start of the module. Fails (with an
/// error at `user`) if the name is taken by something else.
FailureOr<LLVM::LLVMFuncOp> getOrDeclare(PatternRewriter &rewriter, Operation *user, StringRef name,
                                         LLVM::LLVMFunctionType type) {
  auto module = user->getParentOfType<ModuleOp>();
  Operation *existing = SymbolTable::lookupSymbolIn(module, name);
  if (auto fn = dyn_cast_or_null<LLVM::LLVMFuncOp>(existing)) {
    if (fn.getFunctionType() != type) {
      user->emitOpError() << "needs @" << name << " of type " << type << " but the module declares it as "
                          << fn.getFunctionType();
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

/// Calls an ABI function, declaring it if needed. Returns the call (null on failure).
LLVM::CallOp callABI(PatternRewriter &rewriter, Operation *user, StringRef name, Type result,
                     ValueRange args) {
  MLIRContext *ctx = rewriter.getContext();
  Type ret = result ? result : LLVM::LLVMVoidType::get(ctx);
  auto type = LLVM::LLVMFunctionType::get(ret, llvm::to_vector(args.getTypes()));
  FailureOr<LLVM::LLVMFuncOp> fn = getOrDeclare(rewriter, user, name, type);
  if (failed(fn)) return {};
  return LLVM::CallOp::create(rewriter, user->getLoc(), *fn, args);
}

/// The device ABI takes generic (address space 0) pointers.
Value toGeneric(PatternRewriter &rewriter, Location loc, Value ptr) {
  auto type = cast<LLVM::LLVMPointerType>(ptr.getType());
  if (type.getAddressSpace() == 0) return ptr;
  return LLVM::AddrSpaceCastOp::create(rewriter, loc, LLVM::LLVMPointerType::get(type.getContext()), ptr);
}

Value fromGeneric(PatternRewriter &rewriter, Location loc, Value ptr, Type target) {
  if (ptr.getType() == target) return ptr;
  return LLVM::AddrSpaceCastOp::create(rewriter, loc, target, ptr);
}

/// Signless integer cast (truncate or sign-extend) to `width` bits.
Value castInt(PatternRewriter &rewriter, Location loc, Value v, unsigned width) {
  auto type = cast<IntegerType>(v.getType());
  auto to = rewriter.getIntegerType(width);
  if (type.getWidth() == width) return v;
  if (type.getWidth() > width) return arith::TruncIOp::create(rewriter, loc, to, v);
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
  auto fail = [&](const Twine &why) { return op->emitOpError() << "cannot be lowered to LLVM: " << why; };
  auto needLLVMPtr = [&](Value v, StringRef what) -> LogicalResult {
    if (!isa<LLVM::LLVMPointerType>(v.getType()))
      return fail(what +
                  " must be an !llvm.ptr (memref and tensor pointers are for the HIVM "
                  "lowering)");
    return success();
  };
  if (auto wait = dyn_cast<WaitOp>(op)) {
    if (failed(needLLVMPtr(wait.getBarrierPtr(), "barrierPtr"))) return failure();
    if (!isScalarSignless(wait.getNumBarriers().getType()))
      return fail("numBarriers must be a signless scalar integer");
    if (!isScalarSignless(wait.getWaitValue().getType()))
      return fail("waitValue must be a signless i32 or i64 (use i64 for a ui64 slot)");
    return success();
  }
  if (auto symm = dyn_cast<SymmAtOp>(op)) return needLLVMPtr(symm.getSymmAddr(), "symmAddr");
  if (auto notify = dyn_cast<NotifyOp>(op)) return needLLVMPtr(notify.getSigAddr(), "sigAddr");
  if (auto call = dyn_cast<ExternCallOp>(op)) {
    for (Type t : call->getOperandTypes())
      if (!LLVM::isCompatibleType(t)) return fail("extern_call operand type is not an LLVM type");
    for (Type t : call->getResultTypes())
      if (!LLVM::isCompatibleType(t)) return fail("extern_call result type is not an LLVM type");
    if (call->getNumResults() > 1) return fail("an LLVM call returns at most one value");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Patterns common to both targets
//===----------------------------------------------------------------------===//

template <typename SourceOp>
struct DistPattern : OpRewritePattern<SourceOp> {
  DistPattern(MLIRContext *ctx, Options options) : OpRewritePattern<SourceOp>(ctx), options(options) {}
  Options options;
};

template <typename SourceOp>
struct RankQueryLowering : DistPattern<SourceOp> {
  using DistPattern<SourceOp>::DistPattern;
  LogicalResult matchAndRewrite(SourceOp op, PatternRewriter &rewriter) const override {
    // The ABI exposes the world only; `axis` selects a team in a future extension.
    StringRef fn = std::is_same_v<SourceOp, GetRankOp> ? "tdist_my_pe" : "tdist_n_pes";
    LLVM::CallOp call = callABI(rewriter, op, fn, rewriter.getI32Type(), {});
    if (!call) return failure();
    rewriter.replaceOp(op, call.getResult());
    return success();
  }
};

struct SymmAtLowering : DistPattern<SymmAtOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(SymmAtOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value ptr = toGeneric(rewriter, loc, op.getSymmAddr());
    LLVM::CallOp call = callABI(rewriter, op, "tdist_ptr", ptr.getType(), ValueRange{ptr, op.getRank()});
    if (!call) return failure();
    rewriter.replaceOp(op, fromGeneric(rewriter, loc, call.getResult(), op.getType()));
    return success();
  }
};

struct ExternCallLowering : DistPattern<ExternCallOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(ExternCallOp op, PatternRewriter &rewriter) const override {
    Type result = op->getNumResults() ? op->getResult(0).getType() : Type();
    LLVM::CallOp call = callABI(rewriter, op, op.getSymbol(), result, op.getSrcs());
    if (!call) return failure();
    if (op->getNumResults())
      rewriter.replaceOp(op, call.getResult());
    else
      rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// wait / notify / consume_token: calls into the device ABI's one wait and one notify
//===----------------------------------------------------------------------===//
//
// Both targets call the ABI; they differ only in the form they call:
//   cpu: the thread form of include/tdist/abi.h (runtime/CPU):
//          int32_t tdistx_wait_<T>(T *slots, int32_t n, T value)
//          void    tdistx_notify_<T>(T *slot, T value, int32_t pe, int32_t sig_op)
//   gpu: the Triton-facing twins of the NVIDIA bitcode (include/tdist/NVIDIA/device.cuh), pointers
//        as int64 and program-collective (every thread of the CTA reaches them with the same
//        arguments, as every thread of a Triton program does):
//          int32_t tdistx_wait_<T>_i64(int64_t slots, int32_t n, T value, int64_t timeout_ns)
//          int32_t tdistx_notify_<T>_i64(int64_t slot, T value, int32_t pe, int32_t sig_op)
// On the GPU the wait is the device's one wait: threads 0..n-1 poll the slots with
// ld.acquire.sys, then the CTA syncs; it is bounded by `wait-timeout-ns` (< 0: the runtime's
// TDIST_WAIT_TIMEOUT_MS, 0: forever), notices a fault recorded by any wait of the PE or by the
// host's watchdog (a lost peer), and on either records the fault, prints it once and traps. The
// notify synchronises the CTA (bar.sync) and lets thread 0 translate the slot and release
// (st.release.sys for set, red.release.sys for add). Every comm_scope makes the same call: how the
// update reaches the peer is the ABI's choice (the NVIDIA ABI has the load/store path only).
//
// The wait's `scope` and `semantic` select nothing: the ABI's wait is always acquire at system
// scope, at least as strong as any scope (cta, gpu, sys) and semantic (relaxed, acquire) the op
// may ask for.

/// The `<T>` of the ABI's wait / notify and the suffix of the form each target calls.
std::string slotOpName(StringRef op, Type slotType, Target target) {
  return ("tdistx_" + op + "_" + abiTypeName(slotType) + (target == Target::GPU ? "_i64" : "")).str();
}

/// A slot pointer in the form the target's ABI takes: generic `!llvm.ptr` (cpu) or its generic
/// address as i64 (gpu). The address is made generic first so that a pointer of any address
/// space becomes the address the ABI dereferences.
Value slotArg(PatternRewriter &rewriter, Location loc, Value ptr, Target target) {
  Value generic = toGeneric(rewriter, loc, ptr);
  if (target == Target::CPU) return generic;
  return LLVM::PtrToIntOp::create(rewriter, loc, rewriter.getI64Type(), generic);
}

struct WaitLowering : DistPattern<WaitOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(WaitOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type slotType = op.getWaitValue().getType();
    SmallVector<Value, 4> args = {slotArg(rewriter, loc, op.getBarrierPtr(), options.target),
                                  castInt(rewriter, loc, op.getNumBarriers(), 32), op.getWaitValue()};
    if (options.target == Target::GPU)
      args.push_back(
          arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(), options.waitTimeoutNs));
    LLVM::CallOp call =
        callABI(rewriter, op, slotOpName("wait", slotType, options.target), rewriter.getI32Type(), args);
    if (!call) return failure();
    // The token has numBarriers' type (the op's TypesMatchWith); the ABI returns an int32 0.
    unsigned tokenWidth = cast<IntegerType>(op.getType()).getWidth();
    rewriter.replaceOp(op, castInt(rewriter, loc, call.getResult(), tokenWidth));
    return success();
  }
};

struct NotifyLowering : DistPattern<NotifyOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(NotifyOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto slotType = cast<IntegerType>(op.getSignalType());
    Value ptr = slotArg(rewriter, loc, op.getSigAddr(), options.target);
    Value value = castInt(rewriter, loc, op.getSignalVal(), slotType.getWidth());
    Value code = arith::ConstantIntOp::create(rewriter, loc, static_cast<int64_t>(op.getSigOp()), 32);
    // The thread form returns nothing; the twin returns an int32 0 (Triton's extern calls need a
    // result), unused here.
    Type result = options.target == Target::GPU ? rewriter.getI32Type() : Type();
    if (!callABI(rewriter, op, slotOpName("notify", slotType, options.target), result,
                 ValueRange{ptr, value, op.getRank(), code}))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};

struct ConsumeTokenLowering : DistPattern<ConsumeTokenOp> {
  using DistPattern::DistPattern;
  LogicalResult matchAndRewrite(ConsumeTokenOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type inType = op.getInput().getType();
    Type tokType = op.getToken().getType();
    // Accesses through the result must stay after the wait. The wait is a call of an external
    // function that may write any memory, so LLVM moves no load or store across it; on the GPU
    // that still holds once the bitcode is linked and the wait inlined, since the wait's polls
    // and its closing CTA barrier are volatile asm that clobbers memory. The GPU therefore uses
    // the input as is. The CPU keeps the ABI's opaque identity for pointers and i64 (the token
    // becomes a data dependency of the address); anything else is the identity.
    if (options.target == Target::CPU && isScalarSignless(tokType)) {
      Value token = castInt(rewriter, loc, op.getToken(), 32);
      if (isa<LLVM::LLVMPointerType>(inType)) {
        Value ptr = toGeneric(rewriter, loc, op.getInput());
        LLVM::CallOp call =
            callABI(rewriter, op, "tdistx_consume_token_ptr", ptr.getType(), ValueRange{ptr, token});
        if (!call) return failure();
        rewriter.replaceOp(op, fromGeneric(rewriter, loc, call.getResult(), inType));
        return success();
      }
      if (inType.isSignlessInteger(64)) {
        LLVM::CallOp call =
            callABI(rewriter, op, "tdistx_consume_token_int64", inType, ValueRange{op.getInput(), token});
        if (!call) return failure();
        rewriter.replaceOp(op, call.getResult());
        return success();
      }
    }
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
    opts.waitTimeoutNs = waitTimeoutNs;

    SmallVector<Operation *> distOps;
    bool ok = true;
    module.walk([&](Operation *op) {
      if (isDistributedOp(op)) {
        distOps.push_back(op);
        ok &= succeeded(checkLowerable(op));
      }
    });
    if (!ok) return signalPassFailure();
    if (distOps.empty()) return;

    RewritePatternSet patterns(ctx);
    patterns.add<RankQueryLowering<GetRankOp>, RankQueryLowering<GetNumRanksOp>, SymmAtLowering,
                 ExternCallLowering, WaitLowering, NotifyLowering, ConsumeTokenLowering>(ctx, opts);

    (void)mlir::tdist::applyPatternsOnce(ctx, distOps, std::move(patterns));

    WalkResult left = module.walk([](Operation *op) {
      if (!isDistributedOp(op)) return WalkResult::advance();
      op->emitOpError() << "was not lowered to LLVM";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted()) signalPassFailure();
  }
};

}  // namespace
