//===- Verifier.cpp - Structural and type checks of the loop IR -----------===//
//
// One walk over each function with the scopes the parser keeps (variables,
// buffers) plus the GPU context (enclosing block and thread loops, the block
// size of the current launch). Only statically decidable facts are checked:
// a barrier under a thread loop is divergent when the loop's constant extent
// is smaller than the block, nothing is guessed about data-dependent ifs.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"

#include "ir/IRParser.h"
#include "ir/Launch.h"
#include "ir/Printer.h"
#include "ir/Simplify.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <cctype>
#include <cmath>
#include <cstring>

namespace tdsl::ir {

namespace {

constexpr int64_t MaxThreadsPerBlock = 1024;
constexpr int64_t MaxBlockDim[3] = {1024, 1024, 64};
constexpr int64_t WarpSize = 32;

/// The statement's first printed line: enough to find it, short enough
/// for a message.
std::string headerOf(const Stmt &S) {
  std::string Text = toString(S);
  size_t Start = Text.find_first_not_of(' ');
  Text = Text.substr(Start == std::string::npos ? 0 : Start);
  Text = Text.substr(0, Text.find('\n'));
  if (llvm::StringRef(Text).endswith(" {"))
    Text.resize(Text.size() - 2);
  return Text;
}

bool isIdentifier(llvm::StringRef Name) {
  if (Name.empty() || !(std::isalpha(static_cast<unsigned char>(Name[0])) || Name[0] == '_'))
    return false;
  for (char C : Name)
    if (!(std::isalnum(static_cast<unsigned char>(C)) || C == '_'))
      return false;
  return true;
}

bool isArithmeticForbidden(DType T) { return T == DType::F16 || T == DType::BF16; }

int dimOf(ForKind K) {
  switch (K) {
  case ForKind::ThreadY: return 1;
  case ForKind::ThreadZ: return 2;
  default: return 0; // thread.x, warp and lane all split threadIdx.x
  }
}

/// Threads along the dimension one iteration of a thread loop covers.
int64_t threadsCovered(ForKind K, int64_t Extent) {
  return K == ForKind::Warp ? Extent * WarpSize : Extent;
}

bool containsLoop(const Stmt &S, bool (*Pred)(ForKind)) {
  struct Finder : IRVisitor {
    bool (*Pred)(ForKind);
    bool Found = false;
    void visitFor(const ForNode &N) override {
      Found |= Pred(N.Loop);
      if (!Found)
        IRVisitor::visitFor(N);
    }
    void visit(const Expr &) override {}
    using IRVisitor::visit;
  } F;
  F.Pred = Pred;
  F.visit(S);
  return F.Found;
}

bool isGpuLoop(ForKind K) { return isBlockLoop(K) || isThreadLoop(K); }

class Verifier {
public:
  explicit Verifier(const Func &F) : F(F) {}
  std::vector<std::string> run();

private:
  const Func &F;
  std::vector<std::string> Errors;

  enum class VarKind { Size, Loop, Let };
  struct VarInfo {
    std::string Name;
    DType Type;
    VarKind Kind;
  };
  std::vector<VarInfo> Vars;
  std::vector<const Buffer *> Buffers;
  /// Enclosing loops bound to blocks or threads, innermost last.
  std::vector<const ForNode *> GpuLoops;
  unsigned BlockDepth = 0, ThreadDepth = 0;
  /// The launch being walked (null outside launches): its name and block.
  struct CurLaunch {
    std::string Name;
    int64_t Dim[3];
  };
  const CurLaunch *Launch = nullptr;
  llvm::StringSet<> LaunchNames;
  /// The buffers mbarrier statements name: no other statement may touch
  /// them (their words are the hardware's, not data).
  llvm::StringSet<> Mbarriers;
  bool InBarrierAccess = false;
  /// Statements entered that are not host structure (loops, ifs, local
  /// allocations): a launch may not sit inside one.
  unsigned DeviceDepth = 0;

  void fail(const llvm::Twine &Msg) {
    Errors.push_back(("in func '" + F.Name + "': " + Msg).str());
  }
  void fail(const llvm::Twine &Msg, const Expr &E) { fail(Msg + ": " + toString(E)); }
  void fail(const llvm::Twine &Msg, const Stmt &S) { fail(Msg + ": " + headerOf(S)); }

  const VarInfo *findVar(llvm::StringRef Name) const;
  const Buffer *findBuffer(llvm::StringRef Name) const;
  void checkName(llvm::StringRef Name, const char *What);
  void checkNewVar(const std::string &Name, const char *What, const Stmt &S);
  void checkIndices(const Buffer &B, const std::vector<Expr> &Indices, const Expr &E,
                    const Stmt &S);
  void checkSwizzle(const Buffer &B, const Stmt &S);
  void checkExtentNames(const Buffer &B, const Stmt &S);
  void checkMma(const MmaNode &N, const Stmt &S);
  void checkLdMatrix(const LdMatrixNode &N, const Stmt &S);
  void checkMbarrier(const MbarrierNode &N, const Stmt &S);
  void checkTensorCopy(const TensorCopyNode &N, const Stmt &S);
  const Buffer *checkBarrierObject(const std::string &Name, const Expr &Index, const Stmt &S,
                                   const char *What);
  const Buffer *checkFragment(const std::string &Name, const std::vector<Expr> &Indices,
                              const Stmt &S, const char *Role);
  /// Joined: fewer subscripts than the rank may index it (a tensor_copy
  /// source whose leading dimensions read as one).
  const Buffer *checkBufferAccess(const std::string &Name, const std::vector<Expr> &Indices,
                                  const Stmt &S, const Expr &E = nullptr, bool Joined = false);

  void checkLaunch(const LaunchNode &N, const Stmt &S);

  void checkExpr(const Expr &E);
  void checkStmt(const Stmt &S);
  void checkFor(const ForNode &N, const Stmt &S);
  void checkAllocate(const AllocateNode &N, const Stmt &S);
  void checkBarrier(const Stmt &S);
};

const Verifier::VarInfo *Verifier::findVar(llvm::StringRef Name) const {
  for (auto It = Vars.rbegin(); It != Vars.rend(); ++It)
    if (It->Name == Name)
      return &*It;
  return nullptr;
}

const Buffer *Verifier::findBuffer(llvm::StringRef Name) const {
  for (auto It = Buffers.rbegin(); It != Buffers.rend(); ++It)
    if ((*It)->Name == Name)
      return *It;
  return nullptr;
}

/// Names must survive printing and parsing back (the printer escapes the
/// ones spelled like reserved words as "$name").
void Verifier::checkName(llvm::StringRef Name, const char *What) {
  if (!isIdentifier(Name))
    fail(llvm::Twine(What) + " name '" + Name + "' is not an identifier");
}

void Verifier::checkNewVar(const std::string &Name, const char *What, const Stmt &S) {
  checkName(Name, What);
  static const char *KindName[] = {"size symbol", "loop variable", "let variable"};
  if (const VarInfo *Outer = findVar(Name))
    fail(llvm::Twine(What) + " '" + Name + "' shadows the enclosing " +
             KindName[static_cast<int>(Outer->Kind)] + " of that name",
         S);
}

const Buffer *Verifier::checkBufferAccess(const std::string &Name, const std::vector<Expr> &Indices,
                                          const Stmt &S, const Expr &E, bool Joined) {
  const Buffer *B = findBuffer(Name);
  auto Fail = [&](const llvm::Twine &Msg) { E ? fail(Msg, E) : fail(Msg, S); };
  if (!B) {
    Fail("buffer '" + Name + "' is not defined here (neither a parameter nor an enclosing alloc)");
  } else if (Mbarriers.count(Name) && !InBarrierAccess) {
    Fail("mbarrier '" + Name + "' accessed by other than mbarrier and tensor_copy statements");
  } else if (Joined ? Indices.empty() || Indices.size() > B->rank() : B->rank() != Indices.size()) {
    Fail("buffer '" + Name + "' of rank " + llvm::Twine(B->rank()) + " indexed with " +
         llvm::Twine(Indices.size()) + " subscripts");
  }
  for (const Expr &I : Indices) {
    checkExpr(I);
    if (I && !isInteger(I->Type))
      Fail("subscript '" + toString(I) + "' of buffer '" + Name + "' has non-integer type " +
           dtypeName(I->Type));
  }
  return B;
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

/// A launch: at the host level, not nested, uniquely named; its block
/// (from the one launch analysis) within the limits.
void Verifier::checkLaunch(const LaunchNode &N, const Stmt &S) {
  checkName(N.Name, "launch");
  if (Launch)
    fail("launch '" + N.Name + "' inside launch '" + Launch->Name + "'", S);
  else if (DeviceDepth)
    fail("launch '" + N.Name + "' inside a loop, an if or a non-global allocation (a launch "
         "runs on the host, between the statements that group launches)",
         S);
  if (!LaunchNames.insert(N.Name).second)
    fail("two launches named '" + N.Name + "'", S);
  LaunchShape Shape = launchShape(N);
  for (const std::string &P : Shape.GridProblems)
    fail("launch '" + N.Name + "' " + P, S);
  static const char *DimName[3] = {"x", "y", "z"};
  for (int I = 0; I < 3; ++I)
    if (Shape.Block[I] > MaxBlockDim[I])
      fail("launch needs " + llvm::Twine(Shape.Block[I]) + " threads along " + DimName[I] +
               ", more than the limit of " + llvm::Twine(MaxBlockDim[I]),
           S);
  if (Shape.threads() > MaxThreadsPerBlock)
    fail("launch needs " + llvm::Twine(Shape.threads()) + " threads per block (" +
             llvm::Twine(Shape.Block[0]) + " x " + llvm::Twine(Shape.Block[1]) + " x " +
             llvm::Twine(Shape.Block[2]) + "), more than " + llvm::Twine(MaxThreadsPerBlock),
         S);
  CurLaunch Cur{N.Name, {Shape.Block[0], Shape.Block[1], Shape.Block[2]}};
  const CurLaunch *Saved = Launch;
  Launch = &Cur;
  checkStmt(N.Body);
  Launch = Saved;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

void Verifier::checkExpr(const Expr &E) {
  if (!E) {
    fail("null expression");
    return;
  }
  auto NoSmallFloatMath = [&](DType T) {
    if (isArithmeticForbidden(T))
      fail("arithmetic on " + dtypeName(T) + " (convert to f32 first)", E);
  };
  switch (E->Kind) {
  case ExprKind::IntImm: {
    int64_t V = static_cast<const IntImmNode &>(*E).Value;
    if (!isInteger(E->Type) && E->Type != DType::Bool)
      fail("integer literal of non-integer type " + dtypeName(E->Type), E);
    else if (E->Type != DType::I64 &&
             (double(V) < dtypeLowest(E->Type) || double(V) > dtypeHighest(E->Type)))
      fail("integer literal out of range for " + dtypeName(E->Type), E);
    return;
  }
  case ExprKind::FloatImm: {
    double V = static_cast<const FloatImmNode &>(*E).Value;
    if (!isFloat(E->Type)) {
      fail("float literal of non-float type " + dtypeName(E->Type), E);
      return;
    }
    double R = convertValue(V, DType::F64, E->Type);
    if (!std::isnan(V) && std::memcmp(&R, &V, sizeof(double)) != 0)
      fail("float literal not representable in " + dtypeName(E->Type), E);
    return;
  }
  case ExprKind::Var: {
    const auto &N = static_cast<const VarNode &>(*E);
    const VarInfo *V = findVar(N.Name);
    if (!V)
      fail("variable '" + N.Name + "' is not in scope", E);
    else if (V->Type != N.Type)
      fail("variable '" + N.Name + "' used as " + dtypeName(N.Type) + " but bound as " +
               dtypeName(V->Type),
           E);
    return;
  }
  case ExprKind::Load: {
    const auto &N = static_cast<const LoadNode &>(*E);
    const Buffer *B = checkBufferAccess(N.Buffer, N.Indices, nullptr, E);
    if (B && B->Type != N.Type)
      fail("load of type " + dtypeName(N.Type) + " from " + dtypeName(B->Type) +
               " buffer '" + N.Buffer + "'",
           E);
    return;
  }
  case ExprKind::Unary: {
    const auto &N = static_cast<const UnaryNode &>(*E);
    checkExpr(N.A);
    if (!N.A)
      return;
    if (N.Op == UnaryOp::Not) {
      if (N.A->Type != DType::Bool || N.Type != DType::Bool)
        fail("'!' needs a bool operand", E);
      return;
    }
    NoSmallFloatMath(N.A->Type);
    if (N.A->Type == DType::Bool)
      fail("negation of a bool", E);
    if (N.Type != N.A->Type)
      fail("negation changes the type", E);
    return;
  }
  case ExprKind::Binary: {
    const auto &N = static_cast<const BinaryNode &>(*E);
    checkExpr(N.A);
    checkExpr(N.B);
    if (!N.A || !N.B)
      return;
    if (N.A->Type != N.B->Type) {
      fail("operands of '" + binaryOpSpelling(N.Op) + "' differ in type (" +
               dtypeName(N.A->Type) + " and " + dtypeName(N.B->Type) + ")",
           E);
      return;
    }
    DType T = N.A->Type;
    if (N.Op == BinaryOp::And || N.Op == BinaryOp::Or) {
      if (T != DType::Bool)
        fail("operands of '" + binaryOpSpelling(N.Op) + "' must be bool, not " +
                 dtypeName(T),
             E);
    } else if (N.Op != BinaryOp::Eq && N.Op != BinaryOp::Ne && T == DType::Bool) {
      fail("arithmetic on bool operands", E);
    }
    NoSmallFloatMath(T);
    DType Expected = isComparison(N.Op) ? DType::Bool : T;
    if (N.Type != Expected)
      fail("'" + binaryOpSpelling(N.Op) + "' has type " + dtypeName(N.Type) +
               ", expected " + dtypeName(Expected),
           E);
    return;
  }
  case ExprKind::Select: {
    const auto &N = static_cast<const SelectNode &>(*E);
    checkExpr(N.Cond);
    checkExpr(N.TrueValue);
    checkExpr(N.FalseValue);
    if (!N.Cond || !N.TrueValue || !N.FalseValue)
      return;
    if (N.Cond->Type != DType::Bool)
      fail("select condition has type " + dtypeName(N.Cond->Type) + ", not bool", E);
    if (N.TrueValue->Type != N.FalseValue->Type || N.Type != N.TrueValue->Type)
      fail("select branches differ in type (" + dtypeName(N.TrueValue->Type) + " and " +
               dtypeName(N.FalseValue->Type) + ")",
           E);
    return;
  }
  case ExprKind::Cast: checkExpr(static_cast<const CastNode &>(*E).A); return;
  case ExprKind::Call: {
    const auto &N = static_cast<const CallNode &>(*E);
    for (const Expr &A : N.Args)
      checkExpr(A);
    llvm::StringRef Name = intrinsicName(N.Fn);
    if (N.Args.size() != intrinsicArity(N.Fn)) {
      fail("'" + Name + "' takes " + llvm::Twine(intrinsicArity(N.Fn)) +
               " arguments, not " + llvm::Twine(N.Args.size()),
           E);
      return;
    }
    for (const Expr &A : N.Args)
      if (!A)
        return;
    if (N.Fn == Intrinsic::Aligned) {
      // aligned(X[0, ...], N): an element of a global buffer, whose address
      // (not value) is tested against a power-of-2 byte count.
      const Buffer *B = N.Args[0]->Kind == ExprKind::Load
                            ? findBuffer(static_cast<const LoadNode &>(*N.Args[0]).Buffer)
                            : nullptr;
      std::optional<int64_t> Bytes = asConstInt(N.Args[1]);
      if (N.Type != DType::Bool)
        fail("'aligned' has type " + dtypeName(N.Type) + ", expected bool", E);
      bool First = B && B->Scope == MemScope::Global && B->rank() &&
                   llvm::all_of(static_cast<const LoadNode &>(*N.Args[0]).Indices,
                                [](const Expr &I) { return asConstInt(I) == 0; });
      if (!First)
        fail("'aligned' takes the first element of a global tensor, as X[0, 0]", E);
      if (!Bytes || *Bytes < 1 || *Bytes > 256 || (*Bytes & (*Bytes - 1)))
        fail("'aligned' takes a byte count that is a power of 2 up to 256", E);
      return;
    }
    DType T = N.Args[0]->Type;
    if (N.Type != T)
      fail("'" + Name + "' has type " + dtypeName(N.Type) + ", expected " + dtypeName(T), E);
    if (isWarpShuffle(N.Fn)) {
      if (!isInteger(N.Args[1]->Type))
        fail("lane operand of '" + Name + "' must be an integer", E);
      return;
    }
    NoSmallFloatMath(T);
    bool IntOk = N.Fn == Intrinsic::Abs || N.Fn == Intrinsic::Relu;
    if (!isFloat(T) && !(IntOk && isInteger(T)))
      fail("'" + Name + "' of non-float type " + dtypeName(T), E);
    if (N.Fn == Intrinsic::Pow && N.Args[1]->Type != T)
      fail("operands of 'pow' differ in type", E);
    return;
  }
  }
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

void Verifier::checkFor(const ForNode &N, const Stmt &S) {
  checkExpr(N.Min);
  checkExpr(N.Extent);
  if (N.Min && N.Min->Type != DType::I64)
    fail("loop min must be i64, not " + dtypeName(N.Min->Type), S);
  if (N.Extent && N.Extent->Type != DType::I64)
    fail("loop extent must be i64, not " + dtypeName(N.Extent->Type), S);
  checkNewVar(N.Var, "loop variable", S);

  if (isBlockLoop(N.Loop) && ThreadDepth)
    fail("block loop nested inside a thread loop", S);
  if (isThreadLoop(N.Loop)) {
    std::optional<int64_t> Ext = asConstInt(N.Extent);
    if (!Ext || *Ext <= 0)
      fail(forKindName(N.Loop) + " loop extent must be a positive constant", S);
    else if (N.Loop == ForKind::Lane && *Ext > WarpSize)
      fail("lane loop extent " + llvm::Twine(*Ext) + " exceeds the warp size", S);
  }

  bool Gpu = isGpuLoop(N.Loop);
  if (Gpu && !Launch)
    fail(forKindName(N.Loop) + " loop '" + N.Var + "' outside a launch", S);
  if (Gpu) {
    GpuLoops.push_back(&N);
    (isBlockLoop(N.Loop) ? BlockDepth : ThreadDepth)++;
  }
  Vars.push_back({N.Var, DType::I64, VarKind::Loop});
  checkStmt(N.Body);
  Vars.pop_back();
  if (Gpu) {
    GpuLoops.pop_back();
    (isBlockLoop(N.Loop) ? BlockDepth : ThreadDepth)--;
  }
}

void Verifier::checkAllocate(const AllocateNode &N, const Stmt &S) {
  const Buffer &B = N.Buf;
  checkName(B.Name, "buffer");
  if (findBuffer(B.Name))
    fail("buffer '" + B.Name + "' shadows a buffer already in scope", S);
  for (const Expr &D : B.Shape) {
    checkExpr(D);
    if (D && D->Type != DType::I64)
      fail("extent '" + toString(D) + "' of buffer '" + B.Name + "' must be i64", S);
  }
  if (!B.Padding.empty() && B.Padding.size() != B.rank())
    fail("buffer '" + B.Name + "' of rank " + llvm::Twine(B.rank()) + " has " +
             llvm::Twine(B.Padding.size()) + " padding entries",
         S);
  for (int64_t P : B.Padding)
    if (P < 0)
      fail("buffer '" + B.Name + "' has negative padding " + llvm::Twine(P), S);
  if (!B.ExtentNames.empty())
    checkExtentNames(B, S);
  if (B.Swz)
    checkSwizzle(B, S);
  if (B.Scope == MemScope::Shared && !BlockDepth &&
      !containsLoop(N.Body, isBlockLoop))
    fail("shared buffer '" + B.Name +
             "' allocated outside any block loop (shared memory exists per block)",
         S);
  Buffers.push_back(&B);
  checkStmt(N.Body);
  Buffers.pop_back();
}

/// Extent names become C++ constants (`block_k` -> kBlockK) that declare a
/// shared tile, so each is a lower-case word, one per dim, and a word named
/// twice names one extent.
void Verifier::checkExtentNames(const Buffer &B, const Stmt &S) {
  if (B.Scope != MemScope::Shared)
    fail("extent names on buffer '" + B.Name + "', which is not shared", S);
  if (B.ExtentNames.size() != B.rank())
    fail("buffer '" + B.Name + "' of rank " + llvm::Twine(B.rank()) + " has " +
             llvm::Twine(B.ExtentNames.size()) + " extent names",
         S);
  for (size_t I = 0; I < B.ExtentNames.size(); ++I) {
    llvm::StringRef W = B.ExtentNames[I];
    auto Upper = [](char C) { return std::isupper(static_cast<unsigned char>(C)) != 0; };
    if (!isIdentifier(W) || W.front() == '_' || llvm::any_of(W, Upper))
      fail("extent name '" + W + "' of buffer '" + B.Name +
               "' is not a lower-case word (letters, digits, '_')",
           S);
    for (size_t J = 0; J < I && I < B.rank(); ++J)
      if (B.ExtentNames[J] == W &&
          !structurallyEqual(simplifyExpr(B.Shape[J]), simplifyExpr(B.Shape[I])))
        fail("extent name '" + W + "' of buffer '" + B.Name + "' names two different extents",
             S);
  }
}

/// A swizzle permutes the elements of one shared buffer of constant shape
/// among themselves: its bit ranges must not overlap, and the storage must
/// hold whole periods of it.
void Verifier::checkSwizzle(const Buffer &B, const Stmt &S) {
  const Swizzle &W = B.Swz;
  if (B.Scope != MemScope::Shared || !B.Padding.empty()) {
    fail("swizzled buffer '" + B.Name + "' must be a shared buffer without padding", S);
    return;
  }
  if (W.Shift < W.Bits || W.Base + W.Shift + W.Bits > 30) {
    fail("swizzle(" + llvm::Twine(W.Bits) + ", " + llvm::Twine(W.Base) + ", " +
             llvm::Twine(W.Shift) + ") of '" + B.Name +
             "' needs a shift of at least its width and fewer than 31 bits",
         S);
    return;
  }
  int64_t Elems = 1;
  for (const Expr &D : B.Shape) {
    std::optional<int64_t> C = asConstInt(D);
    Elems *= C ? *C : 0;
  }
  int64_t Period = int64_t(1) << (W.Base + W.Shift + W.Bits);
  if (Elems <= 0 || Elems % Period)
    fail("swizzled buffer '" + B.Name + "' of " + llvm::Twine(Elems) +
             " elements is not a multiple of the swizzle's period of " + llvm::Twine(Period),
         S);
}

const Buffer *Verifier::checkFragment(const std::string &Name, const std::vector<Expr> &Indices,
                                      const Stmt &S, const char *Role) {
  const Buffer *B = checkBufferAccess(Name, Indices, S);
  if (B && B->Scope != MemScope::Fragment)
    fail(llvm::Twine(Role) + " '" + Name + "' must be a fragment buffer, not " +
             memScopeName(B->Scope),
         S);
  return B;
}

/// The operand types of each shape, as PTX has them (IR.h, MmaShape).
void Verifier::checkMma(const MmaNode &N, const Stmt &S) {
  if (!Launch)
    fail("mma outside a launch", S);
  const Buffer *C = checkFragment(N.C, N.CIndices, S, "mma accumulator");
  const Buffer *A = checkFragment(N.A, N.AIndices, S, "mma operand");
  const Buffer *B = checkFragment(N.B, N.BIndices, S, "mma operand");
  if (!A || !B || !C)
    return;
  DType In = A->Type, Acc = C->Type;
  bool Ok = In == B->Type;
  switch (N.Shape) {
  case MmaShape::M16N8K16:
    Ok &= (In == DType::F16 || In == DType::BF16) && Acc == DType::F32;
    break;
  case MmaShape::M16N8K8: Ok &= In == DType::TF32 && Acc == DType::F32; break;
  case MmaShape::M16N8K32: Ok &= In == DType::I8 && Acc == DType::I32; break;
  }
  if (!Ok)
    fail("mma " + mmaShapeName(N.Shape) + " does not take " + dtypeName(A->Type) + " x " +
             dtypeName(B->Type) + " into " + dtypeName(C->Type) +
             " (m16n8k16: f16 or bf16 into f32; m16n8k8: tf32 into f32; m16n8k32: i8 into i32)",
         S);
}

/// Name[Index], an mbarrier: an element of a rank-1 shared i64 buffer.
const Buffer *Verifier::checkBarrierObject(const std::string &Name, const Expr &Index,
                                           const Stmt &S, const char *What) {
  if (!Index) {
    fail(llvm::Twine(What) + " without an mbarrier index", S);
    return nullptr;
  }
  InBarrierAccess = true;
  const Buffer *B = checkBufferAccess(Name, {Index}, S);
  InBarrierAccess = false;
  if (B && (B->Scope != MemScope::Shared || B->Type != DType::I64 || B->rank() != 1))
    fail(llvm::Twine(What) + " on '" + Name +
             "', which is not a rank-1 shared i64 buffer (an array of mbarriers)",
         S);
  return B;
}

void Verifier::checkMbarrier(const MbarrierNode &N, const Stmt &S) {
  std::string What = ("mbarrier " + mbarrierOpName(N.Op)).str();
  if (!Launch)
    fail(What + " outside a launch", S);
  checkBarrierObject(N.Buffer, N.Index, S, What.c_str());
  bool WantsValue = N.Op != MbarrierOp::Arrive && N.Op != MbarrierOp::ArriveWarp;
  if (WantsValue != bool(N.Value)) {
    fail(What + (WantsValue ? " needs a value" : " takes no value"), S);
    return;
  }
  if (!N.Value)
    return;
  checkExpr(N.Value);
  if (!isInteger(N.Value->Type))
    fail(What + " value '" + toString(N.Value) + "' must be an integer", S);
  std::optional<int64_t> V = asConstInt(N.Value);
  if (V && N.Op == MbarrierOp::Init && *V < 1)
    fail(What + " count " + llvm::Twine(*V) + " must be at least 1", S);
  if (V && N.Op == MbarrierOp::ExpectTx && *V < 0)
    fail(What + " of " + llvm::Twine(*V) + " bytes", S);
}

/// The copy engine's limits (PTX cp.async.bulk.tensor, cuTensorMapEncodeTiled):
/// up to 5 dimensions of at most 256 elements, the innermost a multiple
/// of 16 bytes; written densely into shared memory, unpadded, in no
/// swizzle or its 32-, 64- or 128-byte one over rows of that many bytes.
void Verifier::checkTensorCopy(const TensorCopyNode &N, const Stmt &S) {
  if (!Launch)
    fail("tensor_copy outside a launch", S);
  const Buffer *D = checkBufferAccess(N.Dst, N.DstIndices, S);
  const Buffer *Src = checkBufferAccess(N.Src, N.SrcIndices, S, nullptr, /*Joined=*/true);
  checkBarrierObject(N.Bar, N.BarIndex, S, "tensor_copy");
  if (!D || !Src)
    return;
  if (D->Scope != MemScope::Shared || Src->Scope != MemScope::Global)
    fail("tensor_copy goes from a global tensor to a shared buffer", S);
  if (D->Type != Src->Type)
    fail("tensor_copy between buffers of different dtypes (" + dtypeName(Src->Type) + " to " +
             dtypeName(D->Type) + ")",
         S);
  if (N.Box.empty() || N.Box.size() > 5 || N.Box.size() != N.SrcIndices.size() ||
      N.Box.size() > Src->rank() || N.Box.size() > D->rank()) {
    fail("tensor_copy box of " + llvm::Twine(N.Box.size()) + " extents from rank-" +
             llvm::Twine(Src->rank()) + " '" + N.Src + "' read with " +
             llvm::Twine(N.SrcIndices.size()) + " subscripts into rank-" + llvm::Twine(D->rank()) +
             " '" + N.Dst +
             "' (one extent per subscript, up to 5, landing in as many of the destination's "
             "last dimensions)",
         S);
    return;
  }
  int64_t ElemBytes = dtypeBytes(D->Type);
  for (int64_t E : N.Box)
    if (E < 1 || E > 256)
      fail("tensor_copy box extent " + llvm::Twine(E) + " (1 to 256)", S);
  int64_t RowBytes = N.Box.back() * ElemBytes;
  if (RowBytes % 16)
    fail("tensor_copy box rows of " + llvm::Twine(RowBytes) +
             " bytes (the engine moves multiples of 16)",
         S);
  if (!D->Padding.empty() && llvm::any_of(D->Padding, [](int64_t P) { return P != 0; }))
    fail("tensor_copy into padded '" + N.Dst + "' (the engine writes the box densely)", S);
  // The box's inner extents are the destination's: the engine writes
  // element (b0, b1, ...) at offset b0 * Box[1] * ... from the start.
  size_t Skip = D->rank() - N.Box.size();
  for (size_t I = 1; I < N.Box.size(); ++I) {
    std::optional<int64_t> Ext = asConstInt(D->Shape[Skip + I]);
    std::optional<int64_t> At = asConstInt(N.DstIndices[Skip + I]);
    if (!Ext || *Ext != N.Box[I] || !At || *At != 0)
      fail("tensor_copy box extent " + llvm::Twine(N.Box[I]) + " must fill dimension " +
               llvm::Twine(Skip + I) + " of '" + N.Dst + "' from index 0",
           S);
  }
  if (D->Swz) {
    // In elements of 2^k bytes, the engine's swizzle of 2^(Bits + 4) bytes
    // is (Bits, 4 - k, 3): 16-byte chunks XORed with the row's 3 bits.
    int64_t Span = int64_t(16) << D->Swz.Bits;
    unsigned Log = ElemBytes == 1 ? 0 : ElemBytes == 2 ? 1 : ElemBytes == 4 ? 2 : 3;
    if (D->Swz.Bits < 1 || D->Swz.Bits > 3 || D->Swz.Base + Log != 4 || D->Swz.Shift != 3 ||
        RowBytes != Span)
      fail("tensor_copy into '" + N.Dst + "' swizzled (" + llvm::Twine(D->Swz.Bits) + ", " +
               llvm::Twine(D->Swz.Base) + ", " + llvm::Twine(D->Swz.Shift) +
               "): the engine's swizzles are its 32-, 64- and 128-byte ones over rows of as many "
               "bytes",
           S);
  }
}

void Verifier::checkLdMatrix(const LdMatrixNode &N, const Stmt &S) {
  if (!Launch)
    fail("ldmatrix outside a launch", S);
  if (N.Count != 1 && N.Count != 2 && N.Count != 4)
    fail("ldmatrix of " + llvm::Twine(N.Count) + " matrices (1, 2 or 4)", S);
  const Buffer *D = checkFragment(N.Dst, N.DstIndices, S, "ldmatrix destination");
  const Buffer *Src = checkBufferAccess(N.Src, N.SrcIndices, S);
  if (!D || !Src)
    return;
  if (Src->Scope != MemScope::Shared)
    fail("ldmatrix source '" + N.Src + "' must be a shared buffer", S);
  // f32 into tf32 rounds, as tf32(x) does; otherwise the bits move as they are.
  if (D->Type != Src->Type && !(D->Type == DType::TF32 && Src->Type == DType::F32))
    fail("ldmatrix from " + dtypeName(Src->Type) + " into " + dtypeName(D->Type), S);
  if (N.Trans && dtypeBytes(Src->Type) > 2)
    fail("ldmatrix trans moves 16-bit elements (8-bit ones in pairs), not " + dtypeName(Src->Type),
         S);
  if (dtypeBytes(Src->Type) > 4 || Src->Type == DType::Bool)
    fail("ldmatrix of " + dtypeName(Src->Type) + " elements", S);
}

/// Every thread of the block must reach a barrier; a thread loop narrower
/// than the block keeps some threads out.
void Verifier::checkBarrier(const Stmt &S) {
  if (!Launch)
    return;
  for (const ForNode *L : GpuLoops) {
    if (!isThreadLoop(L->Loop))
      continue;
    std::optional<int64_t> Ext = asConstInt(L->Extent);
    if (!Ext || *Ext <= 0)
      continue;
    int D = dimOf(L->Loop);
    int64_t Block = Launch->Dim[D];
    int64_t Covered = threadsCovered(L->Loop, *Ext);
    if (L->Loop == ForKind::Lane)
      Block = std::min(Block, WarpSize);
    if (Covered < Block)
      fail("barrier inside " + forKindName(L->Loop) + " loop '" + L->Var + "' of extent " +
               llvm::Twine(*Ext) + " is reached by only " + llvm::Twine(Covered) + " of " +
               llvm::Twine(Block) + " threads along " +
               (D == 0 ? "x" : D == 1 ? "y" : "z") + " (divergent barrier)",
           S);
  }
}

void Verifier::checkStmt(const Stmt &S) {
  if (!S) {
    fail("null statement");
    return;
  }
  bool Device = !isHostStructure(S) && S->Kind != StmtKind::Launch;
  DeviceDepth += Device;
  switch (S->Kind) {
  case StmtKind::Block:
    for (const Stmt &C : static_cast<const BlockNode &>(*S).Stmts)
      checkStmt(C);
    break;
  case StmtKind::For: checkFor(static_cast<const ForNode &>(*S), S); break;
  case StmtKind::If: {
    const auto &N = static_cast<const IfNode &>(*S);
    checkExpr(N.Cond);
    if (N.Cond && N.Cond->Type != DType::Bool)
      fail("if condition has type " + dtypeName(N.Cond->Type) + ", not bool", S);
    checkStmt(N.Then);
    if (N.Else)
      checkStmt(N.Else);
    break;
  }
  case StmtKind::Let: {
    const auto &N = static_cast<const LetNode &>(*S);
    checkExpr(N.Value);
    checkNewVar(N.Var, "let variable", S);
    Vars.push_back({N.Var, N.Value ? N.Value->Type : DType::I64, VarKind::Let});
    checkStmt(N.Body);
    Vars.pop_back();
    break;
  }
  case StmtKind::Store: {
    const auto &N = static_cast<const StoreNode &>(*S);
    const Buffer *B = checkBufferAccess(N.Buffer, N.Indices, S);
    checkExpr(N.Value);
    if (B && N.Value && N.Value->Type != B->Type)
      fail("value of type " + dtypeName(N.Value->Type) + " stored to " + dtypeName(B->Type) +
               " buffer '" + N.Buffer + "'",
           S);
    break;
  }
  case StmtKind::Allocate: checkAllocate(static_cast<const AllocateNode &>(*S), S); break;
  case StmtKind::Barrier: checkBarrier(S); break;
  case StmtKind::AsyncCopy: {
    const auto &N = static_cast<const AsyncCopyNode &>(*S);
    const Buffer *D = checkBufferAccess(N.Dst, N.DstIndices, S);
    const Buffer *Src = checkBufferAccess(N.Src, N.SrcIndices, S);
    if (N.Elems == 0)
      fail("async_copy of 0 elements", S);
    if (D && Src && D->Type != Src->Type)
      fail("async_copy between buffers of different dtypes (" + dtypeName(Src->Type) +
               " to " + dtypeName(D->Type) + ")",
           S);
    if (N.Valid) {
      checkExpr(N.Valid);
      if (N.Valid->Type != DType::Bool)
        fail("async_copy condition '" + toString(N.Valid) + "' must be a comparison", S);
    }
    break;
  }
  case StmtKind::Mbarrier: checkMbarrier(static_cast<const MbarrierNode &>(*S), S); break;
  case StmtKind::TensorCopy: checkTensorCopy(static_cast<const TensorCopyNode &>(*S), S); break;
  case StmtKind::Mma: checkMma(static_cast<const MmaNode &>(*S), S); break;
  case StmtKind::LdMatrix: checkLdMatrix(static_cast<const LdMatrixNode &>(*S), S); break;
  case StmtKind::Note: {
    // The printer writes the text between quotes, with no escapes.
    const std::string &T = static_cast<const NoteNode &>(*S).Text;
    if (llvm::any_of(T, [](char C) { return C < 0x20 || C >= 0x7f || C == '"'; }))
      fail("note text must be printable ASCII without '\"'", S);
    break;
  }
  case StmtKind::Launch: checkLaunch(static_cast<const LaunchNode &>(*S), S); break;
  case StmtKind::AsyncCommit:
  case StmtKind::AsyncWait: break;
  }
  DeviceDepth -= Device;
}

std::vector<std::string> Verifier::run() {
  checkName(F.Name, "function");
  llvm::StringSet<> SeenSizes, SeenParams;
  for (const std::string &S : F.Sizes) {
    checkName(S, "size symbol");
    if (!SeenSizes.insert(S).second)
      fail("size symbol '" + S + "' declared twice");
    Vars.push_back({S, DType::I64, VarKind::Size});
  }
  for (const Buffer &B : F.Params) {
    checkName(B.Name, "parameter");
    if (!SeenParams.insert(B.Name).second)
      fail("parameter '" + B.Name + "' declared twice");
    if (B.Role == BufferRole::Temp)
      fail("parameter '" + B.Name + "' is neither an input nor an output");
    if (B.Scope != MemScope::Global || !B.Padding.empty() || B.Swz)
      fail("parameter '" + B.Name + "' must be a plain global buffer");
    for (const Expr &D : B.Shape) {
      checkExpr(D); // only size symbols are in scope here
      if (D && D->Type != DType::I64)
        fail("extent '" + toString(D) + "' of parameter '" + B.Name + "' must be i64");
    }
    Buffers.push_back(&B);
  }
  if (!F.Body) {
    fail("function has no body");
    return Errors;
  }
  struct BarrierNames : IRVisitor {
    llvm::StringSet<> &Names;
    explicit BarrierNames(llvm::StringSet<> &N) : Names(N) {}
    void visitMbarrier(const MbarrierNode &N) override { Names.insert(N.Buffer); }
    void visitTensorCopy(const TensorCopyNode &N) override { Names.insert(N.Bar); }
  } Scan(Mbarriers);
  Scan.visit(F.Body);
  checkStmt(F.Body);
  return Errors;
}

} // namespace

std::vector<std::string> verifyFunc(const Func &F) { return Verifier(F).run(); }

std::vector<std::string> verifyModule(const Module &M) {
  std::vector<std::string> Errors;
  llvm::StringSet<> Names;
  for (const Func &F : M.Funcs) {
    if (!Names.insert(F.Name).second)
      Errors.push_back("func '" + F.Name + "' is defined twice");
    std::vector<std::string> E = verifyFunc(F);
    Errors.insert(Errors.end(), E.begin(), E.end());
  }
  return Errors;
}

} // namespace tdsl::ir
