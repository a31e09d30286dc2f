//===- Simplify.cpp - The simplify pass: ir::simplifyFunc on a function ---===//
#include "passes/Simplify.h"
#include "ir/Simplify.h"

namespace tdsl {
void simplify(ir::Func &F) { ir::simplifyFunc(F); }
} // namespace tdsl
