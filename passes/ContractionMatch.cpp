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

std::optional<ContractionNest> matchContraction(const Stmt &Nest, const char *Pass, bool ExplainAll,
                                                bool Nests) {
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
  // The reduced loops: one, or with Nests a perfect nest of them.
  std::vector<const ForNode *> RedLoops = {static_cast<const ForNode *>(Body[LoopAt].get())};
  std::vector<std::string> Reduced = {RedLoops[0]->Var};
  for (Stmt In = RedLoops[0]->Body; In->Kind == StmtKind::For;
       In = static_cast<const ForNode &>(*In).Body) {
    RedLoops.push_back(static_cast<const ForNode *>(In.get()));
    Reduced.push_back(RedLoops.back()->Var);
  }
  if (Reduced.size() > 1 && !Nests)
    return Decline("the reduction runs over a nest of loops ('" + llvm::join(Reduced, "', '") +
                   "'); the tile passes take one reduced index");
  std::vector<std::string> Outer;
  for (const ForNode *L : Run.Loops)
    Outer.push_back(L->Var);
  for (const ForNode *L : RedLoops) {
    if (L->Loop != ForKind::Serial)
      return Decline("the reduction loop is not serial");
    if (usesAnyVar(L->Min, Outer) || usesAnyVar(L->Extent, Outer))
      return Decline("the reduction's bounds depend on the output indices");
    if (usesAnyVar(L->Min, Reduced) || usesAnyVar(L->Extent, Reduced))
      return Decline("the bounds of the reduced loop '" + L->Var +
                     "' depend on another reduced index");
  }
  // One store per accumulator, each reading no other accumulator.
  for (const Stmt &U : flattenBlocks(RedLoops.back()->Body)) {
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
    if (hasGPULoops(E) || usesAnyVar(E, Reduced))
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
  std::vector<Expr> Ops;
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
    Ops.push_back(L);
  }
  if (Ops.empty())
    return Decline("the reduction reads no operand");

  // The tiled reduced index k: the only one, or of a nest the innermost
  // that every operand reads as an index of its own (a convolution's
  // input channel c, not r of X[.., h + r, ..]), so that each k step
  // stages plain tile rows; the others run around the loop over k tiles.
  C.Red = RedLoops.size() == 1 ? RedLoops[0] : nullptr;
  std::vector<std::string> Every = Outer;
  llvm::append_range(Every, Reduced);
  for (auto It = RedLoops.rbegin(); It != RedLoops.rend() && !C.Red; ++It) {
    const std::string &K = (*It)->Var;
    std::vector<std::string> Others;
    for (const std::string &V : Every)
      if (V != K)
        Others.push_back(V);
    if (llvm::all_of(Ops, [&](const Expr &L) {
          const auto &N = static_cast<const LoadNode &>(*L);
          return llvm::any_of(N.Indices, [&](const Expr &I) { return usesAnyVar(I, {K}); }) &&
                 llvm::none_of(N.Indices, [&](const Expr &I) {
                   return usesAnyVar(I, {K}) && usesAnyVar(I, Others);
                 });
        }))
      C.Red = *It;
  }
  if (!C.Red)
    return Decline("no reduced index of ('" + llvm::join(Reduced, "', '") +
                   "') is an index of its own in every operand, so none is a tile's k");
  for (const ForNode *L : RedLoops)
    if (L != C.Red)
      C.Outer.push_back(L);

  // The row and column loops m and n: each operand uses exactly one of
  // them (its rows or columns) and k. The nest's last two; with Nests,
  // else the innermost other pair that fits, the loops left over being
  // batch loops, its inner loop the rows (in NCHW a convolution's width,
  // as in NHWC, whose last two loops are the width and the channel).
  // Both lowerings then merge the loops of one side (mergeSideLoops): a
  // convolution's n, h and w become its columns.
  auto Fits = [&](const ForNode *Row, const ForNode *Col) -> const LoadNode * {
    for (const Expr &L : Ops) {
      bool K = usesAnyVar(L, {C.Red->Var}), M = usesAnyVar(L, {Row->Var}),
           Nn = usesAnyVar(L, {Col->Var});
      if (!K || M == Nn)
        return static_cast<const LoadNode *>(L.get());
    }
    return nullptr;
  };
  size_t Last = Run.Loops.size() - 1, RowAt = Last - 1, ColAt = Last;
  if (const LoadNode *Bad = Fits(Run.Loops[RowAt], Run.Loops[ColAt])) {
    bool Found = false;
    for (size_t J = Last + 1; Nests && !Found && J-- > 0;)
      for (size_t I = J; !Found && I-- > 0;)
        if (!Fits(Run.Loops[J], Run.Loops[I])) {
          RowAt = J;
          ColAt = I;
          Found = true;
        }
    if (!Found)
      return Decline("'" + Bad->Buffer +
                     "' is not indexed by the reduction index and "
                     "exactly one output index, so it is not a tile operand");
  }
  C.Row = Run.Loops[RowAt];
  C.Col = Run.Loops[ColAt];
  for (size_t I = 0; I <= Last; ++I)
    if (I != RowAt && I != ColAt)
      C.Batch.push_back(Run.Loops[I]);
  for (const Expr &L : Loads) {
    const auto &N = static_cast<const LoadNode &>(*L);
    if (C.accumulates(N.Buffer))
      continue;
    ContractionOperand O;
    O.Load = L;
    O.Type = N.Type;
    O.RowSide = usesAnyVar(L, {C.Row->Var});
    O.KFastest = usesAnyVar(N.Indices.back(), {C.Red->Var});
    C.Operands.push_back(std::move(O));
  }
  return C;
}

/// Whether every tensor access of Body that uses Loops reads them, in
/// their order, as consecutive subscripts that are their variables, each
/// but the first over its tensor's whole dimension: an element at the
/// loops' row-major flat index f is then at f * (the inner dimensions) +
/// the rest, so the quotients that recover the loops' indices from f fold
/// away in its address (the backend's offset).
static bool readAsOneIndex(const Func &F, const std::vector<const ForNode *> &Loops,
                           const Stmt &Body) {
  std::vector<std::string> Vars;
  for (const ForNode *L : Loops)
    Vars.push_back(L->Var);
  auto OneIndex = [&](const std::string &Name, const std::vector<Expr> &Idx) {
    const Buffer *T = findTensor(F, Name);
    if (!T || T->rank() != Idx.size())
      return false;
    auto At = llvm::find_if(Idx, [&](const Expr &I) { return isVarNamed(I, Vars[0]); });
    size_t First = At - Idx.begin();
    if (First + Loops.size() > Idx.size())
      return false;
    for (size_t I = 0; I < Idx.size(); ++I) {
      bool Merged = I >= First && I < First + Loops.size();
      if (!Merged
              ? usesAnyVar(Idx[I], Vars)
              : !isVarNamed(Idx[I], Vars[I - First]) || asConstInt(Loops[I - First]->Min) != 0 ||
                    (I > First && !structurallyEqual(Loops[I - First]->Extent, T->Shape[I])))
        return false;
    }
    return true;
  };
  struct Accesses : IRVisitor {
    std::vector<std::pair<std::string, std::vector<Expr>>> Seen;
    void visitLoad(const LoadNode &N) override {
      Seen.push_back({N.Buffer, N.Indices});
      IRVisitor::visitLoad(N);
    }
    void visitStore(const StoreNode &N) override {
      Seen.push_back({N.Buffer, N.Indices});
      IRVisitor::visitStore(N);
    }
  } A;
  A.visit(Body);
  for (const auto &[Name, Idx] : A.Seen)
    if (llvm::any_of(Idx, [&](const Expr &I) { return usesAnyVar(I, Vars); }) &&
        !OneIndex(Name, Idx))
      return false;
  return true;
}

/// Body with Loops (each over 0 to its extent, or from its min) replaced
/// by one index Name over their row-major product: v_i = min_i + (f /
/// s_i) % e_i, s_i the product of the extents inside it, no remainder on
/// the outermost and no quotient on the innermost. Values, if given, gets
/// each loop's value in that order.
static Stmt flattened(const std::vector<const ForNode *> &Loops, Stmt Body, const std::string &Name,
                      std::vector<Expr> *Values = nullptr) {
  Expr Stride = intImm(1);
  if (Values)
    Values->assign(Loops.size(), nullptr);
  for (size_t I = Loops.size(); I-- > 0;) {
    const ForNode *L = Loops[I];
    Expr V = I + 1 == Loops.size() ? var(Name) : idiv(var(Name), Stride);
    if (I > 0)
      V = imod(V, L->Extent);
    Body = substitute(Body, L->Var, fromMin(L->Min, V));
    Stride = I + 1 == Loops.size() ? L->Extent : mul(L->Extent, Stride);
    if (Values)
      (*Values)[I] = fromMin(L->Min, V);
  }
  return Body;
}

Stmt mergeReducedLoops(const Func &F, const Stmt &Nest, const ContractionNest &C, NameTable &Names,
                       std::vector<std::string> &Merged) {
  if (C.Outer.empty())
    return nullptr;
  // The reduced loops, outermost first: the loop of the accumulators'
  // body and the perfect nest inside it (matchContraction's).
  LoopRun Run = outerSerialLoops(Nest);
  Stmt In = Run.Inner;
  while (In->Kind == StmtKind::Allocate)
    In = static_cast<const AllocateNode &>(*In).Body;
  const ForNode *First = nullptr;
  for (const Stmt &S : flattenBlocks(In))
    if (S->Kind == StmtKind::For)
      First = static_cast<const ForNode *>(S.get());
  std::vector<const ForNode *> Loops;
  for (const ForNode *L = First; L;
       L = L->Body->Kind == StmtKind::For ? static_cast<const ForNode *>(L->Body.get()) : nullptr)
    Loops.push_back(L);
  if (Loops.size() != C.Outer.size() + 1 || !readAsOneIndex(F, Loops, Loops.back()->Body))
    return nullptr;
  std::string Name;
  for (const ForNode *L : Loops)
    Name += L->Var;
  Name = Names.fresh(Name);
  Merged.clear();
  for (const ForNode *L : Loops)
    Merged.push_back(L->Var);
  Merged.push_back(Name);
  // The nest with its outermost reduced loop replaced.
  struct Replace : IRMutator {
    const ForNode *Target = nullptr;
    Stmt With;
    Stmt visitFor(const ForNode &N, const Stmt &S) override {
      return &N == Target ? With : IRMutator::visitFor(N, S);
    }
  } R;
  R.Target = First;
  R.With = forLoop(Name, intImm(0), flatExtent(Loops), ForKind::Serial,
                   flattened(Loops, Loops.back()->Body, Name), Loops.back()->SrcLine);
  return R.mutate(Nest);
}

Stmt mergeSideLoops(const Func &F, const Stmt &Nest, const ContractionNest &C, NameTable &Names,
                    std::vector<Expr> *Index) {
  if (C.Batch.empty())
    return nullptr;
  LoopRun Run = outerSerialLoops(Nest);
  std::vector<std::string> Outputs;
  for (const ForNode *L : Run.Loops)
    Outputs.push_back(L->Var);
  // The loops of one side: read by its operands only, with bounds free of
  // the other output indices (so their product is the merged extent).
  auto ReadBy = [&](const ForNode *L, bool RowSide) {
    bool Here = false;
    for (const ContractionOperand &O : C.Operands)
      if (usesAnyVar(O.Load, {L->Var})) {
        if (O.RowSide != RowSide)
          return false;
        Here = true;
      }
    return Here && !usesAnyVar(L->Min, Outputs) && !usesAnyVar(L->Extent, Outputs);
  };
  // A nest's every such side; a plain product's only where the merged
  // index reads as one row of its operands (a linear layer over [b, s, d]
  // as torch's x.view(-1, d) makes it): there it costs no quotient.
  bool Plain = C.Outer.empty();
  const ForNode *Own = nullptr;
  std::vector<const ForNode *> Merged, Kept;
  for (bool RowSide : {true, false}) {
    Own = RowSide ? C.Row : C.Col;
    Merged.clear();
    Kept.clear();
    for (const ForNode *L : Run.Loops)
      (L == Own || (llvm::is_contained(C.Batch, L) && ReadBy(L, RowSide)) ? Merged : Kept)
          .push_back(L);
    if (Merged.size() > 1 && ReadBy(Own, RowSide) &&
        (!Plain || (readAsOneIndex(F, Merged, Run.Inner) &&
                    llvm::all_of(C.Operands, [&](const ContractionOperand &O) {
                      return O.RowSide != RowSide || O.KFastest;
                    }))))
      break;
    Merged.clear();
  }
  if (Merged.empty())
    return nullptr;
  std::string Name;
  for (const ForNode *L : Merged)
    Name += L->Var;
  Name = Names.fresh(Name);
  std::vector<Expr> Values;
  Stmt Body = flattened(Merged, Run.Inner, Name, &Values);
  if (Index) {
    Index->clear();
    for (const ForNode *L : Run.Loops) {
      auto At = llvm::find(Merged, L);
      Index->push_back(At == Merged.end() ? var(L->Var) : Values[At - Merged.begin()]);
    }
  }
  // A nest's merged loop runs innermost (a convolution's columns); a
  // plain product's where its side's own loop ran, so rows stay rows.
  // (Null in Kept: the merged loop.)
  auto OwnAt = Kept.begin();
  for (const ForNode *L : Run.Loops)
    if (L == Own)
      break;
    else if (OwnAt != Kept.end() && *OwnAt == L)
      ++OwnAt;
  Kept.insert(Plain ? OwnAt : Kept.end(), nullptr);
  for (auto It = Kept.rbegin(); It != Kept.rend(); ++It)
    Body = *It ? forLoop((*It)->Var, (*It)->Min, (*It)->Extent, ForKind::Serial, Body,
                         (*It)->SrcLine, (*It)->Unroll)
               : forLoop(Name, intImm(0), flatExtent(Merged), ForKind::Serial, Body,
                         Merged.back()->SrcLine);
  return Body;
}

void SideMerge::update(const Func &F, const Stmt &N, const ContractionNest &C, NameTable &Names) {
  if (From == N)
    return;
  From = N;
  Index.clear();
  // The reduced loops first: a nest read as one k is a plain product.
  Stmt Base = N;
  std::optional<ContractionNest> Flat;
  if (Stmt K = mergeReducedLoops(F, N, C, Names, Reduced))
    if ((Flat = matchContraction(K, nullptr, /*ExplainAll=*/false, /*Nests=*/true)))
      Base = K;
  if (Base == N)
    Reduced.clear();
  const ContractionNest &Use = Base != N ? *Flat : C;
  Nest = mergeSideLoops(F, Base, Use, Names, &Index);
  Folds = Use.Outer.empty();
  Vars.clear();
  if (!Nest) {
    if (Base != N)
      Nest = Base;
    return;
  }
  // The loops only one of the nests has: the merged ones, then the new.
  std::vector<const ForNode *> Was = outerSerialLoops(N).Loops, Now = outerSerialLoops(Nest).Loops;
  auto Only = [](const std::vector<const ForNode *> &In, const std::vector<const ForNode *> &Not,
                 std::vector<std::string> &Out) {
    for (const ForNode *L : In)
      if (llvm::none_of(Not, [&](const ForNode *M) { return M->Var == L->Var; }))
        Out.push_back(L->Var);
  };
  Only(Was, Now, Vars);
  Only(Now, Was, Vars);
}

std::string nestNote(const ContractionNest &C, const SideMerge &M, const std::string &Work) {
  auto Names = [](const std::vector<std::string> &Merged) {
    std::string Vars;
    for (size_t I = 0; I + 1 < Merged.size(); ++I)
      Vars += (Vars.empty() ? "'" : ", '") + Merged[I] + "'";
    return Vars;
  };
  std::string Note;
  if (!C.Outer.empty()) {
    std::string Vars;
    for (const ForNode *L : C.Outer)
      Vars += (Vars.empty() ? "'" : ", '") + L->Var + "'";
    bool One = C.Outer.size() == 1;
    Note += std::string("; the reduced loop") + (One ? " " : "s ") + Vars +
            (One ? " runs" : " run") + " around the k tiles of '" + C.Red->Var +
            "': one index walks every k tile of each of their combinations, so the next tile's "
            "copies overlap this one's " +
            Work + " across them";
  }
  if (!M.Reduced.empty())
    Note += "; the reduced loops " + Names(M.Reduced) + " run as one k '" + M.Reduced.back() +
            "' (mergeReducedLoops): every operand reads them as one index";
  if (!M.Vars.empty())
    Note += "; the output loops " + Names(M.Vars) + " run as one index '" + M.Vars.back() +
            "' (mergeSideLoops), so " +
            (C.Outer.empty() ? "a batch of short ones fills the tiles together, its operands' "
                               "addresses one row index without quotients"
                             : "few or small images fill the tiles");
  return Note;
}

Expr reducedLength(const ContractionNest &C) {
  return C.Outer.empty() ? C.Red->Extent : mul(C.Red->Extent, flatExtent(C.Outer));
}

Expr kTiles(const ContractionNest &C, int64_t BK) {
  Expr Tiles = ceilDiv(C.Red->Extent, BK);
  return C.Outer.empty() ? Tiles : mul(Tiles, flatExtent(C.Outer));
}

Expr kTileWithin(const ContractionNest &C, int64_t BK, const Expr &T) {
  return C.Outer.empty() ? T : imod(T, ceilDiv(C.Red->Extent, BK));
}

Stmt atKTile(const ContractionNest &C, int64_t BK, const Expr &T, Stmt Body) {
  // Tile 0 (the first copies) is every loop's first index.
  std::optional<int64_t> Known = asConstInt(T);
  bool Zero = Known && *Known == 0;
  Expr Seg = Zero ? T : idiv(T, ceilDiv(C.Red->Extent, BK));
  for (size_t I = C.Outer.size(); I-- > 0;) {
    const ForNode *L = C.Outer[I];
    Body = substitute(Body, L->Var, fromMin(L->Min, I && !Zero ? imod(Seg, L->Extent) : Seg));
    if (!Zero)
      Seg = idiv(Seg, L->Extent);
  }
  return Body;
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
