// RUN: not tdist-opt %s --convert-distributed-to-hivm=form=hir 2>&1 | FileCheck %s
// CHECK: convert-distributed-to-hivm: unknown form 'hir' (expected custom or call)
module {
}
