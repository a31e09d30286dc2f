//===- PassUtils.cpp - What every loop-nest pass needs --------------------===//
#include "passes/PassUtils.h"
#include "ir/Launch.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

namespace tdsl {

using namespace ir;

namespace {

class NameCollector : public IRVisitor {
public:
  explicit NameCollector(llvm::StringSet<> &Names) : Names(Names) {}

protected:
  void visitVar(const VarNode &N) override { Names.insert(N.Name); }
  void visitLoad(const LoadNode &N) override {
    Names.insert(N.Buffer);
    IRVisitor::visitLoad(N);
  }
  void visitFor(const ForNode &N) override {
    Names.insert(N.Var);
    IRVisitor::visitFor(N);
  }
  void visitLet(const LetNode &N) override {
    Names.insert(N.Var);
    IRVisitor::visitLet(N);
  }
  void visitStore(const StoreNode &N) override {
    Names.insert(N.Buffer);
    IRVisitor::visitStore(N);
  }
  void visitAllocate(const AllocateNode &N) override {
    Names.insert(N.Buf.Name);
    IRVisitor::visitAllocate(N);
  }

private:
  llvm::StringSet<> &Names;
};

/// Gives the loop and let variables of a new launch the shortest names
/// their scope allows. NameTable draws names unique in the whole function
/// (c, c1, ... c11 for sibling copy loops; bx1 in a second launch), but a
/// name need only be unique among the names visible where it is bound, so
/// siblings can share one. A variable is renamed only down to its own base
/// (c11 -> c or c1 ...), and only when that base is a name the function
/// uses elsewhere, which is what made NameTable add the digits; a .tdsl
/// index called i1 beside no i keeps its name.
class ScopedNamer : public IRMutator {
public:
  ScopedNamer(const Func &F, const llvm::StringSet<> &Seen) : Seen(Seen) {
    for (const std::string &S : F.Sizes)
      enter(S);
    for (const Buffer &B : F.Params)
      enter(B.Name);
    // The names bound at the host level, around every launch: host lets
    // and global temporaries.
    forEachHostStmt(F.Body, [&](const Stmt &S) {
      if (S->Kind == StmtKind::Let)
        enter(static_cast<const LetNode &>(*S).Var);
      else if (S->Kind == StmtKind::Allocate && isHostStructure(S))
        enter(static_cast<const AllocateNode &>(*S).Buf.Name);
    });
  }

protected:
  Stmt visitFor(const ForNode &N, const Stmt &S) override {
    Expr Min = mutate(N.Min), Ext = mutate(N.Extent);
    std::string Name = pick(N.Var, N.Body);
    Stmt Body = Name == N.Var ? N.Body : substitute(N.Body, N.Var, var(Name));
    enter(Name);
    Body = mutate(Body);
    leave(Name);
    if (Name == N.Var && Min == N.Min && Ext == N.Extent && Body == N.Body)
      return S;
    return std::make_shared<ForNode>(Name, Min, Ext, N.Loop, N.Unroll, Body, N.SrcLine);
  }
  Stmt visitLet(const LetNode &N, const Stmt &S) override {
    Expr Value = mutate(N.Value);
    std::string Name = pick(N.Var, N.Body);
    Stmt Body = Name == N.Var ? N.Body : substitute(N.Body, N.Var, var(Name, N.Value->Type));
    enter(Name);
    Body = mutate(Body);
    leave(Name);
    if (Name == N.Var && Value == N.Value && Body == N.Body)
      return S;
    return std::make_shared<LetNode>(Name, Value, Body, N.SrcLine);
  }
  Stmt visitAllocate(const AllocateNode &N, const Stmt &S) override {
    enter(N.Buf.Name);
    Stmt Out = IRMutator::visitAllocate(N, S);
    leave(N.Buf.Name);
    return Out;
  }

private:
  const llvm::StringSet<> &Seen;
  llvm::StringMap<unsigned> InScope;

  void enter(const std::string &Name) { ++InScope[Name]; }
  void leave(const std::string &Name) { --InScope[Name]; }
  bool visible(const std::string &Name) const {
    auto It = InScope.find(Name);
    return It != InScope.end() && It->second;
  }

  /// The first of base, base1, ... up to Name that is not visible here and
  /// not named anywhere in Body (so no variable inside is shadowed).
  std::string pick(const std::string &Name, const Stmt &Body) {
    llvm::StringRef Base = llvm::StringRef(Name).rtrim("0123456789");
    if (Base.size() == Name.size() || Base.empty() || !Seen.count(Base))
      return Name;
    llvm::StringSet<> Inside;
    NameCollector C(Inside);
    C.visit(Body);
    for (unsigned I = 0;; ++I) {
      std::string Cand = I ? (Base + std::to_string(I)).str() : Base.str();
      if (Cand == Name)
        return Name;
      if (!visible(Cand) && !Inside.count(Cand))
        return Cand;
    }
  }
};

class GPULoopFinder : public IRVisitor {
public:
  bool Found = false;

protected:
  void visitFor(const ForNode &N) override {
    if (N.Loop != ForKind::Serial && N.Loop != ForKind::Unrolled &&
        N.Loop != ForKind::Vectorized)
      Found = true;
    else
      IRVisitor::visitFor(N);
  }
};

class VarUseFinder : public IRVisitor {
public:
  explicit VarUseFinder(const std::vector<std::string> &Names) : Names(Names) {}
  bool Found = false;

protected:
  void visitVar(const VarNode &N) override { Found |= llvm::is_contained(Names, N.Name); }

private:
  const std::vector<std::string> &Names;
};

class LoadCollector : public IRVisitor {
public:
  std::vector<Expr> Loads;
  void visit(const Expr &E) override {
    if (!E)
      return;
    if (E->Kind == ExprKind::Load)
      Loads.push_back(E);
    // aligned(X[0], N) takes an address; it reads nothing.
    if (E->Kind == ExprKind::Call &&
        static_cast<const CallNode &>(*E).Fn == Intrinsic::Aligned)
      return;
    IRVisitor::visit(E);
  }
  using IRVisitor::visit;
};

class AlignmentFinder : public IRVisitor {
public:
  bool Found = false;
  void visit(const Expr &E) override {
    if (!E)
      return;
    Found |= E->Kind == ExprKind::Call &&
             static_cast<const CallNode &>(*E).Fn == Intrinsic::Aligned;
    if (!Found)
      IRVisitor::visit(E);
  }
  using IRVisitor::visit;
};

Stmt rewriteTop(const Stmt &S, const std::function<Stmt(const Stmt &)> &Rewrite) {
  if (S->Kind == StmtKind::Block) {
    const auto &B = static_cast<const BlockNode &>(*S);
    std::vector<Stmt> Out;
    bool Changed = false;
    for (const Stmt &Child : B.Stmts) {
      Out.push_back(rewriteTop(Child, Rewrite));
      Changed |= Out.back() != Child;
    }
    return Changed ? block(std::move(Out), B.SrcLine) : S;
  }
  if (S->Kind == StmtKind::Allocate) {
    const auto &A = static_cast<const AllocateNode &>(*S);
    if (A.Buf.Scope == MemScope::Global) {
      Stmt Body = rewriteTop(A.Body, Rewrite);
      return Body == A.Body ? S : allocate(A.Buf, Body, A.SrcLine);
    }
  }
  return Rewrite(S);
}

} // namespace

NameTable::NameTable(const Func &F) {
  NameCollector C(Used);
  for (const std::string &S : F.Sizes)
    Used.insert(S);
  for (const Buffer &B : F.Params)
    Used.insert(B.Name);
  C.visit(F.Body);
}

std::string NameTable::fresh(const std::string &Base) {
  std::string Name = Base;
  for (unsigned I = 1; Used.count(Name); ++I)
    Name = Base + std::to_string(I);
  Used.insert(Name);
  return Name;
}

void rewriteNests(Func &F, const std::function<Stmt(const Stmt &)> &Rewrite) {
  F.Body = rewriteTop(F.Body, Rewrite);
}

void launchNests(Func &F, LaunchClass Class,
                 const std::function<Stmt(const Stmt &, std::vector<Knob> &)> &Map) {
  launchNestVariants(F, Class,
                     [&](const Stmt &Nest, std::vector<Knob> &Knobs) -> std::vector<LaunchVariant> {
                       Stmt Body = Map(Nest, Knobs);
                       if (Body == Nest)
                         return {};
                       return {{"", Body}};
                     });
}

Expr gridWhen(const Expr &Blocks, const Expr &When, bool RunsWhen) {
  if (!When)
    return Blocks;
  return RunsWhen ? select(When, Blocks, intImm(0)) : select(When, intImm(0), Blocks);
}

void launchNestVariants(
    Func &F, LaunchClass Class,
    const std::function<std::vector<LaunchVariant>(const Stmt &, std::vector<Knob> &)> &Map) {
  llvm::StringSet<> Taken;
  forEachLaunch(F, [&](const LaunchNode &L, const std::vector<const Buffer *> &) {
    Taken.insert(L.Name);
  });
  F.Body = rewriteTop(F.Body, [&](const Stmt &Nest) -> Stmt {
    if (Nest->Kind == StmtKind::Launch)
      return Nest;
    std::vector<Knob> Knobs;
    std::vector<LaunchVariant> Variants = Map(Nest, Knobs);
    if (Variants.empty())
      return Nest;
    // Named after what it computes: the first tensor it writes that it
    // does not allocate itself.
    std::string Base = "k";
    struct Writes : IRVisitor {
      std::vector<std::string> Stored;
      llvm::StringSet<> Local;
      void visitStore(const StoreNode &N) override {
        if (!Local.count(N.Buffer) && !llvm::is_contained(Stored, N.Buffer))
          Stored.push_back(N.Buffer);
        IRVisitor::visitStore(N);
      }
      void visitAllocate(const AllocateNode &N) override {
        Local.insert(N.Buf.Name);
        IRVisitor::visitAllocate(N);
      }
    } W;
    W.visit(Nest);
    if (!W.Stored.empty())
      Base = W.Stored.front();
    // Every variant's names count as seen, so that each launch's (pid1 of
    // the second) shortens as the first's do.
    llvm::StringSet<> Seen;
    NameCollector C(Seen);
    C.visit(F.Body);
    for (const LaunchVariant &V : Variants)
      C.visit(V.Body);
    std::vector<Stmt> Launches;
    std::vector<Buffer> Temps;
    for (const LaunchVariant &V : Variants) {
      Temps.insert(Temps.end(), V.Temps.begin(), V.Temps.end());
      std::string Root = V.Suffix.empty() ? Base : Base + "_" + V.Suffix;
      std::string Name = Root;
      for (unsigned I = 2; Taken.count(Name); ++I)
        Name = Root + "_" + std::to_string(I);
      Taken.insert(Name);
      Stmt Body = ScopedNamer(F, Seen).mutate(V.Body);
      std::vector<Knob> Own = Knobs;
      Own.insert(Own.end(), V.Knobs.begin(), V.Knobs.end());
      Launches.push_back(launch(Name, Class, Body, std::move(Own), Nest->SrcLine));
    }
    Stmt Out = Launches.size() == 1 ? Launches[0] : block(std::move(Launches), Nest->SrcLine);
    for (auto It = Temps.rbegin(); It != Temps.rend(); ++It)
      Out = allocate(*It, Out, Nest->SrcLine);
    return Out;
  });
}

bool hasGPULoops(const Stmt &S) {
  GPULoopFinder G;
  G.visit(S);
  return G.Found;
}

bool usesAnyVar(const Expr &E, const std::vector<std::string> &Names) {
  VarUseFinder V(Names);
  V.visit(E);
  return V.Found;
}

bool usesAnyVar(const Stmt &S, const std::vector<std::string> &Names) {
  VarUseFinder V(Names);
  V.visit(S);
  return V.Found;
}

Expr ExprReplacer::mutate(const Expr &E) {
  for (const auto &[From, To] : Map)
    if (structurallyEqual(E, From))
      return To;
  return IRMutator::mutate(E);
}

Expr AccReplacer::visitLoad(const LoadNode &N, const Expr &E) {
  if (N.Buffer == Acc)
    return load(N.Type, Acc, AccIndices);
  return IRMutator::visitLoad(N, E);
}

Stmt AccReplacer::visitStore(const StoreNode &N, const Stmt &S) {
  if (N.Buffer != Acc)
    return IRMutator::visitStore(N, S);
  return store(Acc, AccIndices, mutate(N.Value), N.SrcLine);
}

Stmt withAccumulatorAt(const std::vector<Stmt> &Stmts, const std::string &Acc,
                       std::vector<Expr> Indices) {
  AccReplacer R;
  R.Acc = Acc;
  R.AccIndices = std::move(Indices);
  std::vector<Stmt> Out;
  for (const Stmt &S : Stmts)
    Out.push_back(R.mutate(S));
  return block(std::move(Out));
}

bool hasLoads(const Expr &E) { return !loadsOf(E).empty(); }

bool testsAlignment(const Stmt &S) {
  AlignmentFinder A;
  A.visit(S);
  return A.Found;
}

std::vector<Expr> loadsOf(const Expr &E) {
  LoadCollector L;
  L.visit(E);
  return std::move(L.Loads);
}

std::vector<Stmt> flattenBlocks(const Stmt &S) {
  if (S->Kind != StmtKind::Block)
    return {S};
  std::vector<Stmt> Out;
  for (const Stmt &Child : static_cast<const BlockNode &>(*S).Stmts)
    llvm::append_range(Out, flattenBlocks(Child));
  return Out;
}

Stmt prepended(const Stmt &First, Stmt Then, unsigned Line) {
  std::vector<Stmt> All = flattenBlocks(First);
  All.push_back(std::move(Then));
  return block(std::move(All), Line);
}

LoopRun outerSerialLoops(const Stmt &S) {
  LoopRun R;
  std::vector<std::string> Vars;
  R.Inner = stripBlocks(S);
  while (R.Inner->Kind == StmtKind::For) {
    const auto &L = static_cast<const ForNode &>(*R.Inner);
    if (L.Loop != ForKind::Serial || usesAnyVar(L.Min, Vars) || usesAnyVar(L.Extent, Vars))
      break;
    R.Loops.push_back(&L);
    Vars.push_back(L.Var);
    R.Inner = stripBlocks(L.Body);
  }
  return R;
}

Expr flatExtent(const std::vector<const ForNode *> &Loops) {
  Expr Total = intImm(1);
  for (size_t K = Loops.size(); K-- > 0;)
    Total = K + 1 == Loops.size() ? Loops[K]->Extent : mul(Loops[K]->Extent, Total);
  return Total;
}

namespace {
const Buffer *findTemporary(const Stmt &S, const std::string &Name) {
  if (S->Kind == StmtKind::Block) {
    for (const Stmt &Child : static_cast<const BlockNode &>(*S).Stmts)
      if (const Buffer *B = findTemporary(Child, Name))
        return B;
    return nullptr;
  }
  if (S->Kind != StmtKind::Allocate)
    return nullptr;
  const auto &A = static_cast<const AllocateNode &>(*S);
  if (A.Buf.Scope != MemScope::Global)
    return nullptr;
  return A.Buf.Name == Name ? &A.Buf : findTemporary(A.Body, Name);
}
} // namespace

const Buffer *findTensor(const Func &F, const std::string &Name) {
  if (const Buffer *B = F.findParam(Name))
    return B;
  return findTemporary(F.Body, Name);
}

const Expr &lastMovingIndex(const LoadNode &L, const Func &F) {
  const Buffer *B = findTensor(F, L.Buffer);
  size_t Last = L.Indices.size();
  if (B && B->rank() == Last)
    while (Last > 1 && asConstInt(B->Shape[Last - 1]) == 1)
      --Last;
  return L.Indices[Last - 1];
}

bool isVarNamed(const Expr &E, const std::string &Name) {
  return E->Kind == ExprKind::Var && static_cast<const VarNode &>(*E).Name == Name;
}

bool contiguousIn(const std::vector<Expr> &Idx, const std::string &V) {
  if (Idx.empty() || !isVarNamed(Idx.back(), V))
    return false;
  return llvm::none_of(llvm::make_range(Idx.begin(), Idx.end() - 1),
                       [&](const Expr &I) { return usesAnyVar(I, {V}); });
}

Stmt bindFlatIndex(const std::vector<const ForNode *> &Loops, const Expr &Flat, Stmt Body) {
  if (Loops.empty())
    return Body;
  // Strides[K] = e_{K+1} * ... * e_n, spelled as flatExtent spells it.
  std::vector<Expr> Strides(Loops.size());
  for (size_t K = Loops.size(); K-- > 0;)
    Strides[K] = K + 1 == Loops.size() ? nullptr
                 : K + 2 == Loops.size() ? Loops[K + 1]->Extent
                                         : mul(Loops[K + 1]->Extent, Strides[K + 1]);
  // Outermost first: v_k = Rest / stride_k, Rest = Flat minus what the
  // loops outside k account for. One division per loop and no %: an
  // integer division by a run-time divisor is a long instruction sequence
  // on the GPU (the backend's tdsl_quo for 64 bits; nvcc's own call was
  // worse, its saved registers spilled), and a % would be a second one.
  std::vector<std::pair<std::string, Expr>> Lets;
  Expr Rest = Flat;
  for (size_t K = 0; K < Loops.size(); ++K) {
    const ForNode &L = *Loops[K];
    std::optional<int64_t> Min = asConstInt(L.Min);
    bool Innermost = K + 1 == Loops.size();
    Expr V = Innermost ? Rest : binary(BinaryOp::Div, Rest, Strides[K]);
    Lets.push_back({L.Var, Min == 0 ? V : add(V, L.Min)});
    if (!Innermost) {
      Expr Zero = Min == 0 ? var(L.Var) : sub(var(L.Var), L.Min);
      Rest = sub(Rest, mul(Zero, Strides[K]));
    }
  }
  for (size_t K = Lets.size(); K-- > 0;)
    Body = letStmt(Lets[K].first, Lets[K].second, Body, Loops[K]->SrcLine);
  return Body;
}

Buffer tempBuffer(const std::string &Name, DType T, std::vector<Expr> Shape, MemScope Scope) {
  Buffer B;
  B.Name = Name;
  B.Type = T;
  B.Shape = std::move(Shape);
  B.Scope = Scope;
  return B;
}

std::optional<Expr> runTest(const Func &F, const Expr &Extent,
                            const std::vector<std::string> &Tensors, int64_t Width,
                            const std::function<int64_t(DType)> &AlignBytes,
                            bool AlignedOnly) {
  std::vector<Expr> Conds;
  auto Need = [&](Expr C) {
    if (llvm::none_of(Conds, [&](const Expr &X) { return structurallyEqual(X, C); }))
      Conds.push_back(std::move(C));
  };
  bool Possible = true;
  auto MultipleOfWidth = [&](const Expr &E) {
    if (AlignedOnly)
      return;
    if (std::optional<int64_t> K = asConstInt(E))
      Possible &= *K % Width == 0;
    else
      Need(binary(BinaryOp::Eq, binary(BinaryOp::Mod, E, intImm(Width)), intImm(0)));
  };
  MultipleOfWidth(Extent);
  for (const std::string &Name : Tensors) {
    const Buffer *B = findTensor(F, Name);
    if (B->rank() > 1)
      MultipleOfWidth(B->Shape.back());
    std::vector<Expr> First(B->rank(), intImm(0));
    Need(call(Intrinsic::Aligned, {load(B->Type, Name, First), intImm(AlignBytes(B->Type))}));
  }
  if (!Possible || Conds.empty())
    return std::nullopt;
  Expr Test = Conds.front();
  for (size_t I = 1; I < Conds.size(); ++I)
    Test = binary(BinaryOp::And, Test, Conds[I]);
  return Test;
}

Expr linearIndex(const std::vector<Expr> &Shape, const std::vector<Expr> &Idx) {
  Expr Flat = Idx.empty() ? intImm(0) : Idx.front();
  for (size_t D = 1; D < Idx.size(); ++D)
    Flat = add(mul(Flat, Shape[D]), Idx[D]);
  return Flat;
}

Expr zeroOf(DType T) { return isFloat(T) ? floatImm(0.0, T) : intImm(0, T); }

bool isReductionOp(BinaryOp Op) {
  return Op == BinaryOp::Add || Op == BinaryOp::Mul || Op == BinaryOp::Max || Op == BinaryOp::Min;
}

bool isIdempotent(BinaryOp Op) { return Op == BinaryOp::Max || Op == BinaryOp::Min; }

Expr identityOf(BinaryOp Op, DType T) {
  if (Op == BinaryOp::Add)
    return zeroOf(T);
  return isFloat(T) ? floatImm(1.0, T) : intImm(1, T);
}

namespace {
std::function<void(const Remark &)> &remarkHandler() {
  static std::function<void(const Remark &)> Handler;
  return Handler;
}
} // namespace

void setRemarkHandler(std::function<void(const Remark &)> Handler) {
  remarkHandler() = std::move(Handler);
}

void remark(const char *Pass, unsigned Line, const llvm::Twine &Message) {
  if (const std::function<void(const Remark &)> &Handler = remarkHandler())
    Handler(Remark{Pass, Line, Message.str()});
}

} // namespace tdsl
