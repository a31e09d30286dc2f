//===- Report.cpp - tdslc --emit=report -----------------------------------===//
#include "driver/Report.h"

#include "ir/Launch.h"
#include "ir/Printer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;

namespace tdsl {
namespace {

//===----------------------------------------------------------------------===//
// Polynomials in the size symbols: the counts as formulas (2*M*N*K + ...)
//===----------------------------------------------------------------------===//

/// sum of Coeff * (product of the symbols in the key); keys are sorted.
using Monomial = std::vector<std::string>;
using Poly = std::map<Monomial, int64_t>;

Poly constant(int64_t C) { return C ? Poly{{{}, C}} : Poly{}; }

Poly fromAffine(const ast::Affine &A) {
  Poly P = constant(A.Constant);
  for (const auto &[Sym, K] : A.Coeffs)
    P[{Sym}] += K;
  return P;
}

void addTo(Poly &Sum, const Poly &P, int64_t Scale = 1) {
  for (const auto &[M, K] : P)
    if ((Sum[M] += K * Scale) == 0)
      Sum.erase(M);
}

Poly multiply(const Poly &A, const Poly &B) {
  Poly R;
  for (const auto &[MA, KA] : A)
    for (const auto &[MB, KB] : B) {
      Monomial M = MA;
      M.insert(M.end(), MB.begin(), MB.end());
      llvm::sort(M);
      if ((R[M] += KA * KB) == 0)
        R.erase(M);
    }
  return R;
}

/// Highest degree first ("2*M*N*K + 2*M*N"); symbols in signature order.
std::string toString(const Poly &P, const std::vector<std::string> &Order) {
  if (P.empty())
    return "0";
  auto rank = [&](const std::string &S) {
    return std::find(Order.begin(), Order.end(), S) - Order.begin();
  };
  std::vector<std::pair<Monomial, int64_t>> Terms(P.begin(), P.end());
  for (auto &T : Terms)
    llvm::sort(T.first,
               [&](const std::string &A, const std::string &B) { return rank(A) < rank(B); });
  std::stable_sort(Terms.begin(), Terms.end(),
                   [](const auto &A, const auto &B) { return A.first.size() > B.first.size(); });
  std::string S;
  for (const auto &[M, K] : Terms) {
    int64_t C = K;
    if (!S.empty()) {
      S += C < 0 ? " - " : " + ";
      C = C < 0 ? -C : C;
    } else if (C < 0) {
      S += "-";
      C = -C;
    }
    std::vector<std::string> Factors;
    if (C != 1 || M.empty())
      Factors.push_back(std::to_string(C));
    Factors.insert(Factors.end(), M.begin(), M.end());
    S += join(Factors, "*");
  }
  return S;
}

double evaluate(const Poly &P, const ReportOptions &Opts) {
  double Sum = 0;
  for (const auto &[M, K] : P) {
    double Term = static_cast<double>(K);
    for (const std::string &Sym : M) {
      auto It = Opts.Sizes.find(Sym);
      Term *= static_cast<double>(It == Opts.Sizes.end() ? Opts.DefaultSize : It->second);
    }
    Sum += Term;
  }
  return Sum;
}

//===----------------------------------------------------------------------===//
// FLOPs and bytes from the AST
//===----------------------------------------------------------------------===//

/// Arithmetic operations in one evaluation of E: each operator, comparison
/// and math function counts one (exp as much as an add: this is the
/// conventional count, not a cycle estimate); casts and selects count none.
int64_t opsIn(const ast::Expr &E) {
  switch (E.Kind) {
  case ast::ExprKind::IntLit:
  case ast::ExprKind::FloatLit:
  case ast::ExprKind::Name:
  case ast::ExprKind::Access:
    return 0;
  case ast::ExprKind::Unary: {
    const auto &U = static_cast<const ast::Unary &>(E);
    return (U.Op == ast::UnaryOp::Neg ? 1 : 0) + opsIn(*U.Operand);
  }
  case ast::ExprKind::Binary: {
    const auto &B = static_cast<const ast::Binary &>(E);
    bool Logical = B.Op == ast::BinaryOp::And || B.Op == ast::BinaryOp::Or;
    return (Logical ? 0 : 1) + opsIn(*B.LHS) + opsIn(*B.RHS);
  }
  case ast::ExprKind::Select: {
    const auto &S = static_cast<const ast::Select &>(E);
    return opsIn(*S.Cond) + opsIn(*S.Then) + opsIn(*S.Else);
  }
  case ast::ExprKind::Call: {
    const auto &C = static_cast<const ast::Call &>(E);
    int64_t N = C.Fn == ast::Callee::Cast ? 0 : 1;
    for (const ast::ExprPtr &A : C.Args)
      N += opsIn(*A);
    return N;
  }
  }
  return 0;
}

Poly elements(const ast::Tensor &T) {
  Poly P = constant(1);
  for (const ast::Affine &D : T.Shape)
    P = multiply(P, fromAffine(D));
  return P;
}

Poly kernelFlops(const ast::Kernel &K) {
  Poly Total;
  for (const auto &S : K.Body) {
    // One evaluation of the right side per point of the index domain, plus
    // the accumulation for a reduction.
    int64_t PerPoint = opsIn(*S->Value) + (S->Op == ast::AssignOp::Assign ? 0 : 1);
    Poly Domain = constant(1);
    for (const auto &[Index, Extent] : S->Ranges)
      Domain = multiply(Domain, fromAffine(Extent));
    addTo(Total, Domain, PerPoint);
  }
  return Total;
}

Poly kernelBytes(const ast::Kernel &K) {
  Poly Total;
  for (const auto *List : {&K.Inputs, &K.Outputs})
    for (const auto &T : *List)
      addTo(Total, elements(*T), dtypeBytes(T->Type));
  return Total;
}

//===----------------------------------------------------------------------===//
// Launches: ir/Launch.h's analysis, as the emitter and the resource check
// see them
//===----------------------------------------------------------------------===//

std::string dim3(const ir::Expr (&D)[3]) {
  return "(" + ir::toString(D[0]) + ", " + ir::toString(D[1]) + ", " + ir::toString(D[2]) + ")";
}

std::string dim3(const int64_t (&D)[3]) {
  return "(" + std::to_string(D[0]) + ", " + std::to_string(D[1]) + ", " + std::to_string(D[2]) +
         ")";
}

/// ptxas entries of the kernel Kernel: its (demangled) name followed by
/// the template argument list, one per instantiation on the index type.
std::vector<const KernelResources *> resourcesOf(const std::string &Kernel,
                                                 const std::vector<KernelResources> &All) {
  std::string Prefix = Kernel + "<";
  std::vector<const KernelResources *> Found;
  for (const KernelResources &K : All) {
    size_t At = StringRef(K.Name).find(Prefix);
    if (At != StringRef::npos && (At == 0 || (!isAlnum(K.Name[At - 1]) && K.Name[At - 1] != '_')))
      Found.push_back(&K);
  }
  return Found;
}

/// The index type of an instantiation: "<int>" -> "i32", "<long>" -> "i64".
std::string instantiation(const KernelResources &K) {
  StringRef N = K.Name;
  size_t Open = N.find('<');
  if (Open == StringRef::npos)
    return "";
  StringRef Arg = N.drop_front(Open + 1).take_until([](char C) { return C == '>'; });
  if (Arg == "int")
    return "i32";
  if (Arg == "long" || Arg == "long long")
    return "i64";
  return Arg.str();
}

std::string human(double V) {
  const char *Units[] = {"", "K", "M", "G", "T", "P"};
  int U = 0;
  while (V >= 1000 && U < 5) {
    V /= 1000;
    ++U;
  }
  return formatv("{0:f2} {1}", V, Units[U]).str();
}

} // namespace

void printReport(const ast::Module &AST, const ir::Module &IR, const ReportOptions &Opts,
                 raw_ostream &OS) {
  for (const auto &K : AST.Kernels) {
    const ir::Func *F = nullptr;
    for (const ir::Func &G : IR.Funcs)
      if (G.Name == K->Name)
        F = &G;
    std::vector<std::string> SizesAt;
    for (const std::string &S : K->SizeSymbols) {
      auto It = Opts.Sizes.find(S);
      SizesAt.push_back(S + "=" +
                        std::to_string(It == Opts.Sizes.end() ? Opts.DefaultSize : It->second));
    }
    OS << "kernel " << K->Name << " (at " << join(SizesAt, ", ") << ")\n";

    unsigned I = 0;
    if (F)
      ir::forEachLaunch(*F, [&](const ir::LaunchNode &L, const std::vector<const ir::Buffer *> &) {
        ir::LaunchShape Shape = ir::launchShape(L);
        std::string Kernel = Opts.SymbolPrefix + K->Name + "_" + L.Name;
        OS << formatv("  launch {0} '{1}' ({2})", I++, L.Name, ir::launchClassName(L.Class));
        if (L.SrcLine)
          OS << " (line " << L.SrcLine << ")";
        OS << ": grid " << dim3(Shape.Grid) << ", block " << dim3(Shape.Block) << ", shared "
           << Shape.SharedBytes << " B\n";
        // A versioned launch is two kernels (ir/Launch.h), the second's
        // entries marked "general".
        llvm::StringSet<> Sizes;
        for (const std::string &S : F->Sizes)
          Sizes.insert(S);
        std::vector<std::pair<std::string, std::string>> Kernels = {{Kernel, ""}};
        if (ir::launchVersion(L, Sizes))
          Kernels.push_back({Kernel + "_general", "general "});
        for (const auto &[Name, Tag] : Kernels) {
          std::vector<const KernelResources *> Rs = resourcesOf(Name, Opts.Ptxas);
          if (Rs.empty() && !Opts.Ptxas.empty())
            OS << "    ptxas: no entry for " << Name << "\n";
          for (const KernelResources *R : Rs) {
            std::string Inst = instantiation(*R);
            OS << "    ptxas " << Tag << Inst << ": " << R->Registers << " registers, "
               << R->Barriers << " barriers, " << R->StaticSharedBytes << " B static smem, "
               << R->StackBytes << " B stack, spills " << R->SpillStoreBytes << " B stores / "
               << R->SpillLoadBytes << " B loads\n";
          }
        }
      });

    Poly Flops = kernelFlops(*K), Bytes = kernelBytes(*K);
    double FlopsAt = evaluate(Flops, Opts), BytesAt = evaluate(Bytes, Opts);
    OS << "  FLOPs: " << toString(Flops, K->SizeSymbols) << " = " << human(FlopsAt) << "FLOP\n";
    OS << "  bytes: " << toString(Bytes, K->SizeSymbols) << " = " << human(BytesAt)
       << "B (inputs read once, outputs written once)\n";
    OS << "  FLOPs/byte: " << formatv("{0:f2}", BytesAt > 0 ? FlopsAt / BytesAt : 0.0) << "\n";
  }
}

} // namespace tdsl
