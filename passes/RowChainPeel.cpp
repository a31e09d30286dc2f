//===- RowChainPeel.cpp - Rows of any length in 16-byte runs -------------===//
//
// For the row-chain pass (passes/RowChain.h, peel_rows): in each mapping
// (a group of lanes, a warp or a block per row), a row that is not a whole
// number of 16-byte runs takes its runs from its first 16-byte boundary,
// where its tensors are aligned and share the row's offset, and its head
// and tail an element at a time; a tensor read at the same place in every
// row (gamma[c]) is read an element at a time beside the runs. The runs
// are those of the re-read version (RowChainPhases.cpp's sweep, with Peel
// set); vectorize proves them aligned by the offset modulo the run.
//
//===----------------------------------------------------------------------===//
#include "ir/Match.h"
#include "ir/Simplify.h"
#include "passes/RowChainMapper.h"

namespace tdsl::rowchain {

namespace {
bool isAlignmentTest(const Expr &E) {
  return E->Kind == ExprKind::Call && static_cast<const CallNode &>(*E).Fn == Intrinsic::Aligned;
}
} // namespace

Expr ChainMapper::conjuncts(const Expr &E, const std::function<bool(const Expr &)> &Keep) {
  if (E->Kind == ExprKind::Binary && static_cast<const BinaryNode &>(*E).Op == BinaryOp::And) {
    Expr A = conjuncts(static_cast<const BinaryNode &>(*E).A, Keep);
    Expr B = conjuncts(static_cast<const BinaryNode &>(*E).B, Keep);
    return A && B ? land(A, B) : A ? A : B;
  }
  return Keep(E) ? E : nullptr;
}

bool ChainMapper::readByElement(const std::string &Buffer) const {
  for (size_t K = 0; K < PeelByElement.size(); ++K)
    if (PeelByElement[K] && static_cast<const LoadNode &>(*Staged[K]).Buffer == Buffer)
      return true;
  return false;
}

Expr ChainMapper::runSizes() const {
  if (PeelCond)
    return nullptr;
  return WideCond ? conjuncts(WideCond, [](const Expr &E) { return !isAlignmentTest(E); })
                  : nullptr;
}

void ChainMapper::planPeel() {
  // Rows of halves only: beside a 4-byte tensor along the row (runs of 4,
  // 16-byte pieces of 32 bytes a run) the version's lets and offsets made
  // attention's f32 chain spill with 64-bit indices.
  if (Width != 8)
    return;
  // Each tensor along the row, at column 0 of the row: one offset for all,
  // but for a tensor read at the same place in every row (layernorm's
  // gamma[c]), whose runs then start elsewhere than the row's: it is read
  // an element at a time beside the others' runs (PeelByElement), which
  // for a tensor the rows share mostly hits the L1 cache.
  PeelByElement.assign(Staged.size(), false);
  auto OffsetOf = [](const Buffer &B, std::vector<Expr> Idx) {
    Idx.back() = intImm(0);
    return simplifyExpr(linearIndex(B.Shape, Idx));
  };
  Expr Offset;
  auto Shares = [&](const Buffer *B, const std::vector<Expr> &Idx) {
    if (!B || B->rank() < 2 || !structurallyEqual(B->Shape.back(), Cols))
      return false;
    Expr O = OffsetOf(*B, Idx);
    if (Offset && !structurallyEqual(O, Offset))
      return false;
    Offset = O;
    return true;
  };
  for (size_t K = 0; K < Staged.size(); ++K) {
    const auto &N = static_cast<const LoadNode &>(*Staged[K]);
    const Buffer *B = findTensor(F, N.Buffer);
    PeelByElement[K] = B && asConstInt(OffsetOf(*B, N.Indices));
    if (!PeelByElement[K] && !Shares(B, N.Indices))
      return;
  }
  for (const RowPhase &P : Phases)
    if (P.Kind == RowPhaseKind::Element && !Shares(findTensor(F, P.Out), P.OutIdx))
      return;
  if (!Offset)
    return;
  // WideCond's alignment tests, without its whole-runs ones, nor those of
  // the tensors read an element at a time.
  PeelCond = conjuncts(WideCond, [&](const Expr &E) {
    return isAlignmentTest(E) &&
           !readByElement(
               static_cast<const LoadNode &>(*static_cast<const CallNode &>(*E).Args[0]).Buffer);
  });
  if (!PeelCond)
    return;
  PeelHead = imod(sub(intImm(Width), imod(Offset, intImm(Width))), intImm(Width));
}

Stmt ChainMapper::peeled(Mode M, const std::vector<std::string> &Totals, unsigned Line) {
  Peel = true;
  Stmt Body = version(M, Totals, Line);
  Peel = false;
  Expr Whole = idiv(binary(BinaryOp::Max, sub(Cols, var(Head)), intImm(0)), intImm(Width));
  return letStmt(Head, PeelHead, letStmt(NumRuns, Whole, Body, Line), Line);
}

Stmt ChainMapper::remainder(const std::function<Stmt(ExprReplacer &)> &PerElement,
                            unsigned Line) const {
  ExprReplacer None;
  Expr Past = mul(var(NumRuns), intImm(Width));
  Expr Trips = idiv(add(sub(sub(Cols, Past), tid()), intImm(Block - 1)), intImm(Block));
  Expr E = add(tid(), mul(var(Step), intImm(Block)));
  Expr Column = select(lt(E, var(Head)), E, add(E, Past));
  return forLoop(Step, intImm(0), Trips, ForKind::Serial,
                 letStmt(Col, Column, PerElement(None), Line), Line, elementUnroll());
}

} // namespace tdsl::rowchain
