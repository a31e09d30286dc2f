//===- Prologue.cpp - A contraction's operand functions computed first ----===//
#include "graph/Prologue.h"
#include "ir/Printer.h"
#include "passes/PassUtils.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>

namespace tdsl::graph {

namespace {

/// "A[m, k], s[k]": the tensors factor F reads.
std::string readsOf(const ast::Expr &F) {
  std::string S;
  ast::forEachExpr(F, [&](const ast::Expr &X) {
    if (X.Kind != ast::ExprKind::Access)
      return;
    const auto &A = static_cast<const ast::Access &>(X);
    std::string R = A.TensorName + "[";
    for (size_t I = 0; I < A.AffineSubs.size(); ++I)
      R += (I ? ", " : "") + A.AffineSubs[I].str();
    S += (S.empty() ? "" : ", ") + R + "]";
  });
  return S;
}

/// The read side Fs is, through conversions that round nothing the tile
/// passes would not (to f32, to tf32 as tensor cores do); null if it is
/// not one read.
const ast::Expr *plainAccess(const std::vector<const ast::Expr *> &Fs) {
  if (Fs.size() != 1)
    return nullptr;
  const ast::Expr *E = Fs[0];
  while (E->Kind == ast::ExprKind::Call) {
    const auto &C = static_cast<const ast::Call &>(*E);
    if (C.Fn != ast::Callee::Cast ||
        (C.CastTo != DType::F32 && C.CastTo != DType::TF32 && C.CastTo != C.Args[0]->Type))
      return nullptr;
    E = C.Args[0].get();
  }
  return E->Kind == ast::ExprKind::Access ? E : nullptr;
}

bool plainRead(const std::vector<const ast::Expr *> &Fs) { return plainAccess(Fs) != nullptr; }

bool half(DType T) { return T == DType::F16 || T == DType::BF16; }

/// Whether plain side Fs reads i8 where the other side reads a 16-bit
/// float (X[m, k] * Wq[k, n], weights quantized to i8): the tensor cores
/// take two operands of one type, and every i8 value is exact in it.
bool i8BesideHalf(const std::vector<const ast::Expr *> &Fs,
                  const std::vector<const ast::Expr *> &Other) {
  const ast::Expr *A = plainAccess(Fs), *B = plainAccess(Other);
  return A && B && A->Type == DType::I8 && half(B->Type);
}

} // namespace

PrologueChoice choosePrologue(const Node &N, bool FactoredOut) {
  PrologueChoice C;
  const ast::Stmt &S = *N.S;
  if (N.Class != NodeClass::Contraction || N.Domain.size() < 2)
    return C;
  const std::string &M = N.Domain[N.Domain.size() - 2], &Nn = N.Domain.back();
  std::vector<const ast::Expr *> Fs, Row, Col;
  ast::productFactors(*S.Value, Fs);
  bool FreeLeft = false;
  std::string Both;
  for (const ast::Expr *F : Fs) {
    if (!ast::usesIndex(*F, N.Reduced)) {
      FreeLeft |= !FactoredOut;
      continue;
    }
    bool UsesM = ast::usesIndex(*F, {M}), UsesN = ast::usesIndex(*F, {Nn});
    if (UsesM && UsesN)
      Both = readsOf(*F);
    (UsesN ? Col : Row).push_back(F);
  }
  bool Mixed = i8BesideHalf(Row, Col) || i8BesideHalf(Col, Row);
  if (Row.empty() || Col.empty() || (plainRead(Row) && plainRead(Col) && !Mixed))
    return C;
  if (N.Reduced.size() != 1)
    C.Refusal = "it reduces more than one index, and the tile passes take one";
  else if (!Both.empty())
    C.Refusal = "the factor over " + Both + " uses both " + M + " and " + Nn +
                ", so no operand holds it";
  else if (FreeLeft)
    C.Refusal = "its factors free of the reduced indices stay in the sum (fuse_factor = off)";
  else if (!isFloat(S.Target->Type) && S.Target->Type != DType::TF32)
    C.Refusal = "its sum is of integers";
  if (!C.Refusal.empty())
    return C;
  for (const auto *Side : {&Row, &Col})
    if (!plainRead(*Side) || i8BesideHalf(*Side, Side == &Row ? Col : Row)) {
      // (A factor of indices alone, (k <= i), reads nothing to name.)
      std::string Reads;
      for (const ast::Expr *F : *Side)
        if (std::string R = readsOf(*F); !R.empty())
          Reads += (Reads.empty() ? "" : ", ") + R;
      C.Staged.push_back(Reads);
    }
  return C;
}

namespace {

using namespace ir;

/// The nest as the rewrite reads it: the loops, the accumulator and the
/// one update of its k loop, ACC[0] = ACC[0] + Product, and the tensor
/// stored first after the k loop.
struct Nest {
  LoopRun Run;
  const AllocateNode *Acc = nullptr;
  const ForNode *K = nullptr;
  Expr Product;
  unsigned Line = 0;
  std::string Writes;
};

std::optional<Nest> match(const Stmt &S) {
  Nest N;
  N.Run = outerSerialLoops(S);
  if (N.Run.Loops.size() < 2 || !N.Run.Inner || N.Run.Inner->Kind != StmtKind::Allocate)
    return std::nullopt;
  N.Acc = static_cast<const AllocateNode *>(N.Run.Inner.get());
  const Buffer &A = N.Acc->Buf;
  if (A.Scope != MemScope::Register || !isFloat(A.Type) || A.Shape.size() != 1 ||
      asConstInt(A.Shape[0]) != 1 || N.Acc->Body->Kind != StmtKind::Block)
    return std::nullopt;
  for (const Stmt &C : static_cast<const BlockNode &>(*N.Acc->Body).Stmts) {
    if (C->Kind == StmtKind::Store && N.K && N.Writes.empty())
      N.Writes = static_cast<const StoreNode &>(*C).Buffer;
    if (C->Kind != StmtKind::For)
      continue;
    const auto &F = static_cast<const ForNode &>(*C);
    if (N.K || F.Loop != ForKind::Serial || F.Body->Kind != StmtKind::Store)
      return std::nullopt;
    const auto &St = static_cast<const StoreNode &>(*F.Body);
    if (St.Buffer != A.Name || St.Value->Kind != ExprKind::Binary)
      return std::nullopt;
    const auto &Add = static_cast<const BinaryNode &>(*St.Value);
    Expr Acc = load(A.Type, A.Name, {intImm(0)});
    bool ReadsAcc = llvm::any_of(loadsOf(Add.B), [&](const Expr &L) {
      return static_cast<const LoadNode &>(*L).Buffer == A.Name;
    });
    if (Add.Op != BinaryOp::Add || !structurallyEqual(Add.A, Acc) || ReadsAcc)
      return std::nullopt;
    N.K = &F;
    N.Product = Add.B;
    N.Line = St.SrcLine;
  }
  if (!N.K)
    return std::nullopt;
  return N;
}

void factors(const Expr &E, std::vector<Expr> &Out) {
  if (E->Kind == ExprKind::Binary && static_cast<const BinaryNode &>(*E).Op == BinaryOp::Mul) {
    factors(static_cast<const BinaryNode &>(*E).A, Out);
    factors(static_cast<const BinaryNode &>(*E).B, Out);
  } else {
    Out.push_back(E);
  }
}

/// One load, converted to the accumulator's type, through tf32() too: an
/// operand the tiling passes stage as it is.
const LoadNode *plainLoad(const std::vector<Expr> &Side) {
  if (Side.size() != 1)
    return nullptr;
  Expr E = Side[0];
  if (E->Kind == ExprKind::Cast)
    E = static_cast<const CastNode &>(*E).A;
  if (E->Kind == ExprKind::Cast && E->Type == DType::TF32)
    E = static_cast<const CastNode &>(*E).A;
  return E->Kind == ExprKind::Load ? static_cast<const LoadNode *>(E.get()) : nullptr;
}

/// As the AST's: a plain load of i8 beside a plain load of a 16-bit float.
bool i8BesideHalf(const std::vector<Expr> &Side, const std::vector<Expr> &Other) {
  const LoadNode *A = plainLoad(Side), *B = plainLoad(Other);
  return A && B && A->Type == DType::I8 && half(B->Type);
}

/// Whether every value of E is a value of T, so that storing it as T loses
/// nothing: loads of T (and of i8, for a 16-bit T), casts to T, and what
/// relu, abs, negation, min and max with constants of T and selects make
/// of such values.
bool exactIn(const Expr &E, DType T) {
  switch (E->Kind) {
  case ExprKind::Load:
    return E->Type == T || (E->Type == DType::I8 && (T == DType::F16 || T == DType::BF16));
  case ExprKind::FloatImm:
    return convertValue(static_cast<const FloatImmNode &>(*E).Value, E->Type, T) ==
           static_cast<const FloatImmNode &>(*E).Value;
  case ExprKind::Cast: {
    const Expr &A = static_cast<const CastNode &>(*E).A;
    return E->Type == T ||
           (isFloat(E->Type) && dtypeBytes(E->Type) >= dtypeBytes(T) && exactIn(A, T));
  }
  case ExprKind::Unary:
    return static_cast<const UnaryNode &>(*E).Op == UnaryOp::Neg &&
           exactIn(static_cast<const UnaryNode &>(*E).A, T);
  case ExprKind::Call: {
    const auto &C = static_cast<const CallNode &>(*E);
    return (C.Fn == Intrinsic::Relu || C.Fn == Intrinsic::Abs) && exactIn(C.Args[0], T);
  }
  case ExprKind::Binary: {
    const auto &B = static_cast<const BinaryNode &>(*E);
    return (B.Op == BinaryOp::Max || B.Op == BinaryOp::Min) && exactIn(B.A, T) &&
           exactIn(B.B, T);
  }
  case ExprKind::Select: {
    const auto &S = static_cast<const SelectNode &>(*E);
    return exactIn(S.TrueValue, T) && exactIn(S.FalseValue, T);
  }
  default: return false;
  }
}

Expr product(const std::vector<Expr> &Side) {
  Expr P = Side.front();
  for (size_t I = 1; I < Side.size(); ++I)
    P = mul(P, Side[I]);
  return P;
}

class Stager {
public:
  Stager(Func &F, const std::vector<PrologueSite> &Sites) : F(F), Sites(Sites), Names(F) {}

  Stmt rewrite(const Stmt &S) {
    std::optional<Nest> N = match(S);
    if (!N || !llvm::any_of(Sites, [&](const PrologueSite &P) {
          return P.Line == N->Line && P.Writes == N->Writes;
        }))
      return S;
    const auto &Loops = N->Run.Loops;
    std::string M = Loops[Loops.size() - 2]->Var, Nn = Loops.back()->Var, K = N->K->Var;
    std::vector<Expr> Fs, Row, Col;
    factors(N->Product, Fs);
    for (const Expr &X : Fs) {
      bool UsesM = usesAnyVar(X, {M}), UsesN = usesAnyVar(X, {Nn}), UsesK = usesAnyVar(X, {K});
      if (!UsesK || (UsesM && UsesN) || !isFloat(X->Type))
        return S;
      (UsesN ? Col : Row).push_back(X);
    }
    bool Mixed = i8BesideHalf(Row, Col) || i8BesideHalf(Col, Row);
    if (Row.empty() || Col.empty() || (plainLoad(Row) && plainLoad(Col) && !Mixed))
      return S;
    // Where every result is stored as a 16-bit float, a side may be
    // rounded to one.
    bool HalfOut = true;
    for (const Stmt &C : static_cast<const BlockNode &>(*N->Acc->Body).Stmts)
      if (C->Kind == StmtKind::Store &&
          static_cast<const StoreNode &>(*C).Buffer != N->Acc->Buf.Name)
        if (const Buffer *B = findTensor(F, static_cast<const StoreNode &>(*C).Buffer))
          HalfOut &= half(B->Type);
    std::vector<std::pair<Buffer, Stmt>> Staged;
    for (bool RowSide : {true, false}) {
      std::vector<Expr> &Side = RowSide ? Row : Col;
      if (plainLoad(Side) && !i8BesideHalf(Side, RowSide ? Col : Row))
        continue;
      // Its indices: the batch loops it uses, then m (n) and k, the order
      // a plain operand has (k fastest on the row side, n on the column).
      std::vector<const ForNode *> Dims;
      for (size_t I = 0; I + 2 < Loops.size(); ++I)
        if (llvm::any_of(Side, [&](const Expr &X) { return usesAnyVar(X, {Loops[I]->Var}); }))
          Dims.push_back(Loops[I]);
      if (RowSide) {
        Dims.push_back(Loops[Loops.size() - 2]);
        Dims.push_back(N->K);
      } else {
        Dims.push_back(N->K);
        Dims.push_back(Loops.back());
      }
      std::vector<Expr> Shape, Idx;
      for (const ForNode *D : Dims) {
        if (asConstInt(D->Min) != 0 || usesAnyVar(D->Extent, {M, Nn, K}))
          return S;
        Shape.push_back(D->Extent);
        Idx.push_back(var(D->Var));
      }
      Expr Value = product(Side);
      auto [T, Exact] = typeOf(Value, plainLoad(RowSide ? Col : Row), HalfOut);
      std::vector<Expr> Loads = loadsOf(Value);
      std::string Name = Names.fresh(
          (Loads.empty() ? std::string("op") : static_cast<const LoadNode &>(*Loads[0]).Buffer) +
          "_pro");
      Stmt Fill = store(Name, Idx, cast(T, Value), N->Line);
      for (auto It = Dims.rbegin(); It != Dims.rend(); ++It)
        Fill = forLoop((*It)->Var, intImm(0), (*It)->Extent, ForKind::Serial, Fill, N->Line);
      remark("fuse", N->Line,
             "the operand " + toString(Value) + " is computed first, into " + Name + ": " +
                 dtypeName(T).str() +
                 (T == DType::F32 ? std::string()
                  : Exact        ? std::string(", every value exact in it")
                                 : " (rounded to " + dtypeName(T).str() +
                                       ", as the results are stored)"));
      Side = {cast(Value->Type, load(T, Name, Idx))};
      Staged.push_back({tempBuffer(Name, T, Shape, MemScope::Global), Fill});
    }
    ExprReplacer R;
    R.Map.push_back({N->Product, mul(product(Row), product(Col))});
    std::vector<Stmt> Seq;
    for (auto &[B, Fill] : Staged)
      Seq.push_back(Fill);
    Seq.push_back(R.mutate(S));
    Stmt Out = block(std::move(Seq), S->SrcLine);
    for (auto It = Staged.rbegin(); It != Staged.rend(); ++It)
      Out = allocate(It->first, Out, S->SrcLine);
    return Out;
  }

private:
  Func &F;
  const std::vector<PrologueSite> &Sites;
  NameTable Names;

  /// The temporary's type for side Value, and whether it holds every value
  /// exactly: the other side's 16-bit type (Other), then those the side
  /// reads, where exact; else the first of those where HalfOut; else f32.
  static std::pair<DType, bool> typeOf(const Expr &Value, const LoadNode *Other, bool HalfOut) {
    std::vector<DType> Candidates;
    if (Other && half(Other->Type))
      Candidates.push_back(Other->Type);
    for (const Expr &L : loadsOf(Value))
      if (half(L->Type) && !llvm::is_contained(Candidates, L->Type))
        Candidates.push_back(L->Type);
    for (DType T : Candidates)
      if (exactIn(Value, T))
        return {T, true};
    if (HalfOut && !Candidates.empty())
      return {Candidates.front(), false};
    return {DType::F32, true};
  }
};

} // namespace

void stagePrologues(Func &F, const std::vector<PrologueSite> &Sites) {
  if (Sites.empty())
    return;
  Stager St(F, Sites);
  rewriteNests(F, [&](const Stmt &S) { return St.rewrite(S); });
}

} // namespace tdsl::graph
