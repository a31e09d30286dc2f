//===- Lower.h - From the checked AST to the first, naive loop IR ---------===//
//
// Each statement becomes its own loop nest over its output elements, with
// its reduction as an inner serial loop into a register accumulator; each
// intermediate is a global buffer allocated around the statements that
// follow its definition. No schedule, no GPU binding: the passes do that.
//
//   C[m, n] += A[m, k] * B[k, n]        for m in 0..M serial @1 {
//                                        for n in 0..N serial @1 {
//                                   =>    alloc C_sum: f32[1] register @1 {
//                                           C_sum[0] = 0.0
//                                           for k in 0..K serial @1 {
//                                             C_sum[0] = C_sum[0] + A[m, k] * B[k, n]
//                                           }
//                                           C[m, n] = C_sum[0] ...
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_FRONTEND_LOWER_H
#define TDSL_FRONTEND_LOWER_H

#include "frontend/AST.h"
#include "ir/IR.h"

#include <functional>

namespace tdsl {

/// Lowers one checked kernel. SourceLines maps AST locations to .tdsl lines
/// for provenance (pass the DiagEngine's lineOf).
ir::Func lowerKernel(const ast::Kernel &K,
                     const std::function<unsigned(llvm::SMLoc)> &LineOf);

/// Lowers every kernel of a checked module.
ir::Module lowerModule(const ast::Module &M,
                       const std::function<unsigned(llvm::SMLoc)> &LineOf);

/// The IR expression (i64) of an affine form over names.
ir::Expr affineToIR(const ast::Affine &A);

} // namespace tdsl

#endif // TDSL_FRONTEND_LOWER_H
