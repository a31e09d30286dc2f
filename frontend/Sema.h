//===- Sema.h - Name, dtype, shape and index-range checking of a module ---===//
//
// Sema takes the parser's tree and fills every field AST.h marks "sema":
// what each name is, the type of every expression, tensor shapes over size
// symbols, each statement's indices, reduced indices and their ranges. It
// proves every affine subscript in bounds for all sizes >= 1 and reports
// each violation of the language rules (dsl/LANGUAGE.md) as a located error.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_FRONTEND_SEMA_H
#define TDSL_FRONTEND_SEMA_H

#include "frontend/AST.h"
#include "ir/Diagnostics.h"

namespace tdsl {

/// Checks M and fills in its sema fields. Returns false if an error was
/// reported; the tree is then only partly filled and must not be lowered.
bool checkModule(ast::Module &M, DiagEngine &Diags);

} // namespace tdsl

#endif // TDSL_FRONTEND_SEMA_H
