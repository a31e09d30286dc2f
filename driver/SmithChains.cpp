//===- SmithChains.cpp - Programs whose fusion is known in advance --------===//
//
// tdsl-smith's chains flavour (driver/Smith.h, generateChain): each program
// is one of the fusion stage's rules (graph/Fuse.h) met or just missed, so
// its number of launches is known by construction and checked beside its
// values. The shapes, dtypes, operand layouts and operations are drawn;
// the values stay small integers, so every stage is bit-exact, except in
// the softmax-shaped chains (an exp), checked within the float tolerance.
//
//===----------------------------------------------------------------------===//
#include "driver/Smith.h"

#include <string>
#include <vector>

namespace tdsl::smith {

namespace {

Expr at(const std::string &T, std::vector<std::string> Subs) {
  return {Expr::Access, T, std::move(Subs), {}};
}
Expr bin(const std::string &Op, Expr A, Expr B) {
  return node(Expr::Binary, Op, {std::move(A), std::move(B)});
}
Expr call(const std::string &F, std::vector<Expr> Args) {
  return node(Expr::Call, F, std::move(Args));
}
Stmt stmt(const std::string &T, std::vector<std::string> Idx, const std::string &Op, Expr V) {
  return {T, std::move(Idx), std::nullopt, Op, std::move(V)};
}

class ChainGenerator {
public:
  explicit ChainGenerator(std::mt19937_64 &R) : Rng(R) {}
  Program run();

private:
  std::mt19937_64 &Rng;
  Program P;

  bool chance(double Pr) { return std::uniform_real_distribution<double>(0, 1)(Rng) < Pr; }
  template <typename T> const T &pickOf(const std::vector<T> &V) {
    return V[std::uniform_int_distribution<size_t>(0, V.size() - 1)(Rng)];
  }
  /// A size symbol S at a drawn value from Values.
  std::string size(const std::string &S, const std::vector<int64_t> &Values) {
    P.Sizes[S] = pickOf(Values);
    return S;
  }
  void input(const std::string &N, DType T, std::vector<std::string> Dims) {
    P.Inputs.push_back({N, T, std::move(Dims)});
  }
  void output(const std::string &N, DType T, std::vector<std::string> Dims) {
    P.Outputs.push_back({N, T, std::move(Dims)});
  }
  /// A[x, k] or A[k, x] (the layout drawn), declared over extents X and K.
  Expr operand(const std::string &N, DType T, const std::string &X, const std::string &XExt,
               const std::string &KExt) {
    bool KFirst = chance(0.4);
    input(N, T,
          KFirst ? std::vector<std::string>{KExt, XExt} : std::vector<std::string>{XExt, KExt});
    return at(N, KFirst ? std::vector<std::string>{"k", X} : std::vector<std::string>{X, "k"});
  }
  DType matmulType() { return pickOf(std::vector<DType>{DType::F16, DType::BF16, DType::F32}); }

  void rows(bool Fuse);
  void epilogue(bool Fuse);
  void siblings(bool Fuse);
  void inlined(bool Fuse);
  void beside(bool Fuse);
};

const std::vector<int64_t> RowCounts = {1, 3, 17, 33};
const std::vector<int64_t> RowLengths = {1, 7, 64, 129, 300};
const std::vector<int64_t> MatDims = {1, 3, 16, 17, 33};

/// A row chain: a reduction along the columns, maybe a value per row and a
/// second reduction, then a map per element: one launch. Missed: the map
/// reads the reduction at row 0, not its own row (two; with a value per
/// row or a second reduction between, what the map reads at row 0 would
/// end the chain before it, so there are none).
void ChainGenerator::rows(bool Fuse) {
  std::string R = size("R", RowCounts), C = size("C", RowLengths);
  DType T = pickOf(std::vector<DType>{DType::F32, DType::F16});
  input("X", T, {R, C});
  Expr X = at("X", {"r", "c"});
  std::string Red = chance(0.5) ? "max=" : "+=";
  Expr Term = chance(0.5) ? X : bin("*", X, lit("2"));
  P.Body.push_back(stmt("s", {"r"}, Red, Term));
  std::string Held = "s";
  if (Fuse && Red == "max=" && chance(0.6)) {
    // Softmax's sum after its max: folded with it in one sweep (online)
    // where the row is re-read, as for 8200 elements (whole runs), 8201
    // (peeled) or short odd lengths (one element at a time). exp makes it
    // a float program.
    P.Sizes[C] = pickOf(std::vector<int64_t>{7, 300, 8200, 8201});
    P.Body.push_back(stmt("z", {"r"}, "+=", call("exp", {bin("-", Term, at("s", {"r"}))})));
    P.Exact = false;
    Held = "z";
  } else if (Fuse && chance(0.5)) {
    P.Body.push_back(stmt("m", {"r"}, "=", bin("+", at("s", {"r"}), lit("1"))));
    Held = "m";
  }
  if (Fuse && chance(0.4)) {
    P.Body.push_back(stmt("q", {"r"}, "+=", bin("-", X, at(Held, {"r"}))));
    Held = "q";
  }
  output("Y", DType::F32, {R, C});
  P.Body.push_back(stmt("Y", {"r", "c"}, "=", bin("-", X, at(Held, {Fuse ? "r" : "0"}))));
  P.Launches = Fuse ? 1 : 2;
}

/// A GEMM and elementwise maps of its result at its own indices (a bias,
/// a scale, a second output transposed): one launch. Missed: a map reads
/// the result at column 0 as well, so the result is stored and each map
/// is a launch of its own (two or three).
void ChainGenerator::epilogue(bool Fuse) {
  std::string M = size("M", MatDims), N = size("N", MatDims), K = size("K", MatDims);
  DType T = matmulType();
  Expr A = operand("A", T, "m", M, K), B = operand("B", T, "n", N, K);
  input("bias", DType::F32, {N});
  P.Body.push_back(stmt("acc", {"m", "n"}, "+=", bin("*", A, B)));
  Expr Acc = at("acc", {"m", "n"});
  Expr V = bin("+", bin("*", Acc, lit("2")), at("bias", {"n"}));
  if (!Fuse)
    V = bin("+", V, at("acc", {"m", "0"}));
  output("Y", DType::F32, {M, N});
  P.Body.push_back(stmt("Y", {"m", "n"}, "=", V));
  bool Second = chance(0.5);
  if (Second) {
    output("Z", DType::F32, {N, M});
    P.Body.push_back(stmt("Z", {"n", "m"}, "=", call("max", {Acc, lit("0")})));
  }
  P.Launches = Fuse ? 1 : Second ? 3 : 2;
}

/// Two GEMMs over one operand and their common map (a gated MLP's shape):
/// one launch. Missed: the second one's columns range over another size,
/// each then its own launch with its own output (two).
void ChainGenerator::siblings(bool Fuse) {
  std::string Tn = size("T", MatDims), D = size("D", MatDims), F = size("F", MatDims);
  DType T = matmulType();
  bool Share = chance(0.5); // W1 is shared (u = X2 . W1), else X (u = X . W2)
  Expr X = operand("X", T, "t", Tn, D);
  Expr W1 = operand("W1", T, "f", F, D);
  if (Fuse) {
    Expr Second = Share ? operand("X2", T, "t", Tn, D) : operand("W2", T, "f", F, D);
    P.Body.push_back(stmt("g", {"t", "f"}, "+=", bin("*", X, W1)));
    P.Body.push_back(
        stmt("u", {"t", "f"}, "+=", Share ? bin("*", Second, W1) : bin("*", X, Second)));
    output("Y", DType::F32, {Tn, F});
    P.Body.push_back(
        stmt("Y", {"t", "f"}, "=",
             bin("+", bin("*", at("g", {"t", "f"}), at("u", {"t", "f"})), at("g", {"t", "f"}))));
  } else {
    std::string E = size("E", {2, 5, 19});
    input("W2", T, {D, E});
    output("Y", DType::F32, {Tn, F});
    output("V", DType::F32, {Tn, E});
    P.Body.push_back(stmt("Y", {"t", "f"}, "+=", bin("*", X, W1)));
    P.Body.push_back(stmt("V", {"t", "e"}, "+=", bin("*", X, at("W2", {"k", "e"}))));
    // The reduced index is k in both (operand() names it so).
  }
  P.Launches = Fuse ? 1 : 2;
}

/// A cheap map read once per point: computed where it is read, one
/// launch. Missed: a division per row read at every column is staged
/// (two).
void ChainGenerator::inlined(bool Fuse) {
  std::string I = size("I", RowCounts), J = size("J", RowLengths);
  input("X", DType::F32, {I, J});
  Expr X = at("X", {"i", "j"});
  output("Y", DType::F32, {I, J});
  if (Fuse) {
    P.Body.push_back(stmt("t", {"i", "j"}, "=", bin("+", bin("*", X, lit("2")), lit("1"))));
    P.Body.push_back(stmt("Y", {"i", "j"}, "=",
                          bin("-", bin("*", at("t", {"i", "j"}), at("t", {"i", "j"})), X)));
  } else {
    P.Body.push_back(stmt("t", {"i"}, "=", bin("/", at("X", {"i", "0"}), lit("4.0"))));
    P.Body.push_back(stmt("Y", {"i", "j"}, "=", bin("+", X, at("t", {"i"}))));
  }
  P.Launches = Fuse ? 1 : 2;
}

/// Maps over one domain that read a tensor alike, each an output (an
/// activation and its scaled copy, say): one launch, with a later map that
/// reads an earlier one's output at its own element computing it again.
/// Missed: the second reads the first's output at another element (it
/// goes through memory), or reads X transposed (tile-transpose's): two.
void ChainGenerator::beside(bool Fuse) {
  bool Rank2 = chance(0.7);
  std::string I = size("I", RowCounts);
  std::string J = Rank2 ? (Fuse || chance(0.5) ? size("J", RowLengths) : I) : "";
  std::vector<std::string> Dims = Rank2 ? std::vector<std::string>{I, J} : std::vector<std::string>{I};
  std::vector<std::string> Own = Rank2 ? std::vector<std::string>{"i", "j"}
                                       : std::vector<std::string>{"i"};
  auto Type = [&] { return pickOf(std::vector<DType>{DType::F32, DType::F16}); };
  input("X", Type(), Dims);
  Expr X = at("X", Own);
  bool Bias = Rank2 && chance(0.5);
  if (Bias)
    input("b", Type(), {J});
  Expr Shifted = Bias ? bin("+", X, at("b", {"j"})) : bin("-", X, lit("1"));
  output("Y", Type(), Dims);
  P.Body.push_back(stmt("Y", Own, "=", bin("*", Shifted, lit("2"))));
  output("Z", Type(), Dims);
  if (Fuse) {
    Expr V = call("max", {Shifted, lit("0")});
    if (chance(0.5))
      V = bin("+", V, at("Y", Own)); // Y computed again in Z's place
    P.Body.push_back(stmt("Z", Own, "=", V));
    if (chance(0.5)) {
      output("W", Type(), Dims);
      P.Body.push_back(stmt("W", Own, "=", bin("*", X, X)));
    }
    P.Launches = 1;
    return;
  }
  std::vector<std::string> Other = Own;
  if (J == I && chance(0.5)) {
    std::swap(Other[0], Other[1]); // X[j, i]: a transposed read
    P.Body.push_back(stmt("Z", Own, "=", bin("+", at("X", Other), lit("1"))));
  } else {
    Other.back() = "0"; // Y's first element of the row
    P.Body.push_back(stmt("Z", Own, "=", bin("+", at("Y", Other), X)));
  }
  P.Launches = 2;
}

Program ChainGenerator::run() {
  P.Exact = true; // rows() may clear it
  bool Fuse = chance(0.6);
  switch (std::uniform_int_distribution<int>(0, 4)(Rng)) {
  case 0:
    rows(Fuse);
    break;
  case 1:
    epilogue(Fuse);
    break;
  case 2:
    siblings(Fuse);
    break;
  case 3:
    inlined(Fuse);
    break;
  default:
    beside(Fuse);
    break;
  }
  return P;
}

} // namespace

Program generateChain(std::mt19937_64 &Rng) { return ChainGenerator(Rng).run(); }

} // namespace tdsl::smith
