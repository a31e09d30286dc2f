//===- Fragment.h - Which lane holds which element of an mma fragment -----===//
//
// The PTX ISA's fragment layouts for mma.sync (section "Matrix Fragments
// for mma.m16n8k*"), in one place: the interpreter runs mma and ldmatrix by
// them, and the tensor-core lowering places its accumulators by them. A
// lane's groupID is lane / 4 and its threadID_in_group lane % 4.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_FRAGMENT_H
#define TDSL_IR_FRAGMENT_H

#include "ir/IR.h"

namespace tdsl::ir {

enum class MmaOperand { A, B, C };

/// Row and column, within its 16 x K (A), K x 8 (B) or 16 x 8 (C) matrix,
/// of element I of lane Lane's fragment.
struct FragmentPos {
  int64_t Row, Col;
};
FragmentPos fragmentPos(MmaShape S, MmaOperand Op, unsigned Lane, unsigned I);

} // namespace tdsl::ir

#endif // TDSL_IR_FRAGMENT_H
