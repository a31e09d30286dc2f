//===- Simplify.cpp - Constant folding and algebraic cleanup --------------===//
#include "ir/Simplify.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace tdsl::ir {

namespace {

std::optional<double> asConstFloat(const Expr &E) {
  if (E->Kind == ExprKind::FloatImm)
    return static_cast<const FloatImmNode &>(*E).Value;
  return std::nullopt;
}

bool isEmptyStmt(const Stmt &S) {
  return S && S->Kind == StmtKind::Block && static_cast<const BlockNode &>(*S).Stmts.empty();
}

Stmt emptyStmt() { return block({}); }

/// Folding happens only in types whose arithmetic IEEE (for floats) or
/// two's complement (for integers) defines exactly.
bool isFoldableFloat(DType T) { return T == DType::F32 || T == DType::F64; }
bool isFoldableInt(DType T) { return isInteger(T); }

/// V reduced to T's width, as the target's wrapping arithmetic does.
int64_t wrapTo(DType T, uint64_t V) {
  switch (T) {
  case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(V));
  case DType::I32: return static_cast<int32_t>(static_cast<uint32_t>(V));
  default: return static_cast<int64_t>(V);
  }
}

int64_t lowestOf(DType T) {
  return T == DType::I64 ? std::numeric_limits<int64_t>::min()
                         : static_cast<int64_t>(dtypeLowest(T));
}

int64_t highestOf(DType T) {
  return T == DType::I64 ? std::numeric_limits<int64_t>::max()
                         : static_cast<int64_t>(dtypeHighest(T));
}

Expr boolImm(bool V) { return intImm(V ? 1 : 0, DType::Bool); }

std::optional<Expr> foldInt(BinaryOp Op, DType T, int64_t A, int64_t B) {
  uint64_t UA = static_cast<uint64_t>(A), UB = static_cast<uint64_t>(B);
  if (T == DType::Bool) {
    switch (Op) {
    case BinaryOp::And: return boolImm(A && B);
    case BinaryOp::Or: return boolImm(A || B);
    case BinaryOp::Eq: return boolImm(A == B);
    case BinaryOp::Ne: return boolImm(A != B);
    default: return std::nullopt;
    }
  }
  switch (Op) {
  case BinaryOp::Add: return intImm(wrapTo(T, UA + UB), T);
  case BinaryOp::Sub: return intImm(wrapTo(T, UA - UB), T);
  case BinaryOp::Mul: return intImm(wrapTo(T, UA * UB), T);
  case BinaryOp::Div:
  case BinaryOp::Mod:
    // Undefined on the target: leave them for it to fault or not.
    if (B == 0 || (A == lowestOf(T) && B == -1))
      return std::nullopt;
    return intImm(Op == BinaryOp::Div ? A / B : A % B, T);
  case BinaryOp::Min: return intImm(std::min(A, B), T);
  case BinaryOp::Max: return intImm(std::max(A, B), T);
  case BinaryOp::Lt: return boolImm(A < B);
  case BinaryOp::Le: return boolImm(A <= B);
  case BinaryOp::Gt: return boolImm(A > B);
  case BinaryOp::Ge: return boolImm(A >= B);
  case BinaryOp::Eq: return boolImm(A == B);
  case BinaryOp::Ne: return boolImm(A != B);
  default: return std::nullopt;
  }
}

/// f32 results are computed in double and rounded once: for + - * / the
/// double result rounds to the correctly rounded f32 result (53 >= 2*24+2
/// bits), which is what the target's IEEE instructions produce.
std::optional<Expr> foldFloat(BinaryOp Op, DType T, double A, double B) {
  auto Make = [&](double V) { return floatImm(convertValue(V, DType::F64, T), T); };
  switch (Op) {
  case BinaryOp::Add: return Make(A + B);
  case BinaryOp::Sub: return Make(A - B);
  case BinaryOp::Mul: return Make(A * B);
  case BinaryOp::Div: return Make(A / B);
  case BinaryOp::Min:
  case BinaryOp::Max:
    // fminf/fmaxf treat NaN and the sign of zero their own way: keep those.
    if (std::isnan(A) || std::isnan(B) || (A == 0 && B == 0))
      return std::nullopt;
    return Make(Op == BinaryOp::Min ? std::min(A, B) : std::max(A, B));
  case BinaryOp::Lt: return boolImm(A < B);
  case BinaryOp::Le: return boolImm(A <= B);
  case BinaryOp::Gt: return boolImm(A > B);
  case BinaryOp::Ge: return boolImm(A >= B);
  case BinaryOp::Eq: return boolImm(A == B);
  case BinaryOp::Ne: return boolImm(A != B);
  default: return std::nullopt; // Mod: fmod is left to the target
  }
}

bool isIntConst(const Expr &E, int64_t V) {
  std::optional<int64_t> C = asConstInt(E);
  return C && *C == V && E->Type != DType::Bool;
}

/// +1.0, +0.0 or -0.0 by their bits (0.0 and -0.0 differ here).
bool isFloatConst(const Expr &E, double V) {
  std::optional<double> C = asConstFloat(E);
  return C && *C == V && std::signbit(*C) == std::signbit(V);
}

/// E as X + K with a constant K (integers only), or nullopt.
std::optional<std::pair<Expr, int64_t>> splitOffset(const Expr &E) {
  if (E->Kind != ExprKind::Binary || !isFoldableInt(E->Type))
    return std::nullopt;
  const auto &N = static_cast<const BinaryNode &>(*E);
  std::optional<int64_t> A = asConstInt(N.A), B = asConstInt(N.B);
  if (N.Op == BinaryOp::Add && B)
    return std::make_pair(N.A, *B);
  if (N.Op == BinaryOp::Add && A)
    return std::make_pair(N.B, *A);
  if (N.Op == BinaryOp::Sub && B)
    return std::make_pair(N.A, wrapTo(E->Type, 0 - static_cast<uint64_t>(*B)));
  return std::nullopt;
}

/// X + K spelled the readable way: X, X + K or X - |K|.
Expr addOffset(const Expr &X, int64_t K) {
  DType T = X->Type;
  if (K == 0)
    return X;
  if (K < 0 && K != lowestOf(T))
    return sub(X, intImm(-K, T));
  return add(X, intImm(K, T));
}

/// X * K spelled the simplest way: 0, X or X * K.
Expr scaleBy(const Expr &X, int64_t K) {
  if (K == 0)
    return intImm(0, X->Type);
  return K == 1 ? X : mul(X, intImm(K, X->Type));
}

/// E as X * K with a constant K (integers only), or nullopt.
std::optional<std::pair<Expr, int64_t>> splitScale(const Expr &E) {
  if (E->Kind != ExprKind::Binary || !isFoldableInt(E->Type))
    return std::nullopt;
  const auto &N = static_cast<const BinaryNode &>(*E);
  if (N.Op != BinaryOp::Mul)
    return std::nullopt;
  if (std::optional<int64_t> B = asConstInt(N.B))
    return std::make_pair(N.A, *B);
  if (std::optional<int64_t> A = asConstInt(N.A))
    return std::make_pair(N.B, *A);
  return std::nullopt;
}

class Simplifier : public IRMutator {
protected:
  Expr visitBinary(const BinaryNode &N, const Expr &E) override;
  Expr visitUnary(const UnaryNode &N, const Expr &E) override;
  Expr visitSelect(const SelectNode &N, const Expr &E) override;
  Expr visitCast(const CastNode &N, const Expr &E) override;
  Expr visitCall(const CallNode &N, const Expr &E) override;

  Stmt visitBlock(const BlockNode &N, const Stmt &S) override;
  Stmt visitFor(const ForNode &N, const Stmt &S) override;
  Stmt visitIf(const IfNode &N, const Stmt &S) override;
  Stmt visitLet(const LetNode &N, const Stmt &S) override;
  Stmt visitAllocate(const AllocateNode &N, const Stmt &S) override;

private:
  std::optional<Expr> simplifyBinary(BinaryOp Op, const Expr &A, const Expr &B);
};

Expr Simplifier::visitBinary(const BinaryNode &N, const Expr &E) {
  Expr Rebuilt = IRMutator::visitBinary(N, E);
  const auto &M = static_cast<const BinaryNode &>(*Rebuilt);
  if (std::optional<Expr> R = simplifyBinary(M.Op, M.A, M.B))
    return *R;
  return Rebuilt;
}

std::optional<Expr> Simplifier::simplifyBinary(BinaryOp Op, const Expr &A, const Expr &B) {
  DType T = A->Type;
  if (T != B->Type)
    return std::nullopt; // invalid IR: leave it to the verifier
  std::optional<int64_t> CA = asConstInt(A), CB = asConstInt(B);
  std::optional<double> FA = asConstFloat(A), FB = asConstFloat(B);

  if (CA && CB && (isFoldableInt(T) || T == DType::Bool))
    return foldInt(Op, T, *CA, *CB);
  if (FA && FB && isFoldableFloat(T))
    return foldFloat(Op, T, *FA, *FB);

  if (T == DType::Bool && (Op == BinaryOp::And || Op == BinaryOp::Or)) {
    // Operands are pure, so a short circuit may drop one.
    bool IsAnd = Op == BinaryOp::And;
    if (CA)
      return (*CA != 0) == IsAnd ? B : A;
    if (CB)
      return (*CB != 0) == IsAnd ? A : B;
    return std::nullopt;
  }

  if (isFoldableInt(T)) {
    bool Same = structurallyEqual(A, B);
    switch (Op) {
    case BinaryOp::Add:
      if (isIntConst(B, 0))
        return A;
      if (isIntConst(A, 0))
        return B;
      if (CB)
        if (auto Split = splitOffset(A))
          return addOffset(Split->first, wrapTo(T, uint64_t(Split->second) + uint64_t(*CB)));
      if (CA)
        if (auto Split = splitOffset(B))
          return addOffset(Split->first, wrapTo(T, uint64_t(Split->second) + uint64_t(*CA)));
      break;
    case BinaryOp::Sub:
      if (isIntConst(B, 0))
        return A;
      if (Same)
        return intImm(0, T);
      if (CB)
        if (auto Split = splitOffset(A))
          return addOffset(Split->first, wrapTo(T, uint64_t(Split->second) - uint64_t(*CB)));
      break;
    case BinaryOp::Mul:
      if (isIntConst(B, 1))
        return A;
      if (isIntConst(A, 1))
        return B;
      if (isIntConst(A, 0) || isIntConst(B, 0))
        return intImm(0, T);
      if (CB)
        if (auto Split = splitScale(A))
          return scaleBy(Split->first, wrapTo(T, uint64_t(Split->second) * uint64_t(*CB)));
      if (CA)
        if (auto Split = splitScale(B))
          return scaleBy(Split->first, wrapTo(T, uint64_t(Split->second) * uint64_t(*CA)));
      break;
    case BinaryOp::Div:
      if (isIntConst(B, 1))
        return A;
      break;
    case BinaryOp::Mod:
      if (isIntConst(B, 1) || isIntConst(B, -1))
        return intImm(0, T);
      break;
    case BinaryOp::Min:
    case BinaryOp::Max:
      if (Same)
        return A;
      break;
    case BinaryOp::Eq:
    case BinaryOp::Le:
    case BinaryOp::Ge:
      if (Same)
        return boolImm(true);
      break;
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Gt:
      if (Same)
        return boolImm(false);
      break;
    default: break;
    }
    return std::nullopt;
  }

  if (isFoldableFloat(T)) {
    // Only identities exact for every input, NaN, infinities and signed
    // zeros included; nothing is reassociated.
    switch (Op) {
    case BinaryOp::Mul:
      if (isFloatConst(B, 1.0))
        return A;
      if (isFloatConst(A, 1.0))
        return B;
      break;
    case BinaryOp::Div:
      if (isFloatConst(B, 1.0))
        return A;
      break;
    case BinaryOp::Sub:
      if (isFloatConst(B, 0.0))
        return A;
      break;
    case BinaryOp::Add:
      if (isFloatConst(B, -0.0))
        return A;
      if (isFloatConst(A, -0.0))
        return B;
      break;
    default: break;
    }
  }
  return std::nullopt;
}

Expr Simplifier::visitUnary(const UnaryNode &N, const Expr &E) {
  Expr Rebuilt = IRMutator::visitUnary(N, E);
  const auto &M = static_cast<const UnaryNode &>(*Rebuilt);
  const Expr &A = M.A;
  if (M.Op == UnaryOp::Not) {
    if (std::optional<int64_t> C = asConstInt(A); C && A->Type == DType::Bool)
      return boolImm(*C == 0);
  } else {
    if (std::optional<int64_t> C = asConstInt(A); C && isFoldableInt(A->Type))
      return intImm(wrapTo(A->Type, 0 - uint64_t(*C)), A->Type);
    if (std::optional<double> C = asConstFloat(A); C && isFoldableFloat(A->Type))
      return floatImm(-*C, A->Type); // a sign flip is exact
  }
  // -(-x) and !!x: exact for wrapping integers and IEEE floats alike.
  if (A->Kind == ExprKind::Unary && static_cast<const UnaryNode &>(*A).Op == M.Op &&
      (M.Op == UnaryOp::Not || isFoldableInt(A->Type) || isFoldableFloat(A->Type)))
    return static_cast<const UnaryNode &>(*A).A;
  return Rebuilt;
}

Expr Simplifier::visitSelect(const SelectNode &N, const Expr &E) {
  Expr Rebuilt = IRMutator::visitSelect(N, E);
  const auto &M = static_cast<const SelectNode &>(*Rebuilt);
  if (std::optional<int64_t> C = asConstInt(M.Cond))
    return *C ? M.TrueValue : M.FalseValue;
  if (structurallyEqual(M.TrueValue, M.FalseValue))
    return M.TrueValue;
  return Rebuilt;
}

Expr Simplifier::visitCast(const CastNode &N, const Expr &E) {
  Expr Rebuilt = IRMutator::visitCast(N, E);
  const auto &M = static_cast<const CastNode &>(*Rebuilt);
  DType To = M.Type, From = M.A->Type;
  if (To == From)
    return M.A;
  if (std::optional<int64_t> C = asConstInt(M.A)) {
    if (To == DType::Bool)
      return boolImm(*C != 0);
    if (isInteger(To)) // integers saturate (convertValue)
      return intImm(std::clamp(*C, lowestOf(To), highestOf(To)), To);
    // Beyond 2^53 the double holding the value would already be rounded.
    const int64_t Exact = int64_t(1) << 53;
    if (isFloat(To) && *C >= -Exact && *C <= Exact)
      return floatImm(convertValue(double(*C), From, To), To);
    return Rebuilt;
  }
  if (std::optional<double> C = asConstFloat(M.A)) {
    if (To == DType::Bool)
      return boolImm(*C != 0.0);
    if (isInteger(To))
      return intImm(saturateInt(*C, To), To);
    if (isFloat(To))
      return floatImm(convertValue(*C, From, To), To);
  }
  return Rebuilt;
}

Expr Simplifier::visitCall(const CallNode &N, const Expr &E) {
  Expr Rebuilt = IRMutator::visitCall(N, E);
  const auto &M = static_cast<const CallNode &>(*Rebuilt);
  // Only abs is exact everywhere; other math depends on the target's libm.
  if (M.Fn != Intrinsic::Abs || M.Args.size() != 1)
    return Rebuilt;
  const Expr &A = M.Args[0];
  if (std::optional<int64_t> C = asConstInt(A);
      C && isFoldableInt(A->Type) && *C != lowestOf(A->Type))
    return intImm(*C < 0 ? -*C : *C, A->Type);
  if (std::optional<double> C = asConstFloat(A); C && isFoldableFloat(A->Type))
    return floatImm(std::fabs(*C), A->Type);
  return Rebuilt;
}

Stmt Simplifier::visitBlock(const BlockNode &N, const Stmt &S) {
  bool Changed = false;
  std::vector<Stmt> Out;
  for (const Stmt &C : N.Stmts) {
    Stmt M = mutate(C);
    if (M != C || !M || M->Kind == StmtKind::Block)
      Changed = true;
    if (M && M->Kind == StmtKind::Block) {
      // Children are simplified already, so a nested block holds no blocks.
      const auto &Inner = static_cast<const BlockNode &>(*M).Stmts;
      Out.insert(Out.end(), Inner.begin(), Inner.end());
    } else if (M) {
      Out.push_back(M);
    }
  }
  if (Out.size() == 1)
    return Out.front();
  if (!Changed)
    return S;
  return block(std::move(Out), N.SrcLine);
}

Stmt Simplifier::visitFor(const ForNode &N, const Stmt &S) {
  Stmt Rebuilt = IRMutator::visitFor(N, S);
  const auto &M = static_cast<const ForNode &>(*Rebuilt);
  // Loops bound to blocks or threads stay, whatever their extent or body:
  // their extents size the grid and the block, which decides how many
  // threads run every other statement of the launch.
  if (M.Loop != ForKind::Serial && M.Loop != ForKind::Unrolled &&
      M.Loop != ForKind::Vectorized)
    return Rebuilt;
  std::optional<int64_t> Ext = asConstInt(M.Extent);
  if ((Ext && *Ext <= 0) || isEmptyStmt(M.Body))
    return emptyStmt();
  if (Ext && *Ext == 1)
    return mutate(substitute(M.Body, M.Var, M.Min));
  return Rebuilt;
}

Stmt Simplifier::visitIf(const IfNode &N, const Stmt &S) {
  Stmt Rebuilt = IRMutator::visitIf(N, S);
  const auto &M = static_cast<const IfNode &>(*Rebuilt);
  if (std::optional<int64_t> C = asConstInt(M.Cond)) {
    if (*C)
      return M.Then;
    return M.Else ? M.Else : emptyStmt();
  }
  bool ElseEmpty = !M.Else || isEmptyStmt(M.Else);
  if (isEmptyStmt(M.Then) && ElseEmpty)
    return emptyStmt();
  if (M.Else && ElseEmpty)
    return ifThen(M.Cond, M.Then, nullptr, M.SrcLine);
  return Rebuilt;
}

Stmt Simplifier::visitLet(const LetNode &N, const Stmt &S) {
  Stmt Rebuilt = IRMutator::visitLet(N, S);
  if (isEmptyStmt(static_cast<const LetNode &>(*Rebuilt).Body))
    return emptyStmt();
  return Rebuilt;
}

Stmt Simplifier::visitAllocate(const AllocateNode &N, const Stmt &S) {
  Stmt Rebuilt = IRMutator::visitAllocate(N, S);
  if (isEmptyStmt(static_cast<const AllocateNode &>(*Rebuilt).Body))
    return emptyStmt();
  return Rebuilt;
}

} // namespace

Expr simplifyExpr(const Expr &E) {
  Simplifier S;
  return S.mutate(E);
}

Stmt simplifyStmt(const Stmt &St) {
  Simplifier S;
  return S.mutate(St);
}

void simplifyFunc(Func &F) {
  Simplifier S;
  for (Buffer &B : F.Params) {
    std::vector<Expr> Shape;
    if (S.mutateAll(B.Shape, Shape))
      B.Shape = std::move(Shape);
  }
  F.Body = S.mutate(F.Body);
  if (!F.Body)
    F.Body = emptyStmt();
}

} // namespace tdsl::ir
