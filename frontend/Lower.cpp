//===- Lower.cpp - From the checked AST to the first, naive loop IR -------===//
#include "frontend/Lower.h"

#include "ir/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>
#include <set>

namespace tdsl {

using namespace ir;

Expr affineToIR(const ast::Affine &A) {
  Expr R;
  for (const auto &[Name, C] : A.Coeffs) {
    Expr Term = var(Name);
    if (C != 1)
      Term = mul(intImm(C), Term);
    R = R ? add(R, Term) : Term;
  }
  if (!R)
    return intImm(A.Constant);
  if (A.Constant != 0)
    R = add(R, intImm(A.Constant));
  return R;
}

namespace {

/// The identity a reduction starts from, in the accumulation type.
Expr reductionIdentity(ast::AssignOp Op, DType Acc) {
  bool Float = isFloat(Acc);
  switch (Op) {
  case ast::AssignOp::Assign:
  case ast::AssignOp::Add: return Float ? floatImm(0.0, Acc) : intImm(0, Acc);
  case ast::AssignOp::Mul: return Float ? floatImm(1.0, Acc) : intImm(1, Acc);
  case ast::AssignOp::Max:
    return Float ? floatImm(-std::numeric_limits<double>::infinity(), Acc)
                 : intImm(static_cast<int64_t>(dtypeLowest(Acc)), Acc);
  case ast::AssignOp::Min:
    return Float ? floatImm(std::numeric_limits<double>::infinity(), Acc)
                 : intImm(static_cast<int64_t>(dtypeHighest(Acc)), Acc);
  }
  return intImm(0, Acc);
}

/// Names the register accumulator after what it accumulates: C_sum, mx_max.
const char *accumulatorSuffix(ast::AssignOp Op) {
  switch (Op) {
  case ast::AssignOp::Assign:
  case ast::AssignOp::Add: return "sum";
  case ast::AssignOp::Mul: return "prod";
  case ast::AssignOp::Max: return "max";
  case ast::AssignOp::Min: return "min";
  }
  return "acc";
}

Expr combine(ast::AssignOp Op, Expr Acc, Expr Term) {
  switch (Op) {
  case ast::AssignOp::Assign:
  case ast::AssignOp::Add: return add(Acc, Term);
  case ast::AssignOp::Mul: return mul(Acc, Term);
  case ast::AssignOp::Max: return binary(BinaryOp::Max, Acc, Term);
  case ast::AssignOp::Min: return binary(BinaryOp::Min, Acc, Term);
  }
  return Term;
}

class KernelLowering {
public:
  KernelLowering(const ast::Kernel &K, const std::function<unsigned(llvm::SMLoc)> &LineOf,
                 const LowerPlan &Plan)
      : K(K), LineOf(LineOf), Plan(Plan) {
    for (const auto *List : {&K.Inputs, &K.Outputs, &K.Intermediates})
      for (const auto &T : *List)
        Used.insert(T->Name);
    for (const std::string &S : K.SizeSymbols)
      Used.insert(S);
    for (const auto &S : K.Body)
      for (const auto &[Index, Range] : S->Ranges)
        Used.insert(Index);
    for (const LowerPlan::RowChain &C : Plan.RowChains)
      for (const ast::Stmt *M : C.Members)
        ChainOf[M] = &C;
  }

  Func run() {
    Func F;
    F.Name = K.Name;
    F.Sizes = K.SizeSymbols;
    // The schedule block travels with the kernel; the passes that own a
    // key read it (passes/Schedule.h).
    if (K.Sched)
      for (const ast::ScheduleEntry &E : K.Sched->Entries) {
        Knob Kn;
        Kn.Key = E.Key;
        Kn.Ints = E.Ints;
        Kn.IsList = E.IsList;
        Kn.Word = E.Word;
        Kn.Line = LineOf(E.Loc);
        F.Schedule.push_back(std::move(Kn));
      }
    for (const auto *List : {&K.Inputs, &K.Outputs})
      for (const auto &T : *List) {
        Buffer B;
        B.Name = T->Name;
        B.Type = T->Type;
        B.Role = T->Role == ast::TensorRole::Output ? BufferRole::Output
                                                    : BufferRole::Input;
        for (const ast::Affine &A : T->Shape)
          B.Shape.push_back(affineToIR(A));
        F.Params.push_back(std::move(B));
      }
    F.Body = lowerFrom(0);
    return F;
  }

private:
  const ast::Kernel &K;
  const std::function<unsigned(llvm::SMLoc)> &LineOf;
  const LowerPlan &Plan;
  std::set<std::string> Used;

  bool inlined(const ast::Tensor &T) const {
    return T.Role == ast::TensorRole::Intermediate && T.Definition && Plan.Inlined.count(T.Name);
  }
  /// While an epilogue is lowered: the contraction's intermediates (its
  /// own and its siblings') and the accumulator value that stands for each.
  std::map<const ast::Tensor *, Expr> EpilogueValues;
  /// The row chain of each statement in one, and while a chain is lowered
  /// its intermediates held per row.
  std::map<const ast::Stmt *, const LowerPlan::RowChain *> ChainOf;
  const std::set<std::string> *RowLocal = nullptr;
  const std::set<std::string> *Recompute = nullptr;
  /// While a chain is lowered: its outputs per row and the register that
  /// holds each for the statements after it.
  std::map<std::string, std::string> RowCopy;

  /// Each store to an output per row also sets its copy in a register.
  struct CopyStores : IRMutator {
    const std::map<std::string, std::string> &Copy;
    explicit CopyStores(const std::map<std::string, std::string> &C) : Copy(C) {}
    Stmt visitStore(const StoreNode &N, const Stmt &S) override {
      auto It = Copy.find(N.Buffer);
      if (It == Copy.end())
        return S;
      Expr Held = load(N.Value->Type, It->second, {intImm(0)});
      return block({store(It->second, {intImm(0)}, N.Value, S->SrcLine),
                    store(N.Buffer, N.Indices, Held, S->SrcLine)});
    }
  };

  Buffer intermediateBuffer(const ast::Tensor &T) const {
    Buffer B;
    B.Name = T.Name;
    B.Type = T.Type;
    B.Scope = MemScope::Global;
    B.Role = BufferRole::Temp;
    for (const ast::Affine &A : T.Shape)
      B.Shape.push_back(affineToIR(A));
    if (B.Shape.empty())
      B.Shape.push_back(intImm(1));
    return B;
  }

  std::string freshName(const std::string &Base) {
    std::string N = Base;
    for (unsigned I = 1; Used.count(N); ++I)
      N = Base + std::to_string(I);
    Used.insert(N);
    return N;
  }

  /// X (an Expr or a Stmt) with each index From[I] replaced by To[I], all
  /// at once: through fresh names (From[I] + Suffix) first, since a To may
  /// use a name in From.
  template <typename T>
  T renamed(T X, const std::vector<std::string> &From, const std::vector<Expr> &To,
            const std::string &Suffix) {
    std::vector<std::string> Fresh;
    for (const std::string &F : From) {
      Fresh.push_back(freshName(F + Suffix));
      X = substitute(X, F, var(Fresh.back()));
    }
    for (size_t I = 0; I < Fresh.size(); ++I)
      X = substitute(X, Fresh[I], To[I]);
    return X;
  }

  /// Rank-0 intermediates are stored as one-element buffers.
  static bool isScalarTemp(const ast::Tensor &T) {
    return T.Role == ast::TensorRole::Intermediate && T.Shape.empty();
  }

  std::vector<Expr> storageIndices(const ast::Tensor &T, std::vector<Expr> Idx) {
    if (isScalarTemp(T) || (RowLocal && RowLocal->count(T.Name)))
      return {intImm(0)};
    return Idx;
  }

  /// Statements I.. of the body; an intermediate's allocation wraps
  /// everything from the statement that writes it on (a contraction with
  /// an epilogue writes its maps' intermediates, not its own).
  Stmt lowerFrom(size_t I) {
    std::vector<Stmt> Stmts;
    for (; I < K.Body.size(); ++I) {
      const ast::Stmt &S = *K.Body[I];
      if (S.Target && (inlined(*S.Target) || Plan.InEpilogue.count(S.Target->Name) ||
                       Plan.InSiblings.count(S.Target->Name)))
        continue; // computed where it is read, or in a contraction's nest
      if (auto Chain = ChainOf.find(&S); Chain != ChainOf.end()) {
        if (Chain->second->Members.front() != &S)
          continue;
        // The values per row live inside the chain's nest; an intermediate
        // per element is stored, for the statements after the chain.
        Stmts.push_back(lowerChain(*Chain->second));
        std::vector<const ast::Tensor *> Temps;
        for (const ast::Stmt *M : Chain->second->Members)
          if (M->Target->Role == ast::TensorRole::Intermediate &&
              !Chain->second->RowLocal.count(M->TargetName))
            Temps.push_back(M->Target);
        if (Temps.empty())
          continue;
        Stmt Body = block({Stmts.back(), lowerFrom(I + 1)});
        for (auto It = Temps.rbegin(); It != Temps.rend(); ++It)
          Body = allocate(intermediateBuffer(**It), Body, LineOf(S.Loc));
        Stmts.back() = Body;
        return block(std::move(Stmts));
      }
      Stmts.push_back(lowerStmt(S));
      std::vector<const ast::Tensor *> Written;
      auto Epi = Plan.Epilogues.find(S.TargetName);
      if (Epi == Plan.Epilogues.end()) {
        Written.push_back(S.Target);
        for (const ast::Stmt *Sib : siblingsOf(S))
          Written.push_back(Sib->Target);
      } else {
        for (const ast::Stmt *E : Epi->second)
          Written.push_back(E->Target);
      }
      std::vector<const ast::Tensor *> Temps;
      for (const ast::Tensor *T : Written)
        if (T && T->Role == ast::TensorRole::Intermediate)
          Temps.push_back(T);
      if (!Temps.empty()) {
        // The statement itself belongs inside the allocations.
        Stmt Body = block({Stmts.back(), lowerFrom(I + 1)});
        for (auto It = Temps.rbegin(); It != Temps.rend(); ++It)
          Body = allocate(intermediateBuffer(**It), Body, LineOf(S.Loc));
        Stmts.back() = Body;
        return block(std::move(Stmts));
      }
    }
    return block(std::move(Stmts));
  }

  /// Row chain C as one nest over its first statement's rows: each
  /// statement as lowered alone, its row loops gone and its row indices
  /// renamed to the first one's, inside one-element registers for the
  /// values held per row.
  Stmt lowerChain(const LowerPlan::RowChain &C) {
    const ast::Stmt &First = *C.Members.front();
    unsigned Line = LineOf(First.Loc);
    size_t Rows = C.Rows;
    RowLocal = &C.RowLocal;
    Recompute = &C.Recomputed;
    RowCopy.clear();
    std::vector<const ast::Stmt *> Copied;
    for (const ast::Stmt *M : C.Members)
      if (C.HeldOutputs.count(M->TargetName)) {
        RowCopy[M->TargetName] = freshName(M->TargetName + "_row");
        Copied.push_back(M);
      }
    std::vector<Stmt> Body;
    for (const ast::Stmt *M : C.Members) {
      Stmt L = CopyStores(RowCopy).mutate(lowerStmt(*M));
      for (size_t D = 0; D < Rows; ++D)
        L = static_cast<const ForNode &>(*L).Body;
      // (A column index may be called as one of the first statement's rows.)
      std::vector<std::string> From(M->Indices.begin(), M->Indices.begin() + Rows);
      std::vector<Expr> To;
      for (size_t D = 0; D < Rows; ++D)
        To.push_back(var(First.Indices[D]));
      Body.push_back(renamed(L, From, To, "_row"));
    }
    RowLocal = nullptr;
    Recompute = nullptr;
    Stmt Nest = block(std::move(Body));
    for (auto It = Copied.rbegin(); It != Copied.rend(); ++It) {
      Buffer B;
      B.Name = RowCopy.at((*It)->TargetName);
      B.Type = (*It)->Target->Type;
      B.Scope = MemScope::Register;
      B.Shape = {intImm(1)};
      Nest = allocate(std::move(B), Nest, LineOf((*It)->Loc));
    }
    RowCopy.clear();
    for (auto It = C.Members.rbegin(); It != C.Members.rend(); ++It) {
      const ast::Tensor &T = *(*It)->Target;
      if (!C.RowLocal.count(T.Name))
        continue;
      Buffer B;
      B.Name = T.Name;
      B.Type = T.Type;
      B.Scope = MemScope::Register;
      B.Shape = {intImm(1)};
      Nest = allocate(std::move(B), Nest, LineOf((*It)->Loc));
    }
    for (size_t D = Rows; D-- > 0;)
      Nest = forLoop(First.Indices[D], intImm(0), affineToIR(First.Ranges.at(First.Indices[D])),
                     ForKind::Serial, Nest, Line);
    return Nest;
  }

  /// The stores of the epilogue maps of contraction S and its siblings
  /// (Members, S first), from their results Results (accumulators as f32
  /// or the accumulation type, at S's indices): a member that is an
  /// output, its result converted to its dtype; then each map's value
  /// with each member, and each map before it, read as its value
  /// converted to its dtype (as its store did), at the indices of S the
  /// plan names.
  std::vector<Stmt> epilogueStores(const ast::Stmt &S, const std::vector<const ast::Stmt *> &Members,
                                   const std::vector<Expr> &Results,
                                   const std::vector<const ast::Stmt *> &Maps) {
    std::vector<Stmt> Out;
    std::vector<Expr> Here;
    for (const std::string &I : S.Indices)
      Here.push_back(var(I));
    for (size_t M = 0; M < Members.size(); ++M) {
      const ast::Tensor &T = *Members[M]->Target;
      EpilogueValues[&T] = cast(T.Type, Results[M]);
      if (T.Role == ast::TensorRole::Output)
        Out.push_back(
            store(T.Name, storageIndices(T, Here), EpilogueValues[&T], LineOf(Members[M]->Loc)));
    }
    // The maps' values are built over fresh names for S's indices, so that
    // a value taken into a later map is not renamed with that map's
    // indices; the names become S's at the end.
    std::vector<std::string> Fresh;
    for (const std::string &I : S.Indices)
      Fresh.push_back(freshName(I + "_epi"));
    for (const ast::Stmt *C : Maps) {
      const ast::Tensor &T = *C->Target;
      std::vector<Expr> Idx;
      for (unsigned D : Plan.EpilogueAt.at(C))
        Idx.push_back(var(Fresh[D]));
      Expr V = renamed(lowerAs(T.Type, *C->Value), C->Indices, Idx, "_epi");
      EpilogueValues[&T] = V;
      Out.push_back(store(T.Name, storageIndices(T, Idx), V, LineOf(C->Loc)));
    }
    EpilogueValues.clear();
    for (Stmt &St : Out)
      St = renamed(St, Fresh, Here, "_at");
    return Out;
  }

  /// The contractions computed in S's nest beside it (none if S has no
  /// siblings).
  const std::vector<const ast::Stmt *> &siblingsOf(const ast::Stmt &S) const {
    static const std::vector<const ast::Stmt *> None;
    auto It = Plan.Siblings.find(S.TargetName);
    return It == Plan.Siblings.end() ? None : It->second;
  }

  /// S's accumulation into a fresh one-element register: the buffer, its
  /// initial store, the update inside the reduction loops (not built
  /// here) and the value of the result, all over Into's indices (S's
  /// output and reduced indices renamed by position: S is Into or its
  /// sibling).
  struct Accumulation {
    Buffer Buf;
    Stmt Init, Update;
    Expr Result;
  };
  Accumulation accumulation(const ast::Stmt &S, const ast::Stmt &Into) {
    unsigned Line = LineOf(S.Loc);
    const ast::Tensor &T = *S.Target;
    DType Acc = arithmeticType(T.Type);
    std::string AccName = freshName(T.Name + "_" + accumulatorSuffix(S.Op));
    Expr AccRef = load(Acc, AccName, {intImm(0)});
    Expr Term = lowerAs(Acc, *S.Value), Result = AccRef;
    if (Plan.FactorsOut.count(S.TargetName)) {
      // The factors without a reduced index multiply the sum once.
      // So do the divisors and the sign of Sign * (P) / D1 ...
      // (graph/Fuse.cpp took only divisors free of the reduced indices).
      ast::ScaledProduct SP = ast::scaledProduct(*S.Value);
      std::vector<const ast::Expr *> Fs;
      ast::productFactors(*SP.Core, Fs);
      DType OT = static_cast<const ast::Binary &>(*SP.Core).OperandType;
      Expr In, Out;
      for (const ast::Expr *F : Fs) {
        Expr V = lowerAs(OT, *F);
        Expr &P = ast::usesIndex(*F, S.Reduced) ? In : Out;
        P = P ? binary(BinaryOp::Mul, P, V) : V;
      }
      Term = as(Acc, In);
      if (Out)
        Result = binary(BinaryOp::Mul, AccRef, as(Acc, Out));
      for (const ast::Expr *D : SP.Divisors)
        Result = binary(BinaryOp::Div, Result, lowerAs(Acc, *D));
      if (SP.Negated)
        Result = unary(UnaryOp::Neg, Result);
    }
    if (&S != &Into) {
      // By position (a sibling's index may be called as one of Into's).
      std::vector<std::string> From = S.Indices;
      llvm::append_range(From, S.Reduced);
      std::vector<Expr> To;
      for (const std::string &I : Into.Indices)
        To.push_back(var(I));
      for (const std::string &I : Into.Reduced)
        To.push_back(var(I));
      Term = renamed(Term, From, To, "_sib");
      Result = renamed(Result, From, To, "_sib");
    }
    Accumulation A;
    A.Buf.Name = AccName;
    A.Buf.Type = Acc;
    A.Buf.Scope = MemScope::Register;
    A.Buf.Shape = {intImm(1)};
    A.Init = store(AccName, {intImm(0)}, reductionIdentity(S.Op, Acc), Line);
    A.Update = store(AccName, {intImm(0)}, combine(S.Op, AccRef, Term), Line);
    A.Result = Result;
    return A;
  }

  /// The order of S's output loops: its indices as written, but where S
  /// sums a product of several tensors, the indices every tensor it reads
  /// uses (a batch) first, where two others remain: the tile passes take
  /// the batch loops outermost, so C[m, b, n] += A[m, b, k] * B[k, b, n]
  /// runs b, m, n (attention's O[b, s, h, d] += P[b, h, s, t] * V[b, t, h,
  /// d] b, h, s, d). Each loop keeps its name: the stores are unchanged.
  static std::vector<std::string> loopOrder(const ast::Stmt &S) {
    if (S.Reduced.empty())
      return S.Indices;
    std::vector<const ast::Expr *> Reads;
    ast::forEachExpr(*S.Value, [&](const ast::Expr &X) {
      if (X.Kind == ast::ExprKind::Access)
        Reads.push_back(&X);
    });
    if (Reads.size() < 2)
      return S.Indices;
    std::vector<std::string> Batch, Rest;
    for (const std::string &I : S.Indices)
      (llvm::all_of(Reads, [&](const ast::Expr *R) { return ast::usesIndex(*R, {I}); })
           ? Batch
           : Rest)
          .push_back(I);
    if (Batch.empty() || Rest.size() < 2)
      return S.Indices;
    llvm::append_range(Batch, Rest);
    return Batch;
  }

  Stmt lowerStmt(const ast::Stmt &S) {
    unsigned Line = LineOf(S.Loc);
    const ast::Tensor &T = *S.Target;
    std::vector<Expr> LhsIdx;
    for (const std::string &I : S.Indices)
      LhsIdx.push_back(var(I));

    Stmt Inner;
    if (S.Reduced.empty() && S.Op == ast::AssignOp::Assign) {
      Inner = store(T.Name, storageIndices(T, LhsIdx), lowerAs(T.Type, *S.Value),
                    Line);
    } else if (S.Reduced.empty() && siblingsOf(S).empty() &&
               !Plan.Epilogues.count(S.TargetName)) {
      // With no reduced index a reducing operator converts the value
      // through the accumulation type (dsl/LANGUAGE.md, section 7): one
      // store, no accumulator, so the map passes take it.
      DType Acc = arithmeticType(T.Type);
      Inner = store(T.Name, storageIndices(T, LhsIdx),
                    cast(T.Type, combine(S.Op, reductionIdentity(S.Op, Acc), lowerAs(Acc, *S.Value))),
                    Line);
    } else {
      // S's accumulator, and one per sibling computed beside it.
      std::vector<const ast::Stmt *> Members = {&S};
      llvm::append_range(Members, siblingsOf(S));
      std::vector<Accumulation> Accs;
      for (const ast::Stmt *M : Members)
        Accs.push_back(accumulation(*M, S));
      std::vector<Stmt> Updates, Body;
      std::vector<Expr> Results;
      for (Accumulation &A : Accs) {
        Body.push_back(A.Init);
        Updates.push_back(A.Update);
        Results.push_back(A.Result);
      }
      Stmt Update = Updates.size() == 1 ? Updates[0] : block(std::move(Updates));
      for (auto It = S.Reduced.rbegin(); It != S.Reduced.rend(); ++It)
        Update = forLoop(*It, intImm(0), affineToIR(S.Ranges.at(*It)), ForKind::Serial,
                         Update, Line);
      Body.push_back(Update);
      auto Epi = Plan.Epilogues.find(S.TargetName);
      if (Epi != Plan.Epilogues.end()) {
        llvm::append_range(Body, epilogueStores(S, Members, Results, Epi->second));
      } else {
        for (size_t M = 0; M < Members.size(); ++M) {
          const ast::Tensor &MT = *Members[M]->Target;
          Body.push_back(store(MT.Name, storageIndices(MT, LhsIdx), cast(MT.Type, Results[M]),
                               LineOf(Members[M]->Loc)));
        }
      }
      Inner = block(std::move(Body));
      for (auto It = Accs.rbegin(); It != Accs.rend(); ++It)
        Inner = allocate(std::move(It->Buf), Inner, Line);
    }
    std::vector<std::string> Order = loopOrder(S);
    for (auto It = Order.rbegin(); It != Order.rend(); ++It)
      Inner = forLoop(*It, intImm(0), affineToIR(S.Ranges.at(*It)), ForKind::Serial, Inner,
                      Line);
    return Inner;
  }

  /// The value of a tensor element as stored (its dtype): a load, or for
  /// an inlined intermediate its map's value at Idx, converted to its dtype.
  Expr lowerRead(const ast::Tensor &T, std::vector<Expr> Idx) {
    if (auto It = EpilogueValues.find(&T); It != EpilogueValues.end())
      return It->second; // read at the contraction's own indices
    if (inlined(T) || (Recompute && Recompute->count(T.Name))) {
      const ast::Stmt &D = *T.Definition;
      Expr V = cast(T.Type, lowerAs(T.Type, *D.Value));
      // The map's indices become the reader's subscripts (which may use a
      // name the map also uses).
      return renamed(V, D.Indices, Idx, "_in");
    }
    if (auto Copy = RowCopy.find(T.Name); Copy != RowCopy.end())
      return load(T.Type, Copy->second, {intImm(0)}); // an output of the row chain, held
    if (T.Role != ast::TensorRole::Intermediate && T.Shape.empty())
      return load(T.Type, T.Name, {});
    return load(T.Type, T.Name, storageIndices(T, std::move(Idx)));
  }

  static Expr toBool(Expr E) {
    if (E->Type == DType::Bool)
      return E;
    DType A = arithmeticType(E->Type);
    Expr Zero = isFloat(A) ? floatImm(0.0, A) : intImm(0, A);
    return binary(BinaryOp::Ne, cast(A, E), Zero);
  }

  /// An operand converted to the type an operation computes in.
  static Expr as(DType T, Expr E) {
    if (T == DType::Bool)
      return toBool(E);
    return cast(T, E);
  }

  /// E converted to T. A literal is rounded once, straight to T (the
  /// language keeps literals exact until they meet a type), so 0.1 in f64
  /// arithmetic is the double nearest 0.1, not a widened f32.
  Expr lowerAs(DType T, const ast::Expr &E) {
    if (isFloat(T))
      if (std::optional<double> V = literalValue(E))
        return floatImm(*V, T);
    return as(T, lowerExpr(E));
  }

  /// The value of a literal, or of a negated one (negation is exact, so
  /// -0.1 rounds once to the type it meets, as 0.1 does).
  static std::optional<double> literalValue(const ast::Expr &E) {
    if (E.Kind == ast::ExprKind::FloatLit)
      return static_cast<const ast::FloatLit &>(E).Value;
    if (E.Kind == ast::ExprKind::IntLit)
      return static_cast<double>(static_cast<const ast::IntLit &>(E).Value);
    if (E.Kind == ast::ExprKind::Unary) {
      const auto &U = static_cast<const ast::Unary &>(E);
      if (U.Op == ast::UnaryOp::Neg)
        if (std::optional<double> V = literalValue(*U.Operand))
          return -*V;
    }
    return std::nullopt;
  }

  Expr lowerExpr(const ast::Expr &E) {
    switch (E.Kind) {
    case ast::ExprKind::IntLit: {
      const auto &L = static_cast<const ast::IntLit &>(E);
      return isFloat(E.Type) ? floatImm(static_cast<double>(L.Value), E.Type)
                             : intImm(L.Value, E.Type);
    }
    case ast::ExprKind::FloatLit:
      return floatImm(static_cast<const ast::FloatLit &>(E).Value, E.Type);
    case ast::ExprKind::Name: {
      const auto &N = static_cast<const ast::Name &>(E);
      if (N.Resolved == ast::NameKind::Tensor)
        return lowerRead(*N.Target, {});
      return cast(E.Type, var(N.Id));
    }
    case ast::ExprKind::Access: {
      const auto &A = static_cast<const ast::Access &>(E);
      std::vector<Expr> Idx;
      for (const ast::Affine &Sub : A.AffineSubs)
        Idx.push_back(affineToIR(Sub));
      return lowerRead(*A.Target, std::move(Idx));
    }
    case ast::ExprKind::Unary: {
      const auto &U = static_cast<const ast::Unary &>(E);
      if (U.Op == ast::UnaryOp::Not)
        return unary(UnaryOp::Not, toBool(lowerExpr(*U.Operand)));
      return unary(UnaryOp::Neg, cast(arithmeticType(E.Type), lowerExpr(*U.Operand)));
    }
    case ast::ExprKind::Binary: {
      const auto &B = static_cast<const ast::Binary &>(E);
      Expr L = lowerAs(B.OperandType, *B.LHS);
      Expr R = lowerAs(B.OperandType, *B.RHS);
      switch (B.Op) {
      case ast::BinaryOp::Add: return binary(BinaryOp::Add, L, R);
      case ast::BinaryOp::Sub: return binary(BinaryOp::Sub, L, R);
      case ast::BinaryOp::Mul: return binary(BinaryOp::Mul, L, R);
      case ast::BinaryOp::Div: return binary(BinaryOp::Div, L, R);
      case ast::BinaryOp::Mod: return binary(BinaryOp::Mod, L, R);
      case ast::BinaryOp::Lt: return binary(BinaryOp::Lt, L, R);
      case ast::BinaryOp::Le: return binary(BinaryOp::Le, L, R);
      case ast::BinaryOp::Gt: return binary(BinaryOp::Gt, L, R);
      case ast::BinaryOp::Ge: return binary(BinaryOp::Ge, L, R);
      case ast::BinaryOp::Eq: return binary(BinaryOp::Eq, L, R);
      case ast::BinaryOp::Ne: return binary(BinaryOp::Ne, L, R);
      case ast::BinaryOp::And: return binary(BinaryOp::And, toBool(L), toBool(R));
      case ast::BinaryOp::Or: return binary(BinaryOp::Or, toBool(L), toBool(R));
      }
      TDSL_UNREACHABLE("unknown binary operator");
    }
    case ast::ExprKind::Select: {
      const auto &S = static_cast<const ast::Select &>(E);
      DType T = arithmeticType(E.Type);
      return select(toBool(lowerExpr(*S.Cond)), lowerAs(T, *S.Then), lowerAs(T, *S.Else));
    }
    case ast::ExprKind::Call: return lowerCall(static_cast<const ast::Call &>(E));
    }
    TDSL_UNREACHABLE("unknown expression kind");
  }

  Expr lowerCall(const ast::Call &C) {
    if (C.Fn == ast::Callee::Cast)
      return lowerAs(C.CastTo, *C.Args[0]);
    std::vector<Expr> Args;
    for (const auto &A : C.Args)
      Args.push_back(lowerAs(C.ArgType, *A));
    switch (C.Fn) {
    case ast::Callee::Max: return binary(BinaryOp::Max, Args[0], Args[1]);
    case ast::Callee::Min: return binary(BinaryOp::Min, Args[0], Args[1]);
    case ast::Callee::Exp: return call(Intrinsic::Exp, Args);
    case ast::Callee::Log: return call(Intrinsic::Log, Args);
    case ast::Callee::Sqrt: return call(Intrinsic::Sqrt, Args);
    case ast::Callee::Rsqrt: return call(Intrinsic::Rsqrt, Args);
    case ast::Callee::Tanh: return call(Intrinsic::Tanh, Args);
    case ast::Callee::Sigmoid: return call(Intrinsic::Sigmoid, Args);
    case ast::Callee::Relu: return call(Intrinsic::Relu, Args);
    case ast::Callee::Gelu: return call(Intrinsic::Gelu, Args);
    case ast::Callee::Erf: return call(Intrinsic::Erf, Args);
    case ast::Callee::Abs: return call(Intrinsic::Abs, Args);
    case ast::Callee::Pow: return call(Intrinsic::Pow, Args);
    case ast::Callee::Cast: break;
    }
    TDSL_UNREACHABLE("unknown callee");
  }
};

} // namespace

Func lowerKernel(const ast::Kernel &K, const std::function<unsigned(llvm::SMLoc)> &LineOf,
                 const LowerPlan &Plan) {
  return KernelLowering(K, LineOf, Plan).run();
}

Module lowerModule(const ast::Module &M, const std::function<unsigned(llvm::SMLoc)> &LineOf,
                   const std::vector<LowerPlan> &Plans) {
  Module Out;
  for (size_t I = 0; I < M.Kernels.size(); ++I)
    Out.Funcs.push_back(lowerKernel(*M.Kernels[I], LineOf, I < Plans.size() ? Plans[I] : LowerPlan()));
  return Out;
}

} // namespace tdsl
