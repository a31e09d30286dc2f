//===- MmaStaging.h - One operand of a tensor-core contraction, staged ---===//
//
// tile-mma's operand side (passes/TileMma.h): the layout of an operand's
// shared tile and its swizzle, chosen by a bank model; the cooperative copy
// of one k tile into a stage (16-byte cp.async with zero fill, or guarded
// element copies); the warp's fragments of a k step (ldmatrix, .trans where
// the contiguous index is not k, or one shared load per element). Not a
// pass: the pieces tile-mma builds its launch from.
//
// Test: test/passes/tile-mma.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_MMASTAGING_H
#define TDSL_PASSES_MMASTAGING_H

#include "passes/ContractionMatch.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"

#include <string>

namespace tdsl {

/// One operand as tile-mma stages it: its tile is Rows x Cols per stage
/// with the operand's contiguous index last (k when KFastest, else m or n).
struct MmaOperandStage {
  const ContractionOperand *Op = nullptr;
  const ir::ForNode *XLoop = nullptr; ///< its output loop: m for A, n for B
  const ir::ForNode *Red = nullptr;   ///< the reduction loop
  ir::MmaShape Shape = ir::MmaShape::M16N8K16;
  DType FragType = DType::F16; ///< the fragments' type: the tile's, or tf32 for f32 tiles
  bool IsA = false;
  int64_t BX = 0, WX = 0; ///< the block's and a warp's extent along XLoop
  int64_t Rows = 0, Cols = 0;
  std::string Tile, Frag;
  ir::Swizzle Swz;
  std::string SwzNote;  ///< the bank model's account, for a note
  ir::Expr Aligned;     ///< 16-byte copies can run: rows of whole chunks, 16-byte base
  ir::Expr BlockOffset; ///< XLoop's index of the block's first output
  ir::Expr WarpIndex;   ///< the warp's place along XLoop among the block's
  ir::Expr WarpOffset;  ///< of the warp's first output, within the block (WarpIndex * WX)
  /// Fed by the bulk tensor copy engine (sm_90): the tile is laid out as
  /// panels of Panel columns, [stages][Cols / Panel][Rows][Panel], each a
  /// box of rows of at most 128 bytes in the engine's swizzle. 0: the
  /// tile is [stages][Rows][Cols].
  int64_t Panel = 0;
  /// B's byte fragments where n is contiguous: ldmatrix .trans over byte
  /// pairs, regrouped by column (ir/IR.md), gives a lane 4 k rows of two
  /// columns, so each pair of the warp's mma tiles takes alternate columns
  /// (tile 2p column c is the warp's column 16 p + 2 c, tile 2p + 1 the
  /// next); the tile's k rows are staged with bits 1 and 3 swapped, so that
  /// an ldmatrix phase's rows (k 0, 1, 4, 5, 10, 11, 14, 15 and the like)
  /// are 8 consecutive rows, in 8 bank groups under the swizzle.
  bool BytePairs = false;
  /// Elements after each row of the tile (padFor), in place of a swizzle.
  int64_t Pad = 0;
  /// XLoop merges several output loops (a convolution's n, h, w:
  /// mergeSideLoops), whose indices each cost quotients and remainders:
  /// where x is the contiguous index, the guarded copies take a run of k
  /// rows of one column each, not a run of columns.
  bool Merged = false;
  /// XLoop merges output loops whose indices the operand's addresses fold
  /// into one row index (a linear layer's X[b, s, d]: SideMerge::Folds):
  /// where they are its leading subscripts, the copy engine reads them as
  /// one dimension.
  bool Joined = false;
  /// k merges reduced loops every access reads as one index (a reshaped
  /// k: mergeReducedLoops): its subscripts are k's quotients, which fold
  /// in the addresses, so a run along k is contiguous as along a plain k.
  bool FlatK = false;

  /// Why the copy engine cannot fill this operand's tile under schedule S
  /// in function F ("" if it can): the operand must be a global tensor
  /// read at [..., x, k] or [..., k, x] (the other indices free of both),
  /// or where Joined at [quotients of x..., k], over all of its k extent,
  /// in rows of 32, 64 or 128-byte multiples.
  std::string engineRefusal(const ir::Func &F, const MmaSchedule &S) const;
  /// The tensor the engine reads (engineRefusal was "").
  const std::string &tensor() const;
  /// The tile's indices of element (Row, Col) of stage Stage.
  std::vector<ir::Expr> at(const ir::Expr &Stage, const ir::Expr &Row, const ir::Expr &Col) const;
  /// The tile's shape and the names of its extents, for Stages stages.
  ir::Buffer tileBuffer(int64_t Stages) const;
  /// Bytes of one stage's tile.
  int64_t stageBytes() const { return Rows * (Cols + Pad) * dtypeBytes(Op->Type); }
  /// Elements padding each row of the tile under schedule S: where the
  /// fragments are 4-byte elements loaded one at a time (k not contiguous),
  /// rows of a pitch of 8 banks past a multiple of 32, so that a warp's 4
  /// k rows at 8 consecutive columns fall in 32 banks, and every load is
  /// the lane's address plus a constant (under a swizzle each of the
  /// warp's 32 loads a k tile took an address register of its own). 0
  /// elsewhere, and where the swizzle knob is off.
  int64_t padFor(const MmaSchedule &S) const;
  /// The engine's copy of k tile KTile into stage Stage (one box a panel),
  /// its bytes counted on mbarrier Bar[Stage].
  ir::Stmt engineCopy(const MmaSchedule &S, const ir::Expr &KTile, const ir::Expr &Stage,
                      const std::string &Bar, unsigned Line) const;

  /// Rows, Cols, the alignment test and the swizzle, for schedule S; the
  /// engine's panels and swizzle when Engine; BytePairs where it applies
  /// and Pairs allows it.
  void layout(const ir::Func &F, const MmaSchedule &S, bool Engine, bool Pairs = true);
  /// Elements of the tile per 16 bytes: one cp.async, one ldmatrix row.
  int64_t chunk() const { return 16 / dtypeBytes(Op->Type); }
  /// Whether the fragments come by ldmatrix: asked for, and k contiguous,
  /// or 16-bit elements (.trans), or B's bytes in pairs (BytePairs).
  bool usesLdMatrix(const MmaSchedule &S) const {
    return S.LdMatrix && (Op->KFastest || dtypeBytes(Op->Type) == 2 || BytePairs);
  }
  /// The tile's row of k-tile row R in the version of 16-byte copies (R
  /// itself unless BytePairs; the guarded version's element copies keep
  /// the rows in order, the cost of the permutation in each address
  /// outgrowing its registers).
  ir::Expr stagedRow(const ir::Expr &R, bool Wide) const;
  /// The warp's output column of column Col of its n8 mma tile Tile (a
  /// B side's): Tile * 8 + Col, or interleaved in pairs where BytePairs.
  ir::Expr tileColumn(const ir::Expr &Tile, const ir::Expr &Col) const;
  /// The copy of k tile KTile into stage Stage by all threads (TX, of
  /// S.threads()): cp.async if Wide, else one guarded element at a time.
  ir::Stmt copy(NameTable &Names, const MmaSchedule &S, const std::string &TX,
                const ir::Expr &KTile, const ir::Expr &Stage, bool Wide, unsigned Line) const;
  /// The warp's fragments for k step KK of stage Stage into buffer Buf,
  /// in the version of 16-byte copies (Wide) or guarded ones.
  ir::Stmt loadFragments(NameTable &Names, const MmaSchedule &S, const std::string &Lane,
                         const ir::Expr &Buf, const ir::Expr &Stage, const ir::Expr &KK, bool Wide,
                         unsigned Line) const;
};

/// Inner with block PID's output tile (TM, TN) of RowsT x ColsT bound: row
/// by row, or (Grouped) in groups of 8 tile rows, so that consecutive
/// blocks share B's k tiles in L2, and A's across the group.
ir::Stmt bindTileOrder(NameTable &Names, bool Grouped, const ir::Expr &RowsT,
                       const ir::Expr &ColsT, const std::string &PID, const std::string &TM,
                       const std::string &TN, ir::Stmt Inner, unsigned Line);

/// A loop over a warp's tiles or a thread's copies: constant and small, so
/// the unroll pass unrolls it fully (from -O2) and fragment indices become
/// constants, which keeps the fragments in registers.
inline ir::Stmt unrolled(const std::string &V, int64_t N, ir::Stmt Body, unsigned Line) {
  return ir::forLoop(V, cInt(0), cInt(N), ir::ForKind::Serial, std::move(Body), Line);
}

} // namespace tdsl

#endif // TDSL_PASSES_MMASTAGING_H
