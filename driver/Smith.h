//===- Smith.h - Random valid .tdsl programs for tdsl-smith ---------------===//
//
// The program model tdsl-smith generates, prints and shrinks. A Program is
// one kernel kept in a structured form (not text) so that the minimizer can
// delete statements, replace expressions by their operands and shrink sizes,
// then print the result again; whether a shrunk program is still valid is
// left to the front end, which the caller runs on every candidate.
//
// Generation is valid by construction (LANGUAGE.md): every index gets a
// plain subscript that gives its range, affine subscripts are provably in
// bounds (i + r into a dim L + R - 1, 2 * j + 1 into 2 * N, constants 0),
// tensors are read only after their statement and with their rank, and
// every output is written once. Each expression carries a bound on its
// magnitude, so values stay finite; in the exact flavour every value is a
// small integer (exact inputs in [-4, 4], no division or transcendental
// function on floats, magnitudes below 2^20), which makes every stage of
// the pipeline bit-identical whatever order a pass sums in.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_DRIVER_SMITH_H
#define TDSL_DRIVER_SMITH_H

#include "ir/DType.h"

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tdsl::smith {

/// An expression as it will be printed: fully parenthesized, so the tree
/// is the meaning whatever the precedence table says.
struct Expr {
  enum Kind { Lit, Access, Name, Unary, Binary, Call, Select } K = Lit;
  std::string Text;              ///< literal, tensor, name, operator or function
  std::vector<std::string> Subs; ///< Access: subscripts as written
  std::vector<Expr> Args;        ///< operands
};

/// Expressions for the generators (Smith.cpp, SmithChains.cpp): a literal,
/// and a node of kind K with its text and operands.
Expr lit(const std::string &Text);
Expr node(Expr::Kind K, const std::string &Text, std::vector<Expr> Args);

struct Tensor {
  std::string Name;
  DType Type = DType::F32;
  std::vector<std::string> Dims; ///< as written: "M", "3", "L + R - 1", "2 * N"
};

struct Stmt {
  std::string Target;
  std::vector<std::string> Indices;
  std::optional<DType> Annotation;
  std::string Op; ///< "=", "+=", "*=", "max=", "min="
  Expr Value;
};

struct Program {
  std::string Kernel = "smith";
  std::vector<Tensor> Inputs, Outputs;
  std::vector<Stmt> Body;
  /// Every size symbol with the value --check runs it at.
  std::map<std::string, int64_t> Sizes;
  /// All values are small integers: stages must agree bit for bit.
  bool Exact = true;
  /// schedule-block entries (key, value as written); empty: no block.
  std::vector<std::pair<std::string, std::string>> Schedule;
  /// The launches the fusion stage must plan for it (-1: not known). The
  /// chains flavour knows it by construction; print() writes it as a
  /// `# launches: N` line, which tdsl-smith checks.
  int Launches = -1;
};

/// The .tdsl text of P (one kernel, and its schedule block if any).
std::string print(const Program &P);
/// "M=3,N=17" for --sizes.
std::string sizesString(const Program &P);

struct GenOptions {
  bool Exact = true;
  /// Interpreter work per program: the sum over statements of the product
  /// of their index extents. Sizes shrink until the program fits.
  int64_t WorkBudget = 60000;
  unsigned MaxStmts = 7;
  unsigned MaxInputs = 6;
  /// Some statements are GEMMs of two f16 or bf16 inputs (either operand
  /// layout), the shape the tensor-core path takes.
  bool Contractions = true;
};

/// A random valid program.
Program generate(std::mt19937_64 &Rng, const GenOptions &Opts);

/// A program that meets one fusion rule (graph/Fuse.h) or just misses it:
/// a row chain, a contraction's epilogue, sibling contractions, an inlined
/// map, each with drawn shapes, dtypes and layouts, and its launches known
/// (Program::Launches). Values are small integers (exact).
Program generateChain(std::mt19937_64 &Rng);

/// Every program one simplification away from P, most promising first:
/// statements deleted, expressions replaced by an operand or a literal,
/// unused inputs dropped, sizes shrunk. Some may be invalid; the caller
/// runs the front end on each.
std::vector<Program> shrinkCandidates(const Program &P);

} // namespace tdsl::smith

#endif // TDSL_DRIVER_SMITH_H
