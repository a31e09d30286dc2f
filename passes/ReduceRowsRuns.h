//===- ReduceRowsRuns.h - A row reduction's share read in 16-byte runs ----===//
//
// Part of reduce-rows (passes/ReduceRows.h): how a thread folds its share
// of a row. Lanes that stride the row one element at a time issue one load
// instruction per element and operand, each 2 bytes wide for f16: a block
// of 256 threads then has few bytes in flight, and a row of 16-bit
// weights (a decoder's matrix times a vector) is read at a fraction of the
// copy rate. So where every operand that moves along the row reads it at
// its last index, each thread takes runs of W consecutive elements (16
// bytes of the widest such operand: 4 f32, 8 f16, 16 i8), copies each
// operand's run into registers by loops that vectorize makes single
// accesses, and folds the W elements in order. A run-time test proves the
// runs aligned (the row length and each operand's rows multiples of W,
// each first element aligned); the else branch is the element-at-a-time
// loop. Results differ from the serial loop only by the reassociation of
// OP, as the strided loop's do.
//
//   for cc in 0..(C - tid + 255) / 256 {      if C % 4 == 0 && aligned(X[0, 0], 16) {
//     let c = tid + cc * 256 {          ->      for cc in 0..(C / 4 - tid + 255) / 256 {
//       s[0] = s[0] + X[r, c] } }                 let c0 = (tid + cc * 256) * 4 { alloc X_run:
//       f32[4] {
//                                                   for v in 0..4 { X_run[v] = X[r, c0 + v] }
//                                                   for v in 0..4 { let c = c0 + v {
//                                                     s[0] = s[0] + X_run[v] } } } } } }
//                                             } else { the loop on the left }
//
// Test: test/passes/reduce-rows-runs.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_REDUCEROWSRUNS_H
#define TDSL_PASSES_REDUCEROWSRUNS_H

#include "ir/IR.h"
#include "passes/PassUtils.h"

namespace tdsl {

/// The elements of one run of the row loop Loop (4 f32, 8 f16, 16 i8), or
/// 1 where its loads take none.
int64_t rowRunElements(const ir::Func &F, const ir::ForNode &Loop);

/// Thread Tid's fold of the row loop Loop (whose body is the step, c its
/// variable), Threads threads striding the row: the element-at-a-time loop
/// `for Step { let c = Tid + Step * Threads { body } }`, under runs of 16
/// bytes where the loads allow them (the header; rowRunElements > 1).
ir::Stmt foldRowShare(const ir::Func &F, NameTable &Names, const ir::ForNode &Loop,
                      const std::string &Step, const ir::Expr &Tid, int64_t Threads);

} // namespace tdsl

#endif // TDSL_PASSES_REDUCEROWSRUNS_H
