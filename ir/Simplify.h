//===- Simplify.h - Constant folding and algebraic cleanup of IR ----------===//
//
// The simplifier behind the simplify pass (passes/Simplify.h states what it
// folds), here in ir/ because passes and the backend both fold expressions
// with it: the backend to print folded index math and to read constant
// extents, without depending on passes/.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_SIMPLIFY_H
#define TDSL_IR_SIMPLIFY_H

#include "ir/IR.h"

namespace tdsl::ir {
/// Folds constants and simplifies index arithmetic in F's parameter shapes
/// and body.
void simplifyFunc(Func &F);
/// The same on one expression; returns E itself when nothing simplifies.
Expr simplifyExpr(const Expr &E);
/// The same on one statement; returns S itself when nothing simplifies.
Stmt simplifyStmt(const Stmt &S);
} // namespace tdsl::ir

#endif // TDSL_IR_SIMPLIFY_H
