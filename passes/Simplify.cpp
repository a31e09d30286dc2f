//===- Simplify.cpp - Constant folding (placeholder until implemented) ----===//
#include "passes/Simplify.h"

namespace tdsl {
ir::Expr simplifyExpr(const ir::Expr &E) { return E; }
void simplify(ir::Func &F) {}
} // namespace tdsl
