//===- AST.cpp - Affine forms and kernel lookups --------------------------===//
#include "frontend/AST.h"

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

} // namespace tdsl::ast
