// RUN: not tdist-opt %s --convert-distributed-to-llvm=target=tpu 2>&1 | FileCheck %s
// RUN: not tdist-opt %s --tdist-pipeline=tpu 2>&1 | FileCheck %s --check-prefix=PIPE
// CHECK: convert-distributed-to-llvm: unknown target 'tpu' (expected 'gpu' or 'cpu')
// PIPE: tdist-opt: unknown --tdist-pipeline 'tpu' (expected ascend, ascend-ttir, ascend-cpu, gpu or cpu)
func.func @f() {
  return
}
