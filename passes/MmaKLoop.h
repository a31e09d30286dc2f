//===- MmaKLoop.h - A tensor-core block's k loop -------------------------===//
//
// tile-mma's k loop (passes/TileMma.h): each k tile's operand copies into
// the ring of shared stages (passes/MmaStaging.h), the fragment loads and
// the mmas, in one of three forms: one stage copied synchronously; a ring
// of stages with the fragments loaded step by step; or, double-buffered
// (MmaSchedule::DoubleBuffer), the ring with each k step's fragments
// loaded during the step before. Not a pass: a piece tile-mma builds its
// launch from, once per version of the copies (16-byte cp.async, or
// guarded element copies).
//
// Test: test/passes/tile-mma.tir, test/passes/tile-mma-cuda.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_MMAKLOOP_H
#define TDSL_PASSES_MMAKLOOP_H

#include "passes/MmaMatch.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include <string>

namespace tdsl {

class MmaKLoop {
public:
  /// The loop of contraction M under schedule S, in a launch whose thread
  /// is TX, lane Lane, k tile variable KT; the block's first k tile is
  /// KFirst (null: 0; a split's block walks its own run).
  MmaKLoop(NameTable &Names, const MmaSchedule &S, const MmaContraction &M, std::string TX,
           std::string Lane, std::string KT, ir::Expr KFirst, unsigned Line);

  /// Whether the version whose copies are cp.async (Wide) or guarded
  /// loads the fragments a step ahead, in two buffers.
  bool pipelined(bool Wide) const;
  /// The loop over Tiles k tiles, in that version.
  ir::Stmt build(const ir::Expr &Tiles, bool Wide);

private:
  NameTable &Names;
  const MmaSchedule &S;
  const MmaContraction &M;
  std::string TX, Lane, KT;
  ir::Expr KFirst;
  unsigned Line;
  int64_t Steps; ///< mma k steps per k tile

  /// Every operand's fragments for k step KK of stage Stage, into
  /// fragment buffer Buf.
  ir::Stmt loadAll(int64_t Buf, const ir::Expr &Stage, int64_t KK);
  /// Every operand's copy of k tile KTile into stage Stage: cp.async if
  /// Wide (all aligned), else guarded element copies.
  ir::Stmt copyAll(const ir::Expr &KTile, const ir::Expr &Stage, bool Wide);
  ir::Stmt mmas(const ir::Expr &Buf);
  /// One k tile's steps on fragment buffer 0.
  ir::Stmt compute(const ir::Expr &Stage);
  ir::Stmt pipelinedLoop(const ir::Expr &Tiles, bool Wide);
};

} // namespace tdsl

#endif // TDSL_PASSES_MMAKLOOP_H
