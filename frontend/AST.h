//===- AST.h - The checked syntax tree of a .tdsl file --------------------===//
//
// The parser builds these nodes; sema fills in the fields marked "sema"
// (resolved names, dtypes, index ranges, shapes). Everything after sema
// (lowering, the reference evaluator) reads only checked trees.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_FRONTEND_AST_H
#define TDSL_FRONTEND_AST_H

#include "ir/DType.h"

#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tdsl::ast {

/// An affine form c + sum(coeff_s * s) over size symbols (dims, extents) or
/// over index variables (subscripts). Keys are symbol or index names; a
/// zero coefficient is never stored.
struct Affine {
  int64_t Constant = 0;
  std::map<std::string, int64_t> Coeffs;

  static Affine constant(int64_t C) { Affine A; A.Constant = C; return A; }
  static Affine symbol(const std::string &S) { Affine A; A.Coeffs[S] = 1; return A; }
  bool isConstant() const { return Coeffs.empty(); }
  bool operator==(const Affine &O) const {
    return Constant == O.Constant && Coeffs == O.Coeffs;
  }
  bool operator!=(const Affine &O) const { return !(*this == O); }
  Affine operator+(const Affine &O) const;
  Affine operator-(const Affine &O) const;
  Affine scaled(int64_t K) const;
  /// "M + N - 1", "2 * i + r", "7".
  std::string str() const;
  /// Value under a binding of every name it mentions (missing names: 0).
  int64_t evaluate(const std::map<std::string, int64_t> &Values) const;
};

enum class ExprKind { IntLit, FloatLit, Name, Access, Unary, Binary, Select, Call };

enum class UnaryOp { Neg, Not };
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Lt, Le, Gt, Ge, Eq, Ne, And, Or };

/// What a Name resolves to (sema).
enum class NameKind { Unresolved, Index, Size, Tensor };

struct Expr {
  ExprKind Kind;
  llvm::SMLoc Loc;
  DType Type = DType::F32; ///< sema: the type of the value.
  explicit Expr(ExprKind K, llvm::SMLoc L) : Kind(K), Loc(L) {}
  virtual ~Expr() = default;
};
using ExprPtr = std::unique_ptr<Expr>;

struct IntLit : Expr {
  int64_t Value;
  IntLit(llvm::SMLoc L, int64_t V) : Expr(ExprKind::IntLit, L), Value(V) {}
};

struct FloatLit : Expr {
  double Value;
  FloatLit(llvm::SMLoc L, double V) : Expr(ExprKind::FloatLit, L), Value(V) {}
};

struct Tensor;

/// A bare identifier: an index variable, a size symbol used as a value, or a
/// rank-0 tensor (a scalar parameter or a rank-0 intermediate).
struct Name : Expr {
  std::string Id;
  NameKind Resolved = NameKind::Unresolved; ///< sema
  Tensor *Target = nullptr;                 ///< sema, for NameKind::Tensor
  Name(llvm::SMLoc L, std::string I) : Expr(ExprKind::Name, L), Id(std::move(I)) {}
};

/// T[s0, s1, ...] (at least one subscript).
struct Access : Expr {
  std::string TensorName;
  std::vector<ExprPtr> Subscripts;
  Tensor *Target = nullptr;          ///< sema
  std::vector<Affine> AffineSubs;    ///< sema: each subscript over index names
  Access(llvm::SMLoc L, std::string T) : Expr(ExprKind::Access, L), TensorName(std::move(T)) {}
};

struct Unary : Expr {
  UnaryOp Op;
  ExprPtr Operand;
  Unary(llvm::SMLoc L, UnaryOp O, ExprPtr E)
      : Expr(ExprKind::Unary, L), Op(O), Operand(std::move(E)) {}
};

struct Binary : Expr {
  BinaryOp Op;
  ExprPtr LHS, RHS;
  DType OperandType = DType::F32; ///< sema: type both operands convert to
  Binary(llvm::SMLoc L, BinaryOp O, ExprPtr A, ExprPtr B)
      : Expr(ExprKind::Binary, L), Op(O), LHS(std::move(A)), RHS(std::move(B)) {}
};

/// c ? a : b
struct Select : Expr {
  ExprPtr Cond, Then, Else;
  Select(llvm::SMLoc L, ExprPtr C, ExprPtr T, ExprPtr E)
      : Expr(ExprKind::Select, L), Cond(std::move(C)), Then(std::move(T)), Else(std::move(E)) {}
};

/// Math functions (exp, log, sqrt, rsqrt, tanh, sigmoid, relu, gelu, erf,
/// abs, pow, max, min) and casts (f16(x), bf16(x), f32(x), tf32(x), f64(x),
/// i8(x), i32(x)).
enum class Callee {
  Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, Gelu, Erf, Abs, Pow, Max, Min,
  Cast,
};
struct Call : Expr {
  std::string FuncName;
  std::vector<ExprPtr> Args;
  Callee Fn = Callee::Exp;        ///< sema
  DType CastTo = DType::F32;      ///< sema, for Callee::Cast
  DType ArgType = DType::F32;     ///< sema: type the arguments convert to
  Call(llvm::SMLoc L, std::string F) : Expr(ExprKind::Call, L), FuncName(std::move(F)) {}
};

/// A dimension as written (an affine expression of size symbols and
/// integers) and, after sema, its affine form over size symbols.
struct Dim {
  ExprPtr Written;
  Affine Value; ///< sema
};

enum class TensorRole { Input, Output, Intermediate };

/// Every named tensor of a kernel: parameters (inputs, rank-0 ones are the
/// scalars), outputs and intermediates. Intermediates are created by sema.
struct Tensor {
  std::string Name;
  llvm::SMLoc Loc;
  TensorRole Role = TensorRole::Input;
  DType Type = DType::F32;
  bool TypeAnnotated = true;       ///< false for an intermediate whose dtype is inferred
  std::vector<Dim> Dims;           ///< as written (empty for intermediates)
  std::vector<Affine> Shape;       ///< sema: extents over size symbols
  struct Stmt *Definition = nullptr; ///< sema: the statement writing it
};

enum class AssignOp { Assign, Add, Mul, Max, Min };

/// T[i, j] op expr   or   T[i, j]: dtype op expr
struct Stmt {
  llvm::SMLoc Loc;
  std::string TargetName;
  llvm::SMLoc TargetLoc;
  std::vector<ExprPtr> LhsIndices; ///< as written; sema requires plain, distinct names
  std::optional<DType> Annotation;
  llvm::SMLoc AnnotationLoc;
  AssignOp Op = AssignOp::Assign;
  ExprPtr Value;

  // sema
  Tensor *Target = nullptr;
  std::vector<std::string> Indices;   ///< the lhs index names, in order
  std::vector<std::string> Reduced;   ///< right-only indices, first-use order
  std::map<std::string, Affine> Ranges; ///< every index: extent over size symbols
  DType ValueType = DType::F32; ///< type Value converts to before op/accumulate
};

/// schedule NAME { key = value ... }: recorded by the parser, read by the
/// passes that own each knob.
struct ScheduleEntry {
  std::string Key;
  llvm::SMLoc Loc;
  std::vector<int64_t> Ints;     ///< key = 64  or  key = [64, 64, 32]
  bool IsList = false;           ///< written with brackets
  std::string Word;              ///< key = on | off | swizzle | ...
};
struct Schedule {
  std::string KernelName;
  llvm::SMLoc Loc;
  std::vector<ScheduleEntry> Entries;
};

struct Kernel {
  std::string Name;
  llvm::SMLoc Loc;
  std::vector<std::unique_ptr<Tensor>> Inputs;   ///< in order (scalars included)
  std::vector<std::unique_ptr<Tensor>> Outputs;  ///< in order
  std::vector<std::unique_ptr<Stmt>> Body;
  // sema
  std::vector<std::unique_ptr<Tensor>> Intermediates; ///< in definition order
  std::vector<std::string> SizeSymbols; ///< first-appearance order in the signature
  const Schedule *Sched = nullptr;
  Tensor *lookup(const std::string &Name) const;
};

/// The factors of E as a product: the operands of a tree of `*` whose
/// nodes all compute in one type (no conversion between them), left to
/// right; E itself when it is no product.
void productFactors(const Expr &E, std::vector<const Expr *> &Out);

/// E read as Sign * (P) / D1 / D2 ...: P the product productFactors sees
/// (Core), Divisors the Di, and Negated for an odd number of leading
/// negations. -(A * B) / s gives Core A * B, Divisors {s}, Negated.
struct ScaledProduct {
  const Expr *Core = nullptr;
  std::vector<const Expr *> Divisors;
  bool Negated = false;
};
ScaledProduct scaledProduct(const Expr &E);
/// Calls Fn on E and on every expression inside it, outermost first, left
/// to right (subscripts of an access included).
void forEachExpr(const Expr &E, const std::function<void(const Expr &)> &Fn);
/// Whether E uses any of the index names Names (as a value or in a
/// subscript).
bool usesIndex(const Expr &E, const std::vector<std::string> &Names);

struct Module {
  std::string FileName;
  std::vector<std::unique_ptr<Kernel>> Kernels;
  std::vector<std::unique_ptr<Schedule>> Schedules;
};

} // namespace tdsl::ast

#endif // TDSL_FRONTEND_AST_H
