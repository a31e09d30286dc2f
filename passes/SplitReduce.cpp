//===- SplitReduce.cpp - Reductions with few outputs split in two ---------===//
#include "passes/SplitReduce.h"
#include "ir/Printer.h"
#include "ir/Simplify.h"
#include "passes/PassUtils.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace tdsl {

using namespace ir;

namespace {

constexpr const char *PassName = "reduce-rows";

/// A loop of a nest this file builds.
struct Loop {
  std::string Var;
  Expr Min, Extent;
};

Loop loopOf(const ForNode *F) { return {F->Var, F->Min, F->Extent}; }

/// V - Min: the loop's position from 0, for indexing a partial tensor.
Expr position(const Loop &L) {
  return asConstInt(L.Min) == 0 ? var(L.Var) : sub(var(L.Var), L.Min);
}

/// The parts of a matched reduction nest:
///   for outs serial { alloc ACC: T[1] register {
///     ACC[0] = init...; for red serial { ACC[0] = ACC[0] OP E }; epilogue... } }
struct Reduction {
  std::vector<Loop> Outs, Red;
  const AllocateNode *Acc = nullptr;
  std::vector<Stmt> Init, Epilogue;
  BinaryOp Op = BinaryOp::Add;
  Expr E;
  unsigned Line = 0;

  DType type() const { return Acc->Buf.Type; }
  Expr accValue() const { return load(type(), Acc->Buf.Name, {intImm(0)}); }
  Stmt storeAcc(Expr V) const { return store(Acc->Buf.Name, {intImm(0)}, std::move(V), Line); }

  /// A partial's start: the init where folding it in twice changes
  /// nothing (max, min), else OP's identity.
  std::vector<Stmt> partialInit() const {
    if (isIdempotent(Op))
      return Init;
    return {storeAcc(identityOf(Op, type()))};
  }

  /// The nest with these loops, init, step operand and epilogue.
  Stmt build(const std::vector<Loop> &O, std::vector<Stmt> In, const std::vector<Loop> &R,
             const Expr &Operand, const std::vector<Stmt> &Ep) const {
    Stmt S = storeAcc(binary(Op, accValue(), Operand));
    for (auto It = R.rbegin(); It != R.rend(); ++It)
      S = forLoop(It->Var, It->Min, It->Extent, ForKind::Serial, S, Line);
    In.push_back(S);
    In.insert(In.end(), Ep.begin(), Ep.end());
    S = allocate(Acc->Buf, block(std::move(In), Line), Line);
    for (auto It = O.rbegin(); It != O.rend(); ++It)
      S = forLoop(It->Var, It->Min, It->Extent, ForKind::Serial, S, Line);
    return S;
  }
};

std::optional<Reduction> match(const Stmt &S) {
  LoopRun Run = outerSerialLoops(S);
  if (Run.Inner->Kind != StmtKind::Allocate)
    return std::nullopt;
  const auto &Acc = static_cast<const AllocateNode &>(*Run.Inner);
  DType T = Acc.Buf.Type;
  if (Acc.Buf.Scope != MemScope::Register || Acc.Buf.rank() != 1 ||
      asConstInt(Acc.Buf.Shape[0]) != 1 ||
      (T != DType::I32 && T != DType::I64 && T != DType::F32 && T != DType::F64))
    return std::nullopt;
  Reduction R;
  R.Acc = &Acc;
  R.Line = Acc.SrcLine;
  std::vector<std::string> OutVars;
  for (const ForNode *L : Run.Loops) {
    R.Outs.push_back(loopOf(L));
    OutVars.push_back(L->Var);
  }
  const std::string &AccName = Acc.Buf.Name;
  auto IsAcc = [&](const std::string &B, const std::vector<Expr> &Idx) {
    return B == AccName && Idx.size() == 1 && asConstInt(Idx[0]) == 0;
  };
  std::vector<Stmt> Stmts = flattenBlocks(Acc.Body);
  size_t I = 0;
  for (; I < Stmts.size() && Stmts[I]->Kind == StmtKind::Store; ++I) {
    const auto &St = static_cast<const StoreNode &>(*Stmts[I]);
    if (!IsAcc(St.Buffer, St.Indices) || hasLoads(St.Value))
      return std::nullopt;
    R.Init.push_back(Stmts[I]);
  }
  if (R.Init.empty() || I == Stmts.size() || Stmts[I]->Kind != StmtKind::For)
    return std::nullopt;
  LoopRun Red = outerSerialLoops(Stmts[I]);
  if (Red.Loops.empty())
    return std::nullopt;
  std::vector<std::string> RedVars;
  for (const ForNode *L : Red.Loops) {
    if (usesAnyVar(L->Min, OutVars) || usesAnyVar(L->Extent, OutVars))
      return std::nullopt; // a triangular domain: the partials' shape would vary
    R.Red.push_back(loopOf(L));
    RedVars.push_back(L->Var);
  }
  R.Epilogue.assign(Stmts.begin() + I + 1, Stmts.end());
  if (usesAnyVar(block(R.Epilogue), RedVars))
    return std::nullopt;
  const auto *St = Red.Inner->Kind == StmtKind::Store
                       ? static_cast<const StoreNode *>(Red.Inner.get())
                       : nullptr;
  const auto *Bin = St && St->Value->Kind == ExprKind::Binary
                        ? static_cast<const BinaryNode *>(St->Value.get())
                        : nullptr;
  if (!Bin || !IsAcc(St->Buffer, St->Indices) || !isReductionOp(Bin->Op))
    return std::nullopt;
  R.Op = Bin->Op;
  if (structurallyEqual(Bin->A, R.accValue()))
    R.E = Bin->B;
  else if (structurallyEqual(Bin->B, R.accValue()))
    R.E = Bin->A;
  else
    return std::nullopt;
  for (const Expr &L : loadsOf(R.E))
    if (static_cast<const LoadNode &>(*L).Buffer == AccName)
      return std::nullopt;
  return R;
}

/// How E's loads move with the reduced loops: Column where each reads
/// consecutive elements across consecutive outputs (its last index free
/// of the reduced loops) or one element for all of them; Row where each
/// reads consecutive elements along the innermost reduced loop or one
/// element along all of it; Other otherwise, and for a convolution (a last
/// index moving with both an output and a reduced loop). A dimension of
/// extent 1 is not a last one (lastMovingIndex), and the outputs' innermost
/// loop is the innermost whose extent is not 1.
enum class Walk { Column, Row, Other };

Walk walkOf(const Func &F, const Reduction &R) {
  std::vector<std::string> RedVars;
  for (const Loop &L : R.Red)
    RedVars.push_back(L.Var);
  const std::string &Inner = R.Red.back().Var;
  // The innermost output loop that moves: one of extent 1 after it (C[m,
  // 0] of a matrix times a column) holds no neighbours.
  std::string Out;
  for (const Loop &L : R.Outs)
    if (asConstInt(L.Extent) != 1)
      Out = L.Var;
  bool Column = true, Row = true, AnyColumn = false, AnyRow = false;
  for (const Expr &LE : loadsOf(R.E)) {
    const auto &L = static_cast<const LoadNode &>(*LE);
    auto Uses = [&](const std::vector<std::string> &Vars) {
      return llvm::any_of(L.Indices, [&](const Expr &X) { return usesAnyVar(X, Vars); });
    };
    if (L.Indices.empty() || !Uses(RedVars))
      continue; // the same element all along the reduction
    const Expr &Last = lastMovingIndex(L, F);
    bool LastReduced = usesAnyVar(Last, RedVars);
    bool LastOut = !Out.empty() && usesAnyVar(Last, {Out});
    if (LastReduced && LastOut)
      return Walk::Other;
    AnyColumn |= LastOut;
    Column &= LastOut || Out.empty() || !Uses({Out});
    bool LastInner = usesAnyVar(Last, {Inner});
    AnyRow |= LastInner;
    Row &= LastInner || !Uses({Inner});
  }
  return Column && AnyColumn ? Walk::Column : Row && AnyRow ? Walk::Row : Walk::Other;
}

class Splitter {
public:
  explicit Splitter(Func &F) : F(F), Names(F) {}

  Stmt rewrite(const Stmt &S) {
    std::optional<Reduction> R = match(S);
    if (!R)
      return S;
    Walk W = walkOf(F, *R);
    if (R->Outs.empty())
      return R->Red.size() >= 2 ? promote(*R, /*Scalar=*/true) : longVector(*R, S);
    if (W == Walk::Column) {
      std::optional<int64_t> Len = asConstInt(simplifyExpr(R->Red[0].Extent));
      return Len && *Len <= 2 * SplitColumnChunk ? S : column(*R);
    }
    if (W == Walk::Row && R->Red.size() >= 2)
      return promote(*R, /*Scalar=*/false);
    return S;
  }

private:
  const Func &F;
  NameTable Names;

  /// The partial tensor's name: after the first tensor the epilogue
  /// stores, else the accumulator.
  std::string partName(const Reduction &R) {
    std::string Base = R.Acc->Buf.Name;
    for (const Stmt &St : R.Epilogue)
      if (St->Kind == StmtKind::Store) {
        Base = static_cast<const StoreNode &>(*St).Buffer;
        break;
      }
    return Names.fresh(Base + "_part");
  }

  static std::string varList(const std::vector<Loop> &Loops) {
    std::string S;
    for (const Loop &L : Loops)
      S += (S.empty() ? "'" : ", '") + L.Var + "'";
    return S;
  }

  /// Loop First cut into chunks of K: chunk G's part of it, from Min + G *
  /// K on, min(K, extent - G * K) long. The loads keep their indices, so
  /// a row stays contiguous along the loop.
  static Loop chunk(const Loop &First, const std::string &G, int64_t K) {
    return chunk(First, G, intImm(K));
  }
  static Loop chunk(const Loop &First, const std::string &G, const Expr &K) {
    Expr Start = mul(var(G), K);
    return {First.Var, asConstInt(First.Min) == 0 ? Start : add(First.Min, Start),
            binary(BinaryOp::Min, K, sub(First.Extent, Start))};
  }

  /// Form 1: chunks of the outermost reduced loop, a thread per chunk and
  /// output (consecutive threads on consecutive outputs, so the reads stay
  /// coalesced), into P[outputs, chunk]; then each output's chunks, a row
  /// of P, folded as a row reduction (a warp or a block each): a thread
  /// per output would walk them alone, (R / 64) loads one after another.
  Stmt column(const Reduction &R) {
    const Loop &First = R.Red[0];
    std::string G = Names.fresh("g"), P = partName(R);
    Expr Chunks = ceilDiv(First.Extent, SplitColumnChunk);
    std::vector<Loop> Outs1 = {{G, intImm(0), Chunks}}, Red1 = {chunk(First, G, SplitColumnChunk)};
    Outs1.insert(Outs1.end(), R.Outs.begin(), R.Outs.end());
    Red1.insert(Red1.end(), R.Red.begin() + 1, R.Red.end());
    std::vector<Expr> Shape, Idx;
    for (const Loop &O : R.Outs) {
      Shape.push_back(O.Extent);
      Idx.push_back(position(O));
    }
    Shape.push_back(Chunks);
    Idx.push_back(var(G));
    Stmt Phase1 = R.build(Outs1, R.partialInit(), Red1, R.E, {store(P, Idx, R.accValue(), R.Line)});
    Stmt Phase2 =
        R.build(R.Outs, R.Init, {{G, intImm(0), Chunks}}, load(R.type(), P, Idx), R.Epilogue);
    remark(PassName, R.Line,
           "split the reduction over '" + First.Var + "' into chunks of " +
               std::to_string(SplitColumnChunk) + " into " + P +
               ", then folded each output's row of " + P + ": its loads move along '" +
               First.Var +
               "' only between rows, so a thread per output alone would walk all of '" +
               First.Var + "' by itself");
    return allocate(tempBuffer(P, R.type(), Shape, MemScope::Global), block({Phase1, Phase2}),
                    R.Line);
  }

  /// Form 2: the outer reduced loops become rows of a row reduction over
  /// the innermost, into P[outputs, flat]; then a reduction over P's rows
  /// (form 3 again for a scalar).
  Stmt promote(const Reduction &R, bool Scalar) {
    std::vector<Loop> Rows(R.Red.begin(), R.Red.end() - 1);
    Loop Inner = R.Red.back();
    std::string P = partName(R), F = Names.fresh("f");
    // A long (or open) innermost loop is cut into rows of SplitScalarChunk
    // too, so that a few long rows still make many.
    std::optional<int64_t> Len = asConstInt(simplifyExpr(Inner.Extent));
    std::string Cut;
    if (!Len || *Len > SplitScalarChunk) {
      // ceil(L / G) each of G = ceil(L / chunk) rows, not the chunk
      // itself: the row length's bound, min(...)'s first arm, then says
      // how long the rows are (reduce-rows maps short ones a warp each).
      std::string G = Names.fresh("g");
      Expr Count = ceilDiv(Inner.Extent, SplitScalarChunk);
      Rows.push_back({G, intImm(0), Count});
      Inner = chunk(Inner, G, binary(BinaryOp::Div, add(Inner.Extent, sub(Count, intImm(1))), Count));
      Cut = " (cut into rows of at most " + std::to_string(SplitScalarChunk) + ")";
    }
    std::vector<Expr> RowShape, RowIdx;
    Expr Flat;
    for (const Loop &L : Rows) {
      RowShape.push_back(L.Extent);
      RowIdx.push_back(position(L));
      Flat = Flat ? mul(Flat, L.Extent) : L.Extent;
    }
    std::vector<Expr> Shape, Idx1, Idx2;
    for (const Loop &O : R.Outs) {
      Shape.push_back(O.Extent);
      Idx1.push_back(position(O));
    }
    Idx2 = Idx1;
    Shape.push_back(Flat);
    Idx1.push_back(linearIndex(RowShape, RowIdx));
    Idx2.push_back(var(F));
    std::vector<Loop> Outs1 = R.Outs;
    Outs1.insert(Outs1.end(), Rows.begin(), Rows.end());
    Stmt Phase1 =
        R.build(Outs1, R.partialInit(), {Inner}, R.E, {store(P, Idx1, R.accValue(), R.Line)});
    Stmt Phase2 =
        R.build(R.Outs, R.Init, {{F, intImm(0), Flat}}, load(R.type(), P, Idx2), R.Epilogue);
    remark(PassName, R.Line,
           "the reduction over " + varList(R.Red) + " becomes one over '" + Inner.Var + "'" +
               Cut + " per row of " + varList(Rows) + " into " + P + ", then one over " + P +
               "'s rows: only one loop spreads over threads");
    if (Scalar) {
      std::optional<Reduction> R2 = match(Phase2);
      if (R2)
        Phase2 = longVector(*R2, Phase2);
    }
    return allocate(tempBuffer(P, R.type(), Shape, MemScope::Global), block({Phase1, Phase2}),
                    R.Line);
  }

  /// Form 3: a vector to a scalar, in rows of SplitScalarChunk.
  Stmt longVector(const Reduction &R, const Stmt &S) {
    const Loop &First = R.Red[0];
    std::optional<int64_t> Len = asConstInt(simplifyExpr(First.Extent));
    if (Len && *Len <= SplitScalarMax)
      return S;
    std::string G = Names.fresh("g"), P = partName(R);
    Expr Chunks = ceilDiv(First.Extent, SplitScalarChunk);
    Stmt Phase1 = R.build({{G, intImm(0), Chunks}}, R.partialInit(),
                          {chunk(First, G, SplitScalarChunk)}, R.E,
                          {store(P, {var(G)}, R.accValue(), R.Line)});
    Stmt Phase2 = R.build({}, R.Init, {{G, intImm(0), Chunks}}, load(R.type(), P, {var(G)}),
                          R.Epilogue);
    remark(PassName, R.Line,
           "the reduction over '" + First.Var + "' to a scalar is cut into rows of " +
               std::to_string(SplitScalarChunk) + " into " + P +
               ", a block each, then one block folds " + P +
               ": one block alone would leave most of the GPU idle");
    return allocate(tempBuffer(P, R.type(), {Chunks}, MemScope::Global), block({Phase1, Phase2}),
                    R.Line);
  }
};

} // namespace

void splitReductions(Func &F) {
  Splitter S(F);
  rewriteNests(F, [&](const Stmt &Nest) { return S.rewrite(Nest); });
}

} // namespace tdsl
