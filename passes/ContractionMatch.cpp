//===- ContractionMatch.cpp - Recognize a contraction nest ----------------===//
#include "passes/ContractionMatch.h"
#include "ir/Match.h"
#include "passes/PassUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

namespace tdsl {

using namespace ir;

Stmt withAccumulatorsAt(const ContractionNest &C, const std::vector<Stmt> &Stmts,
                        const std::vector<Expr> &Indices) {
  Stmt S = block(Stmts);
  for (const ContractionAcc &A : C.Accs)
    S = withAccumulatorAt({S}, A.Name, Indices);
  return S;
}

std::optional<ContractionNest> matchContraction(const Stmt &Nest, const char *Pass,
                                                bool ExplainAll) {
  auto Decline = [&](const llvm::Twine &Why) -> std::optional<ContractionNest> {
    if (Pass)
      remark(Pass, Nest->SrcLine, Why + "; left to the passes after it");
    return std::nullopt;
  };
  // A nest that is no contraction at all is explained only when asked.
  auto NotOne = [&](const llvm::Twine &Why) -> std::optional<ContractionNest> {
    return ExplainAll ? Decline("not a contraction: " + Why) : std::nullopt;
  };
  LoopRun Run = outerSerialLoops(Nest);
  if (Run.Inner->Kind != StmtKind::Allocate)
    return NotOne("no accumulator, so nothing is reduced");
  if (Run.Loops.size() < 2)
    return NotOne("fewer than two output loops (a contraction's rows and columns)");
  // The accumulators: one-element registers, one inside the other.
  ContractionNest C;
  Stmt Inner = Run.Inner;
  while (Inner->Kind == StmtKind::Allocate) {
    const auto &A = static_cast<const AllocateNode &>(*Inner);
    if (A.Buf.Scope != MemScope::Register || A.Buf.rank() != 1 ||
        asConstInt(A.Buf.Shape[0]) != 1)
      break;
    C.Accs.push_back({A.Buf.Name, A.Buf.Type, nullptr, 0});
    Inner = A.Body;
  }
  if (C.Accs.empty())
    return NotOne("no accumulator, so nothing is reduced");
  std::vector<Stmt> Body = flattenBlocks(Inner);
  size_t LoopAt = Body.size();
  for (size_t I = 0; I < Body.size(); ++I)
    if (Body[I]->Kind == StmtKind::For) {
      if (LoopAt != Body.size())
        return Decline("more than one reduction loop");
      LoopAt = I;
    }
  if (LoopAt == Body.size())
    return NotOne("no reduction loop");
  C.Red = static_cast<const ForNode *>(Body[LoopAt].get());
  std::vector<std::string> Reduced = {C.Red->Var};
  for (Stmt In = C.Red->Body; In->Kind == StmtKind::For;
       In = static_cast<const ForNode &>(*In).Body)
    Reduced.push_back(static_cast<const ForNode &>(*In).Var);
  if (Reduced.size() > 1)
    return Decline("the reduction runs over a nest of loops ('" + llvm::join(Reduced, "', '") +
                   "'); the tile passes take one reduced index");
  C.Batch.assign(Run.Loops.begin(), Run.Loops.end() - 2);
  C.Row = Run.Loops[Run.Loops.size() - 2];
  C.Col = Run.Loops.back();
  std::vector<std::string> Outer;
  for (const ForNode *L : Run.Loops)
    Outer.push_back(L->Var);
  if (C.Red->Loop != ForKind::Serial)
    return Decline("the reduction loop is not serial");
  if (usesAnyVar(C.Red->Min, Outer) || usesAnyVar(C.Red->Extent, Outer))
    return Decline("the reduction's bounds depend on the output indices");
  // One store per accumulator, each reading no other accumulator.
  for (const Stmt &U : flattenBlocks(C.Red->Body)) {
    auto It = U->Kind != StmtKind::Store
                  ? C.Accs.end()
                  : llvm::find_if(C.Accs, [&](const ContractionAcc &A) {
                      return A.Name == static_cast<const StoreNode &>(*U).Buffer;
                    });
    if (It == C.Accs.end() || It->Update)
      return Decline("the reduction loop does more than update the accumulator" +
                     llvm::Twine(C.Accs.size() > 1 ? "s, once each" : ""));
    It->Update = static_cast<const StoreNode &>(*U).Value;
    It->Line = U->SrcLine;
  }
  for (const ContractionAcc &A : C.Accs)
    if (!A.Update)
      return Decline("the accumulator '" + A.Name + "' is not updated in the reduction loop");

  // Init and epilogue: no loops; the init reads nothing.
  C.Init.assign(Body.begin(), Body.begin() + LoopAt);
  C.Epilogue.assign(Body.begin() + LoopAt + 1, Body.end());
  for (const Stmt &P : C.Init)
    if (P->Kind != StmtKind::Store || !C.accumulates(static_cast<const StoreNode &>(*P).Buffer) ||
        hasLoads(static_cast<const StoreNode &>(*P).Value))
      return Decline("the accumulator's initialization reads memory");
  for (const Stmt &E : C.Epilogue)
    if (hasGPULoops(E) || usesAnyVar(E, {C.Red->Var}))
      return Decline("the epilogue uses the reduction index");

  // Every load of an update is its own ACC[0] or an operand of one side.
  // Each distinct load once: A[m, k] read twice, or by two siblings, is
  // one operand.
  std::vector<Expr> Loads;
  for (const ContractionAcc &A : C.Accs)
    for (const Expr &L : loadsOf(A.Update)) {
      const auto &N = static_cast<const LoadNode &>(*L);
      if (C.accumulates(N.Buffer) && N.Buffer != A.Name)
        return Decline("the update of '" + A.Name + "' reads the accumulator '" + N.Buffer + "'");
      if (llvm::none_of(Loads, [&](const Expr &X) { return structurallyEqual(X, L); }))
        Loads.push_back(L);
    }
  for (const Expr &L : Loads) {
    const auto &N = static_cast<const LoadNode &>(*L);
    if (C.accumulates(N.Buffer)) {
      if (N.Indices.size() != 1 || asConstInt(N.Indices[0]) != 0)
        return Decline("the accumulator is read at another index");
      continue;
    }
    for (const Expr &I : N.Indices)
      if (hasLoads(I))
        return Decline("'" + N.Buffer + "' is indexed through memory");
    bool K = usesAnyVar(L, {C.Red->Var}), M = usesAnyVar(L, {C.Row->Var}),
         Nn = usesAnyVar(L, {C.Col->Var});
    if (!K || M == Nn)
      return Decline("'" + N.Buffer +
                     "' is not indexed by the reduction index and "
                     "exactly one output index, so it is not a tile operand");
    ContractionOperand O;
    O.Load = L;
    O.Type = N.Type;
    O.RowSide = M;
    O.KFastest = usesAnyVar(N.Indices.back(), {C.Red->Var});
    C.Operands.push_back(std::move(O));
  }
  if (C.Operands.empty())
    return Decline("the reduction reads no operand");
  return C;
}

std::string vectorProduct(const ContractionNest &C, const Func &F, bool Columns) {
  DType T = C.acc().Type;
  if (C.Accs.size() != 1 ||
      (T != DType::F32 && T != DType::F64 && T != DType::I32 && T != DType::I64))
    return "";
  const ForNode *Unit = asConstInt(C.Col->Extent) == 1   ? C.Col
                        : asConstInt(C.Row->Extent) == 1 ? C.Row
                                                         : nullptr;
  if (!Unit)
    return "";
  const ForNode *Other = Unit == C.Col ? C.Row : C.Col;
  const std::string &K = C.Red->Var;
  std::string Product = "a product of one " + std::string(Unit == C.Col ? "column" : "row") +
                        " ('" + Unit->Var + "' runs over one element) ";
  const char *Waste = ", where a tile would spend all but 1/32 of its FMAs past the vector";
  auto ReadsAlong = [&](const ContractionOperand &O, const std::string &V) {
    return usesAnyVar(lastMovingIndex(static_cast<const LoadNode &>(*O.Load), F), {V});
  };
  if (llvm::all_of(C.Operands, [&](const ContractionOperand &O) { return ReadsAlong(O, K); }))
    return Product + "whose operands all read along '" + K +
           "' contiguously is a row reduction for each output: a warp or a block reads its row "
           "at copy speed" +
           Waste;
  // The vector's side is read at one element a k step, the same for every
  // output; the matrix read along the other output index is consecutive
  // across neighbouring outputs, a thread each.
  bool MatrixRowSide = Other == C.Row;
  auto Matrix = [&](const ContractionOperand &O) { return O.RowSide == MatrixRowSide; };
  if (Columns && llvm::any_of(C.Operands, Matrix) &&
      llvm::all_of(C.Operands, [&](const ContractionOperand &O) {
        return !Matrix(O) || ReadsAlong(O, Other->Var);
      }))
    return Product + "whose matrix reads along '" + Other->Var +
           "' contiguously is a column reduction: neighbouring outputs' threads read consecutive "
           "elements of each of its rows" +
           Waste;
  return "";
}

} // namespace tdsl
