//===- RaiseTritonDistributed.cpp - marker calls -> distributed ops -------===//
//
// docs/COMPILE.md section 1. On every target but CUDA the front end emits each dl.* primitive as
// a `tt.extern_elementwise` marker (libname "libtdist_device", a symbol of device/dist_ops.def)
// and each libshmem_device.* call as one with libname "libshmem_device". tdist-opt reads TTIR in
// generic form with the `tt` dialect unregistered, so the markers, `tt.ptr_to_int` and
// `tt.int_to_ptr` are matched by name. The table is device/dist_ops.def (shared with the Python
// front end); the void library calls are TDIST_ASCEND_VOID in device/Ascend/symbols.def.
//
//===----------------------------------------------------------------------===//

#include "tdist/Conversion/Passes.h"
#include "tdist/Dialect/Distributed/Distributed.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::tdist {
#define GEN_PASS_DEF_RAISETRITONDISTRIBUTED
#include "tdist/Conversion/Passes.h.inc"
}  // namespace mlir::tdist

using namespace mlir;
using namespace mlir::triton::distributed;

namespace {

struct MarkerSpec {
  llvm::StringLiteral op;        // distributed.<op>
  llvm::StringLiteral symbol;    // a trailing `_`: one symbol per type suffix
  llvm::StringLiteral operands;  // "p:" pointer as i64, "c:" i32 constant
  bool pure;
};

constexpr MarkerSpec kMarkers[] = {
#define TDIST_DIST_OP(op, symbol, operands, pure) {#op, #symbol, operands, pure != 0},
#include "dist_ops.def"
};

const llvm::StringLiteral kVoidCalls[] = {
#define TDIST_ASCEND_VOID(name) #name,
#include "Ascend/symbols.def"
};

constexpr llvm::StringLiteral kDistLib = "libtdist_device";
constexpr llvm::StringLiteral kShmemLib = "libshmem_device";

/// The type suffixes of a `_`-terminated symbol (device/dist_ops.def's comment).
ArrayRef<StringRef> suffixesFor(StringRef op) {
  static const StringRef kValueKinds[] = {"ptr", "int32", "int64"};
  static const StringRef kSlotTypes[] = {"int32", "int64", "uint64"};
  if (op == "consume_token") return kValueKinds;
  return kSlotTypes;
}

/// The marker spec of `symbol` and its type suffix; null if it is not in the table.
const MarkerSpec *findMarker(StringRef symbol, StringRef &suffix) {
  for (const MarkerSpec &m : kMarkers) {
    if (!m.symbol.ends_with("_")) {
      if (symbol == m.symbol) {
        suffix = "";
        return &m;
      }
      continue;
    }
    if (!symbol.starts_with(m.symbol)) continue;
    StringRef rest = symbol.drop_front(m.symbol.size());
    if (llvm::is_contained(suffixesFor(m.op), rest)) {
      suffix = rest;
      return &m;
    }
  }
  return nullptr;
}

/// The dl.* spelling of a dialect op, for messages.
std::string frontName(StringRef op) {
  if (op == "get_rank") return "dl.rank";
  if (op == "get_num_ranks") return "dl.num_ranks";
  return ("dl." + op).str();
}

/// A string attribute of an unregistered op: an inherent attribute (generic `<{...}>`
/// properties) or a discardable one.
Attribute markerAttr(Operation *op, StringRef name) {
  if (auto props = dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute()))
    if (Attribute a = props.get(name)) return a;
  return op->getAttr(name);
}

StringRef markerString(Operation *op, StringRef name) {
  auto s = dyn_cast_or_null<StringAttr>(markerAttr(op, name));
  return s ? s.getValue() : StringRef();
}

bool isNamed(Operation *op, StringRef name) { return op && op->getName().getStringRef() == name; }

/// One operand of a marker, as device/dist_ops.def names it.
struct OperandSpec {
  StringRef name;
  char kind;  // 'p' pointer, 'c' constant, 0 plain
};

SmallVector<OperandSpec> parseOperands(StringRef list) {
  SmallVector<OperandSpec> specs;
  SmallVector<StringRef> parts;
  if (!list.empty()) list.split(parts, ',');
  for (StringRef part : parts) {
    part = part.trim();
    if (part.consume_front("p:"))
      specs.push_back({part, 'p'});
    else if (part.consume_front("c:"))
      specs.push_back({part, 'c'});
    else
      specs.push_back({part, 0});
  }
  return specs;
}

unsigned suffixWidth(StringRef suffix) { return suffix == "int32" ? 32 : 64; }

class Raiser {
 public:
  explicit Raiser(Operation *marker) : marker(marker), b(marker) {}

  /// Raises a libtdist_device marker of `spec`.
  LogicalResult raiseDist(const MarkerSpec &spec, StringRef suffix);
  /// Raises a libshmem_device marker.
  LogicalResult raiseShmem();

  /// tt.ptr_to_int ops whose result this raise stopped using.
  SmallVector<Operation *> casts;

 private:
  InFlightDiagnostic error() { return marker->emitOpError(); }

  /// The pointer behind an i64 marker operand (its tt.ptr_to_int); failure if there is none.
  FailureOr<Value> pointerOf(Value v, StringRef what);
  FailureOr<int64_t> constantOf(Value v, StringRef what);
  /// Checks that the i64 pointer result is used only by tt.int_to_ptr to `ptrType`.
  LogicalResult checkPointerResult(Type ptrType, StringRef what);
  /// Replaces those tt.int_to_ptr by `ptr`.
  void replacePointerResult(Value ptr);

  Operation *marker;
  OpBuilder b;
};

FailureOr<Value> Raiser::pointerOf(Value v, StringRef what) {
  Operation *def = v.getDefiningOp();
  if (!isNamed(def, "tt.ptr_to_int") || def->getNumOperands() != 1 ||
      !isPointerType(def->getOperand(0).getType())) {
    error() << what << ": the pointer operand must be a tt.ptr_to_int of a pointer";
    return failure();
  }
  casts.push_back(def);
  return def->getOperand(0);
}

FailureOr<int64_t> Raiser::constantOf(Value v, StringRef what) {
  APInt value;
  if (!v.getType().isInteger(32) || !matchPattern(v, m_ConstantInt(&value))) {
    error() << what << " must be an arith.constant of type i32";
    return failure();
  }
  return value.getSExtValue();
}

LogicalResult Raiser::checkPointerResult(Type ptrType, StringRef what) {
  for (Operation *user : marker->getResult(0).getUsers())
    if (!isNamed(user, "tt.int_to_ptr") || user->getNumResults() != 1 ||
        user->getResult(0).getType() != ptrType)
      return error() << what << ": the i64 result may only be used by tt.int_to_ptr to " << ptrType
                     << ", found " << user->getName();
  return success();
}

void Raiser::replacePointerResult(Value ptr) {
  SmallVector<Operation *> users(marker->getResult(0).getUsers());
  for (Operation *user : users) {
    user->getResult(0).replaceAllUsesWith(ptr);
    user->erase();
  }
}

LogicalResult Raiser::raiseDist(const MarkerSpec &spec, StringRef suffix) {
  std::string what = frontName(spec.op) + " (" + markerString(marker, "symbol").str() + ")";
  SmallVector<OperandSpec> specs = parseOperands(spec.operands);
  if (marker->getNumOperands() != specs.size())
    return error() << what << " expects " << specs.size() << " operands, got " << marker->getNumOperands();
  if (marker->getNumResults() != 1) return error() << what << " expects one result";
  // A consume_token of an integer takes the value itself, not a pointer.
  bool pointerInput = spec.op != "consume_token" || suffix == "ptr";

  // Scalars only (docs/COMPILE.md section 1).
  bool blockPtr = false, block = false;
  for (auto [v, os] : llvm::zip(marker->getOperands(), specs)) {
    if (!isa<TensorType>(v.getType())) continue;
    block = true;
    blockPtr |= os.kind == 'p' && pointerInput;
  }
  block |= isa<TensorType>(marker->getResult(0).getType());
  if (block)
    return error() << frontName(spec.op) << " on a block " << (blockPtr ? "of pointers" : "value")
                   << " cannot be lowered for ascend: translate a scalar base pointer and add "
                      "the tile's offsets";

  SmallVector<Value> values;
  SmallVector<int64_t> constants;
  for (auto [v, os] : llvm::zip(marker->getOperands(), specs)) {
    std::string opWhat = what + " operand '" + os.name.str() + "'";
    if (os.kind == 'p' && pointerInput) {
      FailureOr<Value> p = pointerOf(v, opWhat);
      if (failed(p)) return failure();
      values.push_back(*p);
    } else if (os.kind == 'c') {
      FailureOr<int64_t> c = constantOf(v, opWhat);
      if (failed(c)) return failure();
      constants.push_back(*c);
    } else {
      values.push_back(v);
    }
  }

  Location loc = marker->getLoc();
  Type i32 = b.getI32Type();
  Value result = marker->getResult(0);
  auto badEnum = [&](StringRef name, int64_t v, StringRef legal) {
    return error() << what << " operand '" << name << "' = " << v << " is not a legal value (" << legal
                   << ")";
  };
  auto slotWidthMatches = [&](Type t, StringRef kind) -> LogicalResult {
    auto it = dyn_cast_or_null<IntegerType>(t);
    if (it && it.getWidth() == suffixWidth(suffix)) return success();
    return error() << what << ": the symbol's " << suffix << " " << kind << " does not fit " << t;
  };

  if (spec.op == "get_rank" || spec.op == "get_num_ranks") {
    Value axis = arith::ConstantIntOp::create(b, loc, 0, 32);
    Value r = spec.op == "get_rank" ? GetRankOp::create(b, loc, i32, axis).getResult()
                                    : GetNumRanksOp::create(b, loc, i32, axis).getResult();
    result.replaceAllUsesWith(r);
    return success();
  }
  if (spec.op == "symm_at") {
    Value ptr = values[0];
    if (failed(checkPointerResult(ptr.getType(), what))) return failure();
    auto symm = SymmAtOp::create(b, loc, ptr.getType(), ptr, values[1], TypeAttr());
    replacePointerResult(symm.getRemoteAddr());
    return success();
  }
  if (spec.op == "wait") {
    if (failed(slotWidthMatches(getPointeeType(values[0].getType()), "slot")) ||
        failed(slotWidthMatches(values[2].getType(), "wait value")))
      return failure();
    auto scope = symbolizeMemSyncScope(static_cast<uint32_t>(constants[0]));
    if (!scope) return badEnum(specs[3].name, constants[0], "gpu=1, cta=2, sys=3");
    auto semantic = symbolizeMemSemantic(static_cast<uint32_t>(constants[1]));
    if (!semantic || (*semantic != MemSemantic::RELAXED && *semantic != MemSemantic::ACQUIRE))
      return badEnum(specs[4].name, constants[1], "relaxed=1, acquire=2");
    auto wait =
        WaitOp::create(b, loc, values[1].getType(), values[0], values[1], values[2], *scope, *semantic);
    result.replaceAllUsesWith(wait.getToken());
    return success();
  }
  if (spec.op == "notify") {
    if (failed(slotWidthMatches(getPointeeType(values[0].getType()), "signal slot"))) return failure();
    auto sigOp = symbolizeSignalOp(static_cast<uint32_t>(constants[0]));
    if (!sigOp) return badEnum(specs[3].name, constants[0], "set=1, add=2");
    auto commScope = symbolizeCommScope(static_cast<uint32_t>(constants[1]));
    if (!commScope) return badEnum(specs[4].name, constants[1], "gpu=0, intra_node=1, inter_node=2");
    (void)NotifyOp::create(b, loc, values[0], values[1], values[2], *sigOp, *commScope, TypeAttr());
    // The marker's result is a dummy (Triton's extern calls must return a value): always 0.
    if (!result.use_empty())
      result.replaceAllUsesWith(arith::ConstantIntOp::create(b, loc, 0, 32).getResult());
    return success();
  }
  if (spec.op == "consume_token") {
    Value input = values[0];
    if (pointerInput && failed(checkPointerResult(input.getType(), what))) return failure();
    auto ct = ConsumeTokenOp::create(b, loc, input.getType(), input, values[1]);
    if (pointerInput)
      replacePointerResult(ct.getResult());
    else
      result.replaceAllUsesWith(ct.getResult());
    return success();
  }
  return error() << "unhandled marker op '" << spec.op << "'";
}

LogicalResult Raiser::raiseShmem() {
  StringRef symbol = markerString(marker, "symbol");
  std::string what = ("libshmem_device." + symbol).str();
  auto isTensor = [](Type t) { return isa<TensorType>(t); };
  if (llvm::any_of(marker->getOperandTypes(), isTensor) || llvm::any_of(marker->getResultTypes(), isTensor))
    return error() << what
                   << " on a block value cannot be lowered for ascend: translate a "
                      "scalar base pointer and add the tile's offsets";
  SmallVector<Value> srcs;
  for (Value v : marker->getOperands()) {
    Operation *def = v.getDefiningOp();
    if (isNamed(def, "tt.ptr_to_int") && def->getNumOperands() == 1 &&
        isPointerType(def->getOperand(0).getType())) {
      casts.push_back(def);
      srcs.push_back(def->getOperand(0));
    } else {
      srcs.push_back(v);
    }
  }
  bool isVoid = llvm::is_contained(kVoidCalls, symbol);
  if (isVoid && llvm::any_of(marker->getResults(), [](Value r) { return !r.use_empty(); }))
    return error() << what << " returns nothing (a void library call), but its result is used";
  SmallVector<Type> resultTypes;
  if (!isVoid) resultTypes = llvm::to_vector(marker->getResultTypes());
  auto pure = dyn_cast_or_null<BoolAttr>(markerAttr(marker, "pure"));
  // A void call is there for its effects.
  bool isPure = !isVoid && pure && pure.getValue();
  auto call = ExternCallOp::create(b, marker->getLoc(), resultTypes, srcs, kShmemLib, "", symbol, isPure);
  if (!isVoid) marker->replaceAllUsesWith(call->getResults());
  return success();
}

struct RaiseTritonDistributedPass
    : mlir::tdist::impl::RaiseTritonDistributedBase<RaiseTritonDistributedPass> {
  void runOnOperation() override {
    SmallVector<Operation *> markers;
    getOperation().walk([&](Operation *op) {
      if (!isNamed(op, "tt.extern_elementwise")) return;
      StringRef lib = markerString(op, "libname");
      if (lib == kDistLib || lib == kShmemLib) markers.push_back(op);
    });
    bool ok = true;
    SmallVector<Operation *> casts;
    for (Operation *marker : markers) {
      Raiser raiser(marker);
      LogicalResult raised = failure();
      if (markerString(marker, "libname") == kShmemLib) {
        raised = raiser.raiseShmem();
      } else {
        StringRef symbol = markerString(marker, "symbol");
        StringRef suffix;
        if (const MarkerSpec *spec = findMarker(symbol, suffix))
          raised = raiser.raiseDist(*spec, suffix);
        else
          marker->emitOpError() << "unknown " << kDistLib << " symbol '" << symbol
                                << "' (device/dist_ops.def lists the dl.* markers)";
      }
      if (failed(raised)) {
        ok = false;
        continue;
      }
      marker->erase();
      llvm::append_range(casts, raiser.casts);
    }
    // The tt.ptr_to_int casts nothing uses any more.
    llvm::SmallPtrSet<Operation *, 8> erased;
    for (Operation *cast : casts)
      if (erased.insert(cast).second && cast->use_empty()) cast->erase();
    if (!ok) signalPassFailure();
  }
};

}  // namespace
