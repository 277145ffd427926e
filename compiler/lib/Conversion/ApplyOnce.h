//===- ApplyOnce.h - apply rewrite patterns once per op ---------*- C++ -*-===//
#ifndef TDIST_LIB_CONVERSION_APPLYONCE_H
#define TDIST_LIB_CONVERSION_APPLYONCE_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Rewrite/PatternApplicator.h"

namespace mlir::tdist {

/// Applies `patterns` to each op of `ops` once, in order; fails if some op matched no pattern.
///
/// The conversions use this instead of the greedy driver (the seed's applyPatternsAndFoldGreedily)
/// for one reason: the greedy driver erases any op it finds trivially dead, and under the seed's
/// memory-effect model (table 2.4) `distributed.wait` only reads, so a wait whose token is unused
/// (a plain `dl.wait(...)` used as a barrier) would silently vanish. Applying each pattern once
/// keeps every wait, never touches other ops, and is linear in the number of distributed ops.
inline LogicalResult applyPatternsOnce(MLIRContext *ctx, ArrayRef<Operation *> ops,
                                       RewritePatternSet &&patterns) {
  FrozenRewritePatternSet frozen(std::move(patterns));
  PatternApplicator applicator(frozen);
  applicator.applyDefaultCostModel();
  PatternRewriter rewriter(ctx);
  bool ok = true;
  for (Operation *op : ops) {
    rewriter.setInsertionPoint(op);
    if (failed(applicator.matchAndRewrite(op, rewriter))) ok = false;
  }
  return success(ok);
}

}  // namespace mlir::tdist

#endif  // TDIST_LIB_CONVERSION_APPLYONCE_H
