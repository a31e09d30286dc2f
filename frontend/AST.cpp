//===- AST.cpp - Affine forms and kernel lookups --------------------------===//
#include "frontend/AST.h"

#include <algorithm>

namespace tdsl::ast {

Affine Affine::operator+(const Affine &O) const {
  Affine R = *this;
  R.Constant += O.Constant;
  for (const auto &[Name, C] : O.Coeffs)
    if ((R.Coeffs[Name] += C) == 0)
      R.Coeffs.erase(Name);
  return R;
}

Affine Affine::operator-(const Affine &O) const { return *this + O.scaled(-1); }

Affine Affine::scaled(int64_t K) const {
  Affine R;
  if (K == 0)
    return R;
  R.Constant = Constant * K;
  for (const auto &[Name, C] : Coeffs)
    R.Coeffs[Name] = C * K;
  return R;
}

std::string Affine::str() const {
  std::string S;
  for (const auto &[Name, C] : Coeffs) {
    int64_t A = C < 0 ? -C : C;
    if (S.empty())
      S = C < 0 ? "-" : "";
    else
      S += C < 0 ? " - " : " + ";
    if (A != 1)
      S += std::to_string(A) + " * ";
    S += Name;
  }
  if (S.empty())
    return std::to_string(Constant);
  if (Constant > 0)
    S += " + " + std::to_string(Constant);
  else if (Constant < 0)
    S += " - " + std::to_string(-Constant);
  return S;
}

int64_t Affine::evaluate(const std::map<std::string, int64_t> &Values) const {
  int64_t V = Constant;
  for (const auto &[Name, C] : Coeffs) {
    auto It = Values.find(Name);
    if (It != Values.end())
      V += C * It->second;
  }
  return V;
}

Tensor *Kernel::lookup(const std::string &N) const {
  for (const auto *List : {&Inputs, &Outputs, &Intermediates})
    for (const auto &T : *List)
      if (T->Name == N)
        return T.get();
  return nullptr;
}

namespace {
void factorsOf(const Expr &E, DType Type, std::vector<const Expr *> &Out) {
  if (E.Kind == ExprKind::Binary) {
    const auto &B = static_cast<const Binary &>(E);
    if (B.Op == BinaryOp::Mul && B.OperandType == Type) {
      factorsOf(*B.LHS, Type, Out);
      factorsOf(*B.RHS, Type, Out);
      return;
    }
  }
  Out.push_back(&E);
}
} // namespace

void productFactors(const Expr &E, std::vector<const Expr *> &Out) {
  if (E.Kind == ExprKind::Binary && static_cast<const Binary &>(E).Op == BinaryOp::Mul)
    return factorsOf(E, static_cast<const Binary &>(E).OperandType, Out);
  Out.push_back(&E);
}

ScaledProduct scaledProduct(const Expr &E) {
  ScaledProduct P;
  const Expr *X = &E;
  std::vector<const Expr *> Divisors;
  while (true) {
    if (X->Kind == ExprKind::Unary && static_cast<const Unary &>(*X).Op == UnaryOp::Neg) {
      P.Negated = !P.Negated;
      X = static_cast<const Unary &>(*X).Operand.get();
      continue;
    }
    if (X->Kind == ExprKind::Binary && static_cast<const Binary &>(*X).Op == BinaryOp::Div) {
      const auto &B = static_cast<const Binary &>(*X);
      Divisors.push_back(B.RHS.get());
      X = B.LHS.get();
      continue;
    }
    break;
  }
  // Innermost first: (A * B / s) / t divides by s, then by t.
  P.Divisors.assign(Divisors.rbegin(), Divisors.rend());
  P.Core = X;
  return P;
}

void forEachExpr(const Expr &E, const std::function<void(const Expr &)> &Fn) {
  Fn(E);
  switch (E.Kind) {
  case ExprKind::IntLit:
  case ExprKind::FloatLit:
  case ExprKind::Name: return;
  case ExprKind::Access:
    for (const ExprPtr &S : static_cast<const Access &>(E).Subscripts)
      forEachExpr(*S, Fn);
    return;
  case ExprKind::Unary: forEachExpr(*static_cast<const Unary &>(E).Operand, Fn); return;
  case ExprKind::Binary:
    forEachExpr(*static_cast<const Binary &>(E).LHS, Fn);
    forEachExpr(*static_cast<const Binary &>(E).RHS, Fn);
    return;
  case ExprKind::Select: {
    const auto &S = static_cast<const Select &>(E);
    forEachExpr(*S.Cond, Fn);
    forEachExpr(*S.Then, Fn);
    forEachExpr(*S.Else, Fn);
    return;
  }
  case ExprKind::Call:
    for (const ExprPtr &A : static_cast<const Call &>(E).Args)
      forEachExpr(*A, Fn);
    return;
  }
}

bool usesIndex(const Expr &E, const std::vector<std::string> &Names) {
  auto Has = [&](const std::string &N) {
    return std::find(Names.begin(), Names.end(), N) != Names.end();
  };
  bool Found = false;
  forEachExpr(E, [&](const Expr &X) {
    if (X.Kind == ExprKind::Name) {
      const auto &N = static_cast<const Name &>(X);
      Found |= N.Resolved == NameKind::Index && Has(N.Id);
    } else if (X.Kind == ExprKind::Access) {
      for (const Affine &A : static_cast<const Access &>(X).AffineSubs)
        for (const auto &[Name, C] : A.Coeffs)
          Found |= Has(Name);
    }
  });
  return Found;
}

} // namespace tdsl::ast
