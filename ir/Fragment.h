//===- Fragment.h - Which lane holds which element of an mma fragment -----===//
//
// The PTX ISA's fragment layouts for mma.sync (section "Matrix Fragments
// for mma.m16n8k*"), in one table: the interpreter runs mma and ldmatrix by
// it, and the tensor-core lowering places fragment loads and accumulators
// by it. A lane's groupID is lane / 4 and its threadID_in_group lane % 4.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_FRAGMENT_H
#define TDSL_IR_FRAGMENT_H

#include "ir/IR.h"

#include <utility>

namespace tdsl::ir {

enum class MmaOperand { A, B, C };

/// Row and column, within its 16 x K (A), K x 8 (B) or 16 x 8 (C) matrix,
/// of element I of lane Lane's fragment.
struct FragmentPos {
  int64_t Row, Col;
};
FragmentPos fragmentPos(MmaShape S, MmaOperand Op, unsigned Lane, unsigned I);

/// The same as i64 expressions of a lane and an element index, for the
/// passes (which index fragments with loop variables).
std::pair<Expr, Expr> fragmentPosExpr(MmaShape S, MmaOperand Op, const Expr &Lane, const Expr &I);

} // namespace tdsl::ir

#endif // TDSL_IR_FRAGMENT_H
