//===- Smith.cpp - Random valid .tdsl programs for tdsl-smith -------------===//
#include "driver/Smith.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace tdsl::smith {

Expr lit(const std::string &Text) {
  Expr E;
  E.K = Expr::Lit;
  E.Text = Text;
  return E;
}
Expr node(Expr::Kind K, const std::string &Text, std::vector<Expr> Args) {
  Expr E;
  E.K = K;
  E.Text = Text;
  E.Args = std::move(Args);
  return E;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

namespace {

void printExpr(const Expr &E, std::string &Out) {
  switch (E.K) {
  case Expr::Lit:
  case Expr::Name: Out += E.Text; return;
  case Expr::Access: Out += E.Text + "[" + llvm::join(E.Subs, ", ") + "]"; return;
  case Expr::Unary:
    Out += "(" + E.Text;
    printExpr(E.Args[0], Out);
    Out += ")";
    return;
  case Expr::Binary:
    Out += "(";
    printExpr(E.Args[0], Out);
    Out += " " + E.Text + " ";
    printExpr(E.Args[1], Out);
    Out += ")";
    return;
  case Expr::Call:
    Out += E.Text + "(";
    for (size_t I = 0; I < E.Args.size(); ++I) {
      if (I)
        Out += ", ";
      printExpr(E.Args[I], Out);
    }
    Out += ")";
    return;
  case Expr::Select:
    Out += "(";
    printExpr(E.Args[0], Out);
    Out += " ? ";
    printExpr(E.Args[1], Out);
    Out += " : ";
    printExpr(E.Args[2], Out);
    Out += ")";
    return;
  }
}

std::string printParams(const std::vector<Tensor> &List) {
  std::string S;
  for (const Tensor &T : List) {
    if (!S.empty())
      S += ", ";
    S += T.Name + ": " + dtypeName(T.Type).str();
    if (!T.Dims.empty())
      S += "[" + llvm::join(T.Dims, ", ") + "]";
  }
  return S;
}

} // namespace

std::string print(const Program &P) {
  std::string S;
  if (P.Launches >= 0)
    S += "# launches: " + std::to_string(P.Launches) + "\n";
  S += "kernel " + P.Kernel + "(" + printParams(P.Inputs) + ") -> (" +
                  printParams(P.Outputs) + ") {\n";
  for (const Stmt &St : P.Body) {
    S += "  " + St.Target;
    if (!St.Indices.empty())
      S += "[" + llvm::join(St.Indices, ", ") + "]";
    if (St.Annotation)
      S += ": " + dtypeName(*St.Annotation).str();
    S += " " + St.Op + " ";
    printExpr(St.Value, S);
    S += "\n";
  }
  S += "}\n";
  if (!P.Schedule.empty()) {
    S += "schedule " + P.Kernel + " {\n";
    for (const auto &[Key, Value] : P.Schedule)
      S += "  " + Key + " = " + Value + "\n";
    S += "}\n";
  }
  return S;
}

std::string sizesString(const Program &P) {
  // Only the symbols the signature mentions: the others are not sizes.
  std::set<std::string> Used;
  for (const auto *List : {&P.Inputs, &P.Outputs})
    for (const Tensor &T : *List)
      for (const std::string &D : T.Dims)
        for (const auto &[Sym, V] : P.Sizes) {
          llvm::SmallVector<llvm::StringRef, 4> Words;
          llvm::SplitString(D, Words, " +-*()");
          if (llvm::is_contained(Words, Sym))
            Used.insert(Sym);
        }
  std::string S;
  for (const auto &[Sym, V] : P.Sizes)
    if (Used.count(Sym))
      S += (S.empty() ? "" : ",") + Sym + "=" + std::to_string(V);
  return S.empty() ? "1" : S;
}

//===----------------------------------------------------------------------===//
// Generation
//===----------------------------------------------------------------------===//

namespace {

/// Keeps every value (and every partial sum of a reduction) exact in f32.
constexpr double ExactLimit = 1 << 20;
/// Beyond this an expression is clamped before it grows further.
constexpr double ClampAbove = 1 << 16;

/// A generated expression with its type (an arithmetic type: Bool, I32,
/// F32 or F64) and a bound on its magnitude.
struct Val {
  Expr E;
  DType T = DType::F32;
  double Bound = 1;
  bool Leaf = false; ///< a literal, a name, or a read of values not Rounded: the same in f32 and f64
};

/// How a tensor dim relates to index extents (what subscripts fit it).
struct DimShape {
  enum Kind { Plain, Sum, Twice } K = Plain; ///< E; A + B - 1; 2 * A
  std::string A, B;
};

struct Readable {
  std::string Name;
  DType Type;
  std::vector<DimShape> Dims;
  double Bound;
  /// Float values the program computed (inexact flavour): f32 and f64 differ
  /// on them by their roundings, so a read of them is no leaf.
  bool Rounded = false;
};

struct Index {
  std::string Name, Ext;
};

DType arith(DType T) {
  if (T == DType::Bool)
    return DType::Bool;
  return arithmeticType(T);
}

DType promoted(DType A, DType B) {
  if (A == DType::F64 || B == DType::F64)
    return DType::F64;
  if (isFloat(A) || isFloat(B))
    return DType::F32;
  return DType::I32;
}

bool isIntLike(DType T) { return !isFloat(T); }


class Generator {
public:
  Generator(std::mt19937_64 &Rng, const GenOptions &Opts) : Rng(Rng), Opts(Opts) {
    P.Exact = Opts.Exact;
  }
  Program run();

private:
  std::mt19937_64 &Rng;
  GenOptions Opts;
  Program P;
  std::vector<Readable> Avail;    ///< inputs and tensors defined so far
  std::set<std::string> SigSyms;  ///< size symbols the signature has so far
  std::vector<Index> Ctx;         ///< the current statement's indices
  std::set<std::string> Covered;  ///< indices with a plain subscript
  std::vector<std::vector<std::string>> StmtExtents; ///< per statement
  unsigned NextInput = 0, NextTemp = 0;
  bool HasLargeSize = false;
  bool ConstOnly = false; ///< leaves are literals (a foldable subtree)

  bool chance(double P) { return std::uniform_real_distribution<double>(0, 1)(Rng) < P; }
  size_t pick(size_t N) { return std::uniform_int_distribution<size_t>(0, N - 1)(Rng); }
  template <typename T> const T &pickOf(const std::vector<T> &V) { return V[pick(V.size())]; }

  int64_t extValue(const std::string &E) const {
    auto It = P.Sizes.find(E);
    return It != P.Sizes.end() ? It->second : std::stoll(E);
  }
  std::string pickExtent();
  void noteDims(const std::vector<std::string> &Dims);

  Val genExpr(unsigned Depth);
  /// A read, literal or name; with Exact, never a read of Rounded values.
  Val genLeaf(bool Exact = false);
  Val access(const Readable &T, const std::string *MustCover = nullptr);
  Val freshInput(const std::string *MustCover = nullptr);
  Val literal();
  Val clamp(Val V, double C);
  Val cover(const Index &I);
  void genStmt(bool IsOutput);
  void genContraction(bool IsOutput);
};

std::string Generator::pickExtent() {
  static const char *const Symbols[] = {"M", "N", "K", "L", "R", "S"};
  std::vector<std::string> Existing;
  for (const auto &[S, V] : P.Sizes)
    Existing.push_back(S);
  if (chance(0.08))
    return std::to_string(pickOf(std::vector<int>{1, 3, 4, 8}));
  if (!Existing.empty() && (chance(0.7) || Existing.size() >= 4))
    return pickOf(Existing);
  std::string S = Symbols[P.Sizes.size() % 6];
  // 1, primes, tile-1 / tile / tile+1 for tiles 16..128, and one large size.
  static const std::vector<int64_t> Small = {1, 1, 2, 3, 5, 7, 13, 15, 16, 17, 31, 32, 33};
  static const std::vector<int64_t> Large = {63, 64, 65, 127, 128, 129, 257, 1000};
  int64_t V = pickOf(Small);
  if (!HasLargeSize && chance(0.3)) {
    V = pickOf(Large);
    HasLargeSize = true;
  }
  P.Sizes[S] = V;
  return S;
}

void Generator::noteDims(const std::vector<std::string> &Dims) {
  for (const std::string &D : Dims) {
    llvm::SmallVector<llvm::StringRef, 4> Words;
    llvm::SplitString(D, Words, " +-*()");
    for (llvm::StringRef W : Words)
      if (P.Sizes.count(W.str()))
        SigSyms.insert(W.str());
  }
}

Val Generator::literal() {
  Val V;
  V.Leaf = true;
  bool Int = chance(0.4);
  if (P.Exact || Int) {
    int64_t N = pickOf(std::vector<int64_t>{0, 1, 2, 3, 5});
    V.E = lit(Int ? std::to_string(N) : std::to_string(N) + ".0");
    V.Bound = static_cast<double>(N);
  } else {
    V.E = lit(pickOf(std::vector<std::string>{"0.5", "1.5", "0.25", "2.0", "1e-1"}));
    V.Bound = 2;
  }
  V.T = Int ? DType::I32 : DType::F32;
  // Negative constants too (there are no negative literals, only unary
  // minus), so that constant folding meets signs.
  if (chance(0.3))
    V.E = node(Expr::Unary, "-", {V.E});
  return V;
}

/// A read of T with subscripts that fit its dims: plain indices of the
/// dim's extent where the statement has one, affine forms for the
/// convolution and stride dims, constant 0 otherwise (always in bounds).
Val Generator::access(const Readable &T, const std::string *MustCover) {
  Val V;
  V.T = arith(T.Type);
  V.Bound = T.Bound;
  V.Leaf = !T.Rounded;
  if (T.Dims.empty()) {
    V.E.K = Expr::Name;
    V.E.Text = T.Name;
    return V;
  }
  V.E.K = Expr::Access;
  V.E.Text = T.Name;
  bool Forced = false;
  for (const DimShape &D : T.Dims) {
    auto WithExt = [&](const std::string &E) {
      std::vector<const Index *> Out;
      for (const Index &I : Ctx)
        if (I.Ext == E)
          Out.push_back(&I);
      return Out;
    };
    std::string Sub = "0";
    if (D.K == DimShape::Plain) {
      auto C = WithExt(D.A);
      const Index *Want = nullptr;
      if (MustCover && !Forced)
        for (const Index *I : C)
          if (I->Name == *MustCover)
            Want = I;
      if (Want) {
        Sub = Want->Name;
        Forced = true;
        Covered.insert(Sub);
      } else if (!C.empty() && !chance(0.1)) {
        const Index *I = pickOf(C);
        if (chance(0.1)) {
          Sub = I->Name + " + 0"; // affine: bounds-checked, gives no range
        } else if (!P.Sizes.count(D.A) && chance(0.3)) {
          Sub = std::to_string(extValue(D.A) - 1) + " - " + I->Name; // reversed
        } else {
          Sub = I->Name;
          Covered.insert(Sub);
        }
      }
    } else if (D.K == DimShape::Sum) {
      auto CA = WithExt(D.A), CB = WithExt(D.B);
      if (!CA.empty() && !CB.empty())
        Sub = pickOf(CA)->Name + " + " + pickOf(CB)->Name;
    } else {
      auto CA = WithExt(D.A);
      if (!CA.empty())
        Sub = "2 * " + pickOf(CA)->Name + (chance(0.5) ? " + 1" : "");
    }
    V.E.Subs.push_back(Sub);
  }
  return V;
}

/// A new input, shaped by the statement's indices (in a random order: a
/// permute; a subset: a broadcast), sometimes with a convolution dim
/// (i + r into L + R - 1) or a stride-2 dim (2 * j + 1 into 2 * N).
Val Generator::freshInput(const std::string *MustCover) {
  Readable T;
  T.Name = "x" + std::to_string(NextInput++);
  static const std::vector<DType> Types = {DType::F32, DType::F32, DType::F32, DType::F16,
                                           DType::BF16, DType::I8, DType::I32, DType::F64};
  T.Type = pickOf(Types);
  if (P.Exact)
    T.Bound = 4;
  else
    T.Bound = T.Type == DType::I8 ? 128 : T.Type == DType::I32 ? 1000 : 1;
  std::vector<Index> Order = Ctx;
  std::shuffle(Order.begin(), Order.end(), Rng);
  size_t Rank = std::min<size_t>(Order.size(), pick(4));
  if (MustCover) {
    auto It = std::find_if(Order.begin(), Order.end(),
                           [&](const Index &I) { return I.Name == *MustCover; });
    std::iter_swap(Order.begin() + pick(std::max<size_t>(Rank, 1)), It);
    Rank = std::max<size_t>(Rank, 1);
  }
  for (size_t D = 0; D < Rank; ++D)
    T.Dims.push_back({DimShape::Plain, Order[D].Ext, ""});
  if (Ctx.size() >= 2 && chance(0.15) && T.Dims.size() < 4) {
    const Index &A = Ctx[pick(Ctx.size())], &B = Ctx[pick(Ctx.size())];
    if (A.Name != B.Name)
      T.Dims.insert(T.Dims.begin() + pick(T.Dims.size() + 1), {DimShape::Sum, A.Ext, B.Ext});
  } else if (!Ctx.empty() && chance(0.1) && T.Dims.size() < 4) {
    T.Dims.insert(T.Dims.begin() + pick(T.Dims.size() + 1),
                  {DimShape::Twice, pickOf(Ctx).Ext, ""});
  }
  Tensor Param;
  Param.Name = T.Name;
  Param.Type = T.Type;
  for (const DimShape &D : T.Dims)
    Param.Dims.push_back(D.K == DimShape::Plain ? D.A
                         : D.K == DimShape::Sum ? D.A + " + " + D.B + " - 1"
                                                : "2 * " + D.A);
  noteDims(Param.Dims);
  P.Inputs.push_back(Param);
  Avail.push_back(T);
  Val V = access(Avail.back(), MustCover);
  return V;
}

Val Generator::genLeaf(bool Exact) {
  if (ConstOnly)
    return literal();
  double R = std::uniform_real_distribution<double>(0, 1)(Rng);
  if (R < 0.7) {
    std::vector<Readable> From;
    for (const Readable &T : Avail)
      if (!Exact || !T.Rounded)
        From.push_back(T);
    if (!From.empty() && (P.Inputs.size() >= Opts.MaxInputs || chance(0.6)))
      return access(pickOf(From));
    return freshInput();
  }
  if (R < 0.85)
    return literal();
  Val V;
  V.E.K = Expr::Name;
  V.T = DType::I32;
  V.Leaf = true;
  if (!Ctx.empty() && chance(0.6)) {
    const Index &I = pickOf(Ctx);
    V.E.Text = I.Name;
    V.Bound = static_cast<double>(std::max<int64_t>(1, extValue(I.Ext)));
    return V;
  }
  if (!SigSyms.empty()) {
    std::vector<std::string> Syms(SigSyms.begin(), SigSyms.end());
    V.E.Text = pickOf(Syms);
    V.Bound = static_cast<double>(P.Sizes.at(V.E.Text));
    return V;
  }
  return literal();
}

/// min(max(V, -C), C): exact, and bounds what follows.
Val Generator::clamp(Val V, double C) {
  std::string CT = std::to_string(static_cast<int64_t>(C));
  if (isFloat(V.T))
    CT += ".0";
  Expr Neg = node(Expr::Unary, "-", {lit(CT)});
  Val Out;
  Out.T = V.T == DType::Bool ? DType::I32 : V.T;
  Out.Bound = std::min(V.Bound, C);
  Out.E = node(Expr::Call, "min", {node(Expr::Call, "max", {V.E, Neg}), lit(CT)});
  return Out;
}

Val Generator::genExpr(unsigned Depth) {
  if (Depth == 0 || chance(0.2))
    return genLeaf();
  // Now and then a subtree of literals only: what constant folding sees.
  if (!ConstOnly && chance(0.08)) {
    ConstOnly = true;
    Val V = genExpr(Depth);
    ConstOnly = false;
    return V;
  }
  // Discontinuous operations (comparisons, %, casts to integers and to
  // narrow floats) see only leaves in the inexact flavour: a leaf has the
  // same value in the reference's f64 and the interpreter's f32, a
  // computed value may sit on the other side of a rounding boundary.
  auto Operand = [&](bool Discontinuous) {
    return (Discontinuous && !P.Exact) ? genLeaf(/*Exact=*/true) : genExpr(Depth - 1);
  };
  Val V;
  double R = std::uniform_real_distribution<double>(0, 1)(Rng);
  if (R < 0.4) {
    Val A = genExpr(Depth - 1), B = genExpr(Depth - 1);
    const char *Op = pickOf(std::vector<const char *>{"+", "-", "*", "+", "*"});
    V.E = node(Expr::Binary, Op, {A.E, B.E});
    V.T = promoted(A.T, B.T);
    V.Bound = Op[0] == '*' ? A.Bound * B.Bound : A.Bound + B.Bound;
  } else if (R < 0.5) {
    Val A = Operand(true), B = Operand(true);
    const char *Op = pickOf(std::vector<const char *>{"<", "<=", ">", ">=", "==", "!="});
    Val C;
    C.E = node(Expr::Binary, Op, {A.E, B.E});
    C.T = DType::Bool;
    if (chance(0.2)) {
      Val D = Operand(true);
      C.E = node(Expr::Binary, chance(0.5) ? "&&" : "||",
                 {C.E, chance(0.3) ? node(Expr::Unary, "!", {D.E}) : D.E});
    }
    if (chance(0.6)) {
      Val T = genExpr(Depth - 1), F = genExpr(Depth - 1);
      V.E = node(Expr::Select, "?", {C.E, T.E, F.E});
      V.T = promoted(T.T, F.T);
      V.Bound = std::max(T.Bound, F.Bound);
    } else {
      V = C;
      V.Bound = 1;
    }
  } else if (R < 0.55) {
    Val A = genExpr(Depth - 1);
    V.E = node(Expr::Unary, "-", {A.E});
    V.T = A.T == DType::Bool ? DType::I32 : A.T;
    V.Bound = A.Bound;
  } else if (R < 0.7) {
    const char *Fn = pickOf(std::vector<const char *>{"max", "min", "abs", "relu"});
    Val A = genExpr(Depth - 1);
    if (Fn[1] == 'a' || Fn[1] == 'i') {
      Val B = genExpr(Depth - 1);
      V.E = node(Expr::Call, Fn, {A.E, B.E});
      V.T = promoted(A.T, B.T);
      V.Bound = std::max(A.Bound, B.Bound);
    } else {
      V.E = node(Expr::Call, Fn, {A.E});
      V.T = A.T == DType::Bool ? DType::I32 : A.T;
      V.Bound = A.Bound;
    }
  } else if (R < 0.8) {
    std::vector<DType> Casts = {DType::F32, DType::I32, DType::I8, DType::F16, DType::BF16,
                                DType::TF32};
    if (!P.Exact)
      Casts.push_back(DType::F64);
    DType To = pickOf(Casts);
    bool Narrow = To != DType::F32 && To != DType::F64;
    Val A = Operand(Narrow);
    if (!P.Exact && isIntLike(To) && !A.Leaf && isFloat(A.T))
      To = DType::F32; // float to integer rounds: only a leaf's value
    V.E = node(Expr::Call, dtypeName(To).str(), {A.E});
    V.T = arith(To);
    V.Bound = To == DType::I8 ? std::min(A.Bound, 128.0) : A.Bound;
  } else if (R < 0.87) {
    // Integer / and % (by zero gives 0), float % (fmod, never by zero).
    Val A = Operand(true), B = Operand(true);
    const char *Op = chance(0.5) ? "/" : "%";
    V.T = promoted(A.T, B.T);
    if (isFloat(V.T)) {
      // fmod is exact, but it amplifies any rounding in its divisor by
      // the quotient: keep the divisor a leaf in the inexact flavour
      // (random floats are never 0), make it nonzero in the exact one.
      Op = "%";
      if (P.Exact)
        B.E = node(Expr::Binary, "+", {node(Expr::Call, "abs", {B.E}), lit("1.0")});
    }
    V.E = node(Expr::Binary, Op, {A.E, B.E});
    V.Bound = Op[0] == '%' ? std::min(A.Bound, B.Bound + 1) : A.Bound;
  } else if (!P.Exact) {
    // Transcendental functions and float division, kept in their domains.
    Val A = genExpr(Depth - 1);
    Expr AbsPlus1 = node(Expr::Binary, "+", {node(Expr::Call, "abs", {A.E}), lit("1.0")});
    V.T = A.T == DType::F64 ? DType::F64 : DType::F32;
    switch (pick(9)) {
    case 0: {
      Val C = A.Bound > 4 ? clamp(A, 4) : A;
      V.E = node(Expr::Call, "exp", {C.E});
      V.Bound = std::exp(C.Bound);
      break;
    }
    case 1: V.E = node(Expr::Call, "log", {AbsPlus1}); V.Bound = std::log(A.Bound + 1) + 1; break;
    case 2: V.E = node(Expr::Call, "sqrt", {AbsPlus1}); V.Bound = std::sqrt(A.Bound + 1); break;
    case 3: V.E = node(Expr::Call, "rsqrt", {AbsPlus1}); V.Bound = 1; break;
    case 4: V.E = node(Expr::Call, pickOf(std::vector<const char *>{"tanh", "sigmoid", "erf"}),
                       {A.E});
      V.Bound = 1;
      break;
    case 5: V.E = node(Expr::Call, "gelu", {A.E}); V.Bound = A.Bound; break;
    case 6: {
      bool Sq = chance(0.5);
      V.E = node(Expr::Call, "pow", {AbsPlus1, lit(Sq ? "2.0" : "0.5")});
      V.Bound = Sq ? (A.Bound + 1) * (A.Bound + 1) : std::sqrt(A.Bound + 1);
      break;
    }
    default: {
      Val B = genExpr(Depth - 1);
      V.E = node(Expr::Binary, "/",
                 {A.E, node(Expr::Binary, "+", {node(Expr::Call, "abs", {B.E}), lit("1.0")})});
      V.T = promoted(A.T, promoted(B.T, DType::F32));
      V.Bound = A.Bound;
      break;
    }
    }
  } else {
    return genExpr(Depth - 1);
  }
  if (V.Bound > ClampAbove)
    V = clamp(V, 64);
  return V;
}

/// A term that reads index I through a plain subscript (gives its range).
Val Generator::cover(const Index &I) {
  std::vector<const Readable *> Fits;
  for (const Readable &T : Avail)
    for (const DimShape &D : T.Dims)
      if (D.K == DimShape::Plain && D.A == I.Ext) {
        Fits.push_back(&T);
        break;
      }
  if (!Fits.empty() && (P.Inputs.size() >= Opts.MaxInputs || chance(0.6)))
    return access(*pickOf(Fits), &I.Name);
  return freshInput(&I.Name);
}

/// A GEMM of two fresh f16 (or bf16) inputs into f32, each operand in
/// either layout (A[i, k] or A[k, i], B[k, j] or B[j, k]): the shape the
/// tensor-core path takes, which random statements almost never have.
void Generator::genContraction(bool IsOutput) {
  Ctx = {{"i", pickExtent()}, {"j", pickExtent()}, {"k", pickExtent()}};
  // Batched: an index b ahead of i and j in the output, read by both
  // operands or by one (a linear layer over a batch of sequences, whose b
  // and i the tilers merge into one index of rows: ContractionMatch.h).
  bool Batched = chance(0.3);
  bool BatchA = Batched && chance(0.75), BatchB = Batched && (!BatchA || chance(0.5));
  if (Batched)
    Ctx.push_back({"b", pickExtent()});
  // The inputs tile-mma takes: f16, bf16, f32 under tf32() (f32 sums), i8
  // (i32 sums).
  DType T = pickOf(std::vector<DType>{DType::F16, DType::BF16, DType::F16, DType::BF16,
                                      DType::TF32, DType::I8});
  bool Tf32 = T == DType::TF32, Int = T == DType::I8;
  DType In = Tf32 ? DType::F32 : T, Acc = Int ? DType::I32 : DType::F32;
  auto Operand = [&](const Index &X, bool KFirst, bool WithBatch) {
    Readable R;
    R.Name = "x" + std::to_string(NextInput++);
    R.Type = In;
    R.Bound = P.Exact ? 4 : Int ? 128 : 1; // the check's random inputs (driver/Check.cpp)
    const Index &K = Ctx[2];
    std::vector<const Index *> Order =
        KFirst ? std::vector<const Index *>{&K, &X} : std::vector<const Index *>{&X, &K};
    if (WithBatch)
      Order.insert(Order.begin(), &Ctx[3]);
    for (const Index *I : Order)
      R.Dims.push_back({DimShape::Plain, I->Ext, ""});
    Tensor Param;
    Param.Name = R.Name;
    Param.Type = In;
    for (const DimShape &D : R.Dims)
      Param.Dims.push_back(D.A);
    noteDims(Param.Dims);
    P.Inputs.push_back(Param);
    Val V;
    V.T = Acc;
    V.Bound = R.Bound;
    V.E = node(Expr::Access, R.Name, {});
    for (const Index *I : Order)
      V.E.Subs.push_back(I->Name);
    if (Tf32 || Int)
      V.E = node(Expr::Call, Tf32 ? "tf32" : "i32", {V.E});
    // A function of a 16-bit operand, which the fusion stage computes
    // first (graph/Prologue.h): relu, abs, or a scale along k.
    if (!Tf32 && !Int && chance(0.3)) {
      switch (pickOf(std::vector<int>{0, 1, 2})) {
      case 0:
        V.E = node(Expr::Call, "relu", {V.E});
        break;
      case 1:
        V.E = node(Expr::Call, "abs", {V.E});
        break;
      default: {
        Tensor S;
        S.Name = "x" + std::to_string(NextInput++);
        S.Type = In;
        S.Dims = {Ctx[2].Ext};
        noteDims(S.Dims);
        P.Inputs.push_back(S);
        Expr Scale = node(Expr::Access, S.Name, {});
        Scale.Subs = {"k"};
        V.E = node(Expr::Binary, "*", {V.E, Scale});
        V.Bound *= R.Bound;
      }
      }
    }
    return V;
  };
  Val A = Operand(Ctx[0], chance(0.3), BatchA), B = Operand(Ctx[1], chance(0.7), BatchB);
  Stmt S;
  S.Op = "+=";
  S.Indices = {"i", "j"};
  S.Value = node(Expr::Binary, "*", {A.E, B.E});
  double Result = A.Bound * B.Bound * static_cast<double>(extValue(Ctx[2].Ext));
  std::vector<std::string> OutDims = {Ctx[0].Ext, Ctx[1].Ext};
  if (Batched) {
    S.Indices.insert(S.Indices.begin(), "b");
    OutDims.insert(OutDims.begin(), Ctx[3].Ext);
  }
  Readable Out;
  if (IsOutput) {
    noteDims(OutDims);
    S.Target = "out" + std::to_string(P.Outputs.size());
    P.Outputs.push_back({S.Target, Acc, OutDims});
  } else {
    S.Target = "t" + std::to_string(NextTemp++);
  }
  Out.Name = S.Target;
  Out.Type = Acc;
  for (const std::string &E : OutDims)
    Out.Dims.push_back({DimShape::Plain, E, ""});
  Out.Bound = Result;
  Out.Rounded = !P.Exact && isFloat(Acc);
  if (Result <= ClampAbove)
    Avail.push_back(Out);
  StmtExtents.emplace_back();
  for (const Index &I : Ctx)
    StmtExtents.back().push_back(I.Ext);
  P.Body.push_back(std::move(S));
}

void Generator::genStmt(bool IsOutput) {
  static const char *const Names[] = {"i", "j", "k", "l", "m", "n", "p", "q"};
  Ctx.clear();
  Covered.clear();
  if (Opts.Contractions && chance(0.15))
    return genContraction(IsOutput);
  size_t Rank = pickOf(std::vector<size_t>{0, 1, 1, 2, 2, 2, 3, 3});
  for (size_t D = 0; D < Rank; ++D)
    Ctx.push_back({Names[Ctx.size()], pickExtent()});
  std::string Op = pickOf(std::vector<std::string>{"=", "=", "=", "+=", "+=", "max=", "min=", "*="});
  size_t NumReduced = Op == "=" ? 0 : pickOf(std::vector<size_t>{0, 1, 1, 1, 2});
  for (size_t D = 0; D < NumReduced; ++D)
    Ctx.push_back({Names[Ctx.size()], pickExtent()});

  Stmt S;
  S.Op = Op;
  for (size_t D = 0; D < Rank; ++D)
    S.Indices.push_back(Ctx[D].Name);
  std::vector<std::string> OutDims;
  for (size_t D = 0; D < Rank; ++D)
    OutDims.push_back(Ctx[D].Ext);
  if (IsOutput)
    noteDims(OutDims); // the output's dims are in the signature

  Val V = genExpr(1 + pick(3));
  // The plain subscripts of the value as it stands (generation may have
  // dropped a subexpression that had some).
  Covered.clear();
  std::function<void(const Expr &)> Plain = [&](const Expr &E) {
    if (E.K == Expr::Access)
      for (const std::string &S : E.Subs)
        Covered.insert(S);
    for (const Expr &A : E.Args)
      Plain(A);
  };
  Plain(V.E);
  for (size_t D = 0; D < Ctx.size(); ++D) {
    const Index &I = Ctx[D];
    if (Covered.count(I.Name) || (IsOutput && D < Rank))
      continue;
    Val C = cover(I);
    const char *How = pickOf(std::vector<const char *>{"+", "*", "max"});
    Val N;
    if (How[0] == 'm')
      N.E = node(Expr::Call, "max", {V.E, C.E});
    else
      N.E = node(Expr::Binary, How, {V.E, C.E});
    N.T = promoted(V.T, C.T);
    N.Bound = How[0] == '*' ? V.Bound * C.Bound : How[0] == '+' ? V.Bound + C.Bound
                                                                : std::max(V.Bound, C.Bound);
    V = N.Bound > ClampAbove ? clamp(N, 64) : N;
  }

  // Keep the reduction exact (exact flavour) or finite (the other).
  double Volume = 1;
  for (size_t D = Rank; D < Ctx.size(); ++D)
    Volume *= static_cast<double>(extValue(Ctx[D].Ext));
  if (S.Op == "*=" && !P.Exact) {
    if (Volume > 64) {
      S.Op = "+=";
    } else {
      // In [0.5, 1.5]: a product of 64 of them neither under- nor overflows.
      V.E = node(Expr::Binary, "+", {node(Expr::Call, "sigmoid", {V.E}), lit("0.5")});
      V.T = V.T == DType::F64 ? DType::F64 : DType::F32;
      V.Bound = 1.5;
      V.Leaf = false;
    }
  }
  double Result = V.Bound;
  if (S.Op == "+=") {
    if (V.Bound * Volume > ExactLimit)
      V = clamp(V, std::max(1.0, std::floor(ExactLimit / Volume)));
    Result = V.Bound * Volume;
  } else if (S.Op == "*=") {
    if (V.Bound > 1 && Volume * std::log2(V.Bound) > 20)
      V = clamp(V, 1);
    Result = std::pow(std::max(V.Bound, 1.0), Volume);
  }
  S.Value = V.E;

  // The stored dtype. The inexact flavour stores computed floats only to
  // f32 / f64 when later statements may read them back (a narrow rounding
  // there could straddle a boundary and be amplified), and never rounds a
  // computed float to an integer.
  bool FloatVal = isFloat(V.T);
  std::vector<DType> Choices;
  if (P.Exact) {
    Choices = {DType::F32, DType::F32, DType::I32, DType::I8, DType::BF16, DType::F64};
    if (Result <= 65504)
      Choices.push_back(DType::F16);
  } else if (FloatVal) {
    // Not an f64 value into f32: read back beside the f64 it came from, the
    // rounding can flip a comparison the f64 reference makes the other way.
    Choices = {DType::F32, DType::F32, DType::F64};
    if (V.T == DType::F64)
      Choices = {DType::F64};
    if (IsOutput)
      Choices.insert(Choices.end(), {DType::F16, DType::BF16});
  } else {
    Choices = {DType::I32, DType::I8, DType::F32};
  }
  DType Stored = pickOf(Choices);
  DType Inferred = V.T == DType::F64 ? DType::F64 : FloatVal ? DType::F32 : DType::I32;
  Readable T;
  if (IsOutput) {
    unsigned N = static_cast<unsigned>(P.Outputs.size());
    S.Target = "out" + std::to_string(N);
    P.Outputs.push_back({S.Target, Stored, OutDims});
    if (chance(0.1))
      S.Annotation = Stored;
  } else {
    S.Target = "t" + std::to_string(NextTemp++);
    if (chance(0.3))
      S.Annotation = Stored;
    else
      Stored = Inferred;
  }
  T.Name = S.Target;
  T.Type = Stored;
  for (const std::string &E : OutDims)
    T.Dims.push_back({DimShape::Plain, E, ""});
  T.Bound = Stored == DType::I8 ? std::min(Result, 128.0) : Result;
  T.Rounded = !P.Exact && isFloat(Stored);
  bool Readback = P.Exact || !isFloat(Stored) || Stored == DType::F32 || Stored == DType::F64;
  if (Readback && T.Bound <= ClampAbove)
    Avail.push_back(T);

  StmtExtents.emplace_back();
  for (const Index &I : Ctx)
    StmtExtents.back().push_back(I.Ext);
  P.Body.push_back(std::move(S));
}

Program Generator::run() {
  unsigned N = 1 + static_cast<unsigned>(pick(Opts.MaxStmts));
  for (unsigned I = 0; I < N; ++I)
    genStmt(I + 1 == N || chance(0.25));

  // Shrink the largest size until the interpreter's work fits the budget.
  static const std::vector<int64_t> Ladder = {1,  2,  3,  5,   7,   13,  15,  16,  17, 31,
                                              32, 33, 63, 64,  65,  127, 128, 129, 257, 1000};
  auto WorkNow = [&] {
    int64_t Total = 0;
    for (const std::vector<std::string> &Exts : StmtExtents) {
      int64_t W = 1;
      for (const std::string &E : Exts)
        W *= extValue(E);
      Total += W;
    }
    return Total;
  };
  while (WorkNow() > Opts.WorkBudget) {
    auto Largest = std::max_element(P.Sizes.begin(), P.Sizes.end(),
                                    [](auto &A, auto &B) { return A.second < B.second; });
    if (Largest == P.Sizes.end() || Largest->second <= 1)
      break;
    auto It = std::lower_bound(Ladder.begin(), Ladder.end(), Largest->second);
    Largest->second = It == Ladder.begin() ? 1 : *(It - 1);
  }
  return P;
}

} // namespace

Program generate(std::mt19937_64 &Rng, const GenOptions &Opts) {
  return Generator(Rng, Opts).run();
}

//===----------------------------------------------------------------------===//
// Shrinking
//===----------------------------------------------------------------------===//

namespace {

/// Calls F on every expression node of P, in pre-order.
void forEachExpr(Program &P, const std::function<void(Expr &)> &F) {
  std::function<void(Expr &)> Walk = [&](Expr &E) {
    F(E);
    for (Expr &A : E.Args)
      Walk(A);
  };
  for (Stmt &S : P.Body)
    Walk(S.Value);
}

bool mentions(const Expr &E, const std::string &Name) {
  if ((E.K == Expr::Access || E.K == Expr::Name) && E.Text == Name)
    return true;
  for (const Expr &A : E.Args)
    if (mentions(A, Name))
      return true;
  return false;
}

} // namespace

std::vector<Program> shrinkCandidates(const Program &P) {
  std::vector<Program> Out;
  // Delete a statement; reads of its tensor become the literal 1.
  for (size_t I = P.Body.size(); I-- > 0;) {
    Program Q = P;
    std::string Name = Q.Body[I].Target;
    Q.Body.erase(Q.Body.begin() + static_cast<long>(I));
    auto It = std::find_if(Q.Outputs.begin(), Q.Outputs.end(),
                           [&](const Tensor &T) { return T.Name == Name; });
    if (It != Q.Outputs.end()) {
      if (Q.Outputs.size() == 1)
        continue;
      Q.Outputs.erase(It);
    }
    forEachExpr(Q, [&](Expr &E) {
      if ((E.K == Expr::Access || E.K == Expr::Name) && E.Text == Name)
        E = lit("1");
    });
    Out.push_back(std::move(Q));
  }
  // Drop inputs nothing reads.
  for (size_t I = 0; I < P.Inputs.size(); ++I) {
    bool Used = false;
    for (const Stmt &S : P.Body)
      Used |= mentions(S.Value, P.Inputs[I].Name);
    if (!Used) {
      Program Q = P;
      Q.Inputs.erase(Q.Inputs.begin() + static_cast<long>(I));
      Out.push_back(std::move(Q));
    }
  }
  // Drop the schedule block, then annotations.
  if (!P.Schedule.empty()) {
    Program Q = P;
    Q.Schedule.clear();
    Out.push_back(std::move(Q));
  }
  for (size_t I = 0; I < P.Body.size(); ++I)
    if (P.Body[I].Annotation) {
      Program Q = P;
      Q.Body[I].Annotation.reset();
      Out.push_back(std::move(Q));
    }
  // Replace an expression by one of its operands, or by a literal.
  size_t NumNodes = 0;
  {
    Program Q = P;
    forEachExpr(Q, [&](Expr &) { ++NumNodes; });
  }
  for (size_t N = 0; N < NumNodes; ++N) {
    size_t NumArgs = 0;
    bool IsLit = false;
    {
      Program Q = P;
      size_t K = 0;
      forEachExpr(Q, [&](Expr &E) {
        if (K++ == N) {
          NumArgs = E.Args.size();
          IsLit = E.K == Expr::Lit;
        }
      });
    }
    for (size_t A = 0; A <= NumArgs; ++A) {
      if (A == NumArgs && IsLit)
        break;
      Program Q = P;
      size_t K = 0;
      bool Done = false;
      forEachExpr(Q, [&](Expr &E) {
        if (Done || K++ != N)
          return;
        Done = true;
        if (A < NumArgs) {
          Expr Child = E.Args[A];
          E = std::move(Child);
        } else {
          E = lit("1");
        }
      });
      Out.push_back(std::move(Q));
    }
  }
  // Reductions into plain assignments (valid when nothing is reduced).
  for (size_t I = 0; I < P.Body.size(); ++I)
    if (P.Body[I].Op != "=") {
      Program Q = P;
      Q.Body[I].Op = "=";
      Out.push_back(std::move(Q));
    }
  // Smaller sizes: 1, half, one less.
  for (const auto &[Sym, V] : P.Sizes) {
    for (int64_t Smaller : {int64_t(1), V / 2, V - 1}) {
      if (Smaller < 1 || Smaller >= V)
        continue;
      Program Q = P;
      Q.Sizes[Sym] = Smaller;
      Out.push_back(std::move(Q));
      if (Smaller == 1)
        continue;
    }
  }
  return Out;
}

} // namespace tdsl::smith
