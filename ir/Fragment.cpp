//===- Fragment.cpp - Which lane holds which element of an mma fragment ---===//
#include "ir/Fragment.h"

namespace tdsl::ir {

FragmentPos fragmentPos(MmaShape S, MmaOperand Op, unsigned Lane, unsigned I) {
  int64_t G = Lane / 4, T = Lane % 4;
  // C (and D) is the same for the three shapes: two rows eight apart, two
  // adjacent columns each.
  if (Op == MmaOperand::C)
    return {G + 8 * (I >> 1), T * 2 + (I & 1)};
  switch (S) {
  case MmaShape::M16N8K16: // two 16-bit elements per register
    if (Op == MmaOperand::A)
      return {G + 8 * ((I >> 1) & 1), T * 2 + (I & 1) + 8 * (I >> 2)};
    return {T * 2 + (I & 1) + 8 * (I >> 1), G};
  case MmaShape::M16N8K8: // one tf32 element per register
    if (Op == MmaOperand::A)
      return {G + 8 * (I & 1), T + 4 * (I >> 1)};
    return {T + 4 * I, G};
  case MmaShape::M16N8K32: // four 8-bit elements per register
    if (Op == MmaOperand::A)
      return {G + 8 * ((I >> 2) & 1), T * 4 + (I & 3) + 16 * (I >> 3)};
    return {T * 4 + (I & 3) + 16 * (I >> 2), G};
  }
  return {0, 0};
}

} // namespace tdsl::ir
