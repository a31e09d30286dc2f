//===- ContractionStaging.h - One operand of a CUDA-core contraction -----===//
//
// tile-contraction's operand side (passes/TileContraction.h): where each
// thread's share of an operand's k tile comes from and goes to, the copy
// runs (copy_runs), the cooperative copy of one k tile into shared memory
// or into prefetch registers, and the store of those registers into a
// stage. Consecutive threads take consecutive global addresses along the
// operand's contiguous index; blocks inside the tensor copy without bounds
// checks. Not a pass: the pieces tile-contraction builds its launch from,
// as passes/MmaStaging.h is for tile-mma.
//
// Test: test/passes/tile-contraction.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_CONTRACTIONSTAGING_H
#define TDSL_PASSES_CONTRACTIONSTAGING_H

#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include <string>
#include <vector>

namespace tdsl {

/// The index of element (KK, X) of a staged tile: in stage Stage, or in
/// the one buffer when Stage is null.
inline std::vector<ir::Expr> stagedAt(const ir::Expr &Stage, ir::Expr KK, ir::Expr X) {
  if (Stage)
    return {Stage, std::move(KK), std::move(X)};
  return {std::move(KK), std::move(X)};
}

/// One staged operand: a load that uses k and exactly one tile dimension.
/// Its tile is TileK x (BM or BN) per stage, k first.
struct CoreOperandStage {
  ir::Expr Load;
  DType Type = DType::F32;
  bool RowSide = false;  ///< indexed by the output row (m); else by the column (n)
  bool KFastest = false; ///< its last index uses k: the copy runs k fastest
  const ir::ForNode *XLoop = nullptr; ///< its output loop: m or n
  const ir::ForNode *Red = nullptr;   ///< the reduction loop
  /// Consecutive elements along the fast index each thread copies: 4 (16
  /// bytes) when the operand is a row-major 4-byte tensor contiguous along
  /// it, 1 otherwise. WideCond (null when Run is 1) is what makes a run one
  /// 16-byte global load: its rows a multiple of Run, its start aligned.
  int64_t Run = 1;
  ir::Expr WideCond;
  /// Its output index is merged (passes/ContractionMatch.h,
  /// mergeSideLoops): each element's address takes a quotient and a
  /// remainder of it, so where k is its contiguous index a thread copies
  /// one run of k per tile line, whose address it computes once.
  bool Merged = false;
  std::string Tile, Regs, Next;
  ir::Expr BlockOffset; ///< XLoop's index of the block's first output

  /// Elements of the k tile each thread copies (the last round partly).
  int64_t copiesPerThread(const ContractionSchedule &S) const;
  /// Run and WideCond for schedule S (copy_runs).
  void chooseRun(const ir::Func &F, const ContractionSchedule &S);
  /// One cooperative copy of the k tile starting at KBase by all threads
  /// (TX): into Next (registers, ToRegs) or straight into Tile at Stage;
  /// zeros outside the tensor.
  ir::Stmt copy(NameTable &Names, const ContractionSchedule &S, const std::string &TX,
                const ir::Expr &KBase, const ir::Expr &Stage, bool ToRegs, unsigned Line) const;
  /// Next (a prefetched tile, as copy(ToRegs) laid it out) -> Tile at Stage.
  ir::Stmt storeNext(NameTable &Names, const ContractionSchedule &S, const std::string &TX,
                     const ir::Expr &Stage, unsigned Line) const;
};

/// Schedule S fitted to a nest of Accs accumulators (siblings) staging
/// Ops: unless the thread tile is pinned, a thread keeps 8x4 outputs of
/// each (4x4 from four on; 64 accumulator registers for two, 96 for
/// three), along the side with more distinct operands first, and the
/// block tile shrinks with it unless pinned (else it takes more threads);
/// then, unless stages are pinned, one stage when two would not fit the
/// target's shared memory. "" if the tiles fit, else why not.
std::string fitSiblings(const ir::Func &F, size_t Accs, const std::vector<CoreOperandStage> &Ops,
                        ContractionSchedule &S);

} // namespace tdsl

#endif // TDSL_PASSES_CONTRACTIONSTAGING_H
