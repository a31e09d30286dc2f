//===- Frontend.cpp - parseAndCheck and the --emit=ast dump ---------------===//
#include "frontend/Frontend.h"

#include "frontend/Parser.h"
#include "frontend/Sema.h"

#include <cstdio>
#include <cstdlib>

using namespace tdsl::ast;

namespace tdsl {

std::unique_ptr<Module> parseAndCheck(llvm::SourceMgr &SM, unsigned BufferID,
                                      DiagEngine &Diags) {
  unsigned ErrorsBefore = Diags.errorCount();
  std::unique_ptr<Module> M = Parser(SM, BufferID, Diags).parseModule();
  // Sema on a tree with holes would mostly report consequences of the
  // syntax errors (outputs "never written" by a statement that did not
  // parse), so it runs only on a clean parse.
  if (Diags.errorCount() != ErrorsBefore)
    return nullptr;
  if (!checkModule(*M, Diags))
    return nullptr;
  return M;
}

namespace {

class ASTPrinter {
public:
  explicit ASTPrinter(llvm::raw_ostream &OS) : OS(OS) {}
  void print(const Module &M);

private:
  void printKernel(const Kernel &K);
  void printTensor(const char *Role, const Tensor &T);
  void printStmt(const Stmt &S);
  void printExpr(const Expr &E, unsigned Indent);
  llvm::raw_ostream &indent(unsigned N) { return OS.indent(2 * N); }

  llvm::raw_ostream &OS;
};

/// The shortest decimal spelling that reads back as the same double, always
/// recognisable as a float ("2.0", not "2").
std::string formatFloat(double V) {
  char Buf[64];
  for (int Precision = 1; Precision <= 17; ++Precision) {
    std::snprintf(Buf, sizeof(Buf), "%.*g", Precision, V);
    if (std::strtod(Buf, nullptr) == V)
      break;
  }
  std::string S = Buf;
  if (S.find_first_of(".eni") == std::string::npos)
    S += ".0";
  return S;
}

std::string joinAffine(const std::vector<Affine> &List) {
  std::string S;
  for (const Affine &A : List) {
    if (!S.empty())
      S += ", ";
    S += A.str();
  }
  return S;
}

const char *binaryName(BinaryOp Op) {
  switch (Op) {
  case BinaryOp::Add: return "add";
  case BinaryOp::Sub: return "sub";
  case BinaryOp::Mul: return "mul";
  case BinaryOp::Div: return "div";
  case BinaryOp::Mod: return "mod";
  case BinaryOp::Lt: return "lt";
  case BinaryOp::Le: return "le";
  case BinaryOp::Gt: return "gt";
  case BinaryOp::Ge: return "ge";
  case BinaryOp::Eq: return "eq";
  case BinaryOp::Ne: return "ne";
  case BinaryOp::And: return "and";
  case BinaryOp::Or: return "or";
  }
  return "?";
}

const char *assignSpelling(AssignOp Op) {
  switch (Op) {
  case AssignOp::Assign: return "=";
  case AssignOp::Add: return "+=";
  case AssignOp::Mul: return "*=";
  case AssignOp::Max: return "max=";
  case AssignOp::Min: return "min=";
  }
  return "?";
}

void ASTPrinter::print(const Module &M) {
  OS << "module '" << M.FileName << "'\n";
  for (const auto &K : M.Kernels)
    printKernel(*K);
}

void ASTPrinter::printKernel(const Kernel &K) {
  OS << "kernel " << K.Name << "\n";
  indent(1) << "sizes:";
  for (size_t I = 0; I < K.SizeSymbols.size(); ++I)
    OS << (I ? ", " : " ") << K.SizeSymbols[I];
  OS << "\n";
  for (const auto &T : K.Inputs)
    printTensor("input", *T);
  for (const auto &T : K.Outputs)
    printTensor("output", *T);
  for (const auto &T : K.Intermediates)
    printTensor("intermediate", *T);
  for (const auto &S : K.Body)
    printStmt(*S);
  if (K.Sched) {
    indent(1) << "schedule\n";
    for (const ScheduleEntry &E : K.Sched->Entries) {
      indent(2) << E.Key << " = ";
      if (!E.Word.empty())
        OS << E.Word;
      else if (!E.IsList)
        OS << E.Ints[0];
      else {
        OS << "[";
        for (size_t I = 0; I < E.Ints.size(); ++I)
          OS << (I ? ", " : "") << E.Ints[I];
        OS << "]";
      }
      OS << "\n";
    }
  }
}

void ASTPrinter::printTensor(const char *Role, const Tensor &T) {
  indent(1) << Role << " " << T.Name << ": " << dtypeName(T.Type);
  if (!T.Shape.empty())
    OS << "[" << joinAffine(T.Shape) << "]";
  if (T.Role == TensorRole::Intermediate)
    OS << (T.TypeAnnotated ? " (annotated)" : " (inferred)");
  OS << "\n";
}

void ASTPrinter::printStmt(const Stmt &S) {
  indent(1) << "stmt " << S.TargetName;
  if (!S.Indices.empty()) {
    OS << "[";
    for (size_t I = 0; I < S.Indices.size(); ++I)
      OS << (I ? ", " : "") << S.Indices[I];
    OS << "]";
  }
  if (S.Annotation)
    OS << ": " << dtypeName(*S.Annotation);
  OS << " " << assignSpelling(S.Op) << " (value as " << dtypeName(S.ValueType)
     << ")\n";
  auto PrintIndex = [&](const char *Kind, const std::string &I) {
    auto It = S.Ranges.find(I);
    indent(2) << Kind << " " << I << " in [0, "
              << (It == S.Ranges.end() ? "?" : It->second.str()) << ")\n";
  };
  for (const std::string &I : S.Indices)
    PrintIndex("index", I);
  for (const std::string &I : S.Reduced)
    PrintIndex("reduced", I);
  printExpr(*S.Value, 2);
}

void ASTPrinter::printExpr(const Expr &E, unsigned Indent) {
  indent(Indent);
  switch (E.Kind) {
  case ExprKind::IntLit:
    OS << "int " << static_cast<const IntLit &>(E).Value;
    break;
  case ExprKind::FloatLit:
    OS << "float " << formatFloat(static_cast<const FloatLit &>(E).Value);
    break;
  case ExprKind::Name: {
    const auto &N = static_cast<const Name &>(E);
    switch (N.Resolved) {
    case NameKind::Index: OS << "index "; break;
    case NameKind::Size: OS << "size "; break;
    case NameKind::Tensor: OS << "scalar "; break;
    case NameKind::Unresolved: OS << "unresolved "; break;
    }
    OS << N.Id;
    break;
  }
  case ExprKind::Access: {
    const auto &A = static_cast<const Access &>(E);
    OS << "access " << A.TensorName << "[" << joinAffine(A.AffineSubs) << "]";
    break;
  }
  case ExprKind::Unary:
    OS << (static_cast<const Unary &>(E).Op == UnaryOp::Neg ? "neg" : "not");
    break;
  case ExprKind::Binary:
    OS << binaryName(static_cast<const Binary &>(E).Op);
    break;
  case ExprKind::Select:
    OS << "select";
    break;
  case ExprKind::Call: {
    const auto &C = static_cast<const Call &>(E);
    if (C.Fn == Callee::Cast)
      OS << "cast";
    else
      OS << "call " << C.FuncName;
    break;
  }
  }
  OS << " : " << dtypeName(E.Type);

  // The conversion each operand goes through, where it is not the result.
  if (E.Kind == ExprKind::Binary) {
    const auto &B = static_cast<const Binary &>(E);
    if (B.OperandType != B.Type)
      OS << " (operands " << dtypeName(B.OperandType) << ")";
  } else if (E.Kind == ExprKind::Call) {
    const auto &C = static_cast<const Call &>(E);
    if (C.ArgType != C.Type || C.Fn == Callee::Cast)
      OS << " (args " << dtypeName(C.ArgType) << ")";
  }
  OS << "\n";

  switch (E.Kind) {
  case ExprKind::Unary:
    printExpr(*static_cast<const Unary &>(E).Operand, Indent + 1);
    break;
  case ExprKind::Binary:
    printExpr(*static_cast<const Binary &>(E).LHS, Indent + 1);
    printExpr(*static_cast<const Binary &>(E).RHS, Indent + 1);
    break;
  case ExprKind::Select: {
    const auto &S = static_cast<const Select &>(E);
    printExpr(*S.Cond, Indent + 1);
    printExpr(*S.Then, Indent + 1);
    printExpr(*S.Else, Indent + 1);
    break;
  }
  case ExprKind::Call:
    for (const auto &A : static_cast<const Call &>(E).Args)
      printExpr(*A, Indent + 1);
    break;
  default:
    break;
  }
}

} // namespace

void printAST(const Module &M, llvm::raw_ostream &OS) { ASTPrinter(OS).print(M); }

} // namespace tdsl
