// Pass-time benchmark: time of convert-distributed-to-hivm and convert-distributed-to-llvm
// (cpu, gpu) against module size, 10k to 1M ops. A program, not a test: it prints per-op cost
// and the linearity ratio (time per op at each size / time per op at the smallest size; 1.0 means
// exactly linear). Single-threaded context so that the numbers do not depend on core count.
//
//   tdist-compiler-bench [max_ops]     (default 1000000)
#include "tdist/Conversion/Passes.h"
#include "tdist/Dialect/Distributed/Distributed.h"
#include "tdist/Dialect/HIVM/HIVM.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace mlir;
namespace dist = mlir::triton::distributed;

namespace {

constexpr int kGroupsPerFunc = 100;  // ~1000 ops per function, like a module of many kernels

/// A module of about `targetOps` ops: functions whose bodies repeat one group of the seven
/// distributed ops plus plain arithmetic (10 ops per group).
OwningOpRef<ModuleOp> buildModule(MLIRContext &ctx, int64_t targetOps, bool memrefs) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Type bufType = memrefs ? Type(MemRefType::get({ShapedType::kDynamic}, b.getF32Type()))
                         : Type(LLVM::LLVMPointerType::get(&ctx));
  Type sigType =
      memrefs ? Type(MemRefType::get({ShapedType::kDynamic}, i32)) : Type(LLVM::LLVMPointerType::get(&ctx));
  auto fnType = b.getFunctionType({bufType, sigType, i64}, {});
  const int64_t groups = targetOps / 10;
  for (int64_t g = 0, f = 0; g < groups; ++f) {
    b.setInsertionPointToEnd(module->getBody());
    auto fn = func::FuncOp::create(b, loc, "k" + std::to_string(f), fnType);
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value buf = entry->getArgument(0), sig = entry->getArgument(1), v = entry->getArgument(2);
    Value c0 = arith::ConstantIntOp::create(b, loc, i32, 0);
    Value c1 = arith::ConstantIntOp::create(b, loc, i32, 1);
    for (int i = 0; i < kGroupsPerFunc && g < groups; ++i, ++g) {
      Value r = dist::GetRankOp::create(b, loc, c0);
      Value n = dist::GetNumRanksOp::create(b, loc, c0);
      Value peer =
          dist::SymmAtOp::create(b, loc, buf, r, memrefs ? TypeAttr() : TypeAttr::get(b.getF32Type()));
      dist::NotifyOp::create(b, loc, sig, v, r, dist::SignalOp::SET, dist::CommScope::INTRA_NODE,
                             memrefs ? TypeAttr() : TypeAttr::get(i32));
      Value tok = dist::WaitOp::create(b, loc, i32, sig, c1, c1, dist::MemSyncScope::SYSTEM,
                                       dist::MemSemantic::ACQUIRE);
      dist::ConsumeTokenOp::create(b, loc, peer, tok);
      dist::ExternCallOp::create(b, loc, TypeRange{}, ValueRange{}, "", "", "aclshmem_quiet", false);
      Value s = arith::AddIOp::create(b, loc, r, n);
      Value m = arith::MulIOp::create(b, loc, s, tok);
      arith::SubIOp::create(b, loc, m, c1);
    }
    func::ReturnOp::create(b, loc);
  }
  return module;
}

int64_t countOps(ModuleOp m) {
  int64_t n = 0;
  m.walk([&](Operation *) { ++n; });
  return n;
}

struct Target {
  const char *name;
  bool memrefs;
  void (*add)(PassManager &);
};

}  // namespace

int main(int argc, char **argv) {
  int64_t maxOps = argc > 1 ? std::atoll(argv[1]) : 1000000;
  std::vector<int64_t> sizes;
  for (int64_t s : {10000, 30000, 100000, 300000, 1000000})
    if (s <= maxOps) sizes.push_back(s);

  DialectRegistry registry;
  registry.insert<dist::DistributedDialect, hivm::HIVMDialect, arith::ArithDialect, func::FuncDialect,
                  LLVM::LLVMDialect, NVVM::NVVMDialect, memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect>();
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();

  const Target targets[] = {
      {"hivm", true, [](PassManager &pm) { pm.addPass(tdist::createConvertDistributedToHIVM()); }},
      {"llvm-cpu", false,
       [](PassManager &pm) {
         tdist::ConvertDistributedToLLVMOptions o;
         o.target = "cpu";
         pm.addPass(tdist::createConvertDistributedToLLVM(o));
       }},
      {"llvm-gpu", false,
       [](PassManager &pm) {
         tdist::ConvertDistributedToLLVMOptions o;
         o.target = "gpu";
         pm.addPass(tdist::createConvertDistributedToLLVM(o));
       }},
  };

  std::printf("%-9s %10s %10s %10s %10s %10s\n", "pass", "ops in", "ops out", "ms", "ns/op", "linearity");
  for (const Target &t : targets) {
    double baseNsPerOp = 0;
    for (int64_t size : sizes) {
      // Best of 3 runs on fresh modules (plus one untimed warm-up run at the first size, which
      // pays one-time costs such as pattern set construction and attribute uniquing).
      double ms = 1e300;
      int64_t in = 0, out = 0;
      for (int rep = (size == sizes.front() ? -1 : 0); rep < 3; ++rep) {
        OwningOpRef<ModuleOp> m = buildModule(ctx, size, t.memrefs);
        in = countOps(*m);
        PassManager pm(&ctx);
        pm.enableVerifier(false);  // time the pass, not the verifier
        t.add(pm);
        auto t0 = std::chrono::steady_clock::now();
        if (failed(pm.run(*m))) {
          std::fprintf(stderr, "pass_time: %s failed at %lld ops\n", t.name, (long long)size);
          return 1;
        }
        double once =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        out = countOps(*m);
        if (rep >= 0 && once < ms) ms = once;
      }
      double nsPerOp = ms * 1e6 / double(in);
      if (baseNsPerOp == 0) baseNsPerOp = nsPerOp;
      std::printf("%-9s %10lld %10lld %10.1f %10.1f %10.2f\n", t.name, (long long)in, (long long)out, ms,
                  nsPerOp, nsPerOp / baseNsPerOp);
    }
  }
  std::printf("linearity = (ns/op at this size) / (ns/op at %lld ops); 1.00 is exactly linear\n",
              (long long)sizes.front());
  return 0;
}
