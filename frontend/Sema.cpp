//===- Sema.cpp - Name, dtype, shape and index-range checking -------------===//
#include "frontend/Sema.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cstdint>
#include <optional>

using namespace tdsl::ast;

namespace tdsl {

namespace {

/// The language's limit on the rank of any tensor (dsl/LANGUAGE.md, Limits).
constexpr size_t MaxRank = 8;

//===----------------------------------------------------------------------===//
// Checked affine arithmetic: literals are up to 2^31 - 1 and products of
// them can overflow int64, which must be a diagnostic, never UB.
//===----------------------------------------------------------------------===//

/// A + B into R; false on overflow. INT64_MIN counts as overflow too: it
/// cannot be negated, and Affine::str() negates negative coefficients.
bool checkedAdd(int64_t A, int64_t B, int64_t &R) {
  return !__builtin_add_overflow(A, B, &R) && R != INT64_MIN;
}
bool checkedMul(int64_t A, int64_t B, int64_t &R) {
  return !__builtin_mul_overflow(A, B, &R) && R != INT64_MIN;
}

/// Acc += K * X; false if any value leaves int64 (Acc is then garbage).
bool addScaled(Affine &Acc, const Affine &X, int64_t K) {
  int64_t T;
  if (!checkedMul(X.Constant, K, T) || !checkedAdd(Acc.Constant, T, Acc.Constant))
    return false;
  for (const auto &[Sym, C] : X.Coeffs) {
    if (!checkedMul(C, K, T))
      return false;
    int64_t Sum;
    if (!checkedAdd(Acc.Coeffs[Sym], T, Sum))
      return false;
    if (Sum == 0)
      Acc.Coeffs.erase(Sym);
    else
      Acc.Coeffs[Sym] = Sum;
  }
  return true;
}

/// True if F >= 0 whenever each of its symbols is an integer >= 1. This is
/// exact for affine forms: with every coefficient >= 0 the minimum is at all
/// symbols = 1; with a negative coefficient F is unbounded below.
bool nonNegativeForAllSizes(const Affine &F) {
  __int128 Sum = F.Constant; // cannot overflow: at most a few hundred terms
  for (const auto &[Sym, C] : F.Coeffs) {
    if (C < 0)
      return false;
    Sum += C;
  }
  return Sum >= 0;
}

std::string rangeStr(const Affine &Extent) { return "[0, " + Extent.str() + ")"; }

/// Where a diagnostic about a whole expression points: its first token.
llvm::SMLoc startLoc(const Expr &E) {
  const Expr *P = &E;
  for (;;) {
    if (P->Kind == ExprKind::Binary)
      P = static_cast<const Binary *>(P)->LHS.get();
    else if (P->Kind == ExprKind::Select)
      P = static_cast<const Select *>(P)->Cond.get();
    else
      return P->Loc;
  }
}

struct FunctionInfo {
  const char *Name;
  Callee Fn;
  unsigned Arity;
};
const FunctionInfo Functions[] = {
    {"exp", Callee::Exp, 1},         {"log", Callee::Log, 1},
    {"sqrt", Callee::Sqrt, 1},       {"rsqrt", Callee::Rsqrt, 1},
    {"tanh", Callee::Tanh, 1},       {"sigmoid", Callee::Sigmoid, 1},
    {"relu", Callee::Relu, 1},       {"gelu", Callee::Gelu, 1},
    {"erf", Callee::Erf, 1},         {"abs", Callee::Abs, 1},
    {"pow", Callee::Pow, 2},         {"max", Callee::Max, 2},
    {"min", Callee::Min, 2},
};

/// The dtype a cast function produces: f16(x), ..., tf32(x).
std::optional<DType> castTarget(llvm::StringRef Name) {
  std::optional<DType> T = parseDType(Name);
  if (!T || *T == DType::Bool || *T == DType::I64)
    return std::nullopt;
  return T;
}

/// What sema learns about one index variable of a statement.
struct IndexInfo {
  llvm::SMLoc FirstLoc;
  bool OnLeft = false;
  bool InSubscript = false; ///< Appears inside some subscript.
  std::optional<Affine> Range;
  std::string RangeFrom;    ///< The tensor whose dimension gave Range.
  bool Conflicting = false; ///< A conflict was reported already.
  /// Subscripts a tensor whose definition had errors; a missing range is
  /// then a follow-on error and not reported.
  bool SeesBroken = false;
};

/// "Plain subscript i at a dimension of extent E of tensor T".
struct RangeFact {
  std::string Index;
  Affine Extent;
  std::string From;
  llvm::SMLoc Loc;
};

/// A non-plain subscript that must be proven in bounds.
struct BoundsObligation {
  const Access *A;
  size_t Dim;
};

struct StmtState {
  std::vector<std::string> Order; ///< Index names in first-use order.
  llvm::StringMap<IndexInfo> Indices;
  std::vector<RangeFact> Facts;
  std::vector<BoundsObligation> Bounds;
  bool LhsOk = true;
  unsigned ErrorsBefore = 0; ///< Diagnostics count when the statement began.
};

enum class AffineUse { Dim, Subscript };

class Sema {
public:
  explicit Sema(DiagEngine &Diags) : Diags(Diags) {}
  bool run(Module &M);

private:
  void checkKernel(Kernel &K);
  void checkSignature();
  void checkStmt(Stmt &S);
  bool checkLhs(Stmt &S, Tensor *Out, StmtState &St);
  void checkExpr(Expr &E, StmtState &St, bool InSubscript);
  void checkName(Name &N, StmtState &St, bool InSubscript);
  void checkAccess(Access &A, StmtState &St);
  void checkCall(Call &C, StmtState &St, bool InSubscript);
  void inferRanges(Stmt &S, StmtState &St);
  void proveInBounds(const BoundsObligation &B, StmtState &St);
  Tensor *defineTarget(Stmt &S, StmtState &St, Tensor *Out, bool HadErrors);

  /// The tensor a read of Id refers to, or null after reporting why there
  /// is none. Names that are neither tensors nor size symbols are not
  /// reads (they are index variables) and are not passed here.
  Tensor *readableTensor(const std::string &Id, llvm::SMLoc Loc);
  std::optional<Affine> affineOf(Expr &E, AffineUse Use);
  void noteIndexUse(StmtState &St, const std::string &Id, llvm::SMLoc Loc,
                    bool InSubscript);
  bool tooManyErrors() const {
    return Diags.errorCount() >= DiagEngine::MaxErrors;
  }

  DiagEngine &Diags;

  // The kernel being checked.
  Kernel *K = nullptr;
  llvm::StringMap<Tensor *> Params;    ///< Inputs and outputs.
  llvm::StringMap<llvm::SMLoc> Sizes;  ///< Size symbol -> first use.
  llvm::StringSet<> TensorNames;       ///< Every tensor of the kernel.
  llvm::StringMap<Tensor *> Defined;   ///< Tensors readable at this point.
  /// Tensors with a malformed dimension, and intermediates whose defining
  /// statement had errors: their shapes are guesses, so they give no ranges
  /// and need no bounds proofs (either would only add follow-on errors).
  llvm::DenseSet<const Tensor *> Broken;
};

//===----------------------------------------------------------------------===//
// Module and kernel
//===----------------------------------------------------------------------===//

bool Sema::run(Module &M) {
  unsigned ErrorsBefore = Diags.errorCount();
  llvm::StringMap<Kernel *> Kernels;
  for (auto &KP : M.Kernels) {
    auto [It, New] = Kernels.try_emplace(KP->Name, KP.get());
    if (!New) {
      Diags.error(KP->Loc, "redefinition of kernel '" + KP->Name + "'");
      Diags.note(It->second->Loc, "kernel '" + KP->Name + "' was first defined here");
    }
  }
  for (auto &KP : M.Kernels) {
    if (tooManyErrors())
      return false;
    checkKernel(*KP);
  }

  for (auto &SP : M.Schedules) {
    Schedule &S = *SP;
    auto It = Kernels.find(S.KernelName);
    if (It == Kernels.end()) {
      Diags.error(S.Loc, "schedule for unknown kernel '" + S.KernelName + "'");
      continue;
    }
    Kernel &Target = *It->second;
    if (Target.Sched) {
      Diags.error(S.Loc, "kernel '" + S.KernelName + "' already has a schedule");
      Diags.note(Target.Sched->Loc, "the first schedule is here");
      continue;
    }
    Target.Sched = &S;
    llvm::StringMap<const ScheduleEntry *> Keys;
    for (const ScheduleEntry &E : S.Entries) {
      auto [KeyIt, New] = Keys.try_emplace(E.Key, &E);
      if (!New) {
        Diags.error(E.Loc, "schedule entry '" + E.Key + "' is set twice");
        Diags.note(KeyIt->second->Loc, "first set here");
      }
    }
  }
  return Diags.errorCount() == ErrorsBefore;
}

void Sema::checkKernel(Kernel &Kern) {
  K = &Kern;
  Params.clear();
  Sizes.clear();
  TensorNames.clear();
  Defined.clear();
  Broken.clear();

  checkSignature();

  // A name is a tensor if it is a parameter or some statement defines it;
  // knowing this up front tells "used before it is defined" apart from an
  // index variable.
  for (auto &P : Params)
    TensorNames.insert(P.first());
  for (auto &S : K->Body)
    if (!Sizes.count(S->TargetName))
      TensorNames.insert(S->TargetName);

  for (auto &S : K->Body) {
    if (tooManyErrors())
      return;
    checkStmt(*S);
  }

  for (auto &Out : K->Outputs)
    if (!Out->Definition && Params.lookup(Out->Name) == Out.get())
      Diags.error(Out->Loc, "output '" + Out->Name + "' is never written");
}

void Sema::checkSignature() {
  for (auto *List : {&K->Inputs, &K->Outputs}) {
    for (auto &TP : *List) {
      Tensor &T = *TP;
      auto [It, New] = Params.try_emplace(T.Name, &T);
      if (!New) {
        Diags.error(T.Loc, "redefinition of '" + T.Name + "'");
        Diags.note(It->second->Loc, "'" + T.Name + "' was first declared here");
      } else if (T.Role == TensorRole::Input) {
        Defined[T.Name] = &T;
      }
      if (T.Dims.size() > MaxRank)
        Diags.error(startLoc(*T.Dims[MaxRank].Written),
                    "too many dimensions: '" + T.Name + "' has " +
                        llvm::Twine(T.Dims.size()) + ", at most " +
                        llvm::Twine(MaxRank) + " are allowed");
      for (Dim &D : T.Dims) {
        std::optional<Affine> V = affineOf(*D.Written, AffineUse::Dim);
        if (V) {
          Affine MinusOne = *V;
          if (!addScaled(MinusOne, Affine::constant(1), -1)) {
            Diags.error(startLoc(*D.Written), "integer overflow in dimension");
            V.reset();
          } else if (!nonNegativeForAllSizes(MinusOne)) {
            Diags.error(startLoc(*D.Written), "dimension '" + V->str() +
                                                  "' may be zero or negative");
            Broken.insert(&T);
          }
        }
        if (!V)
          Broken.insert(&T);
        D.Value = V ? *V : Affine::constant(1);
        T.Shape.push_back(D.Value);
      }
    }
  }

  for (const std::string &Sym : K->SizeSymbols) {
    auto It = Params.find(Sym);
    if (It == Params.end())
      continue;
    Diags.error(Sizes.lookup(Sym),
                "'" + Sym + "' is used as a size symbol but is also a parameter");
    Diags.note(It->second->Loc, "parameter '" + Sym + "' is declared here");
  }
}

//===----------------------------------------------------------------------===//
// Affine forms of dimensions and subscripts
//===----------------------------------------------------------------------===//

std::optional<Affine> Sema::affineOf(Expr &E, AffineUse Use) {
  bool InDim = Use == AffineUse::Dim;
  auto NotAffine = [&](llvm::SMLoc Loc, const llvm::Twine &Why) {
    Diags.error(Loc,
                llvm::Twine(InDim ? "dimension must be affine in size symbols "
                                    "and integer literals"
                                  : "subscript must be affine in index variables") +
                    Why);
    return std::optional<Affine>();
  };
  auto Overflow = [&](llvm::SMLoc Loc) {
    Diags.error(Loc, InDim ? "integer overflow in dimension"
                           : "integer overflow in subscript");
    return std::optional<Affine>();
  };

  switch (E.Kind) {
  case ExprKind::IntLit:
    E.Type = DType::I32;
    return Affine::constant(static_cast<IntLit &>(E).Value);
  case ExprKind::Name: {
    auto &N = static_cast<Name &>(E);
    if (InDim) {
      N.Resolved = NameKind::Size;
      N.Type = DType::I32;
      if (Sizes.try_emplace(N.Id, N.Loc).second)
        K->SizeSymbols.push_back(N.Id);
      return Affine::symbol(N.Id);
    }
    switch (N.Resolved) {
    case NameKind::Index:
      return Affine::symbol(N.Id);
    case NameKind::Size:
      return NotAffine(N.Loc, " (size symbol '" + N.Id +
                                  "' cannot appear in a subscript)");
    case NameKind::Tensor:
      return NotAffine(N.Loc, " ('" + N.Id + "' is a tensor)");
    case NameKind::Unresolved:
      return std::nullopt; // Already reported.
    }
    return std::nullopt;
  }
  case ExprKind::Unary: {
    auto &U = static_cast<Unary &>(E);
    if (U.Op != UnaryOp::Neg)
      return NotAffine(U.Loc, "");
    std::optional<Affine> Inner = affineOf(*U.Operand, Use);
    if (!Inner)
      return std::nullopt;
    Affine R;
    if (!addScaled(R, *Inner, -1))
      return Overflow(U.Loc);
    U.Type = DType::I32;
    return R;
  }
  case ExprKind::Binary: {
    auto &B = static_cast<Binary &>(E);
    if (B.Op != BinaryOp::Add && B.Op != BinaryOp::Sub && B.Op != BinaryOp::Mul)
      return NotAffine(B.Loc, " (only +, - and * by a constant are allowed)");
    std::optional<Affine> L = affineOf(*B.LHS, Use);
    if (!L)
      return std::nullopt;
    std::optional<Affine> R = affineOf(*B.RHS, Use);
    if (!R)
      return std::nullopt;
    B.Type = B.OperandType = DType::I32;
    Affine Result;
    bool Ok;
    if (B.Op == BinaryOp::Add) {
      Result = *L;
      Ok = addScaled(Result, *R, 1);
    } else if (B.Op == BinaryOp::Sub) {
      Result = *L;
      Ok = addScaled(Result, *R, -1);
    } else if (L->isConstant()) {
      Ok = addScaled(Result, *R, L->Constant);
    } else if (R->isConstant()) {
      Ok = addScaled(Result, *L, R->Constant);
    } else {
      return NotAffine(B.Loc, " (a product of two non-constant terms)");
    }
    if (!Ok)
      return Overflow(B.Loc);
    return Result;
  }
  default:
    return NotAffine(startLoc(E), "");
  }
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

void Sema::checkStmt(Stmt &S) {
  unsigned ErrorsBefore = Diags.errorCount();
  const std::string &Name = S.TargetName;

  // What the statement writes: an output, or a new intermediate.
  Tensor *Out = nullptr;
  if (Sizes.count(Name)) {
    Diags.error(S.TargetLoc, "cannot write to size symbol '" + Name + "'");
    return;
  }
  if (Tensor *P = Params.lookup(Name)) {
    if (P->Role == TensorRole::Input) {
      Diags.error(S.TargetLoc, "cannot write to input '" + Name + "'");
      return;
    }
    Out = P;
  }
  Tensor *Previous = Out ? (Out->Definition ? Out : nullptr) : Defined.lookup(Name);
  if (Previous) {
    Diags.error(S.TargetLoc, "'" + Name + "' is defined twice");
    Diags.note(Previous->Definition ? Previous->Definition->TargetLoc : Previous->Loc,
               "the first definition of '" + Name + "' is here");
    return;
  }

  if (S.Annotation && Out && *S.Annotation != Out->Type)
    Diags.error(S.AnnotationLoc, "annotation " + dtypeName(*S.Annotation) +
                                     " conflicts with the declared dtype " +
                                     dtypeName(Out->Type) + " of '" + Name + "'");

  StmtState St;
  St.ErrorsBefore = ErrorsBefore;
  // With a malformed left side, which indices are reduced is unknowable.
  St.LhsOk = checkLhs(S, Out, St);
  checkExpr(*S.Value, St, /*InSubscript=*/false);
  inferRanges(S, St);
  for (const BoundsObligation &B : St.Bounds)
    proveInBounds(B, St);

  S.Target = defineTarget(S, St, Out, Diags.errorCount() != ErrorsBefore);
  S.ValueType = S.Op == AssignOp::Assign ? S.Target->Type
                                         : arithmeticType(S.Target->Type);
}

bool Sema::checkLhs(Stmt &S, Tensor *Out, StmtState &St) {
  bool Ok = true;
  if (Out && S.LhsIndices.size() != Out->Shape.size()) {
    Diags.error(S.TargetLoc, "'" + Out->Name + "' has rank " +
                                 llvm::Twine(Out->Shape.size()) +
                                 " but is written with " +
                                 llvm::Twine(S.LhsIndices.size()) + " subscript(s)");
    Ok = false;
  }
  if (!Out && S.LhsIndices.size() > MaxRank) {
    Diags.error(startLoc(*S.LhsIndices[MaxRank]),
                "too many dimensions: '" + S.TargetName + "' would have " +
                    llvm::Twine(S.LhsIndices.size()) + ", at most " +
                    llvm::Twine(MaxRank) + " are allowed");
    Ok = false;
  }

  for (size_t D = 0; D < S.LhsIndices.size(); ++D) {
    Expr &E = *S.LhsIndices[D];
    if (E.Kind != ExprKind::Name) {
      Diags.error(startLoc(E), "left-hand subscript must be a plain index variable");
      Ok = false;
      continue;
    }
    auto &N = static_cast<Name &>(E);
    if (TensorNames.count(N.Id)) {
      Diags.error(N.Loc, "index '" + N.Id + "' shadows a tensor");
      Ok = false;
      continue;
    }
    if (Sizes.count(N.Id)) {
      Diags.error(N.Loc, "index '" + N.Id + "' shadows a size symbol");
      Ok = false;
      continue;
    }
    if (St.Indices.count(N.Id)) {
      Diags.error(N.Loc, "index '" + N.Id + "' repeated on the left-hand side");
      Ok = false;
      continue;
    }
    N.Resolved = NameKind::Index;
    N.Type = DType::I32;
    noteIndexUse(St, N.Id, N.Loc, /*InSubscript=*/true);
    St.Indices[N.Id].OnLeft = true;
    S.Indices.push_back(N.Id);
    // An output's declared dims give its indices their ranges; a new
    // intermediate's shape is what the right side implies.
    if (Out && D < Out->Shape.size()) {
      if (Broken.count(Out))
        St.Indices[N.Id].SeesBroken = true;
      else
        St.Facts.push_back({N.Id, Out->Shape[D], Out->Name, N.Loc});
    }
  }
  return Ok;
}

void Sema::noteIndexUse(StmtState &St, const std::string &Id, llvm::SMLoc Loc,
                        bool InSubscript) {
  auto [It, New] = St.Indices.try_emplace(Id);
  if (New) {
    It->second.FirstLoc = Loc;
    St.Order.push_back(Id);
  }
  It->second.InSubscript |= InSubscript;
}

Tensor *Sema::readableTensor(const std::string &Id, llvm::SMLoc Loc) {
  if (Tensor *T = Defined.lookup(Id))
    return T;
  if (TensorNames.count(Id)) {
    Diags.error(Loc, "'" + Id + "' is used before it is defined");
    return nullptr;
  }
  if (Sizes.count(Id)) {
    Diags.error(Loc, "'" + Id + "' is a size symbol, not a tensor");
    return nullptr;
  }
  Diags.error(Loc, "unknown name '" + Id + "'");
  return nullptr;
}

void Sema::checkExpr(Expr &E, StmtState &St, bool InSubscript) {
  switch (E.Kind) {
  case ExprKind::IntLit:
    E.Type = DType::I32;
    return;
  case ExprKind::FloatLit:
    E.Type = DType::F32;
    return;
  case ExprKind::Name:
    checkName(static_cast<Name &>(E), St, InSubscript);
    return;
  case ExprKind::Access:
    checkAccess(static_cast<Access &>(E), St);
    return;
  case ExprKind::Unary: {
    auto &U = static_cast<Unary &>(E);
    checkExpr(*U.Operand, St, InSubscript);
    U.Type = U.Op == UnaryOp::Not ? DType::Bool : arithmeticType(U.Operand->Type);
    return;
  }
  case ExprKind::Binary: {
    auto &B = static_cast<Binary &>(E);
    checkExpr(*B.LHS, St, InSubscript);
    checkExpr(*B.RHS, St, InSubscript);
    switch (B.Op) {
    case BinaryOp::And:
    case BinaryOp::Or:
      B.OperandType = B.Type = DType::Bool;
      break;
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
    case BinaryOp::Eq:
    case BinaryOp::Ne:
      B.OperandType = promote(B.LHS->Type, B.RHS->Type);
      B.Type = DType::Bool;
      break;
    default:
      B.OperandType = B.Type = promote(B.LHS->Type, B.RHS->Type);
      break;
    }
    return;
  }
  case ExprKind::Select: {
    auto &S = static_cast<Select &>(E);
    checkExpr(*S.Cond, St, InSubscript);
    checkExpr(*S.Then, St, InSubscript);
    checkExpr(*S.Else, St, InSubscript);
    S.Type = promote(S.Then->Type, S.Else->Type);
    return;
  }
  case ExprKind::Call:
    checkCall(static_cast<Call &>(E), St, InSubscript);
    return;
  }
}

void Sema::checkName(Name &N, StmtState &St, bool InSubscript) {
  N.Type = DType::I32;
  if (TensorNames.count(N.Id)) {
    Tensor *T = readableTensor(N.Id, N.Loc);
    if (!T)
      return;
    N.Resolved = NameKind::Tensor;
    N.Target = T;
    N.Type = T->Type;
    if (!T->Shape.empty())
      Diags.error(N.Loc, "'" + N.Id + "' has rank " + llvm::Twine(T->Shape.size()) +
                             " but is indexed with 0 subscript(s)");
    return;
  }
  if (Sizes.count(N.Id)) {
    N.Resolved = NameKind::Size;
    return;
  }
  N.Resolved = NameKind::Index;
  noteIndexUse(St, N.Id, N.Loc, InSubscript);
}

void Sema::checkAccess(Access &A, StmtState &St) {
  for (auto &Sub : A.Subscripts)
    checkExpr(*Sub, St, /*InSubscript=*/true);
  Tensor *T = readableTensor(A.TensorName, A.Loc);
  if (!T)
    return;
  A.Target = T;
  A.Type = T->Type;
  if (A.Subscripts.size() != T->Shape.size()) {
    Diags.error(A.Loc, "'" + A.TensorName + "' has rank " +
                           llvm::Twine(T->Shape.size()) + " but is indexed with " +
                           llvm::Twine(A.Subscripts.size()) + " subscript(s)");
    return;
  }

  std::vector<Affine> Subs;
  for (size_t D = 0; D < A.Subscripts.size(); ++D) {
    Expr &Sub = *A.Subscripts[D];
    std::optional<Affine> F = affineOf(Sub, AffineUse::Subscript);
    if (!F)
      return;
    Subs.push_back(*F);
    if (Broken.count(T)) {
      if (Sub.Kind == ExprKind::Name)
        St.Indices[static_cast<Name &>(Sub).Id].SeesBroken = true;
      continue;
    }
    if (Sub.Kind == ExprKind::Name)
      St.Facts.push_back({static_cast<Name &>(Sub).Id, T->Shape[D], T->Name, Sub.Loc});
    else
      St.Bounds.push_back({&A, D});
  }
  A.AffineSubs = std::move(Subs);
}

void Sema::checkCall(Call &C, StmtState &St, bool InSubscript) {
  for (auto &Arg : C.Args)
    checkExpr(*Arg, St, InSubscript);

  auto CheckArity = [&](unsigned Arity) {
    if (C.Args.size() == Arity)
      return true;
    Diags.error(C.Loc, "function '" + C.FuncName + "' takes " + llvm::Twine(Arity) +
                           " argument(s), got " + llvm::Twine(C.Args.size()));
    return false;
  };

  if (std::optional<DType> To = castTarget(C.FuncName)) {
    C.Fn = Callee::Cast;
    C.CastTo = *To;
    C.Type = *To;
    if (CheckArity(1))
      C.ArgType = arithmeticType(C.Args[0]->Type);
    return;
  }
  const FunctionInfo *Info = nullptr;
  for (const FunctionInfo &F : Functions)
    if (C.FuncName == F.Name)
      Info = &F;
  if (!Info) {
    Diags.error(C.Loc, "unknown function '" + C.FuncName + "'");
    return;
  }
  C.Fn = Info->Fn;
  if (!CheckArity(Info->Arity))
    return;

  DType A = arithmeticType(C.Args[0]->Type);
  switch (C.Fn) {
  case Callee::Relu:
  case Callee::Abs:
    C.ArgType = A; // an integer stays an integer
    break;
  case Callee::Max:
  case Callee::Min:
    C.ArgType = promote(C.Args[0]->Type, C.Args[1]->Type);
    break;
  case Callee::Pow:
    C.ArgType = promote(C.Args[0]->Type, C.Args[1]->Type) == DType::F64 ? DType::F64
                                                                       : DType::F32;
    break;
  default: // transcendental: computed in f32 unless the argument is f64
    C.ArgType = A == DType::F64 ? DType::F64 : DType::F32;
    break;
  }
  C.Type = C.ArgType;
}

void Sema::inferRanges(Stmt &S, StmtState &St) {
  for (const RangeFact &F : St.Facts) {
    IndexInfo &I = St.Indices[F.Index];
    if (!I.Range) {
      I.Range = F.Extent;
      I.RangeFrom = F.From;
      continue;
    }
    if (*I.Range == F.Extent || I.Conflicting)
      continue;
    I.Conflicting = true;
    Diags.error(F.Loc, "conflicting ranges for index '" + F.Index + "': " +
                           rangeStr(*I.Range) + " from " + I.RangeFrom + " and " +
                           rangeStr(F.Extent) + " from " + F.From);
  }

  bool ReportedReduce = false;
  for (const std::string &Id : St.Order) {
    IndexInfo &I = St.Indices[Id];
    if (!I.InSubscript) {
      // Used only as a value: nothing could ever give it a range, so it
      // is far more likely a misspelled tensor than an index.
      Diags.error(I.FirstLoc, "unknown name '" + Id + "'");
      continue;
    }
    if (!I.Range) {
      // After another error in this statement (a subscript that is not
      // affine, a tensor that is not there) a missing range is usually
      // its consequence.
      if (!I.SeesBroken && Diags.errorCount() == St.ErrorsBefore)
        Diags.error(I.FirstLoc, "cannot infer the range of index '" + Id + "'");
      continue;
    }
    S.Ranges[Id] = *I.Range;
    if (I.OnLeft)
      continue;
    S.Reduced.push_back(Id);
    if (S.Op == AssignOp::Assign && St.LhsOk && !ReportedReduce) {
      ReportedReduce = true;
      Diags.error(I.FirstLoc, "index '" + Id +
                                  "' is reduced but the statement uses '='; "
                                  "use +=, *=, max= or min=");
    }
  }
}

void Sema::proveInBounds(const BoundsObligation &B, StmtState &St) {
  const Access &A = *B.A;
  // A later subscript of the same access that is not affine was reported,
  // and then the access has no affine subscripts at all.
  if (B.Dim >= A.AffineSubs.size())
    return;
  const Affine &Sub = A.AffineSubs[B.Dim];
  const Affine &Extent = A.Target->Shape[B.Dim];
  // Over the box 0 <= v <= range_v - 1 the subscript's extremes are affine
  // in the size symbols; both bounds must hold for all sizes >= 1.
  Affine Lo = Affine::constant(Sub.Constant), Hi = Lo;
  for (const auto &[Id, C] : Sub.Coeffs) {
    const IndexInfo &I = St.Indices[Id];
    if (!I.Range)
      return; // "cannot infer the range" was reported.
    Affine Last = *I.Range;
    bool Ok = addScaled(Last, Affine::constant(1), -1) &&
              addScaled(C > 0 ? Hi : Lo, Last, C);
    if (!Ok) {
      Diags.error(startLoc(*A.Subscripts[B.Dim]), "integer overflow in subscript '" +
                                                      Sub.str() + "' of '" +
                                                      A.TensorName + "'");
      return;
    }
  }
  std::string Prefix = "subscript '" + Sub.str() + "' of '" + A.TensorName +
                       "' may be out of bounds: ";
  llvm::SMLoc Loc = startLoc(*A.Subscripts[B.Dim]);
  if (!nonNegativeForAllSizes(Lo)) {
    Diags.error(Loc, Prefix + "it goes down to " + Lo.str() + ", below 0");
    return;
  }
  Affine Room = Extent; // Extent - 1 - Hi >= 0
  if (!addScaled(Room, Affine::constant(1), -1) || !addScaled(Room, Hi, -1)) {
    Diags.error(Loc, "integer overflow in subscript '" + Sub.str() + "' of '" +
                         A.TensorName + "'");
    return;
  }
  if (!nonNegativeForAllSizes(Room))
    Diags.error(Loc, Prefix + "it reaches " + Hi.str() + " but the dimension is " +
                         Extent.str());
}

Tensor *Sema::defineTarget(Stmt &S, StmtState &St, Tensor *Out, bool HadErrors) {
  Tensor *T = Out;
  if (!T) {
    auto New = std::make_unique<Tensor>();
    T = New.get();
    T->Name = S.TargetName;
    T->Loc = S.TargetLoc;
    T->Role = TensorRole::Intermediate;
    T->TypeAnnotated = S.Annotation.has_value();
    if (S.Annotation)
      T->Type = *S.Annotation;
    else if (S.Value->Type == DType::F64)
      T->Type = DType::F64;
    else if (isFloat(S.Value->Type))
      T->Type = DType::F32;
    else
      T->Type = DType::I32;
    // One dimension per left-hand subscript, even a malformed one, so that
    // later reads see the rank the user wrote.
    for (auto &E : S.LhsIndices) {
      std::optional<Affine> R;
      if (E->Kind == ExprKind::Name)
        if (auto It = S.Ranges.find(static_cast<Name &>(*E).Id); It != S.Ranges.end())
          R = It->second;
      T->Shape.push_back(R ? *R : Affine::constant(1));
    }
    if (HadErrors)
      Broken.insert(T);
    K->Intermediates.push_back(std::move(New));
  }
  T->Definition = &S;
  Defined[T->Name] = T;
  return T;
}

} // namespace

bool checkModule(Module &M, DiagEngine &Diags) { return Sema(Diags).run(M); }

} // namespace tdsl
