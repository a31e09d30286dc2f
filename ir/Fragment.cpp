//===- Fragment.cpp - Which lane holds which element of an mma fragment ---===//
#include "ir/Fragment.h"

namespace tdsl::ir {

namespace {

/// One coordinate of a fragment element: G * groupID + T * threadID_in_group
/// + sum over b of Bit[b] * (bit b of the element index).
struct Coord {
  int64_t G, T;
  int64_t Bit[4];
};

/// Row and column of an element of every operand of every shape.
struct Layout {
  Coord Row, Col;
};

Layout layout(MmaShape S, MmaOperand Op) {
  // C (and D) is the same for the three shapes: two rows eight apart, two
  // adjacent columns each.
  if (Op == MmaOperand::C)
    return {{1, 0, {0, 8, 0, 0}}, {0, 2, {1, 0, 0, 0}}};
  bool A = Op == MmaOperand::A;
  switch (S) {
  case MmaShape::M16N8K16: // two 16-bit elements per register
    if (A)
      return {{1, 0, {0, 8, 0, 0}}, {0, 2, {1, 0, 8, 0}}};
    return {{0, 2, {1, 8, 0, 0}}, {1, 0, {0, 0, 0, 0}}};
  case MmaShape::M16N8K8: // one tf32 element per register
    if (A)
      return {{1, 0, {8, 0, 0, 0}}, {0, 1, {0, 4, 0, 0}}};
    return {{0, 1, {4, 0, 0, 0}}, {1, 0, {0, 0, 0, 0}}};
  case MmaShape::M16N8K32: // four 8-bit elements per register
    if (A)
      return {{1, 0, {0, 0, 8, 0}}, {0, 4, {1, 2, 0, 16}}};
    return {{0, 4, {1, 2, 16, 0}}, {1, 0, {0, 0, 0, 0}}};
  }
  return {};
}

/// The top bit of a lane's element index (its part has a power-of-2 size,
/// IR.h mmaFragmentSizes): it needs no masking.
unsigned topBit(MmaShape S, MmaOperand Op) {
  MmaFragmentSizes Sz = mmaFragmentSizes(S);
  unsigned Elems = Op == MmaOperand::A ? Sz.A : Op == MmaOperand::B ? Sz.B : Sz.C, B = 0;
  while ((2u << B) < Elems)
    ++B;
  return B;
}

int64_t evaluate(const Coord &C, unsigned Lane, unsigned I) {
  int64_t V = C.G * (Lane / 4) + C.T * (Lane % 4);
  for (unsigned B = 0; B < 4; ++B)
    V += C.Bit[B] * ((I >> B) & 1);
  return V;
}

/// The coordinate as an expression, spelled as a reader would: the lane
/// term, then each bit of I as I / 2^b % 2 (no division for bit 0, no
/// modulo for the top bit).
Expr build(const Coord &C, unsigned Top, const Expr &Lane, const Expr &I) {
  auto Scaled = [](Expr X, int64_t K) { return K == 1 ? X : mul(std::move(X), intImm(K)); };
  Expr V = C.G ? Scaled(binary(BinaryOp::Div, Lane, intImm(4)), C.G)
               : Scaled(binary(BinaryOp::Mod, Lane, intImm(4)), C.T);
  for (unsigned B = 0; B <= Top; ++B) {
    if (!C.Bit[B])
      continue;
    Expr Bit = B ? binary(BinaryOp::Div, I, intImm(int64_t(1) << B)) : I;
    if (B != Top)
      Bit = binary(BinaryOp::Mod, Bit, intImm(2));
    V = add(V, Scaled(Bit, C.Bit[B]));
  }
  return V;
}

} // namespace

FragmentPos fragmentPos(MmaShape S, MmaOperand Op, unsigned Lane, unsigned I) {
  Layout L = layout(S, Op);
  return {evaluate(L.Row, Lane, I), evaluate(L.Col, Lane, I)};
}

std::pair<Expr, Expr> fragmentPosExpr(MmaShape S, MmaOperand Op, const Expr &Lane, const Expr &I) {
  Layout L = layout(S, Op);
  unsigned Top = topBit(S, Op);
  return {build(L.Row, Top, Lane, I), build(L.Col, Top, Lane, I)};
}

} // namespace tdsl::ir
