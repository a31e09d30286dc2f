//===- MmaMatch.h - A contraction as the tensor cores take it -------------===//
//
// tile-mma's first step (passes/TileMma.h), after matchContraction: each
// accumulator's update must be ACC[0] + f32(A) * f32(B) (either order) of
// one row operand and one column operand, both f16 or both bf16 (mma
// m16n8k16), f32(tf32(A)) * f32(tf32(B)) of f32 loads (m16n8k8), into an
// f32 ACC, or i32(A) * i32(B) of i8 loads into an i32 ACC (m16n8k32); the
// siblings of one nest must all take the same shape. What it finds is the
// operands as sides to stage (each distinct operand once, the row side's
// first) and, per accumulator, the two sides it multiplies. Not a pass:
// the first piece tile-mma builds its launch from.
//
// Test: test/passes/tile-mma.tir
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_MMAMATCH_H
#define TDSL_PASSES_MMAMATCH_H

#include "passes/ContractionMatch.h"
#include "passes/MmaStaging.h"

#include <string>
#include <vector>

namespace tdsl {

/// A contraction tile-mma takes. Sides point into N.Operands: the object
/// stays where matchMma filled it.
struct MmaContraction {
  ContractionNest N;
  /// One per distinct operand: the row side's (A) first, then the column
  /// side's (B); two, unless siblings add their own.
  std::vector<MmaOperandStage> Sides;
  /// Per accumulator of N (one, or one per sibling): the sides it
  /// multiplies.
  struct Product {
    size_t A = 0, B = 0;
  };
  std::vector<Product> Products;
  ir::MmaShape Shape = ir::MmaShape::M16N8K16;
  DType FragType = DType::F16; ///< the operands' fragments: f16, bf16, tf32 or i8

  MmaContraction() = default;
  MmaContraction(const MmaContraction &) = delete;
  MmaContraction &operator=(const MmaContraction &) = delete;
};

/// tile-mma's remark (pass Pass) that it leaves Nest to the passes after
/// it, and why ("tensor_cores = on, but ..." when On); false.
bool declineMma(const char *Pass, bool On, const ir::Stmt &Nest, const std::string &Why);

/// Whether Nest is a contraction the tensor cores take, into Out. A nest
/// that is a contraction but not such is declined with a remark of Pass
/// ("tensor_cores = on, but ..." when On); one that is no contraction, or a
/// product of one row or column read along k, which reduce-rows takes
/// (vectorProduct), only when On.
bool matchMma(const ir::Func &F, const ir::Stmt &Nest, const char *Pass, bool On,
              MmaContraction &Out);

/// S's warp tile (and block tile) for M, unless pinned: 64x32 warps for
/// a batched nest unless LongK (its k loop and its columns long); for
/// siblings, warps that hold about one warp tile's accumulators in all.
void fitWarpTile(const ir::Func &F, const MmaContraction &M, MmaSchedule &S, bool LongK);

/// The bytes of M's shared operand tiles under S: every side's stages of
/// k tiles over its block extent.
int64_t mmaTileBytes(const MmaContraction &M, const MmaSchedule &S);

/// How the fragments of Sides are loaded, for tile-mma's note: by
/// ldmatrix (naming the operands that take .trans: "A", "B", or with
/// siblings their tensors), or one shared load per element, and why. A and
/// B are the sides of the first accumulator's product.
std::string fragmentNote(const std::vector<MmaOperandStage> &Sides, size_t A, size_t B,
                         const MmaSchedule &S);

/// tile-mma's note on a launch of M under S: the mma and its types, the
/// block, warp and k tiles, the stages, how fragments load, the block
/// order, fragments a k step ahead (WideTwice: in the cp.async version;
/// GeneralTwice: in both), and the siblings' operands staged once;
/// Engine: the aligned version's stages filled by the copy engine.
std::string mmaLaunchNote(const MmaContraction &M, const MmaSchedule &S, bool WideTwice,
                          bool GeneralTwice, bool Engine);

} // namespace tdsl

#endif // TDSL_PASSES_MMAMATCH_H
