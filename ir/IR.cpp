//===- IR.cpp - Loop IR nodes, builders and the recursive traversals ------===//
#include "ir/IR.h"

#include <cassert>
#include <cstring>
#include <iterator>

namespace tdsl::ir {

namespace {
struct IntrinsicInfo {
  Intrinsic Id;
  const char *Name;
  unsigned Arity;
};
const IntrinsicInfo Intrinsics[] = {
    {Intrinsic::Exp, "exp", 1},          {Intrinsic::Log, "log", 1},
    {Intrinsic::Sqrt, "sqrt", 1},        {Intrinsic::Rsqrt, "rsqrt", 1},
    {Intrinsic::Tanh, "tanh", 1},        {Intrinsic::Sigmoid, "sigmoid", 1},
    {Intrinsic::Erf, "erf", 1},          {Intrinsic::Gelu, "gelu", 1},
    {Intrinsic::Relu, "relu", 1},        {Intrinsic::Abs, "abs", 1},
    {Intrinsic::Pow, "pow", 2},          {Intrinsic::ShflXor, "shfl_xor", 2},
    {Intrinsic::ShflDown, "shfl_down", 2}, {Intrinsic::ShflUp, "shfl_up", 2},
    {Intrinsic::ShflIdx, "shfl_idx", 2}, {Intrinsic::Aligned, "aligned", 2},
};
} // namespace

llvm::StringRef intrinsicName(Intrinsic I) {
  for (const IntrinsicInfo &Info : Intrinsics)
    if (Info.Id == I)
      return Info.Name;
  return "?";
}

std::optional<Intrinsic> parseIntrinsic(llvm::StringRef Name) {
  for (const IntrinsicInfo &Info : Intrinsics)
    if (Name == Info.Name)
      return Info.Id;
  return std::nullopt;
}

unsigned intrinsicArity(Intrinsic I) {
  for (const IntrinsicInfo &Info : Intrinsics)
    if (Info.Id == I)
      return Info.Arity;
  return 0;
}

bool isWarpShuffle(Intrinsic I) {
  return I == Intrinsic::ShflXor || I == Intrinsic::ShflDown ||
         I == Intrinsic::ShflUp || I == Intrinsic::ShflIdx;
}

llvm::StringRef memScopeName(MemScope S) {
  switch (S) {
  case MemScope::Global: return "global";
  case MemScope::Shared: return "shared";
  case MemScope::Register: return "register";
  case MemScope::Fragment: return "fragment";
  }
  return "?";
}

std::optional<MemScope> parseMemScope(llvm::StringRef Name) {
  for (MemScope S : {MemScope::Global, MemScope::Shared, MemScope::Register,
                     MemScope::Fragment})
    if (Name == memScopeName(S))
      return S;
  return std::nullopt;
}

llvm::StringRef forKindName(ForKind K) {
  switch (K) {
  case ForKind::Serial: return "serial";
  case ForKind::Unrolled: return "unroll";
  case ForKind::Vectorized: return "vectorize";
  case ForKind::BlockX: return "block.x";
  case ForKind::BlockY: return "block.y";
  case ForKind::BlockZ: return "block.z";
  case ForKind::ThreadX: return "thread.x";
  case ForKind::ThreadY: return "thread.y";
  case ForKind::ThreadZ: return "thread.z";
  case ForKind::Warp: return "warp";
  case ForKind::Lane: return "lane";
  }
  return "?";
}

std::optional<ForKind> parseForKind(llvm::StringRef Name) {
  for (ForKind K :
       {ForKind::Serial, ForKind::Unrolled, ForKind::Vectorized, ForKind::BlockX,
        ForKind::BlockY, ForKind::BlockZ, ForKind::ThreadX, ForKind::ThreadY,
        ForKind::ThreadZ, ForKind::Warp, ForKind::Lane})
    if (Name == forKindName(K))
      return K;
  return std::nullopt;
}

bool isBlockLoop(ForKind K) {
  return K == ForKind::BlockX || K == ForKind::BlockY || K == ForKind::BlockZ;
}

bool isThreadLoop(ForKind K) {
  return K == ForKind::ThreadX || K == ForKind::ThreadY ||
         K == ForKind::ThreadZ || K == ForKind::Warp || K == ForKind::Lane;
}

const Buffer *Func::findParam(llvm::StringRef N) const {
  for (const Buffer &B : Params)
    if (B.Name == N)
      return &B;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

Expr intImm(int64_t V, DType T) { return std::make_shared<IntImmNode>(T, V); }

Expr floatImm(double V, DType T) {
  return std::make_shared<FloatImmNode>(T, convertValue(V, DType::F64, T));
}

Expr var(const std::string &Name, DType T) {
  return std::make_shared<VarNode>(T, Name);
}

Expr load(DType T, const std::string &Buffer, std::vector<Expr> Indices) {
  return std::make_shared<LoadNode>(T, Buffer, std::move(Indices));
}

Expr unary(UnaryOp Op, Expr A) {
  DType T = Op == UnaryOp::Not ? DType::Bool : A->Type;
  return std::make_shared<UnaryNode>(T, Op, std::move(A));
}

bool isComparison(BinaryOp Op) {
  switch (Op) {
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::And:
  case BinaryOp::Or: return true;
  default: return false;
  }
}

llvm::StringRef binaryOpSpelling(BinaryOp Op) {
  switch (Op) {
  case BinaryOp::Add: return "+";
  case BinaryOp::Sub: return "-";
  case BinaryOp::Mul: return "*";
  case BinaryOp::Div: return "/";
  case BinaryOp::Mod: return "%";
  case BinaryOp::Min: return "min";
  case BinaryOp::Max: return "max";
  case BinaryOp::Lt: return "<";
  case BinaryOp::Le: return "<=";
  case BinaryOp::Gt: return ">";
  case BinaryOp::Ge: return ">=";
  case BinaryOp::Eq: return "==";
  case BinaryOp::Ne: return "!=";
  case BinaryOp::And: return "&&";
  case BinaryOp::Or: return "||";
  }
  return "?";
}

Expr binary(BinaryOp Op, Expr A, Expr B) {
  DType T = isComparison(Op) ? DType::Bool : A->Type;
  return std::make_shared<BinaryNode>(T, Op, std::move(A), std::move(B));
}

Expr select(Expr Cond, Expr T, Expr F) {
  DType Ty = T->Type;
  return std::make_shared<SelectNode>(Ty, std::move(Cond), std::move(T), std::move(F));
}

Expr cast(DType T, Expr A) {
  if (A->Type == T)
    return A;
  return std::make_shared<CastNode>(T, std::move(A));
}

Expr call(Intrinsic Fn, std::vector<Expr> Args) {
  DType T = Fn == Intrinsic::Aligned ? DType::Bool : Args.empty() ? DType::F32 : Args[0]->Type;
  return std::make_shared<CallNode>(T, Fn, std::move(Args));
}

Expr add(Expr A, Expr B) { return binary(BinaryOp::Add, std::move(A), std::move(B)); }
Expr sub(Expr A, Expr B) { return binary(BinaryOp::Sub, std::move(A), std::move(B)); }
Expr mul(Expr A, Expr B) { return binary(BinaryOp::Mul, std::move(A), std::move(B)); }
Expr lt(Expr A, Expr B) { return binary(BinaryOp::Lt, std::move(A), std::move(B)); }

Stmt block(std::vector<Stmt> Stmts, unsigned Line) {
  return std::make_shared<BlockNode>(std::move(Stmts), Line);
}

Stmt forLoop(const std::string &Var, Expr Min, Expr Extent, ForKind K, Stmt Body,
             unsigned Line, unsigned Unroll) {
  return std::make_shared<ForNode>(Var, std::move(Min), std::move(Extent), K,
                                   Unroll, std::move(Body), Line);
}

Stmt ifThen(Expr Cond, Stmt Then, Stmt Else, unsigned Line) {
  return std::make_shared<IfNode>(std::move(Cond), std::move(Then), std::move(Else), Line);
}

Stmt letStmt(const std::string &Var, Expr Value, Stmt Body, unsigned Line) {
  return std::make_shared<LetNode>(Var, std::move(Value), std::move(Body), Line);
}

Stmt store(const std::string &Buffer, std::vector<Expr> Indices, Expr Value,
           unsigned Line) {
  return std::make_shared<StoreNode>(Buffer, std::move(Indices), std::move(Value), Line);
}

Stmt allocate(Buffer B, Stmt Body, unsigned Line) {
  return std::make_shared<AllocateNode>(std::move(B), std::move(Body), Line);
}

Stmt barrier(unsigned Line) { return std::make_shared<BarrierNode>(Line); }

Stmt note(std::string Text, unsigned Line) {
  return std::make_shared<NoteNode>(std::move(Text), Line);
}

Stmt launch(std::string Name, LaunchClass Class, Stmt Body, std::vector<Knob> Knobs,
            unsigned Line) {
  return std::make_shared<LaunchNode>(std::move(Name), Class, std::move(Knobs), std::move(Body),
                                      Line);
}

static const char *const LaunchClassNames[] = {"generic", "elementwise", "contraction",
                                               "row_reduction", "transpose"};

llvm::StringRef launchClassName(LaunchClass C) {
  return LaunchClassNames[static_cast<unsigned>(C)];
}

std::optional<LaunchClass> parseLaunchClass(llvm::StringRef Name) {
  for (unsigned I = 0; I < std::size(LaunchClassNames); ++I)
    if (Name == LaunchClassNames[I])
      return static_cast<LaunchClass>(I);
  return std::nullopt;
}

static const char *const MbarrierOpNames[] = {"init", "arrive", "arrive_warp", "expect_tx", "wait"};

llvm::StringRef mbarrierOpName(MbarrierOp Op) {
  return MbarrierOpNames[static_cast<unsigned>(Op)];
}

std::optional<MbarrierOp> parseMbarrierOp(llvm::StringRef Name) {
  for (unsigned I = 0; I < std::size(MbarrierOpNames); ++I)
    if (Name == MbarrierOpNames[I])
      return static_cast<MbarrierOp>(I);
  return std::nullopt;
}

static const char *const MmaShapeNames[] = {"m16n8k16", "m16n8k8", "m16n8k32"};

llvm::StringRef mmaShapeName(MmaShape S) { return MmaShapeNames[static_cast<unsigned>(S)]; }

std::optional<MmaShape> parseMmaShape(llvm::StringRef Name) {
  for (unsigned I = 0; I < std::size(MmaShapeNames); ++I)
    if (Name == MmaShapeNames[I])
      return static_cast<MmaShape>(I);
  return std::nullopt;
}

int64_t mmaShapeK(MmaShape S) {
  switch (S) {
  case MmaShape::M16N8K16: return 16;
  case MmaShape::M16N8K8: return 8;
  case MmaShape::M16N8K32: return 32;
  }
  return 0;
}

MmaFragmentSizes mmaFragmentSizes(MmaShape S) {
  // A is 16 x K and B is K x 8 over 32 lanes; C is 16 x 8: 4 per lane.
  int64_t K = mmaShapeK(S);
  return {static_cast<unsigned>(16 * K / 32), static_cast<unsigned>(K * 8 / 32), 4};
}

std::optional<int64_t> asConstInt(const Expr &E) {
  if (E && E->Kind == ExprKind::IntImm)
    return static_cast<const IntImmNode &>(*E).Value;
  return std::nullopt;
}

bool structurallyEqual(const Expr &A, const Expr &B) {
  if (A == B)
    return true;
  if (!A || !B || A->Kind != B->Kind || A->Type != B->Type)
    return false;
  auto AllEqual = [](const std::vector<Expr> &X, const std::vector<Expr> &Y) {
    if (X.size() != Y.size())
      return false;
    for (size_t I = 0; I < X.size(); ++I)
      if (!structurallyEqual(X[I], Y[I]))
        return false;
    return true;
  };
  switch (A->Kind) {
  case ExprKind::IntImm:
    return static_cast<const IntImmNode &>(*A).Value ==
           static_cast<const IntImmNode &>(*B).Value;
  case ExprKind::FloatImm: {
    double X = static_cast<const FloatImmNode &>(*A).Value;
    double Y = static_cast<const FloatImmNode &>(*B).Value;
    return std::memcmp(&X, &Y, sizeof(double)) == 0;
  }
  case ExprKind::Var:
    return static_cast<const VarNode &>(*A).Name == static_cast<const VarNode &>(*B).Name;
  case ExprKind::Load: {
    const auto &X = static_cast<const LoadNode &>(*A), &Y = static_cast<const LoadNode &>(*B);
    return X.Buffer == Y.Buffer && AllEqual(X.Indices, Y.Indices);
  }
  case ExprKind::Unary: {
    const auto &X = static_cast<const UnaryNode &>(*A), &Y = static_cast<const UnaryNode &>(*B);
    return X.Op == Y.Op && structurallyEqual(X.A, Y.A);
  }
  case ExprKind::Binary: {
    const auto &X = static_cast<const BinaryNode &>(*A),
               &Y = static_cast<const BinaryNode &>(*B);
    return X.Op == Y.Op && structurallyEqual(X.A, Y.A) && structurallyEqual(X.B, Y.B);
  }
  case ExprKind::Select: {
    const auto &X = static_cast<const SelectNode &>(*A),
               &Y = static_cast<const SelectNode &>(*B);
    return structurallyEqual(X.Cond, Y.Cond) && structurallyEqual(X.TrueValue, Y.TrueValue) &&
           structurallyEqual(X.FalseValue, Y.FalseValue);
  }
  case ExprKind::Cast:
    return structurallyEqual(static_cast<const CastNode &>(*A).A,
                             static_cast<const CastNode &>(*B).A);
  case ExprKind::Call: {
    const auto &X = static_cast<const CallNode &>(*A), &Y = static_cast<const CallNode &>(*B);
    return X.Fn == Y.Fn && AllEqual(X.Args, Y.Args);
  }
  }
  return false;
}

//===----------------------------------------------------------------------===//
// IRVisitor
//===----------------------------------------------------------------------===//

void IRVisitor::visit(const Expr &E) {
  if (!E)
    return;
  switch (E->Kind) {
  case ExprKind::IntImm: return visitIntImm(static_cast<const IntImmNode &>(*E));
  case ExprKind::FloatImm: return visitFloatImm(static_cast<const FloatImmNode &>(*E));
  case ExprKind::Var: return visitVar(static_cast<const VarNode &>(*E));
  case ExprKind::Load: return visitLoad(static_cast<const LoadNode &>(*E));
  case ExprKind::Unary: return visitUnary(static_cast<const UnaryNode &>(*E));
  case ExprKind::Binary: return visitBinary(static_cast<const BinaryNode &>(*E));
  case ExprKind::Select: return visitSelect(static_cast<const SelectNode &>(*E));
  case ExprKind::Cast: return visitCast(static_cast<const CastNode &>(*E));
  case ExprKind::Call: return visitCall(static_cast<const CallNode &>(*E));
  }
}

void IRVisitor::visit(const Stmt &S) {
  if (!S)
    return;
  switch (S->Kind) {
  case StmtKind::Block: return visitBlock(static_cast<const BlockNode &>(*S));
  case StmtKind::For: return visitFor(static_cast<const ForNode &>(*S));
  case StmtKind::If: return visitIf(static_cast<const IfNode &>(*S));
  case StmtKind::Let: return visitLet(static_cast<const LetNode &>(*S));
  case StmtKind::Store: return visitStore(static_cast<const StoreNode &>(*S));
  case StmtKind::Allocate: return visitAllocate(static_cast<const AllocateNode &>(*S));
  case StmtKind::Barrier: return visitBarrier(static_cast<const BarrierNode &>(*S));
  case StmtKind::AsyncCopy: return visitAsyncCopy(static_cast<const AsyncCopyNode &>(*S));
  case StmtKind::AsyncCommit:
    return visitAsyncCommit(static_cast<const AsyncCommitNode &>(*S));
  case StmtKind::AsyncWait: return visitAsyncWait(static_cast<const AsyncWaitNode &>(*S));
  case StmtKind::Mbarrier: return visitMbarrier(static_cast<const MbarrierNode &>(*S));
  case StmtKind::TensorCopy: return visitTensorCopy(static_cast<const TensorCopyNode &>(*S));
  case StmtKind::Mma: return visitMma(static_cast<const MmaNode &>(*S));
  case StmtKind::LdMatrix: return visitLdMatrix(static_cast<const LdMatrixNode &>(*S));
  case StmtKind::Note: return visitNote(static_cast<const NoteNode &>(*S));
  case StmtKind::Launch: return visitLaunch(static_cast<const LaunchNode &>(*S));
  }
}

void IRVisitor::visitLoad(const LoadNode &N) {
  for (const Expr &I : N.Indices)
    visit(I);
}
void IRVisitor::visitUnary(const UnaryNode &N) { visit(N.A); }
void IRVisitor::visitBinary(const BinaryNode &N) {
  visit(N.A);
  visit(N.B);
}
void IRVisitor::visitSelect(const SelectNode &N) {
  visit(N.Cond);
  visit(N.TrueValue);
  visit(N.FalseValue);
}
void IRVisitor::visitCast(const CastNode &N) { visit(N.A); }
void IRVisitor::visitCall(const CallNode &N) {
  for (const Expr &A : N.Args)
    visit(A);
}
void IRVisitor::visitBlock(const BlockNode &N) {
  for (const Stmt &S : N.Stmts)
    visit(S);
}
void IRVisitor::visitFor(const ForNode &N) {
  visit(N.Min);
  visit(N.Extent);
  visit(N.Body);
}
void IRVisitor::visitIf(const IfNode &N) {
  visit(N.Cond);
  visit(N.Then);
  visit(N.Else);
}
void IRVisitor::visitLet(const LetNode &N) {
  visit(N.Value);
  visit(N.Body);
}
void IRVisitor::visitStore(const StoreNode &N) {
  for (const Expr &I : N.Indices)
    visit(I);
  visit(N.Value);
}
void IRVisitor::visitAllocate(const AllocateNode &N) {
  for (const Expr &E : N.Buf.Shape)
    visit(E);
  visit(N.Body);
}
void IRVisitor::visitAsyncCopy(const AsyncCopyNode &N) {
  for (const Expr &I : N.DstIndices)
    visit(I);
  for (const Expr &I : N.SrcIndices)
    visit(I);
  visit(N.Valid);
}
void IRVisitor::visitMbarrier(const MbarrierNode &N) {
  visit(N.Index);
  visit(N.Value);
}
void IRVisitor::visitTensorCopy(const TensorCopyNode &N) {
  for (const Expr &I : N.DstIndices)
    visit(I);
  for (const Expr &I : N.SrcIndices)
    visit(I);
  visit(N.BarIndex);
}
void IRVisitor::visitMma(const MmaNode &N) {
  for (const auto *Idx : {&N.CIndices, &N.AIndices, &N.BIndices})
    for (const Expr &I : *Idx)
      visit(I);
}
void IRVisitor::visitLdMatrix(const LdMatrixNode &N) {
  for (const Expr &I : N.DstIndices)
    visit(I);
  for (const Expr &I : N.SrcIndices)
    visit(I);
}
void IRVisitor::visitLaunch(const LaunchNode &N) { visit(N.Body); }

//===----------------------------------------------------------------------===//
// IRMutator
//===----------------------------------------------------------------------===//

Expr IRMutator::mutate(const Expr &E) {
  if (!E)
    return E;
  switch (E->Kind) {
  case ExprKind::IntImm: return visitIntImm(static_cast<const IntImmNode &>(*E), E);
  case ExprKind::FloatImm: return visitFloatImm(static_cast<const FloatImmNode &>(*E), E);
  case ExprKind::Var: return visitVar(static_cast<const VarNode &>(*E), E);
  case ExprKind::Load: return visitLoad(static_cast<const LoadNode &>(*E), E);
  case ExprKind::Unary: return visitUnary(static_cast<const UnaryNode &>(*E), E);
  case ExprKind::Binary: return visitBinary(static_cast<const BinaryNode &>(*E), E);
  case ExprKind::Select: return visitSelect(static_cast<const SelectNode &>(*E), E);
  case ExprKind::Cast: return visitCast(static_cast<const CastNode &>(*E), E);
  case ExprKind::Call: return visitCall(static_cast<const CallNode &>(*E), E);
  }
  return E;
}

Stmt IRMutator::mutate(const Stmt &S) {
  if (!S)
    return S;
  switch (S->Kind) {
  case StmtKind::Block: return visitBlock(static_cast<const BlockNode &>(*S), S);
  case StmtKind::For: return visitFor(static_cast<const ForNode &>(*S), S);
  case StmtKind::If: return visitIf(static_cast<const IfNode &>(*S), S);
  case StmtKind::Let: return visitLet(static_cast<const LetNode &>(*S), S);
  case StmtKind::Store: return visitStore(static_cast<const StoreNode &>(*S), S);
  case StmtKind::Allocate: return visitAllocate(static_cast<const AllocateNode &>(*S), S);
  case StmtKind::Barrier: return visitBarrier(static_cast<const BarrierNode &>(*S), S);
  case StmtKind::AsyncCopy:
    return visitAsyncCopy(static_cast<const AsyncCopyNode &>(*S), S);
  case StmtKind::AsyncCommit:
    return visitAsyncCommit(static_cast<const AsyncCommitNode &>(*S), S);
  case StmtKind::AsyncWait:
    return visitAsyncWait(static_cast<const AsyncWaitNode &>(*S), S);
  case StmtKind::Mbarrier: return visitMbarrier(static_cast<const MbarrierNode &>(*S), S);
  case StmtKind::TensorCopy:
    return visitTensorCopy(static_cast<const TensorCopyNode &>(*S), S);
  case StmtKind::Mma: return visitMma(static_cast<const MmaNode &>(*S), S);
  case StmtKind::LdMatrix: return visitLdMatrix(static_cast<const LdMatrixNode &>(*S), S);
  case StmtKind::Note: return visitNote(static_cast<const NoteNode &>(*S), S);
  case StmtKind::Launch: return visitLaunch(static_cast<const LaunchNode &>(*S), S);
  }
  return S;
}

bool IRMutator::mutateAll(const std::vector<Expr> &In, std::vector<Expr> &Out) {
  bool Changed = false;
  Out.clear();
  Out.reserve(In.size());
  for (const Expr &E : In) {
    Out.push_back(mutate(E));
    Changed |= Out.back() != E;
  }
  return Changed;
}

Expr IRMutator::visitLoad(const LoadNode &N, const Expr &E) {
  std::vector<Expr> Idx;
  if (!mutateAll(N.Indices, Idx))
    return E;
  return std::make_shared<LoadNode>(N.Type, N.Buffer, std::move(Idx));
}

Expr IRMutator::visitUnary(const UnaryNode &N, const Expr &E) {
  Expr A = mutate(N.A);
  if (A == N.A)
    return E;
  return std::make_shared<UnaryNode>(N.Type, N.Op, std::move(A));
}

Expr IRMutator::visitBinary(const BinaryNode &N, const Expr &E) {
  Expr A = mutate(N.A), B = mutate(N.B);
  if (A == N.A && B == N.B)
    return E;
  return std::make_shared<BinaryNode>(N.Type, N.Op, std::move(A), std::move(B));
}

Expr IRMutator::visitSelect(const SelectNode &N, const Expr &E) {
  Expr C = mutate(N.Cond), T = mutate(N.TrueValue), F = mutate(N.FalseValue);
  if (C == N.Cond && T == N.TrueValue && F == N.FalseValue)
    return E;
  return std::make_shared<SelectNode>(N.Type, std::move(C), std::move(T), std::move(F));
}

Expr IRMutator::visitCast(const CastNode &N, const Expr &E) {
  Expr A = mutate(N.A);
  if (A == N.A)
    return E;
  return std::make_shared<CastNode>(N.Type, std::move(A));
}

Expr IRMutator::visitCall(const CallNode &N, const Expr &E) {
  std::vector<Expr> Args;
  if (!mutateAll(N.Args, Args))
    return E;
  return std::make_shared<CallNode>(N.Type, N.Fn, std::move(Args));
}

Stmt IRMutator::visitBlock(const BlockNode &N, const Stmt &S) {
  bool Changed = false;
  std::vector<Stmt> Out;
  Out.reserve(N.Stmts.size());
  for (const Stmt &C : N.Stmts) {
    Out.push_back(mutate(C));
    Changed |= Out.back() != C;
  }
  if (!Changed)
    return S;
  return std::make_shared<BlockNode>(std::move(Out), N.SrcLine);
}

Stmt IRMutator::visitFor(const ForNode &N, const Stmt &S) {
  Expr Min = mutate(N.Min), Ext = mutate(N.Extent);
  Stmt Body = mutate(N.Body);
  if (Min == N.Min && Ext == N.Extent && Body == N.Body)
    return S;
  return std::make_shared<ForNode>(N.Var, std::move(Min), std::move(Ext), N.Loop,
                                   N.Unroll, std::move(Body), N.SrcLine);
}

Stmt IRMutator::visitIf(const IfNode &N, const Stmt &S) {
  Expr C = mutate(N.Cond);
  Stmt T = mutate(N.Then), F = mutate(N.Else);
  if (C == N.Cond && T == N.Then && F == N.Else)
    return S;
  return std::make_shared<IfNode>(std::move(C), std::move(T), std::move(F), N.SrcLine);
}

Stmt IRMutator::visitLet(const LetNode &N, const Stmt &S) {
  Expr V = mutate(N.Value);
  Stmt B = mutate(N.Body);
  if (V == N.Value && B == N.Body)
    return S;
  return std::make_shared<LetNode>(N.Var, std::move(V), std::move(B), N.SrcLine);
}

Stmt IRMutator::visitStore(const StoreNode &N, const Stmt &S) {
  std::vector<Expr> Idx;
  bool Changed = mutateAll(N.Indices, Idx);
  Expr V = mutate(N.Value);
  if (!Changed && V == N.Value)
    return S;
  return std::make_shared<StoreNode>(N.Buffer, std::move(Idx), std::move(V), N.SrcLine);
}

Stmt IRMutator::visitAllocate(const AllocateNode &N, const Stmt &S) {
  std::vector<Expr> Shape;
  bool Changed = mutateAll(N.Buf.Shape, Shape);
  Stmt Body = mutate(N.Body);
  if (!Changed && Body == N.Body)
    return S;
  Buffer B = N.Buf;
  B.Shape = std::move(Shape);
  return std::make_shared<AllocateNode>(std::move(B), std::move(Body), N.SrcLine);
}

Stmt IRMutator::visitAsyncCopy(const AsyncCopyNode &N, const Stmt &S) {
  std::vector<Expr> DI, SI;
  bool Changed = mutateAll(N.DstIndices, DI);
  Changed |= mutateAll(N.SrcIndices, SI);
  Expr Valid = mutate(N.Valid);
  if (!Changed && Valid == N.Valid)
    return S;
  return std::make_shared<AsyncCopyNode>(N.Dst, std::move(DI), N.Src, std::move(SI),
                                         N.Elems, N.SrcLine, std::move(Valid));
}

Stmt IRMutator::visitMbarrier(const MbarrierNode &N, const Stmt &S) {
  Expr Index = mutate(N.Index), Value = mutate(N.Value);
  if (Index == N.Index && Value == N.Value)
    return S;
  return std::make_shared<MbarrierNode>(N.Op, N.Buffer, std::move(Index), std::move(Value),
                                        N.SrcLine);
}

Stmt IRMutator::visitTensorCopy(const TensorCopyNode &N, const Stmt &S) {
  std::vector<Expr> DI, SI;
  bool Changed = mutateAll(N.DstIndices, DI);
  Changed |= mutateAll(N.SrcIndices, SI);
  Expr BarIndex = mutate(N.BarIndex);
  if (!Changed && BarIndex == N.BarIndex)
    return S;
  return std::make_shared<TensorCopyNode>(N.Dst, std::move(DI), N.Src, std::move(SI), N.Box, N.Bar,
                                          std::move(BarIndex), N.SrcLine);
}

Stmt IRMutator::visitMma(const MmaNode &N, const Stmt &S) {
  std::vector<Expr> CI, AI, BI;
  bool Changed = mutateAll(N.CIndices, CI);
  Changed |= mutateAll(N.AIndices, AI);
  Changed |= mutateAll(N.BIndices, BI);
  if (!Changed)
    return S;
  return std::make_shared<MmaNode>(N.Shape, N.C, std::move(CI), N.A, std::move(AI), N.B,
                                   std::move(BI), N.SrcLine);
}

Stmt IRMutator::visitLdMatrix(const LdMatrixNode &N, const Stmt &S) {
  std::vector<Expr> DI, SI;
  bool Changed = mutateAll(N.DstIndices, DI);
  Changed |= mutateAll(N.SrcIndices, SI);
  if (!Changed)
    return S;
  return std::make_shared<LdMatrixNode>(N.Count, N.Trans, N.Dst, std::move(DI), N.Src,
                                        std::move(SI), N.SrcLine);
}

Stmt IRMutator::visitLaunch(const LaunchNode &N, const Stmt &S) {
  Stmt Body = mutate(N.Body);
  if (Body == N.Body)
    return S;
  return std::make_shared<LaunchNode>(N.Name, N.Class, N.Knobs, std::move(Body), N.SrcLine);
}

namespace {
class Substituter : public IRMutator {
public:
  Substituter(const std::string &Name, const Expr &Value) : Name(Name), Value(Value) {}

protected:
  const std::string &Name;
  const Expr &Value;

  Expr visitVar(const VarNode &N, const Expr &E) override {
    return N.Name == Name ? Value : E;
  }
  Stmt visitFor(const ForNode &N, const Stmt &S) override {
    if (N.Var != Name)
      return IRMutator::visitFor(N, S);
    Expr Min = mutate(N.Min), Ext = mutate(N.Extent);
    if (Min == N.Min && Ext == N.Extent)
      return S;
    return std::make_shared<ForNode>(N.Var, Min, Ext, N.Loop, N.Unroll, N.Body, N.SrcLine);
  }
  Stmt visitLet(const LetNode &N, const Stmt &S) override {
    if (N.Var != Name)
      return IRMutator::visitLet(N, S);
    Expr V = mutate(N.Value);
    return V == N.Value ? S : std::make_shared<LetNode>(N.Var, V, N.Body, N.SrcLine);
  }
};
} // namespace

Stmt substitute(const Stmt &S, const std::string &Name, const Expr &Value) {
  return Substituter(Name, Value).mutate(S);
}

Expr substitute(const Expr &E, const std::string &Name, const Expr &Value) {
  return Substituter(Name, Value).mutate(E);
}

void mutateModule(Module &M, IRMutator &Mut) {
  for (Func &F : M.Funcs) {
    for (Buffer &B : F.Params) {
      std::vector<Expr> Shape;
      if (Mut.mutateAll(B.Shape, Shape))
        B.Shape = std::move(Shape);
    }
    F.Body = Mut.mutate(F.Body);
  }
}

} // namespace tdsl::ir
