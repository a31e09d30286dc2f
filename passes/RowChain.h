//===- RowChain.h - One block per row for a chain of row reductions -------===//
//
// Requires: valid IR; nests without GPU loops (the naive lowering), where
//   the fusion stage lowered a row chain (graph/RowChain.h) as
//     for rows serial { alloc v1: T[1] register { ... {   (values per row)
//       phase; phase; ... } } }
//   with two or more phases, each one of
//     reduction  alloc ACC: T[1] register { ACC[0] = init...
//                  for c in 0..C serial { ACC[0] = ACC[0] OP E } epilogue... }
//     row map    v[0] = E, or Out[rows] = E      (no column)
//     element    for c in 0..C serial { Out[rows, c] = E }
//   every column loop over the same 0..C, OP one of + * max min, T one of
//   i32 i64 f32 f64.
// Ensures: one `launch NAME row_reduction` that picks by the row length C: 8
//   lanes per row for C <= 256 (four rows a warp; lanes past the last row
//   compute on it and store nothing), 16 for C <= 512 where the row moves
//   in runs (two rows a warp), a warp per row for C <= 1024, else a
//   block of N threads (reduce_threads, 256) per row, with the grid to
//   match; a constant C gets its mapping alone, and one longer than N
//   threads hold gets the fewest threads, up to 1024, that hold it. Every
//   thread holds the values per row; a reduction folds the thread's columns,
//   and shfl_xor butterflies (in a block, one barrier through shared memory)
//   give every thread the total. Where C is open, a second launch
//   NAME_long of 1024 threads a row (RowChainLongThreads) takes rows of
//   over 32768 elements (more than its threads hold; over 65536 where
//   the held launches below take those up to 65536), re-read: up to 256
//   of them (RowChainFewRows), or any number of whole runs where the chain
//   reads a tensor twice (few rows in flight, so that a row is still in
//   the L2 cache when read again); and where a held row saves reads (the re-read version
//   sweeps a tensor twice), launches NAME_held512 and NAME_held1024 take
//   rows of whole runs of 8193 to 16384 and to 32768 elements, held, with
//   no kept term (computed again) and no re-read version, and where rows
//   peel, NAME_held1024_peeled those of 16385 to 32768 elements that are
//   not whole runs, their runs from the first 16-byte boundary held in
//   shared memory (a launch of its own: beside the whole-runs version it
//   raised the registers of every row); NAME_heldTxN and
//   NAME_heldTxN_peeled do the same for rows of 32769 to 65536 elements,
//   T threads at N a thread, where the held tensors take at most
//   RowChainSharedWideRowBytes (one f16 tensor) and the target has the
//   shared memory: as much as leaves two blocks an SM in blocks of 512
//   (held512x112 on sm_90, rows of up to 57344 elements; only rows that
//   are not whole runs beside a 4-byte tensor along the row, whose L1 the
//   held rows would take), then held1024x64, one an SM. A block of 1024
//   threads holds its rows in shared memory where they take at most
//   RowChainSharedRowBytes (each thread's runs in its own slots, brought
//   back to registers a run at a time), and asks ptxas for two blocks a SM
//   (min_blocks; one where a block's row leaves no room for two); a
//   launch that would hold rows in registers does not come with a 4-byte
//   tensor along the row (layernorm takes NAME_held1024 only). The grids are disjoint: one
//   launch runs; a row the held launch cannot tell is unaligned goes an
//   element at a time. Within each mapping, versions chosen at run time:
//   when the row's tensors take runs of 16 bytes (C and their rows
//   multiples of the run, aligned) and a row fits in the registers (32
//   elements a thread), each thread loads its runs of the row once into
//   registers and every phase reads them there, so the row is read from
//   memory once (a reduction's term a later phase computes again is kept
//   too where no tensor along the row is of 4 bytes, and the launch then
//   divides inline, fdiv = inline: the kept values live across its
//   quotients); longer rows re-read their runs from memory (the L2 cache)
//   in each phase (a sweep that only reads unrolled by 4, 2 peeled),
//   consecutive reductions that read none of each other's
//   results in one sweep, and a max with the sum of exp(T - max) of its
//   own term T after it (online_softmax: the sum rescaled where the
//   running max grows). Rows of halves that are not whole runs (a
//   vocabulary of 50257 in a block, a ViT's 197 tokens in a warp; of a
//   known length, one that is not a multiple of 4) but whose tensors are
//   aligned and share the row's offset (one the same in every row,
//   gamma[c], read an element at a time beside the runs) take runs from the
//   row's first 16-byte boundary, re-read in each phase (a held version
//   beside the others would raise the whole kernel's registers, for every
//   row), and their head and tail an element at a time (peeled); where the
//   length is open and a tensor is swept more than once, such rows of up
//   to 1024 elements take a launch of their own (8 or 16 lanes or a warp a
//   row) that holds their runs, read once; other rows go one element at a
//   time. No held 4-byte tensor lives across an f32 division (its slow
//   path is a call, where 32 values a thread would spill). Results differ
//   from the serial loops only by the reassociation of OP, the same on
//   every run.
// Why here: after the contraction passes, before reduce-rows, which takes
//   a lone reduction (one phase) and would decline a chain.
//
//   for r in 0..R serial {                 for row in 0..R block.x { let r = row {
//     alloc s: f32[1] register {             alloc s_sum_warps: f32[8] shared {
//       alloc s_sum: f32[1] register {       for warp, lane { let tid {
//         s_sum[0] = 0.0              ->       if C % 8 == 0 && ... && C <= 8192 {
//         for c ... { s_sum += X[r, c] }         X_row[j, v] = X[r, (tid + 256 j) 8 + v]
//         s[0] = s_sum[0] }                      s_sum: fold X_row, butterflies, barrier
//       for c in 0..C serial {                   Y[r, ...] = X_row[j, v] / s[0] (16 bytes)
//         Y[r, c] = X[r, c] / s[0] } } }       } else ... } } } } }
//
// Code: passes/RowChain.cpp (the mapping), passes/RowChainLaunches.cpp
//   (which launches a chain gets), passes/RowChainPhases.cpp (a
//   phase's code), passes/RowChainOnline.cpp (the online max and sum),
//   passes/RowChainPeel.cpp (peeled rows), passes/RowChainMapper.h (the
//   mapper they share).
// Test: test/passes/row-chain.tir, test/passes/row-chain-cuda.test,
//   test/passes/row-chain-online.test, test/passes/row-chain-peel.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_ROWCHAIN_H
#define TDSL_PASSES_ROWCHAIN_H

#include "ir/IR.h"

#include <cstdint>

namespace tdsl {

/// Elements of a row each thread holds in registers: a row of up to
/// 32 * reduce_threads elements is read from memory once.
constexpr int64_t RowChainCacheElements = 32;

/// Bytes a block of RowChainLongThreads may hold of a row in shared
/// memory (a row of 32768 halves): two such blocks fit an SM of sm_80 or
/// newer. Held in registers, a row takes 16 of the 32 registers a thread of
/// two such blocks has, and with a chain's own values ptxas either spilled
/// or left one block a SM, which kept fewer loads in flight.
constexpr int64_t RowChainSharedRowBytes = 64 * 1024;

/// Bytes a block of RowChainLongThreads may hold of a row in shared memory
/// at more than RowChainCacheElements a thread, up to twice that (a row of
/// 65536 halves: one such block an SM), where the long launch would read
/// the row again.
constexpr int64_t RowChainSharedWideRowBytes = 128 * 1024;

/// Threads per row of the long launch: rows longer than such a block
/// holds (32768 elements), at most RowChainFewRows of them, or any number
/// where the chain reads a tensor more than once and the rows are whole
/// runs.
constexpr int64_t RowChainLongThreads = 1024;

/// Rows up to which a block of reduce_threads (256) per row leaves the
/// GPU's SMs short of loads in flight: two rows a SM of a GPU of about
/// 128 SMs, 512 of an SM's 2048 threads.
constexpr int64_t RowChainFewRows = 256;

/// Maps each row chain of F to one block per row.
void rowChain(ir::Func &F);

} // namespace tdsl

#endif // TDSL_PASSES_ROWCHAIN_H
