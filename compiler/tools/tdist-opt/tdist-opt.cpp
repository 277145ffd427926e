//===- tdist-opt.cpp - the tdist MLIR driver --------------------------------===//
//
// mlir-opt with the distributed and hivm dialects, the tdist conversions and the pipelines.
//
//   tdist-opt --tdist-pipeline=ascend|ascend-ttir|ascend-cpu|gpu|cpu in.mlir
//
// is the documented entry point; it is spelled as a pipeline name registered with the pass
// registry (tdist-pipeline-<target>), so `--tdist-pipeline-cpu` works too.
//
//===----------------------------------------------------------------------===//

#include "tdist/Conversion/Passes.h"
#include "tdist/Dialect/Distributed/Distributed.h"
#include "tdist/Dialect/HIVM/HIVM.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include <cstring>
#include <string>
#include <vector>

namespace {
/// `tt` without Triton: every op stays unregistered and `!tt.ptr<T>` an opaque type, but the
/// dialect is loaded, so an unregistered `tt.func` is not taken for an unknown symbol table and
/// a `func.call` inside it resolves against the module (docs/COMPILE.md section 2).
class TritonPlaceholderDialect : public mlir::Dialect {
 public:
  explicit TritonPlaceholderDialect(mlir::MLIRContext *ctx)
      : mlir::Dialect(getDialectNamespace(), ctx, mlir::TypeID::get<TritonPlaceholderDialect>()) {
    allowUnknownOperations();
    allowUnknownTypes();
  }
  static llvm::StringRef getDialectNamespace() { return "tt"; }
};
}  // namespace
MLIR_DECLARE_EXPLICIT_TYPE_ID(TritonPlaceholderDialect)
MLIR_DEFINE_EXPLICIT_TYPE_ID(TritonPlaceholderDialect)

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::triton::distributed::DistributedDialect, mlir::hivm::HIVMDialect,
                  mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect, mlir::linalg::LinalgDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect, mlir::tensor::TensorDialect,
                  mlir::ub::UBDialect, mlir::vector::VectorDialect>();
  // The ascend-cpu pipeline runs the upstream Linalg / bufferization / memref lowering, which
  // needs the upstream dialects and their interface models (bufferization, ConvertToLLVM, ...).
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<TritonPlaceholderDialect>();

  mlir::tdist::registerTdistConversionPasses();
  mlir::tdist::registerTdistPipelines();
  mlir::registerAllPasses();

  // `--tdist-pipeline=<target>` -> `--tdist-pipeline-<target>` (a registered pipeline).
  std::vector<std::string> storage;
  storage.reserve(argc);  // no reallocation: args keeps pointers into it
  std::vector<char *> args(argv, argv + argc);
  for (char *&arg : args) {
    constexpr const char kFlag[] = "--tdist-pipeline=";
    if (std::strncmp(arg, kFlag, sizeof(kFlag) - 1) == 0) {
      std::string target = arg + sizeof(kFlag) - 1;
      if (target != "ascend" && target != "ascend-ttir" && target != "ascend-cpu" && target != "gpu" &&
          target != "cpu") {
        llvm::errs() << "tdist-opt: unknown --tdist-pipeline '" << target
                     << "' (expected ascend, ascend-ttir, ascend-cpu, gpu or cpu)\n";
        return 1;
      }
      storage.push_back("--tdist-pipeline-" + target);
      arg = storage.back().data();
    }
  }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(static_cast<int>(args.size()), args.data(), "tdist optimizer driver\n", registry));
}
