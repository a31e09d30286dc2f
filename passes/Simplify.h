//===- Simplify.h - Constant folding and algebraic cleanup ----------------===//
#ifndef TDSL_PASSES_SIMPLIFY_H
#define TDSL_PASSES_SIMPLIFY_H

#include "ir/IR.h"

namespace tdsl {
/// Folds constants and simplifies index arithmetic in F.
void simplify(ir::Func &F);
/// The same on one expression (used by other passes).
ir::Expr simplifyExpr(const ir::Expr &E);
} // namespace tdsl

#endif
