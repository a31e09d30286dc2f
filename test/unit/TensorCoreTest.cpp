//===- TensorCoreTest.cpp - mma, ldmatrix, zero-fill copies, swizzle vs PTX ===//
//
// The interpreter's tensor-core statements checked against the PTX ISA, read
// independently of the interpreter. Each expected value comes from the plain
// matrix product or from these sections of the ISA (PTX ISA 9.x numbering):
//   9.7.14.5.7   Matrix Fragments for mma.m16n8k8 (.tf32 A, B; .f32 C/D)
//   9.7.14.5.8   Matrix Fragments for mma.m16n8k16 with floating point type
//   9.7.14.5.10  Matrix Fragments for mma.m16n8k32 (.s8 A, B; .s32 C/D)
//   9.7.14.5.15  Warp-level matrix load instruction: ldmatrix (Figure 104)
//   cp.async     "If the source data is ignored then zeros will be copied to
//                destination dst" (ignore-src / src-size 0)
// The fragment tables all use groupID = %laneid >> 2 and threadID_in_group =
// %laneid % 4; the kernels below bind them as `g` and `t`.
//
// Inputs are small integers, so every f32 sum is exact in any order and the
// results compare with ==.
//
//===----------------------------------------------------------------------===//
#include "ir/Interpreter.h"
#include "ir/Verifier.h"
#include "test/unit/ParseIR.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace tdsl;
using namespace tdsl::ir;

namespace {

//===----------------------------------------------------------------------===//
// Running IR text
//===----------------------------------------------------------------------===//

using Args = std::map<std::string, TensorData>;

TensorData tensor(DType T, std::vector<int64_t> Shape,
                  const std::function<double(int64_t, int64_t)> &Value) {
  TensorData D;
  D.Type = T;
  D.Shape = std::move(Shape);
  int64_t Cols = D.Shape.back();
  for (int64_t X = 0; X < D.numElements(); ++X)
    D.Values.push_back(Value(X / Cols, X % Cols));
  return D;
}

/// An output: poisoned, so an element the kernel never writes shows up.
TensorData output(DType T, std::vector<int64_t> Shape) {
  bool Int = T == DType::I8 || T == DType::I32;
  return tensor(T, std::move(Shape), [Int](int64_t, int64_t) { return Int ? -99.0 : NAN; });
}

/// Parses Text (one function), checks that the verifier accepts it when
/// Verify is set, and runs it.
InterpResult run(const std::string &Text, Args &A, bool Verify = true) {
  Module M = test::parseIR(Text);
  if (M.Funcs.empty())
    return {false, "no function parsed"};
  if (Verify) {
    std::vector<std::string> Problems = verifyModule(M);
    for (const std::string &P : Problems)
      ADD_FAILURE() << "verifier: " << P << "\n" << Text;
  }
  return interpret(M.Funcs.front(), {}, A);
}

std::string plus(const std::string &E, int64_t K) { return K ? E + " + " + std::to_string(K) : E; }

//===----------------------------------------------------------------------===//
// The mma fragment layouts, transcribed from the ISA tables. Each gives the
// row and column, as IR expressions of g and t, of element i of a lane's
// fragment (a_i, b_i, c_i in the ISA's order, low to high).
//===----------------------------------------------------------------------===//

struct Coord {
  std::string Row, Col;
};

enum class Shape { K16, K8, K32 };

/// Multiplicand A (16 x K).
Coord aCoord(Shape S, int I) {
  switch (S) {
  case Shape::K16: // 9.7.14.5.8, .f16 / .bf16
    // row = groupID for ai where 0 <= i < 2 || 4 <= i < 6, groupID + 8 otherwise
    // col = (threadID_in_group * 2) + (i & 0x1) (+ 8 for i >= 4)
    return {(I < 2 || (I >= 4 && I < 6)) ? "g" : "g + 8",
            plus("t * 2", (I & 1) + (I >= 4 ? 8 : 0))};
  case Shape::K8: // 9.7.14.5.7, .tf32
    // row = groupID for a0 and a2, groupID + 8 for a1 and a3
    // col = threadID_in_group for a0 and a1, threadID_in_group + 4 for a2 and a3
    return {(I == 0 || I == 2) ? "g" : "g + 8", I < 2 ? "t" : "t + 4"};
  case Shape::K32: // 9.7.14.5.10, .s8
    // row = groupID for ai where 0 <= i < 4 || 8 <= i < 12, groupID + 8 otherwise
    // col = (threadID_in_group * 4) + (i & 0x3) (+ 16 for i >= 8)
    return {(I < 4 || (I >= 8 && I < 12)) ? "g" : "g + 8",
            plus("t * 4", (I & 3) + (I >= 8 ? 16 : 0))};
  }
  return {};
}

/// Multiplicand B (K x 8).
Coord bCoord(Shape S, int I) {
  switch (S) {
  case Shape::K16: // row = (threadID_in_group * 2) + (i & 0x1) (+ 8 for i >= 2), col = groupID
    return {plus("t * 2", (I & 1) + (I >= 2 ? 8 : 0)), "g"};
  case Shape::K8: // row = threadID_in_group for b0, threadID_in_group + 4 for b1, col = groupID
    return {I == 0 ? "t" : "t + 4", "g"};
  case Shape::K32: // row = (threadID_in_group * 4) + (i & 0x3) (+ 16 for i >= 4), col = groupID
    return {plus("t * 4", (I & 3) + (I >= 4 ? 16 : 0)), "g"};
  }
  return {};
}

/// Accumulators C / D (16 x 8), the same for all three shapes:
/// row = groupID for ci where i < 2, groupID + 8 for i >= 2;
/// col = (threadID_in_group * 2) + (i & 0x1).
Coord cCoord(int I) { return {I < 2 ? "g" : "g + 8", plus("t * 2", I & 1)}; }

/// One mma configuration: the operand types and the sizes of a lane's part.
struct MmaCase {
  const char *Name; ///< for messages
  const char *ShapeName;
  Shape S;
  int K;
  const char *In;   ///< dtype of the global A and B
  const char *Frag; ///< dtype of the A and B fragments
  const char *Acc;  ///< dtype of C, D and the C fragment
  int ASize, BSize; ///< elements per lane (C always has 4)
  DType inType() const { return *parseDType(In); }
  DType accType() const { return *parseDType(Acc); }
};

const MmaCase F16Case = {"f16", "m16n8k16", Shape::K16, 16, "f16", "f16", "f32", 8, 4};
const MmaCase BF16Case = {"bf16", "m16n8k16", Shape::K16, 16, "bf16", "bf16", "f32", 8, 4};
// The global operands are f32; the fragment stores round them to tf32
// (exactly, for these small integers), as cvt.rna.tf32.f32 would.
const MmaCase TF32Case = {"tf32", "m16n8k8", Shape::K8, 8, "f32", "tf32", "f32", 4, 2};
const MmaCase I8Case = {"i8", "m16n8k32", Shape::K32, 32, "i8", "i8", "i32", 16, 8};

struct MmaOptions {
  int Warps = 1;        ///< warp w computes rows 16w.. of A, C and D
  bool ZeroC = true;    ///< C fragment starts at 0 rather than loaded from C
  int Offset = 0;       ///< operands start this far into their fragment buffers
  int ActiveLanes = 32; ///< fewer: only lanes below this execute the mma
  int AFragElems = -1;  ///< the A fragment's size (default: Offset + ASize)
};

/// D = C + A x B for each warp's 16 x 8 tile: fragments loaded with plain
/// per-lane stores by the ISA layouts, one mma, D stored by the C layout.
std::string mmaKernel(const MmaCase &C, const MmaOptions &O = {}) {
  int M = 16 * O.Warps;
  std::string Cast = std::string(C.In) == C.Frag ? "" : C.Frag;
  std::string Zero = std::string(C.Acc) == "i32" ? "0_i32" : "0.0";
  int ASz = O.AFragElems >= 0 ? O.AFragElems : O.Offset + C.ASize;
  std::ostringstream S;
  S << "func mma_" << C.Name << "<>(in A: " << C.In << "[" << M << ", " << C.K
    << "], in B: " << C.In << "[" << C.K * O.Warps << ", 8], in C: " << C.Acc << "[" << M
    << ", 8], out D: " << C.Acc << "[" << M << ", 8]) {\n"
    << "  launch k0 generic {\n"
    << "    for b in 0..1 block.x {\n"
    << "      for tx in 0.." << 32 * O.Warps << " thread.x {\n"
    << "        # m0, k0: the rows of A and C, and of B, of this thread's warp\n"
    << "        let m0: i64 = tx / 32 * 16 {\n"
    << "        let k0: i64 = tx / 32 * " << C.K << " {\n"
    << "        # groupID and threadID_in_group of the ISA's fragment tables\n"
    << "        let g: i64 = tx % 32 / 4 {\n"
    << "        let t: i64 = tx % 4 {\n"
    << "          alloc Af: " << C.Frag << "[" << ASz << "] fragment {\n"
    << "          alloc Bf: " << C.Frag << "[" << O.Offset + C.BSize << "] fragment {\n"
    << "          alloc Cf: " << C.Acc << "[" << O.Offset + 4 << "] fragment {\n";
  for (int I = 0; I < C.ASize && O.Offset + I < ASz; ++I) {
    Coord P = aCoord(C.S, I);
    std::string Load = "A[m0 + " + P.Row + ", " + P.Col + "]";
    S << "            Af[" << O.Offset + I
      << "] = " << (Cast.empty() ? Load : Cast + "(" + Load + ")") << "\n";
  }
  for (int I = 0; I < C.BSize; ++I) {
    Coord P = bCoord(C.S, I);
    std::string Load = "B[k0 + " + P.Row + ", " + P.Col + "]";
    S << "            Bf[" << O.Offset + I
      << "] = " << (Cast.empty() ? Load : Cast + "(" + Load + ")") << "\n";
  }
  for (int I = 0; I < 4; ++I) {
    Coord P = cCoord(I);
    S << "            Cf[" << O.Offset + I
      << "] = " << (O.ZeroC ? Zero : "C[m0 + " + P.Row + ", " + P.Col + "]") << "\n";
  }
  std::string Mma = std::string("mma ") + C.ShapeName + " Cf[" + std::to_string(O.Offset) +
                    "] += Af[" + std::to_string(O.Offset) + "] * Bf[" + std::to_string(O.Offset) +
                    "]";
  if (O.ActiveLanes < 32)
    S << "            if tx % 32 < " << O.ActiveLanes << " {\n              " << Mma
      << "\n            }\n";
  else
    S << "            " << Mma << "\n";
  for (int I = 0; I < 4; ++I) {
    Coord P = cCoord(I);
    S << "            D[m0 + " << P.Row << ", " << P.Col << "] = Cf[" << O.Offset + I << "]\n";
  }
  S << "          }\n          }\n          }\n"
    << "        }\n        }\n        }\n        }\n"
    << "      }\n    }\n  }\n}\n";
  return S.str();
}

/// Inputs for mmaKernel: A, B and C as small integers with no symmetry (so
/// that a wrong row or column changes the product), D poisoned.
Args mmaArgs(const MmaCase &C, int Warps = 1) {
  int64_t M = 16 * Warps, K = C.K;
  bool Int = C.inType() == DType::I8;
  Args A;
  A["A"] = tensor(C.inType(), {M, K}, [Int](int64_t R, int64_t X) {
    return Int ? double((R * 37 + X * 11) % 61 - 30) : double((R * 3 + X * 5) % 11 - 5);
  });
  A["B"] = tensor(C.inType(), {K * Warps, 8}, [Int](int64_t X, int64_t Col) {
    return Int ? double((X * 13 + Col * 29) % 53 - 26) : double((X * 7 + Col * 3) % 9 - 4);
  });
  A["C"] = tensor(C.accType(), {M, 8}, [Int](int64_t R, int64_t Col) {
    return Int ? double(R * 100 + Col - 500) : double((R * 8 + Col) % 13 - 6);
  });
  A["D"] = output(C.accType(), {M, 8});
  return A;
}

/// D must be C (or 0) + A x B, warp w's tile using rows 16w.. of A and C
/// and rows Kw.. of B.
void expectProduct(const Args &A, const MmaCase &C, int Warps, bool ZeroC) {
  const auto &Av = A.at("A").Values, &Bv = A.at("B").Values, &Cv = A.at("C").Values,
             &Dv = A.at("D").Values;
  for (int64_t R = 0; R < 16 * Warps; ++R)
    for (int64_t Col = 0; Col < 8; ++Col) {
      int64_t W = R / 16;
      double Want = ZeroC ? 0 : Cv[R * 8 + Col];
      for (int64_t X = 0; X < C.K; ++X)
        Want += Av[R * C.K + X] * Bv[(W * C.K + X) * 8 + Col];
      ASSERT_EQ(Dv[R * 8 + Col], Want) << C.Name << ": D[" << R << ", " << Col << "]";
    }
}

void checkMma(const MmaCase &C, const MmaOptions &O) {
  std::string Text = mmaKernel(C, O);
  Args A = mmaArgs(C, O.Warps);
  InterpResult R = run(Text, A);
  ASSERT_TRUE(R.Ok) << R.Error << "\n" << Text;
  expectProduct(A, C, O.Warps, O.ZeroC);
}

//===----------------------------------------------------------------------===//
// ldmatrix (9.7.14.5.15). The shared tile is [16 * Warps, Cols]; warp w
// reads rows 16w.. of it. Cols holds Groups side-by-side groups of four
// 8 x 16-byte matrices, matrix m of group q at rows 8 * (m % 2)..,
// columns q * 2E + (m / 2) * E.. (E: elements in 16 bytes), the quadrant
// order in which x4 loads an m16n8k16 A tile. To see that each row comes
// from its own lane's address, row r of a matrix lies at tile row
// (3 * r) % 8 of its half.
//===----------------------------------------------------------------------===//

struct LdmCase {
  const char *Type; ///< f16, bf16, i8 or f32
  DType T;
  int Bytes;
};

const LdmCase LdmF16 = {"f16", DType::F16, 2};
const LdmCase LdmBF16 = {"bf16", DType::BF16, 2};
const LdmCase LdmI8 = {"i8", DType::I8, 1};
const LdmCase LdmF32 = {"f32", DType::F32, 4};

int rowElems(const LdmCase &L) { return 16 / L.Bytes; }
int perLane(const LdmCase &L) { return 4 / L.Bytes; } // 4 bytes of each matrix per lane

struct LdmOptions {
  int Count = 4;
  bool Trans = false;
  int Groups = 1;        ///< column groups (4 matrices each) side by side
  bool Swizzled = false; ///< the tile is swizzle(3, 3, 3)
  int Warps = 1;
};

int tileCols(const LdmCase &L, const LdmOptions &O) { return O.Groups * 2 * rowElems(L); }

/// The tile row and column where row R of matrix Mat of group Q of warp W
/// starts; the kernel's address expression below says the same in IR.
int64_t tileRow(int W, int Mat, int R) { return 16 * W + (3 * R) % 8 + 8 * (Mat % 2); }
int64_t tileCol(const LdmCase &L, int Q, int Mat) {
  return Q * 2 * rowElems(L) + (Mat / 2) * rowElems(L);
}

/// Distinct values that each type holds exactly (f16: integers below
/// 2048, with at most 32 rows of 64; bf16: below 256, so only for a 16 x 16
/// tile; i8: a scramble whose repeats are 251 elements apart, no plausible
/// wrong position).
double tileValue(const LdmCase &L, int64_t R, int64_t C, int64_t Cols) {
  if (L.T == DType::I8)
    return double((R * Cols + C) * 7 % 251 - 125);
  if (L.T == DType::BF16)
    return double(R * Cols + C);
  return double(R * 64 + C);
}

/// Fills the shared tile S from G with plain stores, then every lane runs
/// one ldmatrix per group into Fr[q, 0..] and writes Fr to O[tx, q, ..].
std::string ldmatrixKernel(const LdmCase &L, const LdmOptions &O) {
  int E = rowElems(L), Cols = tileCols(L, O), N = O.Count * perLane(L);
  int Rows = 16 * O.Warps, Threads = 32 * O.Warps;
  std::ostringstream S;
  S << "func ldm<>(in G: " << L.Type << "[" << Rows << ", " << Cols << "], out O: " << L.Type << "["
    << Threads << ", " << O.Groups << ", " << N << "]) {\n"
    << "  launch k0 generic {\n"
    << "    for b in 0..1 block.x {\n"
    << "      alloc S: " << L.Type << "[" << Rows << ", " << Cols << "] shared"
    << (O.Swizzled ? " swizzle(3, 3, 3)" : "") << " {\n"
    << "        for tx in 0.." << Threads << " thread.x {\n"
    << "          for k in 0.." << Cols / 2 << " serial {\n"
    << "            S[tx / 2, tx % 2 * " << Cols / 2 << " + k] = G[tx / 2, tx % 2 * " << Cols / 2
    << " + k]\n"
    << "          }\n"
    << "        }\n"
    << "        barrier\n"
    << "        for tx in 0.." << Threads << " thread.x {\n"
    << "          alloc Fr: " << L.Type << "[" << O.Groups << ", " << N << "] fragment {\n"
    << "            for q in 0.." << O.Groups << " serial {\n"
    << "              # lane l = tx % 32: row l % 8 of matrix l / 8 (tileRow, tileCol)\n"
    << "              ldmatrix x" << O.Count << (O.Trans ? " trans" : "")
    << " Fr[q, 0] <- S[tx / 32 * 16 + tx % 8 * 3 % 8 + tx / 8 % 2 * 8, q * " << 2 * E
    << " + tx % 32 / 16 * " << E << "]\n"
    << "            }\n"
    << "            for q in 0.." << O.Groups << " serial {\n"
    << "              for e in 0.." << N << " serial {\n"
    << "                O[tx, q, e] = Fr[q, e]\n"
    << "              }\n"
    << "            }\n"
    << "          }\n"
    << "        }\n"
    << "      }\n"
    << "    }\n"
    << "  }\n"
    << "}\n";
  return S.str();
}

/// What the ISA says lane Lane of warp W receives as element J of matrix
/// Mat (Figure 104: "a group of four threads loads an entire row", thread
/// 4r + c the c-th 4 bytes of row r; with .trans the matrix is read
/// column-major, so the same lane gets column Lane / 4 of rows
/// 2 * (Lane % 4) and 2 * (Lane % 4) + 1). On bytes, .trans moves pairs:
/// byte J of the lane's 4 of a matrix is row 2 * (Lane % 4) + J % 2 at
/// column 2 * (Lane / 4) + J / 2, and the lane's bytes are regrouped by
/// column (ir/IR.md).
double ldmatrixExpected(const LdmCase &L, const LdmOptions &O, int W, int Q, int Mat, int Lane,
                        int J) {
  int64_t R, C;
  if (O.Trans && L.Bytes == 1) {
    R = tileRow(W, Mat, 2 * (Lane % 4) + J % 2);
    C = tileCol(L, Q, Mat) + 2 * (Lane / 4) + J / 2;
  } else if (!O.Trans) {
    R = tileRow(W, Mat, Lane / 4);
    C = tileCol(L, Q, Mat) + (Lane % 4) * perLane(L) + J;
  } else {
    R = tileRow(W, Mat, 2 * (Lane % 4) + J);
    C = tileCol(L, Q, Mat) + Lane / 4;
  }
  return tileValue(L, R, C, tileCols(L, O));
}

void checkLdMatrix(const LdmCase &L, const LdmOptions &O) {
  int Cols = tileCols(L, O), N = O.Count * perLane(L);
  Args A;
  A["G"] = tensor(L.T, {16 * O.Warps, Cols},
                  [&](int64_t R, int64_t C) { return tileValue(L, R, C, Cols); });
  A["O"] = output(L.T, {32 * O.Warps, O.Groups, N});
  std::string Text = ldmatrixKernel(L, O);
  InterpResult R = run(Text, A);
  ASSERT_TRUE(R.Ok) << R.Error << "\n" << Text;
  const auto &Out = A.at("O").Values;
  for (int W = 0; W < O.Warps; ++W)
    for (int Q = 0; Q < O.Groups; ++Q)
      for (int Lane = 0; Lane < 32; ++Lane)
        for (int Mat = 0; Mat < O.Count; ++Mat)
          for (int J = 0; J < perLane(L); ++J) {
            // Bytes by .trans: regrouped by column, then matrix, then row.
            int E = O.Trans && L.Bytes == 1 ? J / 2 * 2 * O.Count + Mat * 2 + J % 2
                                            : Mat * perLane(L) + J;
            ASSERT_EQ(Out[((32 * W + Lane) * O.Groups + Q) * N + E],
                      ldmatrixExpected(L, O, W, Q, Mat, Lane, J))
                << L.Type << " x" << O.Count << (O.Trans ? " trans" : "") << ": warp " << W
                << ", group " << Q << ", lane " << Lane << ", matrix " << Mat << ", element " << J;
          }
}

} // namespace

//===----------------------------------------------------------------------===//
// 1. One mma of each shape against the plain product
//===----------------------------------------------------------------------===//

TEST(TensorCoreMma, F16M16N8K16) { checkMma(F16Case, {}); }
TEST(TensorCoreMma, BF16M16N8K16) { checkMma(BF16Case, {}); }
TEST(TensorCoreMma, TF32M16N8K8) { checkMma(TF32Case, {}); }
TEST(TensorCoreMma, I8M16N8K32) { checkMma(I8Case, {}); }

// D = C + A x B: the mma accumulates onto the C fragment's values. The
// operands start two elements into their fragment buffers, which the mma
// must honour ("consecutive elements from the given index on").
TEST(TensorCoreMma, AccumulatesOntoC) {
  for (const MmaCase *C : {&F16Case, &BF16Case, &TF32Case, &I8Case}) {
    SCOPED_TRACE(C->Name);
    MmaOptions O;
    O.ZeroC = false;
    O.Offset = 2;
    checkMma(*C, O);
  }
}

// Lane ids are per warp (tx % 32): two warps each compute their own tile.
TEST(TensorCoreMma, EachWarpComputesItsOwnTile) {
  MmaOptions O;
  O.Warps = 2;
  O.ZeroC = false;
  checkMma(F16Case, O);
  checkMma(I8Case, O);
}

//===----------------------------------------------------------------------===//
// 2. ldmatrix against the ISA's fragment, lane by lane
//===----------------------------------------------------------------------===//

// x1 uses the addresses of lanes 0-7 only, x2 those of lanes 0-15 (the
// ISA's table of threads per .num); the other lanes' addresses point at the
// other quadrants, so using one would show.
TEST(TensorCoreLdMatrix, F16) {
  for (int Count : {1, 2, 4}) {
    LdmOptions O;
    O.Count = Count;
    checkLdMatrix(LdmF16, O);
  }
}

TEST(TensorCoreLdMatrix, F16Trans) {
  for (int Count : {1, 2, 4}) {
    LdmOptions O;
    O.Count = Count;
    O.Trans = true;
    checkLdMatrix(LdmF16, O);
  }
}

TEST(TensorCoreLdMatrix, BF16AndTrans) {
  LdmOptions O;
  checkLdMatrix(LdmBF16, O);
  O.Trans = true;
  checkLdMatrix(LdmBF16, O);
}

// Lane ids are per warp: warp 1's lanes 0-31 supply and receive as warp 0's do.
TEST(TensorCoreLdMatrix, EachWarpLoadsItsOwnMatrices) {
  LdmOptions O;
  O.Warps = 2;
  checkLdMatrix(LdmF16, O);
  O.Trans = true;
  O.Count = 2;
  checkLdMatrix(LdmF16, O);
}

// Without .trans, ldmatrix moves bytes: 4 bytes of a row per lane are four
// i8 elements or one f32.
TEST(TensorCoreLdMatrix, I8AndF32) {
  for (int Count : {1, 2, 4}) {
    LdmOptions O;
    O.Count = Count;
    checkLdMatrix(LdmI8, O);
    checkLdMatrix(LdmF32, O);
  }
}

// With .trans, bytes move in pairs (the b16 elements) and each lane's are
// regrouped by column: an i8 B fragment from a k-major tile.
TEST(TensorCoreLdMatrix, I8Trans) {
  for (int Count : {1, 2, 4})
    for (int Groups : {1, 2}) {
      LdmOptions O;
      O.Count = Count;
      O.Groups = Groups;
      O.Trans = true;
      checkLdMatrix(LdmI8, O);
    }
}

//===----------------------------------------------------------------------===//
// 3. ldmatrix feeding mma
//===----------------------------------------------------------------------===//

// A (16 x 16, row-major in shared) by ldmatrix x4: lane l points at row
// l % 16, column (l / 16) * 8, so matrices 0-3 are the quadrants (rows 0-7,
// cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15): exactly a0a1, a2a3,
// a4a5, a6a7 of 9.7.14.5.8. B (16 x 8, k-major: row k, column n) by
// ldmatrix x2 trans: lane l (< 16) points at row k = l; transposed, lane l
// gets column n = l / 4 of rows k = 2 * (l % 4) (+1) of each 8-row matrix:
// b0b1 and b2b3 of the B table.
TEST(TensorCoreMma, LdMatrixFeedsMma) {
  std::string Text =
      R"(func ldm_mma<>(in A: f16[16, 16], in B: f16[16, 8], in C: f32[16, 8], out D: f32[16, 8]) {
  launch k0 generic {
    for b in 0..1 block.x {
      alloc SA: f16[16, 16] shared {
        alloc SB: f16[16, 8] shared {
          for tx in 0..32 thread.x {
            for k in 0..8 serial {
              SA[tx / 2, tx % 2 * 8 + k] = A[tx / 2, tx % 2 * 8 + k]
            }
            for k in 0..4 serial {
              SB[tx / 2, tx % 2 * 4 + k] = B[tx / 2, tx % 2 * 4 + k]
            }
          }
          barrier
          for tx in 0..32 thread.x {
            let g: i64 = tx / 4 {
              let t: i64 = tx % 4 {
                alloc Af: f16[8] fragment {
                  alloc Bf: f16[4] fragment {
                    alloc Cf: f32[4] fragment {
                      ldmatrix x4 Af[0] <- SA[tx % 16, tx / 16 * 8]
                      ldmatrix x2 trans Bf[0] <- SB[tx % 16, 0]
                      Cf[0] = 0.0
                      Cf[1] = 0.0
                      Cf[2] = 0.0
                      Cf[3] = 0.0
                      mma m16n8k16 Cf[0] += Af[0] * Bf[0]
                      D[g, t * 2] = Cf[0]
                      D[g, t * 2 + 1] = Cf[1]
                      D[g + 8, t * 2] = Cf[2]
                      D[g + 8, t * 2 + 1] = Cf[3]
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}
)";
  Args A = mmaArgs(F16Case);
  InterpResult R = run(Text, A);
  ASSERT_TRUE(R.Ok) << R.Error;
  expectProduct(A, F16Case, 1, /*ZeroC=*/true);
}

//===----------------------------------------------------------------------===//
// 4. Zero-fill async copies and swizzled shared memory
//===----------------------------------------------------------------------===//

namespace {

/// Lane tx copies 8 f16 (16 bytes, one cp.async of cp-size 16) of row
/// tx / 4 into S[8, 32] when Cond holds and zero-fills them otherwise; after
/// the wait and a barrier, lane tx reads column tx of all 8 rows, that is
/// the chunks of 8 other lanes.
std::string zeroFillKernel(int GRows, const std::string &Cond) {
  std::ostringstream S;
  S << "func zfill<>(in G: f16[" << GRows << ", 32], out O: f16[32, 8]) {\n"
    << "  launch k0 generic {\n"
    << "    for b in 0..1 block.x {\n"
    << "      alloc S: f16[8, 32] shared {\n"
    << "        for tx in 0..32 thread.x {\n"
    << "          async_copy S[tx / 4, tx % 4 * 8] <- G[tx / 4, tx % 4 * 8] x 8 when (" << Cond
    << ")\n"
    << "          async_commit\n"
    << "          async_wait(0)\n"
    << "        }\n"
    << "        barrier\n"
    << "        for tx in 0..32 thread.x {\n"
    << "          for k in 0..8 serial {\n"
    << "            O[tx, k] = S[k, tx]\n"
    << "          }\n"
    << "        }\n"
    << "      }\n"
    << "    }\n"
    << "  }\n"
    << "}\n";
  return S.str();
}

void checkZeroFill(int GRows, const std::string &Cond, const std::function<bool(int)> &Valid) {
  Args A;
  A["G"] =
      tensor(DType::F16, {GRows, 32}, [](int64_t R, int64_t C) { return double(R * 100 + C + 1); });
  A["O"] = output(DType::F16, {32, 8});
  std::string Text = zeroFillKernel(GRows, Cond);
  InterpResult R = run(Text, A);
  ASSERT_TRUE(R.Ok) << R.Error << "\n" << Text;
  const auto &O = A.at("O").Values;
  for (int Col = 0; Col < 32; ++Col)
    for (int Row = 0; Row < 8; ++Row) {
      int Lane = Row * 4 + Col / 8; // the lane whose copy wrote S[Row, Col]
      double Want = Valid(Lane) ? double(Row * 100 + Col + 1) : 0.0;
      ASSERT_EQ(O[Col * 8 + Row], Want) << "S[" << Row << ", " << Col << "] (lane " << Lane << ")";
    }
}

} // namespace

TEST(TensorCoreAsyncCopy, ZeroFillWhereConditionIsFalse) {
  checkZeroFill(8, "tx % 3 != 1", [](int L) { return L % 3 != 1; });
}

// The lanes of row 7 (28-31) name a source row that G[7, 32] lacks, under a
// false condition. Intended semantics (cp.async with ignore-src: "If the
// source data is ignored then zeros will be copied to destination dst"):
// the source is not read, so there is no out-of-bounds error, and S's row 7
// is zeros.
TEST(TensorCoreAsyncCopy, FalseConditionReadsNothingEvenOutOfBounds) {
  checkZeroFill(7, "tx / 4 < 7", [](int L) { return L / 4 < 7; });
}

namespace {

/// Writes G[16, 64] into a swizzle(3, 3, 3) shared tile (by plain stores,
/// or by 16-byte async copies), then lane tx reads columns 2tx and 2tx + 1
/// of every row, written by other lanes, into O = G transposed.
std::string swizzleTransposeKernel(bool AsyncFill) {
  std::string Fill = AsyncFill ? R"(          for k in 0..4 serial {
            async_copy S[tx / 2, (tx % 2 * 4 + k) * 8] <- G[tx / 2, (tx % 2 * 4 + k) * 8] x 8
          }
          async_commit
          async_wait(0)
)"
                               : R"(          for k in 0..32 serial {
            S[tx / 2, tx % 2 * 32 + k] = G[tx / 2, tx % 2 * 32 + k]
          }
)";
  return R"(func swizzle_transpose<>(in G: f16[16, 64], out O: f16[64, 16]) {
  launch k0 generic {
    for b in 0..1 block.x {
      alloc S: f16[16, 64] shared swizzle(3, 3, 3) {
        for tx in 0..32 thread.x {
)" + Fill +
         R"(        }
        barrier
        for tx in 0..32 thread.x {
          for r in 0..16 serial {
            for j in 0..2 serial {
              O[tx * 2 + j, r] = S[r, tx * 2 + j]
            }
          }
        }
      }
    }
  }
}
)";
}

} // namespace

// A swizzle moves where elements are stored, never which exist: whatever
// is written through S[i, j] reads back through S[i, j], from any lane.
TEST(TensorCoreSwizzle, RoundTripsThroughAnyLane) {
  for (bool AsyncFill : {false, true}) {
    SCOPED_TRACE(AsyncFill ? "async_copy fill" : "store fill");
    Args A;
    A["G"] = tensor(DType::F16, {16, 64}, [](int64_t R, int64_t C) { return double(R * 100 + C); });
    A["O"] = output(DType::F16, {64, 16});
    std::string Text = swizzleTransposeKernel(AsyncFill);
    InterpResult R = run(Text, A);
    ASSERT_TRUE(R.Ok) << R.Error << "\n" << Text;
    const auto &O = A.at("O").Values;
    for (int Row = 0; Row < 16; ++Row)
      for (int Col = 0; Col < 64; ++Col)
        ASSERT_EQ(O[Col * 16 + Row], double(Row * 100 + Col)) << "S[" << Row << ", " << Col << "]";
  }
}

// With f16 and Base 3 a 16-byte row stays contiguous, so ldmatrix through
// the swizzled tile gives the ISA's fragment for every group of columns
// (rows r of the tile have their 16-byte chunks permuted by r % 8).
TEST(TensorCoreSwizzle, LdMatrixGivesTheIsaFragment) {
  LdmOptions O;
  O.Groups = 4;
  O.Swizzled = true;
  checkLdMatrix(LdmF16, O);
  O.Trans = true;
  checkLdMatrix(LdmF16, O);
  O.Trans = false;
  O.Count = 2;
  checkLdMatrix(LdmF16, O);
}

//===----------------------------------------------------------------------===//
// 5. Errors
//===----------------------------------------------------------------------===//

// mma.sync.aligned: "all threads in the warp must execute the same mma
// instruction". Lanes 16-31 skip it.
TEST(TensorCoreErrors, MmaByHalfAWarp) {
  MmaOptions O;
  O.ActiveLanes = 16;
  std::string Text = mmaKernel(F16Case, O);
  Args A = mmaArgs(F16Case);
  InterpResult R = run(Text, A, /*Verify=*/false);
  EXPECT_FALSE(R.Ok);
  EXPECT_NE(R.Error.find("mma"), std::string::npos) << R.Error;
}

// The same rule for ldmatrix.sync.aligned.
TEST(TensorCoreErrors, LdMatrixByHalfAWarp) {
  std::string Text = R"(func ldm_half<>(in G: f16[16, 16], out O: f16[32, 8]) {
  launch k0 generic {
    for b in 0..1 block.x {
      alloc S: f16[16, 16] shared {
        for tx in 0..32 thread.x {
          for k in 0..8 serial {
            S[tx / 2, tx % 2 * 8 + k] = G[tx / 2, tx % 2 * 8 + k]
          }
        }
        barrier
        for tx in 0..32 thread.x {
          alloc Fr: f16[8] fragment {
            for e in 0..8 serial {
              Fr[e] = 0.0_f16
            }
            if tx < 16 {
              ldmatrix x4 Fr[0] <- S[tx % 16, tx / 16 * 8]
            }
            for e in 0..8 serial {
              O[tx, e] = Fr[e]
            }
          }
        }
      }
    }
  }
}
)";
  Args A;
  A["G"] = tensor(DType::F16, {16, 16}, [](int64_t R, int64_t C) { return double(R * 100 + C); });
  A["O"] = output(DType::F16, {32, 8});
  InterpResult R = run(Text, A, /*Verify=*/false);
  EXPECT_FALSE(R.Ok);
  EXPECT_NE(R.Error.find("ldmatrix"), std::string::npos) << R.Error;
}

// m16n8k16 reads 8 A elements per lane; a fragment of 4 is out of bounds.
TEST(TensorCoreErrors, MmaFragmentTooSmall) {
  MmaOptions O;
  O.AFragElems = 4;
  std::string Text = mmaKernel(F16Case, O);
  Args A = mmaArgs(F16Case);
  InterpResult R = run(Text, A, /*Verify=*/false);
  EXPECT_FALSE(R.Ok) << "an mma reading Af[0..8) of f16[4] ran";
  EXPECT_NE(R.Error.find("Af"), std::string::npos) << R.Error;
}

// The same when the fragment is large enough but the operand starts too
// late in it: C at Cf[2] of f32[4] needs Cf[2..6).
TEST(TensorCoreErrors, MmaOperandStartsTooLate) {
  std::string Text = mmaKernel(TF32Case);
  std::string From = "mma m16n8k8 Cf[0]", To = "mma m16n8k8 Cf[2]";
  size_t At = Text.find(From);
  ASSERT_NE(At, std::string::npos);
  Text.replace(At, From.size(), To);
  Args A = mmaArgs(TF32Case);
  InterpResult R = run(Text, A, /*Verify=*/false);
  EXPECT_FALSE(R.Ok) << "an mma writing Cf[2..6) of f32[4] ran";
  EXPECT_NE(R.Error.find("Cf"), std::string::npos) << R.Error;
}

// ldmatrix x4 of f16 delivers 8 elements per lane; Fr holds 4.
TEST(TensorCoreErrors, LdMatrixDestinationTooSmall) {
  std::string Text = ldmatrixKernel(LdmF16, {});
  std::string From = "alloc Fr: f16[1, 8]", To = "alloc Fr: f16[1, 4]";
  size_t At = Text.find(From);
  ASSERT_NE(At, std::string::npos);
  Text.replace(At, From.size(), To);
  // Keep the write-back loop within Fr so the only fault is the ldmatrix.
  From = "for e in 0..8 serial";
  At = Text.find(From);
  ASSERT_NE(At, std::string::npos);
  Text.replace(At, From.size(), "for e in 0..4 serial");
  Args A;
  A["G"] = tensor(DType::F16, {16, 16}, [](int64_t R, int64_t C) { return double(R * 100 + C); });
  A["O"] = output(DType::F16, {32, 1, 8});
  InterpResult R = run(Text, A, /*Verify=*/false);
  EXPECT_FALSE(R.Ok) << "an ldmatrix x4 into f16[1, 4] ran";
  EXPECT_NE(R.Error.find("Fr"), std::string::npos) << R.Error;
}
