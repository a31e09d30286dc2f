//===- Printer.cpp - Prints the loop IR in the text form of ir/IR.md ------===//
#include "ir/Printer.h"

#include "ir/IRParser.h"
#include "ir/TextForm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tdsl::ir {

namespace {

using namespace text;

bool isNegativeLiteral(const Expr &E) {
  if (E->Kind == ExprKind::IntImm)
    return static_cast<const IntImmNode &>(*E).Value < 0;
  if (E->Kind == ExprKind::FloatImm) {
    double V = static_cast<const FloatImmNode &>(*E).Value;
    return !std::isnan(V) && std::signbit(V);
  }
  return false;
}

int precOf(const Expr &E) {
  switch (E->Kind) {
  case ExprKind::Unary: return PrecUnary;
  case ExprKind::Binary: return binaryPrec(static_cast<const BinaryNode &>(*E).Op);
  case ExprKind::Select: return PrecSelect;
  case ExprKind::IntImm:
  case ExprKind::FloatImm:
    // The parser reads "-5" as one literal, so it binds like a unary minus.
    return isNegativeLiteral(E) ? PrecUnary : PrecPrimary;
  default: return PrecPrimary;
  }
}

/// The shortest decimal that parses back (strtod, then rounding to T as
/// the parser does) to exactly V, V finite and non-negative: fixed notation
/// for moderate exponents, scientific otherwise; always with '.' or 'e'.
std::string formatMagnitude(double V, DType T) {
  if (V == 0.0)
    return "0.0";
  char Buf[64];
  for (int Digits = 1; Digits <= 17; ++Digits) {
    std::snprintf(Buf, sizeof(Buf), "%.*e", Digits - 1, V);
    double Back = convertValue(std::strtod(Buf, nullptr), DType::F64, T);
    if (Back == V || Digits == 17)
      break;
  }
  // Buf is "d.ddde[+-]XX": split into significant digits and exponent.
  std::string Mantissa;
  const char *P = Buf;
  for (; *P && *P != 'e'; ++P)
    if (*P != '.')
      Mantissa += *P;
  int Exp = *P == 'e' ? std::atoi(P + 1) : 0;
  while (Mantissa.size() > 1 && Mantissa.back() == '0')
    Mantissa.pop_back();

  std::string Out;
  if (Exp >= -4 && Exp < 16) {
    if (Exp >= 0) {
      std::string IntPart = Mantissa.substr(0, std::min<size_t>(Mantissa.size(), Exp + 1));
      IntPart.append(Exp + 1 - IntPart.size(), '0');
      std::string Frac = Mantissa.size() > size_t(Exp + 1) ? Mantissa.substr(Exp + 1) : "0";
      Out = IntPart + "." + Frac;
    } else {
      Out = "0." + std::string(-Exp - 1, '0') + Mantissa;
    }
  } else {
    Out = Mantissa.substr(0, 1);
    if (Mantissa.size() > 1)
      Out += "." + Mantissa.substr(1);
    Out += "e" + std::to_string(Exp);
  }
  return Out;
}

std::string formatFloat(double V, DType T) {
  std::string Suffix = T == DType::F32 ? "" : "_" + dtypeName(T).str();
  if (std::isnan(V))
    return "nan_" + dtypeName(T).str();
  std::string Sign = std::signbit(V) ? "-" : "";
  if (std::isinf(V))
    return Sign + "inf_" + dtypeName(T).str();
  return Sign + formatMagnitude(std::fabs(V), T) + Suffix;
}

/// A name as the text form spells it: one that reads like a keyword, dtype
/// or intrinsic (a kernel called "sqrt", a tensor called "max") gets a '$'.
std::string name(llvm::StringRef N) {
  return isReservedIRWord(N) ? ("$" + N).str() : N.str();
}

class Printer {
public:
  explicit Printer(llvm::raw_ostream &OS) : OS(OS) {}

  void printExpr(const Expr &E, int MinPrec = PrecSelect);
  void printStmt(const Stmt &S, unsigned Indent);
  void printFunc(const Func &F);

private:
  llvm::raw_ostream &OS;
  void printKnobs(const std::vector<Knob> &Knobs);

  void printExprs(const std::vector<Expr> &Es);
  void printBareExpr(const Expr &E);
  void printLine(const StmtNode &S);
  void printBody(const Stmt &Body, unsigned Indent);
  void printShape(const std::vector<Expr> &Shape);
  void indent(unsigned Level) { OS.indent(2 * Level); }
};

void Printer::printExprs(const std::vector<Expr> &Es) {
  for (size_t I = 0; I < Es.size(); ++I) {
    if (I)
      OS << ", ";
    printExpr(Es[I]);
  }
}

void Printer::printExpr(const Expr &E, int MinPrec) {
  if (!E) {
    OS << "<null>";
    return;
  }
  bool Paren = precOf(E) < MinPrec;
  if (Paren)
    OS << '(';
  printBareExpr(E);
  if (Paren)
    OS << ')';
}

void Printer::printBareExpr(const Expr &E) {
  switch (E->Kind) {
  case ExprKind::IntImm: {
    OS << static_cast<const IntImmNode &>(*E).Value;
    if (E->Type != DType::I64)
      OS << '_' << dtypeName(E->Type);
    return;
  }
  case ExprKind::FloatImm:
    OS << formatFloat(static_cast<const FloatImmNode &>(*E).Value, E->Type);
    return;
  case ExprKind::Var: OS << name(static_cast<const VarNode &>(*E).Name); return;
  case ExprKind::Load: {
    const auto &N = static_cast<const LoadNode &>(*E);
    OS << name(N.Buffer) << '[';
    printExprs(N.Indices);
    OS << ']';
    return;
  }
  case ExprKind::Unary: {
    const auto &N = static_cast<const UnaryNode &>(*E);
    OS << (N.Op == UnaryOp::Neg ? "-" : "!");
    // "-5" would read back as one literal and "--x" is hard to read: a
    // negated literal or negation keeps its parentheses.
    bool Paren = N.Op == UnaryOp::Neg &&
                 (N.A->Kind == ExprKind::IntImm || N.A->Kind == ExprKind::FloatImm ||
                  (N.A->Kind == ExprKind::Unary &&
                   static_cast<const UnaryNode &>(*N.A).Op == UnaryOp::Neg));
    if (Paren) {
      OS << '(';
      printExpr(N.A);
      OS << ')';
    } else {
      printExpr(N.A, PrecUnary);
    }
    return;
  }
  case ExprKind::Binary: {
    const auto &N = static_cast<const BinaryNode &>(*E);
    if (N.Op == BinaryOp::Min || N.Op == BinaryOp::Max) {
      OS << binaryOpSpelling(N.Op) << '(';
      printExpr(N.A);
      OS << ", ";
      printExpr(N.B);
      OS << ')';
      return;
    }
    int P = binaryPrec(N.Op);
    printExpr(N.A, P); // left-associative: only the right operand of an
    OS << ' ' << binaryOpSpelling(N.Op) << ' ';
    printExpr(N.B, P + 1); // equal-precedence operator needs parentheses
    return;
  }
  case ExprKind::Select: {
    const auto &N = static_cast<const SelectNode &>(*E);
    printExpr(N.Cond, PrecOr);
    OS << " ? ";
    printExpr(N.TrueValue);
    OS << " : ";
    printExpr(N.FalseValue);
    return;
  }
  case ExprKind::Cast: {
    const auto &N = static_cast<const CastNode &>(*E);
    OS << dtypeName(N.Type) << '(';
    printExpr(N.A);
    OS << ')';
    return;
  }
  case ExprKind::Call: {
    const auto &N = static_cast<const CallNode &>(*E);
    OS << intrinsicName(N.Fn) << '(';
    printExprs(N.Args);
    OS << ')';
    return;
  }
  }
}

void Printer::printLine(const StmtNode &S) {
  if (S.SrcLine)
    OS << " @" << S.SrcLine;
}

void Printer::printBody(const Stmt &Body, unsigned Indent) {
  OS << " {\n";
  printStmt(Body, Indent + 1);
  indent(Indent);
  OS << '}';
}

void Printer::printShape(const std::vector<Expr> &Shape) {
  OS << '[';
  printExprs(Shape);
  OS << ']';
}

void Printer::printStmt(const Stmt &S, unsigned Indent) {
  if (!S)
    return;
  if (S->Kind == StmtKind::Block) {
    // A block has no syntax of its own: its statements follow each other.
    for (const Stmt &C : static_cast<const BlockNode &>(*S).Stmts)
      printStmt(C, Indent);
    return;
  }
  indent(Indent);
  switch (S->Kind) {
  case StmtKind::Block: break;
  case StmtKind::For: {
    const auto &N = static_cast<const ForNode &>(*S);
    OS << "for " << name(N.Var) << " in ";
    printExpr(N.Min);
    OS << "..";
    printExpr(N.Min && N.Extent ? loopEnd(N.Min, N.Extent) : N.Extent);
    OS << ' ' << forKindName(N.Loop);
    if (N.Unroll)
      OS << '(' << N.Unroll << ')';
    printLine(N);
    printBody(N.Body, Indent);
    break;
  }
  case StmtKind::If: {
    const auto &N = static_cast<const IfNode &>(*S);
    OS << "if ";
    printExpr(N.Cond);
    printLine(N);
    printBody(N.Then, Indent);
    if (N.Else) {
      OS << " else";
      printBody(N.Else, Indent);
    }
    break;
  }
  case StmtKind::Let: {
    const auto &N = static_cast<const LetNode &>(*S);
    OS << "let " << name(N.Var) << ": " << (N.Value ? dtypeName(N.Value->Type) : "?") << " = ";
    printExpr(N.Value);
    printLine(N);
    printBody(N.Body, Indent);
    break;
  }
  case StmtKind::Store: {
    const auto &N = static_cast<const StoreNode &>(*S);
    OS << name(N.Buffer);
    if (!N.Indices.empty())
      printShape(N.Indices);
    OS << " = ";
    printExpr(N.Value);
    printLine(N);
    break;
  }
  case StmtKind::Allocate: {
    const auto &N = static_cast<const AllocateNode &>(*S);
    const Buffer &B = N.Buf;
    OS << "alloc " << name(B.Name) << ": " << dtypeName(B.Type);
    printShape(B.Shape);
    OS << ' ' << memScopeName(B.Scope);
    if (!B.Padding.empty()) {
      OS << " pad [";
      for (size_t I = 0; I < B.Padding.size(); ++I)
        OS << (I ? ", " : "") << B.Padding[I];
      OS << ']';
    }
    if (!B.ExtentNames.empty()) {
      OS << " names [";
      for (size_t I = 0; I < B.ExtentNames.size(); ++I)
        OS << (I ? ", " : "") << B.ExtentNames[I];
      OS << ']';
    }
    if (B.Swz)
      OS << " swizzle(" << B.Swz.Bits << ", " << B.Swz.Base << ", " << B.Swz.Shift << ')';
    printLine(N);
    printBody(N.Body, Indent);
    break;
  }
  case StmtKind::Barrier:
    OS << "barrier";
    printLine(*S);
    break;
  case StmtKind::Note:
    OS << "note \"" << static_cast<const NoteNode &>(*S).Text << '"';
    printLine(*S);
    break;
  case StmtKind::AsyncCopy: {
    const auto &N = static_cast<const AsyncCopyNode &>(*S);
    OS << "async_copy " << name(N.Dst);
    printShape(N.DstIndices);
    OS << " <- " << name(N.Src);
    printShape(N.SrcIndices);
    OS << " x " << N.Elems;
    if (N.Valid) {
      OS << " when (";
      printExpr(N.Valid);
      OS << ')';
    }
    printLine(N);
    break;
  }
  case StmtKind::Mbarrier: {
    const auto &N = static_cast<const MbarrierNode &>(*S);
    OS << "mbarrier " << mbarrierOpName(N.Op) << ' ' << name(N.Buffer);
    printShape({N.Index});
    if (N.Value) {
      OS << " (";
      printExpr(N.Value);
      OS << ')';
    }
    printLine(N);
    break;
  }
  case StmtKind::TensorCopy: {
    const auto &N = static_cast<const TensorCopyNode &>(*S);
    OS << "tensor_copy " << name(N.Dst);
    printShape(N.DstIndices);
    OS << " <- " << name(N.Src);
    printShape(N.SrcIndices);
    OS << " box [";
    for (size_t I = 0; I < N.Box.size(); ++I)
      OS << (I ? ", " : "") << N.Box[I];
    OS << "] on " << name(N.Bar);
    printShape({N.BarIndex});
    printLine(N);
    break;
  }
  case StmtKind::Mma: {
    const auto &N = static_cast<const MmaNode &>(*S);
    OS << "mma " << mmaShapeName(N.Shape) << ' ' << name(N.C);
    printShape(N.CIndices);
    OS << " += " << name(N.A);
    printShape(N.AIndices);
    OS << " * " << name(N.B);
    printShape(N.BIndices);
    printLine(N);
    break;
  }
  case StmtKind::LdMatrix: {
    const auto &N = static_cast<const LdMatrixNode &>(*S);
    OS << "ldmatrix x" << N.Count << (N.Trans ? " trans " : " ") << name(N.Dst);
    printShape(N.DstIndices);
    OS << " <- " << name(N.Src);
    printShape(N.SrcIndices);
    printLine(N);
    break;
  }
  case StmtKind::AsyncCommit:
    OS << "async_commit";
    printLine(*S);
    break;
  case StmtKind::AsyncWait:
    OS << "async_wait(" << static_cast<const AsyncWaitNode &>(*S).Pending << ')';
    printLine(*S);
    break;
  case StmtKind::Launch: {
    const auto &N = static_cast<const LaunchNode &>(*S);
    OS << "launch " << name(N.Name) << ' ' << launchClassName(N.Class);
    printKnobs(N.Knobs);
    printLine(N);
    printBody(N.Body, Indent);
    break;
  }
  }
  OS << '\n';
}

/// " schedule(key = value, ...)", or nothing for no knobs.
void Printer::printKnobs(const std::vector<Knob> &Knobs) {
  if (Knobs.empty())
    return;
  OS << " schedule(";
  for (size_t I = 0; I < Knobs.size(); ++I) {
    const Knob &K = Knobs[I];
    OS << (I ? ", " : "") << K.Key << " = ";
    if (!K.Word.empty()) {
      OS << K.Word;
    } else {
      if (K.IsList)
        OS << '[';
      for (size_t J = 0; J < K.Ints.size(); ++J)
        OS << (J ? ", " : "") << K.Ints[J];
      if (K.IsList)
        OS << ']';
    }
    if (!K.SetBy.empty())
      OS << " by \"" << K.SetBy << '"';
    if (K.Line)
      OS << " @" << K.Line;
  }
  OS << ')';
}

void Printer::printFunc(const Func &F) {
  OS << "func " << name(F.Name) << '<';
  for (size_t I = 0; I < F.Sizes.size(); ++I)
    OS << (I ? ", " : "") << name(F.Sizes[I]);
  OS << ">(";
  for (size_t I = 0; I < F.Params.size(); ++I) {
    const Buffer &B = F.Params[I];
    OS << (I ? ", " : "") << (B.Role == BufferRole::Output ? "out " : "in ") << name(B.Name)
       << ": " << dtypeName(B.Type);
    if (!B.Shape.empty())
      printShape(B.Shape);
  }
  OS << ')';
  printKnobs(F.Schedule);
  OS << " {\n";
  printStmt(F.Body, 1);
  OS << "}\n";
}

} // namespace

void printModule(const Module &M, llvm::raw_ostream &OS) {
  Printer P(OS);
  for (size_t I = 0; I < M.Funcs.size(); ++I) {
    if (I)
      OS << '\n';
    P.printFunc(M.Funcs[I]);
  }
}

void printFunc(const Func &F, llvm::raw_ostream &OS) { Printer(OS).printFunc(F); }

std::string toString(const Expr &E) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  Printer(OS).printExpr(E);
  return OS.str();
}

std::string toString(const Stmt &S) {
  std::string Str;
  llvm::raw_string_ostream OS(Str);
  Printer(OS).printStmt(S, 0);
  return OS.str();
}

} // namespace tdsl::ir
