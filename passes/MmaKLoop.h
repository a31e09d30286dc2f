//===- MmaKLoop.h - A tensor-core block's k loop -------------------------===//
//
// tile-mma's k loop (passes/TileMma.h): each k tile's operand copies into
// the ring of shared stages (passes/MmaStaging.h), the fragment loads and
// the mmas, in one of four forms: one stage copied synchronously; a ring
// of stages with the fragments loaded step by step; double-buffered
// (MmaSchedule::DoubleBuffer), the ring with each k step's fragments
// loaded during the step before; or that ring filled by the bulk tensor
// copy engine (sm_90), its stages handed over by mbarriers instead of
// block barriers. Not a pass: a piece tile-mma builds its launch from,
// once per version of the copies (16-byte cp.async or the engine, or
// guarded element copies).
//
// Test: test/passes/tile-mma.tir, test/passes/tile-mma-cuda.test,
//       test/passes/tile-mma-engine.tir
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
  /// Why the copy engine cannot feed contraction M's loop under schedule
  /// S in F ("" if it can): it needs sm_90, 16-bit operands, a ring whose
  /// fragments are double-buffered (an even number of k steps) by
  /// ldmatrix, and operands it can copy (MmaOperandStage::engineRefusal).
  static std::string engineRefusal(const ir::Func &F, const MmaSchedule &S,
                                   const MmaContraction &M);
  /// S made the copy engine's where it can feed the loop of M in F: k
  /// tiles of 128-byte rows through 3 stages unless pinned, fewer stages
  /// to fit the shared memory. Returns why not ("" if it can; S is then
  /// unchanged).
  static std::string engineSchedule(const ir::Func &F, const MmaContraction &M,
                                    MmaSchedule &S);
  /// The loop over Tiles k tiles with every operand's tile filled by the
  /// bulk tensor copy engine, its stages tracked by the shared mbarrier
  /// arrays Full and Freed (S.Stages each), which it initializes.
  ir::Stmt buildEngine(const ir::Expr &Tiles, const std::string &Full, const std::string &Freed);

private:
  NameTable &Names;
  const MmaSchedule &S;
  const MmaContraction &M;
  std::string TX, Lane, KT;
  ir::Expr KFirst;
  unsigned Line;
  int64_t Steps; ///< mma k steps per k tile
  bool Wide = true; ///< the version being built: cp.async copies, or guarded

  /// Every operand's fragments for k step KK of stage Stage, into
  /// fragment buffer Buf.
  ir::Stmt loadAll(int64_t Buf, const ir::Expr &Stage, const ir::Expr &KK);
  /// Every operand's copy of k tile KTile into stage Stage: cp.async if
  /// Wide (all aligned), else guarded element copies.
  ir::Stmt copyAll(const ir::Expr &KTile, const ir::Expr &Stage, bool Wide);
  ir::Stmt mmas(const ir::Expr &Buf);
  /// One k tile's steps on fragment buffer 0.
  ir::Stmt compute(const ir::Expr &Stage);
  /// The ring of build() for the version Wide says (MmaKLoop::Wide).
  ir::Stmt pipelinedLoop(const ir::Expr &Tiles);
};

} // namespace tdsl

#endif // TDSL_PASSES_MMAKLOOP_H
