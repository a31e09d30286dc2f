//===- SplitReduce.h - Reductions with few outputs split in two -----------===//
//
// Part of reduce-rows (passes/ReduceRows.h), which runs it first.
// Requires: valid IR; top-level nests without GPU loops (the naive
//   lowering), reductions as reduce-rows reads them (outer serial loops,
//   `alloc ACC: T[1] register`, init, a perfect nest of serial reduced
//   loops folding E with + * max min, an epilogue), T one of i32 i64 f32
//   f64.
// Ensures: a reduction whose outputs cannot keep the GPU busy one thread
//   or one row each is rewritten as two (or three) such nests through a
//   global temporary of partial results, computing the same values up to
//   the reassociation of OP; each split is a remark. No GPU loops: the
//   nests that come out are mapped by reduce-rows and map-to-gpu as any
//   nest.
// Why here: before reduce-rows maps rows and after the contraction and
//   row-chain passes, which take the reductions that are theirs; inside
//   reduce-rows rather than a pass of its own, because what it makes is
//   rows for that pass. The forms:
//
// 1. Column: the loads move along the outermost reduced loop r only in
//    indices before their last (Y[c] += X[r, c]), so one thread per
//    output reads consecutive elements but walks all of r alone. r is cut
//    into chunks of SplitColumnChunk: a thread per (chunk, output) folds
//    its chunk into P[outputs, g] (consecutive threads on consecutive
//    outputs, so its reads stay coalesced), then each output's row of P
//    is a row reduction, which reduce-rows gives a warp or a block. Not
//    where r is a constant of at most two chunks.
// 2. Nested along the row: the loads move along the innermost reduced
//    loop c in their last index, under further reduced loops (Y[b] +=
//    X[b, i, j]; a sum over all of a matrix). The outer reduced loops
//    become rows: P[outputs, i] is a row reduction over c, and the result
//    a row reduction over P's rows. A c loop longer than SplitScalarChunk,
//    or of a length known only at run time, is cut into G equal rows of
//    at most that many too (the last shorter), so that a few long rows
//    still make many and short ones stay short.
// 3. One long vector to a scalar (s += x[i], and form 2's second half when
//    it is a scalar): cut into rows of SplitScalarChunk, a block each,
//    then one block over the partials. Not for a constant length of at
//    most SplitScalarMax, which one block reduces alone.
//
// A partial starts from the init where OP is max or min (folding it in
// twice changes nothing), else from OP's identity; the second reduction
// starts from the init and runs the epilogue. Results differ from the
// serial loop only by the reassociation of OP, as reduce-rows' do.
// Declined without a remark: what this does not match (reduce-rows says
// why it declines). Loads that move along both an output and a reduced
// loop in their last index (a convolution) are left alone: one thread
// per output reads those consecutively.
//
//   for c in 0..C serial {           alloc Y_part: f32[C, (R + 63) / 64] global {
//     alloc s: f32[1] register {       for g in 0..(R + 63) / 64 serial { for c in 0..C serial {
//       s[0] = 0.0                 ->    alloc s { s[0] = 0.0
//       for r in 0..R serial {             for r in 0..min(64, R - g * 64) serial {
//         s[0] = s[0] + X[r, c] }            s[0] = s[0] + X[g * 64 + r, c] }
//       Y[c] = s[0] } }                    Y_part[c, g] = s[0] } } }
//                                      for c in 0..C serial { alloc s { s[0] = 0.0
//                                        for g in 0..(R + 63) / 64 serial {
//                                          s[0] = s[0] + Y_part[c, g] }
//                                        Y[c] = s[0] } } }
//
// Test: test/passes/split-reduce.tir, test/passes/split-reduce.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_SPLITREDUCE_H
#define TDSL_PASSES_SPLITREDUCE_H

#include "ir/IR.h"

#include <cstdint>

namespace tdsl {

/// Rows of a column reduction per partial: the partials add 2 / 64 of
/// the input's elements in traffic, and 64 loads per thread amortize its
/// index arithmetic.
constexpr int64_t SplitColumnChunk = 64;

/// Elements of a long vector per partial: a block of 256 threads folds 32
/// each, and 16 M elements make 2048 blocks.
constexpr int64_t SplitScalarChunk = 8192;

/// The longest constant vector one block reduces alone.
constexpr int64_t SplitScalarMax = 65536;

/// Splits the reductions of F's top-level nests that fit one of the forms
/// above; the caller maps the nests that come out.
void splitReductions(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_SPLITREDUCE_H
