//===- Reference.cpp - Evaluates a checked kernel straight from its AST ---===//
#include "frontend/Reference.h"

#include "ir/Diagnostics.h"

#include <cmath>
#include <limits>

namespace tdsl {

namespace {

/// A value of a statically known type: floats in F, integers and bools in
/// I. S is the float's scale: the size of the terms it was computed from
/// (|F| where nothing cancelled), so that a kernel's rounding of those
/// terms, relative to their size, moves F by at most a tolerance times S.
struct Value {
  double F = 0;
  int64_t I = 0;
  double S = 0;
};

/// The scale of F = f(X) for a function with derivative D at X: f's own
/// rounding, relative to |F|, and the excess of X's scale over |X| (what
/// cancelled in X) carried through the derivative. Where nothing cancelled
/// it is |F|: no looser than the dtype's tolerance alone.
double throughFunction(double F, double D, const Value &X) {
  double Excess = X.S - std::fabs(X.F);
  if (!(Excess > 0))
    return std::fabs(F);
  return std::fabs(F) + std::fabs(D) * Excess;
}

int64_t wrap32(int64_t V) { return static_cast<int32_t>(static_cast<uint32_t>(V)); }

double asDouble(const Value &V, DType T) {
  return isFloat(T) ? V.F : static_cast<double>(V.I);
}

/// Converts V of type From to type To with the language's rules.
Value convert(const Value &V, DType From, DType To) {
  Value R;
  if (isFloat(To)) {
    R.F = convertValue(asDouble(V, From), DType::F64, To);
    // What cancelled stays; a value that cancelled nothing keeps its size.
    R.S = isFloat(From) && V.S > std::fabs(V.F) ? std::max(V.S, std::fabs(R.F)) : std::fabs(R.F);
    return R;
  }
  if (To == DType::Bool) {
    R.I = isFloat(From) ? (V.F != 0.0) : (V.I != 0);
    return R;
  }
  if (isFloat(From))
    R.I = saturateInt(V.F, To);
  else
    R.I = saturateInt(static_cast<double>(V.I), To);
  return R;
}

/// Steps Idx to the next point of the box [0, Ext) in row-major order;
/// false once every point has been visited.
bool advance(std::vector<int64_t> &Idx, const std::vector<int64_t> &Ext) {
  for (size_t D = Idx.size(); D-- > 0;) {
    if (++Idx[D] < Ext[D])
      return true;
    Idx[D] = 0;
  }
  return false;
}

class KernelEvaluator {
public:
  KernelEvaluator(const ast::Kernel &K, const std::map<std::string, int64_t> &Sizes,
                  const std::map<std::string, ir::TensorData> &Inputs)
      : K(K), Sizes(Sizes) {
    for (const auto &[Name, Data] : Inputs)
      Tensors[Name] = Data;
  }

  std::map<std::string, ir::TensorData> run(std::map<std::string, std::vector<double>> *Scales) {
    for (const auto &S : K.Body)
      runStmt(*S);
    std::map<std::string, ir::TensorData> Out;
    for (const auto &T : K.Outputs) {
      Out[T->Name] = Tensors[T->Name];
      if (Scales)
        (*Scales)[T->Name] = Scale[T->Name];
    }
    return Out;
  }

private:
  const ast::Kernel &K;
  const std::map<std::string, int64_t> &Sizes;
  std::map<std::string, ir::TensorData> Tensors;
  /// The scale of each element each statement stored (an input's is its
  /// size: none is kept).
  std::map<std::string, std::vector<double>> Scale;
  std::map<std::string, int64_t> Env; ///< index variable values

  int64_t extent(const ast::Affine &A) const { return A.evaluate(Sizes); }

  int64_t offset(const ir::TensorData &D, const std::vector<int64_t> &Idx) const {
    int64_t Off = 0;
    for (size_t I = 0; I < Idx.size(); ++I) {
      if (Idx[I] < 0 || Idx[I] >= D.Shape[I])
        TDSL_UNREACHABLE("reference evaluator: index out of bounds after sema");
      Off = Off * D.Shape[I] + Idx[I];
    }
    return Off;
  }

  void runStmt(const ast::Stmt &S) {
    const ast::Tensor &T = *S.Target;
    ir::TensorData &Dst = Tensors[T.Name];
    Dst.Type = T.Type;
    Dst.Shape.clear();
    for (const ast::Affine &A : T.Shape)
      Dst.Shape.push_back(extent(A));
    Dst.Values.assign(static_cast<size_t>(Dst.numElements()), 0.0);
    std::vector<double> &DstScale = Scale[T.Name];
    DstScale.assign(Dst.Values.size(), 0.0);

    std::vector<int64_t> Idx(S.Indices.size(), 0);
    std::vector<int64_t> Ext;
    for (const std::string &I : S.Indices)
      Ext.push_back(extent(S.Ranges.at(I)));
    for (int64_t E : Ext)
      if (E <= 0)
        return;
    while (true) {
      for (size_t I = 0; I < Idx.size(); ++I)
        Env[S.Indices[I]] = Idx[I];
      Value V = convert(element(S), accType(S), T.Type);
      size_t At = static_cast<size_t>(offset(Dst, Idx));
      Dst.Values[At] = asDouble(V, T.Type);
      DstScale[At] = isFloat(T.Type) ? V.S : std::fabs(Dst.Values[At]);
      if (!advance(Idx, Ext))
        return;
    }
  }

  /// Plain assignments keep the value's type; reductions accumulate in the
  /// arithmetic type of the target (f64 here when the target is a float, so
  /// the reference is as exact as it can be).
  DType accType(const ast::Stmt &S) const {
    if (S.Op == ast::AssignOp::Assign && S.Reduced.empty())
      return S.Value->Type;
    DType A = arithmeticType(S.Target->Type);
    return isFloat(A) ? DType::F64 : A;
  }

  Value element(const ast::Stmt &S) {
    DType Acc = accType(S);
    if (S.Op == ast::AssignOp::Assign && S.Reduced.empty())
      return eval(*S.Value);
    Value A = identity(S.Op, Acc);
    std::vector<int64_t> Ext;
    for (const std::string &R : S.Reduced)
      Ext.push_back(extent(S.Ranges.at(R)));
    for (int64_t E : Ext)
      if (E <= 0)
        return A;
    std::vector<int64_t> Idx(S.Reduced.size(), 0);
    while (true) {
      for (size_t I = 0; I < Idx.size(); ++I)
        Env[S.Reduced[I]] = Idx[I];
      Value Term = convert(eval(*S.Value), S.Value->Type, Acc);
      A = combine(S.Op, Acc, A, Term);
      if (!advance(Idx, Ext))
        return A;
    }
  }

  static Value identity(ast::AssignOp Op, DType T) {
    Value V;
    bool F = isFloat(T);
    double Inf = std::numeric_limits<double>::infinity();
    switch (Op) {
    case ast::AssignOp::Assign:
    case ast::AssignOp::Add: break;
    case ast::AssignOp::Mul: V.F = 1; V.I = 1; V.S = 1; break;
    case ast::AssignOp::Max:
      if (F) V.F = -Inf; else V.I = static_cast<int64_t>(dtypeLowest(T));
      break;
    case ast::AssignOp::Min:
      if (F) V.F = Inf; else V.I = static_cast<int64_t>(dtypeHighest(T));
      break;
    }
    return V;
  }

  static Value combine(ast::AssignOp Op, DType T, Value A, Value B) {
    Value R;
    if (isFloat(T)) {
      switch (Op) {
      case ast::AssignOp::Assign:
      case ast::AssignOp::Add: R.F = A.F + B.F; R.S = A.S + B.S; break;
      case ast::AssignOp::Mul: R.F = A.F * B.F; R.S = A.S * B.S; break;
      case ast::AssignOp::Max:
      case ast::AssignOp::Min: {
        bool TakeA = Op == ast::AssignOp::Max ? std::fmax(A.F, B.F) == A.F
                                              : std::fmin(A.F, B.F) == A.F;
        R = TakeA ? A : B;
        break;
      }
      }
      return R;
    }
    switch (Op) {
    case ast::AssignOp::Assign:
    case ast::AssignOp::Add: R.I = wrap32(A.I + B.I); break;
    case ast::AssignOp::Mul: R.I = wrap32(static_cast<int64_t>(
                                 static_cast<uint64_t>(A.I) * static_cast<uint64_t>(B.I)));
      break;
    case ast::AssignOp::Max: R.I = std::max(A.I, B.I); break;
    case ast::AssignOp::Min: R.I = std::min(A.I, B.I); break;
    }
    return R;
  }

  Value read(const ast::Tensor &T, const std::vector<int64_t> &Idx) {
    auto It = Tensors.find(T.Name);
    if (It == Tensors.end())
      TDSL_UNREACHABLE("reference evaluator: tensor read before definition");
    const ir::TensorData &D = It->second;
    size_t At = D.Shape.empty() ? 0 : static_cast<size_t>(offset(D, Idx));
    double X = D.Values.at(At);
    Value V;
    if (isFloat(T.Type))
      V.F = X;
    else
      V.I = static_cast<int64_t>(X);
    auto S = Scale.find(T.Name);
    V.S = S == Scale.end() ? std::fabs(X) : S->second.at(At);
    return V;
  }

  Value eval(const ast::Expr &E) {
    Value V;
    switch (E.Kind) {
    case ast::ExprKind::IntLit: {
      int64_t L = static_cast<const ast::IntLit &>(E).Value;
      if (isFloat(E.Type))
        V.F = static_cast<double>(L);
      else
        V.I = L;
      V.S = std::fabs(static_cast<double>(L));
      return V;
    }
    case ast::ExprKind::FloatLit:
      V.F = static_cast<const ast::FloatLit &>(E).Value;
      if (!isFloat(E.Type))
        V.I = static_cast<int64_t>(V.F);
      V.S = std::fabs(V.F);
      return V;
    case ast::ExprKind::Name: {
      const auto &N = static_cast<const ast::Name &>(E);
      int64_t X = 0;
      if (N.Resolved == ast::NameKind::Tensor)
        return read(*N.Target, {});
      if (N.Resolved == ast::NameKind::Index)
        X = Env.at(N.Id);
      else
        X = Sizes.at(N.Id);
      V.I = X;
      V.F = static_cast<double>(X);
      V.S = std::fabs(V.F);
      return V;
    }
    case ast::ExprKind::Access: {
      const auto &A = static_cast<const ast::Access &>(E);
      std::vector<int64_t> Idx;
      for (const ast::Affine &Sub : A.AffineSubs)
        Idx.push_back(Sub.evaluate(Env));
      return read(*A.Target, Idx);
    }
    case ast::ExprKind::Unary: {
      const auto &U = static_cast<const ast::Unary &>(E);
      Value X = eval(*U.Operand);
      DType T = U.Operand->Type;
      if (U.Op == ast::UnaryOp::Not) {
        V.I = convert(X, T, DType::Bool).I ? 0 : 1;
        return V;
      }
      if (isFloat(E.Type)) {
        V.F = -asDouble(X, T);
        V.S = isFloat(T) ? X.S : std::fabs(V.F);
        return V;
      }
      V.I = wrap32(-X.I);
      return V;
    }
    case ast::ExprKind::Binary: return evalBinary(static_cast<const ast::Binary &>(E));
    case ast::ExprKind::Select: {
      const auto &S = static_cast<const ast::Select &>(E);
      bool C = convert(eval(*S.Cond), S.Cond->Type, DType::Bool).I != 0;
      const ast::Expr &Pick = C ? *S.Then : *S.Else;
      return convert(eval(Pick), Pick.Type, arithmeticOrSame(E.Type));
    }
    case ast::ExprKind::Call: return evalCall(static_cast<const ast::Call &>(E));
    }
    TDSL_UNREACHABLE("unknown expression kind");
  }

  /// Float results are carried in f64 whatever their nominal type; only
  /// integer results need converting.
  static DType arithmeticOrSame(DType T) { return isFloat(T) ? DType::F64 : T; }

  Value evalBinary(const ast::Binary &B) {
    DType T = B.OperandType;
    Value L = convert(eval(*B.LHS), B.LHS->Type, arithmeticOrSame(T));
    Value R = convert(eval(*B.RHS), B.RHS->Type, arithmeticOrSame(T));
    Value V = binary(B.Op, T, L, R);
    V.S = std::fabs(asDouble(V, B.Type));
    if (!isFloat(B.Type)) // integers, and the bools of comparisons
      return V;
    switch (B.Op) {
    case ast::BinaryOp::Add:
    case ast::BinaryOp::Sub: V.S = L.S + R.S; break;
    case ast::BinaryOp::Mul: V.S = L.S * R.S; break;
    case ast::BinaryOp::Div: {
      // d(l / r) = dl / r - l dr / r^2, with what cancelled in each.
      double LX = std::max(0.0, L.S - std::fabs(L.F)), RX = std::max(0.0, R.S - std::fabs(R.F));
      if (LX > 0 || RX > 0)
        V.S += LX / std::fabs(R.F) + std::fabs(L.F) * RX / (R.F * R.F);
      break;
    }
    default: break;
    }
    return V;
  }

  /// The value of L Op R, both of type T (f64 for any float).
  static Value binary(ast::BinaryOp Op, DType T, const Value &L, const Value &R) {
    Value V;
    bool F = isFloat(T);
    if (T == DType::Bool) {
      // Only && and || and == != reach here with bool operands.
      switch (Op) {
      case ast::BinaryOp::And: V.I = L.I && R.I; return V;
      case ast::BinaryOp::Or: V.I = L.I || R.I; return V;
      case ast::BinaryOp::Eq: V.I = L.I == R.I; return V;
      case ast::BinaryOp::Ne: V.I = L.I != R.I; return V;
      default: break;
      }
    }
    switch (Op) {
    case ast::BinaryOp::Add:
      if (F) V.F = L.F + R.F; else V.I = wrapTo(T, L.I + R.I);
      return V;
    case ast::BinaryOp::Sub:
      if (F) V.F = L.F - R.F; else V.I = wrapTo(T, L.I - R.I);
      return V;
    case ast::BinaryOp::Mul:
      if (F) V.F = L.F * R.F;
      else V.I = wrapTo(T, static_cast<int64_t>(static_cast<uint64_t>(L.I) *
                                                static_cast<uint64_t>(R.I)));
      return V;
    case ast::BinaryOp::Div:
      if (F) V.F = L.F / R.F;
      else V.I = R.I == 0 ? 0 : wrapTo(T, L.I / R.I);
      return V;
    case ast::BinaryOp::Mod:
      if (F) V.F = std::fmod(L.F, R.F);
      else V.I = R.I == 0 ? 0 : L.I % R.I;
      return V;
    case ast::BinaryOp::Lt: V.I = F ? L.F < R.F : L.I < R.I; return V;
    case ast::BinaryOp::Le: V.I = F ? L.F <= R.F : L.I <= R.I; return V;
    case ast::BinaryOp::Gt: V.I = F ? L.F > R.F : L.I > R.I; return V;
    case ast::BinaryOp::Ge: V.I = F ? L.F >= R.F : L.I >= R.I; return V;
    case ast::BinaryOp::Eq: V.I = F ? L.F == R.F : L.I == R.I; return V;
    case ast::BinaryOp::Ne: V.I = F ? L.F != R.F : L.I != R.I; return V;
    case ast::BinaryOp::And:
      V.I = (F ? L.F != 0 : L.I != 0) && (F ? R.F != 0 : R.I != 0);
      return V;
    case ast::BinaryOp::Or:
      V.I = (F ? L.F != 0 : L.I != 0) || (F ? R.F != 0 : R.I != 0);
      return V;
    }
    TDSL_UNREACHABLE("unknown binary operator");
  }

  static int64_t wrapTo(DType T, int64_t V) { return T == DType::I64 ? V : wrap32(V); }

  Value evalCall(const ast::Call &C) {
    if (C.Fn == ast::Callee::Cast) {
      const ast::Expr &A = *C.Args[0];
      return convert(eval(A), A.Type, C.CastTo);
    }
    DType T = C.ArgType;
    std::vector<Value> Args;
    for (const auto &A : C.Args)
      Args.push_back(convert(eval(*A), A->Type, arithmeticOrSame(T)));
    Value V;
    if (!isFloat(T)) {
      int64_t X = Args[0].I;
      switch (C.Fn) {
      case ast::Callee::Relu: V.I = X > 0 ? X : 0; break;
      case ast::Callee::Abs: V.I = wrapTo(T, X < 0 ? -X : X); break;
      case ast::Callee::Max: V.I = std::max(X, Args[1].I); break;
      case ast::Callee::Min: V.I = std::min(X, Args[1].I); break;
      default: TDSL_UNREACHABLE("integer argument to a float-only function after sema");
      }
      V.S = std::fabs(static_cast<double>(V.I));
      return V;
    }
    double X = Args[0].F;
    double D = 0; // the derivative at X, for the scale
    const double Pi = 3.14159265358979323846;
    switch (C.Fn) {
    case ast::Callee::Exp: V.F = std::exp(X); D = V.F; break;
    case ast::Callee::Log: V.F = std::log(X); D = 1.0 / X; break;
    case ast::Callee::Sqrt: V.F = std::sqrt(X); D = 0.5 / V.F; break;
    case ast::Callee::Rsqrt: V.F = 1.0 / std::sqrt(X); D = 0.5 * V.F / X; break;
    case ast::Callee::Tanh: V.F = std::tanh(X); D = 1.0 - V.F * V.F; break;
    case ast::Callee::Sigmoid: V.F = 1.0 / (1.0 + std::exp(-X)); D = V.F * (1.0 - V.F); break;
    // max(x, 0) as fmaxf computes it: a NaN operand yields the other one.
    case ast::Callee::Relu: V.F = std::fmax(X, 0.0); D = X > 0 ? 1.0 : 0.0; break;
    case ast::Callee::Gelu: {
      double E = std::erf(X / std::sqrt(2.0));
      V.F = 0.5 * X * (1.0 + E);
      D = 0.5 * (1.0 + E) + X * std::exp(-0.5 * X * X) / std::sqrt(2.0 * Pi);
      // x (1 + erf) cancels where x < 0: a kernel rounds erf to its dtype,
      // an error relative to 1 that x / 2 scales, so the terms are
      // x / 2 and x erf / 2 however small their sum (gelu(-10) is 1e-22).
      V.S = throughFunction(V.F, D, Args[0]) +
            0.5 * std::fabs(X) * (1.0 + std::fabs(E) - std::fabs(1.0 + E));
      return V;
    }
    case ast::Callee::Erf: V.F = std::erf(X); D = 2.0 / std::sqrt(Pi) * std::exp(-X * X); break;
    case ast::Callee::Abs: V.F = std::fabs(X); D = 1.0; break;
    case ast::Callee::Pow: {
      double Y = Args[1].F;
      V.F = std::pow(X, Y);
      D = Y * std::pow(X, Y - 1.0);
      V.S = throughFunction(V.F, D, Args[0]);
      // The exponent's cancellation too: d(x^y)/dy = x^y ln x.
      if (Args[1].S > std::fabs(Y) && X > 0)
        V.S += std::fabs(V.F * std::log(X)) * (Args[1].S - std::fabs(Y));
      return V;
    }
    case ast::Callee::Max:
    case ast::Callee::Min: {
      double Y = Args[1].F;
      V.F = C.Fn == ast::Callee::Max ? std::fmax(X, Y) : std::fmin(X, Y);
      V.S = V.F == X ? Args[0].S : Args[1].S;
      return V;
    }
    case ast::Callee::Cast: break;
    }
    V.S = throughFunction(V.F, D, Args[0]);
    return V;
  }
};

} // namespace

std::map<std::string, ir::TensorData>
evaluateReference(const ast::Kernel &K, const std::map<std::string, int64_t> &Sizes,
                  const std::map<std::string, ir::TensorData> &Inputs,
                  std::map<std::string, std::vector<double>> *Scales) {
  return KernelEvaluator(K, Sizes, Inputs).run(Scales);
}

} // namespace tdsl
