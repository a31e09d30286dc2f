//===- Vectorize.cpp - 8- and 16-byte shared, global and register accesses -===//
#include "passes/Vectorize.h"
#include "ir/Match.h"
#include "passes/PassUtils.h"
#include "ir/Simplify.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace tdsl {

using namespace ir;

namespace {

/// Walks one launch, keeping what makes an access provably aligned: the
/// enclosing lets (a base is a multiple of W through let-bound variables),
/// the buffers allocated in it, and the conjuncts of enclosing ifs.
/// 1. A serial loop whose body ir::vectorCopy matches (one copy of W
///    consecutive elements, 8 or 16 bytes) is a candidate (visitFor).
/// 2. Each side must be one of: registers (the backend moves a vector's
///    components one by one, so no alignment is needed); shared memory
///    with a constant row length, padding included, that is a multiple of
///    W and a base that is one (pad-shared keeps its padding a multiple of
///    the widest access); global memory under facts that prove the first
///    element aligned, the rows a multiple of W and the base one too
///    (c = t - r * R with t a multiple of W) (sideOk).
/// 3. At least one side is in memory; the loop becomes `vectorize`. The
///    backend writes the memory side as one 8- or 16-byte access: a quarter
///    (an eighth) of the scalar loop's instructions, and for a warp reading
///    contiguous 16-byte chunks no bank conflict.
class Vectorizer : public IRMutator {
public:
  explicit Vectorizer(const Func &F) : F(F) {}
  unsigned Done = 0;

protected:
  Stmt visitLet(const LetNode &N, const Stmt &S) override {
    Expr Saved = Lets.lookup(N.Var);
    Lets[N.Var] = N.Value;
    Stmt Out = IRMutator::visitLet(N, S);
    Lets[N.Var] = Saved;
    return Out;
  }
  Stmt visitAllocate(const AllocateNode &N, const Stmt &S) override {
    const Buffer *Saved = Buffers.lookup(N.Buf.Name);
    Buffers[N.Buf.Name] = &N.Buf;
    Stmt Out = IRMutator::visitAllocate(N, S);
    Buffers[N.Buf.Name] = Saved;
    return Out;
  }
  /// The then-branch of `if A && B && ...` knows each conjunct: the
  /// `E % K == 0` and `aligned(X[0], N)` facts a wide global access needs.
  Stmt visitIf(const IfNode &N, const Stmt &S) override {
    size_t Saved = Facts.size();
    addConjuncts(N.Cond);
    Stmt Then = mutate(N.Then);
    Facts.resize(Saved);
    Stmt Else = N.Else ? mutate(N.Else) : nullptr;
    if (Then == N.Then && Else == N.Else)
      return S;
    return ifThen(N.Cond, Then, Else, N.SrcLine);
  }
  Stmt visitFor(const ForNode &N, const Stmt &S) override {
    Stmt Body = mutate(N.Body);
    int64_t W = 0;
    const StoreNode *Copy = N.Loop == ForKind::Serial ? vectorCopy(N, W) : nullptr;
    if (Copy && accessOk(*Copy, N, W)) {
      ++Done;
      return forLoop(N.Var, N.Min, N.Extent, ForKind::Vectorized, Body, N.SrcLine);
    }
    return Body == N.Body ? S
                          : forLoop(N.Var, N.Min, N.Extent, N.Loop, Body, N.SrcLine, N.Unroll);
  }

private:
  llvm::StringMap<Expr> Lets;
  const Func &F;
  llvm::StringMap<const Buffer *> Buffers; ///< allocated inside the nest

  /// Allocated in the nest, else a parameter or a temporary of F.
  const Buffer *buffer(const std::string &Name) const {
    if (const Buffer *B = Buffers.lookup(Name))
      return B;
    return findTensor(F, Name);
  }
  std::vector<Expr> Facts; ///< conditions that hold here

  void addConjuncts(const Expr &C) {
    if (C->Kind == ExprKind::Binary && static_cast<const BinaryNode &>(*C).Op == BinaryOp::And) {
      addConjuncts(static_cast<const BinaryNode &>(*C).A);
      addConjuncts(static_cast<const BinaryNode &>(*C).B);
    } else {
      Facts.push_back(C);
    }
  }

  /// A fact says E % K == 0 for a multiple K of W.
  bool knownMultiple(const Expr &E, int64_t W) const {
    for (const Expr &Fact : Facts) {
      if (Fact->Kind != ExprKind::Binary ||
          static_cast<const BinaryNode &>(*Fact).Op != BinaryOp::Eq)
        continue;
      const auto &Eq = static_cast<const BinaryNode &>(*Fact);
      if (asConstInt(Eq.B) != 0 || Eq.A->Kind != ExprKind::Binary)
        continue;
      const auto &M = static_cast<const BinaryNode &>(*Eq.A);
      std::optional<int64_t> K = asConstInt(M.B);
      if (M.Op == BinaryOp::Mod && K && *K > 0 && *K % W == 0 && structurallyEqual(M.A, E))
        return true;
    }
    return false;
  }
  /// A fact says the first element of global Name is aligned to Bytes.
  bool knownAligned(const std::string &Name, int64_t Bytes) const {
    for (const Expr &Fact : Facts) {
      if (Fact->Kind != ExprKind::Call ||
          static_cast<const CallNode &>(*Fact).Fn != Intrinsic::Aligned)
        continue;
      const auto &C = static_cast<const CallNode &>(*Fact);
      std::optional<int64_t> N = asConstInt(C.Args[1]);
      if (static_cast<const LoadNode &>(*C.Args[0]).Buffer == Name && N && *N % Bytes == 0)
        return true;
    }
    return false;
  }

  /// E modulo W: a constant plus coefficients of the terms it cannot see
  /// into (products of two variables, quotients), compared structurally
  /// once lets are expanded. X % K counts as X where W divides K (X - K q),
  /// so a row's head h = (W - o % W) % W cancels its offset o.
  struct Residue {
    int64_t Const = 0;
    std::vector<std::pair<Expr, int64_t>> Terms;
  };
  void residue(const Expr &E, int64_t W, int64_t Scale, Residue &R, unsigned Depth) {
    auto Opaque = [&] {
      for (auto &[T, K] : R.Terms)
        if (structurallyEqual(T, E)) {
          K = (K + Scale) % W;
          return;
        }
      R.Terms.push_back({E, Scale % W});
    };
    if (Depth > 64)
      return Opaque();
    if (std::optional<int64_t> C = asConstInt(E)) {
      R.Const = (R.Const + Scale % W * (*C % W)) % W;
      return;
    }
    if (E->Kind == ExprKind::Var) {
      if (Expr V = Lets.lookup(static_cast<const VarNode &>(*E).Name))
        return residue(V, W, Scale, R, Depth + 1);
      return Opaque();
    }
    if (E->Kind != ExprKind::Binary)
      return Opaque();
    const auto &B = static_cast<const BinaryNode &>(*E);
    std::optional<int64_t> KA = asConstInt(B.A), KB = asConstInt(B.B);
    switch (B.Op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
      residue(B.A, W, Scale, R, Depth + 1);
      return residue(B.B, W, B.Op == BinaryOp::Add ? Scale : W - Scale % W, R, Depth + 1);
    case BinaryOp::Mul:
      if (KA || KB)
        return residue(KA ? B.B : B.A, W, Scale * ((KA ? *KA : *KB) % W) % W, R, Depth + 1);
      if (multipleOf(B.A, W) || multipleOf(B.B, W))
        return;
      return Opaque();
    case BinaryOp::Mod:
      if (KB && *KB > 0 && *KB % W == 0)
        return residue(B.A, W, Scale, R, Depth + 1);
      return Opaque();
    default: return Opaque();
    }
  }
  bool residueZero(const Expr &E, int64_t W) {
    Residue R;
    residue(E, W, 1, R, 0);
    return (R.Const % W + W) % W == 0 &&
           llvm::all_of(R.Terms, [&](const auto &T) { return (T.second % W + W) % W == 0; });
  }

  /// E is a multiple of W for every value of its variables.
  bool multipleOf(const Expr &E, int64_t W, unsigned Depth = 0) {
    if (Depth > 64)
      return false;
    if (std::optional<int64_t> C = asConstInt(E))
      return *C % W == 0;
    if (knownMultiple(E, W))
      return true;
    if (E->Kind == ExprKind::Var) {
      Expr V = Lets.lookup(static_cast<const VarNode &>(*E).Name);
      return V && multipleOf(V, W, Depth + 1);
    }
    if (E->Kind != ExprKind::Binary)
      return false;
    const auto &B = static_cast<const BinaryNode &>(*E);
    switch (B.Op) {
    case BinaryOp::Add:
    case BinaryOp::Sub: return multipleOf(B.A, W, Depth + 1) && multipleOf(B.B, W, Depth + 1);
    case BinaryOp::Mul: return multipleOf(B.A, W, Depth + 1) || multipleOf(B.B, W, Depth + 1);
    // a % b = a - (a / b) * b.
    case BinaryOp::Mod: return multipleOf(B.A, W, Depth + 1) && multipleOf(B.B, W, Depth + 1);
    default: return false;
    }
  }

  /// One side of the copy (step 2): its last index is base + v, v nowhere
  /// else; then registers always qualify, global and shared memory when
  /// they are provably aligned.
  bool sideOk(const std::string &Name, const std::vector<Expr> &Idx, const ForNode &L,
              int64_t W) {
    const Buffer *B = buffer(Name);
    if (!B || Idx.empty())
      return false;
    // The last index is v, base + v or v + base, base free of v.
    Expr Base;
    const Expr &Last = Idx.back();
    auto IsV = [&](const Expr &E) {
      return E->Kind == ExprKind::Var && static_cast<const VarNode &>(*E).Name == L.Var;
    };
    if (IsV(Last)) {
      Base = intImm(0);
    } else if (Last->Kind == ExprKind::Binary &&
               static_cast<const BinaryNode &>(*Last).Op == BinaryOp::Add) {
      const auto &A = static_cast<const BinaryNode &>(*Last);
      if (IsV(A.B))
        Base = A.A;
      else if (IsV(A.A))
        Base = A.B;
    }
    bool Unit = Base && !usesAnyVar(Base, {L.Var});
    for (size_t I = 0; I + 1 < Idx.size(); ++I)
      Unit &= !usesAnyVar(Idx[I], {L.Var});
    if (!Unit)
      return false;
    if (B->Scope == MemScope::Register)
      return true;
    if (B->Scope == MemScope::Global) {
      // Row-major: the offset is (...) * rows + last index, so it is a
      // multiple of W when the rows and the last index are; and the first
      // element must be aligned, which only a test at run time knows.
      // Or the offset itself is one: a row's runs that start past its head
      // (row-chain's peeled rows).
      int64_t Bytes = W * dtypeBytes(B->Type);
      bool Aligned = knownAligned(Name, Bytes);
      bool Rows = B->rank() < 2 || multipleOf(B->Shape.back(), W);
      bool ByRows = Rows && multipleOf(Base, W);
      std::vector<Expr> At(Idx.begin(), Idx.end() - 1);
      At.push_back(Base);
      if (!Aligned || (!ByRows && !residueZero(linearIndex(B->Shape, At), W))) {
        remark("vectorize", L.SrcLine,
               "'" + Name + "' is in global memory and no enclosing test proves " +
                   (!Aligned ? "aligned(" + Name + ", " + std::to_string(Bytes) + ")"
                    : !Rows ? "its rows a multiple of " + std::to_string(W) + " elements"
                            : "the run starts at a multiple of " + std::to_string(W)) +
                   "; scalar accesses");
        return false;
      }
      return true;
    }
    if (B->Scope != MemScope::Shared)
      return false;
    std::optional<int64_t> Row = asConstInt(simplifyExpr(B->Shape.back()));
    int64_t Pad = B->Padding.empty() ? 0 : B->Padding.back();
    if (!Row || (*Row + Pad) % W || !multipleOf(Base, W)) {
      remark("vectorize", L.SrcLine,
             "'" + Name + "' is not provably aligned to " + std::to_string(W) +
                 " elements; scalar accesses");
      return false;
    }
    return true;
  }

  bool accessOk(const StoreNode &St, const ForNode &L, int64_t W) {
    const auto &Ld = static_cast<const LoadNode &>(*St.Value);
    const Buffer *D = buffer(St.Buffer), *S = buffer(Ld.Buffer);
    // Something to gain: at least one side in memory.
    if (!D || !S || (D->Scope == MemScope::Register && S->Scope == MemScope::Register))
      return false;
    return sideOk(St.Buffer, St.Indices, L, W) && sideOk(Ld.Buffer, Ld.Indices, L, W);
  }
};

} // namespace

void vectorize(Func &F) {
  rewriteNests(F, [&](const Stmt &S) {
    Vectorizer V(F);
    Stmt Out = V.mutate(S);
    if (Out != S)
      remark("vectorize", S->SrcLine,
             std::to_string(V.Done) + " copy loop(s) made single wide accesses");
    return Out;
  });
}

} // namespace tdsl
