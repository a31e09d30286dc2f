//===- InterpreterTest.cpp - The CPU interpreter: numerics, SIMT, checkers ===//
#include "ir/Interpreter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

using namespace tdsl;
using namespace tdsl::ir;

namespace {

Buffer param(const std::string &Name, DType T, std::vector<Expr> Shape, BufferRole Role) {
  Buffer B;
  B.Name = Name;
  B.Type = T;
  B.Shape = std::move(Shape);
  B.Role = Role;
  return B;
}

Buffer local(const std::string &Name, DType T, std::vector<Expr> Shape, MemScope Scope) {
  Buffer B = param(Name, T, std::move(Shape), BufferRole::Temp);
  B.Scope = Scope;
  return B;
}

TensorData tensor(DType T, std::vector<int64_t> Shape, std::vector<double> Values = {}) {
  TensorData D;
  D.Type = T;
  D.Shape = std::move(Shape);
  D.Values = std::move(Values);
  if (D.Values.empty())
    D.Values.assign(static_cast<size_t>(D.numElements()), NAN);
  return D;
}

Expr i(int64_t V) { return intImm(V); }
Expr v(const std::string &Name) { return var(Name); }
Expr f(double V) { return floatImm(V); }
Stmt loop(const std::string &Var, int64_t Extent, ForKind K, Stmt Body) {
  return forLoop(Var, i(0), i(Extent), K, std::move(Body));
}
Stmt loop(const std::string &Var, Expr Extent, ForKind K, Stmt Body) {
  return forLoop(Var, i(0), std::move(Extent), K, std::move(Body));
}

/// C[M, N] = A[M, K] x B[K, N] with serial loops and a register accumulator.
Func serialGemm() {
  Func F;
  F.Name = "gemm";
  F.Sizes = {"M", "N", "K"};
  F.Params = {param("A", DType::F32, {v("M"), v("K")}, BufferRole::Input),
              param("B", DType::F32, {v("K"), v("N")}, BufferRole::Input),
              param("C", DType::F32, {v("M"), v("N")}, BufferRole::Output)};
  Expr Acc = load(DType::F32, "acc", {i(0)});
  Stmt Body = block({
      store("acc", {i(0)}, f(0.0)),
      loop("k", v("K"), ForKind::Serial,
           store("acc", {i(0)},
                 add(Acc, mul(load(DType::F32, "A", {v("m"), v("k")}),
                              load(DType::F32, "B", {v("k"), v("n")}))))),
      store("C", {v("m"), v("n")}, Acc),
  });
  F.Body = loop("m", v("M"), ForKind::Serial,
                loop("n", v("N"), ForKind::Serial,
                     allocate(local("acc", DType::F32, {i(1)}, MemScope::Register), Body)));
  return F;
}

std::map<std::string, TensorData> gemmArgs(int64_t M, int64_t N, int64_t K) {
  std::map<std::string, TensorData> Args;
  std::vector<double> A, B;
  for (int64_t X = 0; X < M * K; ++X)
    A.push_back(static_cast<double>(X % 7) - 3);
  for (int64_t X = 0; X < K * N; ++X)
    B.push_back(static_cast<double>(X % 5) * 0.5 - 1);
  Args["A"] = tensor(DType::F32, {M, K}, A);
  Args["B"] = tensor(DType::F32, {K, N}, B);
  Args["C"] = tensor(DType::F32, {M, N});
  return Args;
}

void expectGemm(const std::map<std::string, TensorData> &Args, int64_t M, int64_t N, int64_t K) {
  const auto &A = Args.at("A").Values, &B = Args.at("B").Values, &C = Args.at("C").Values;
  for (int64_t R = 0; R < M; ++R)
    for (int64_t Col = 0; Col < N; ++Col) {
      float Acc = 0;
      for (int64_t X = 0; X < K; ++X)
        Acc += static_cast<float>(A[R * K + X]) * static_cast<float>(B[X * N + Col]);
      ASSERT_EQ(C[R * N + Col], Acc) << "C[" << R << ", " << Col << "]";
    }
}

/// A 1-D launch: for b in 0..Blocks block.x { Body }.
Func kernel1D(std::vector<Buffer> Params, Stmt Body, int64_t Blocks = 1) {
  Func F;
  F.Name = "k";
  F.Params = std::move(Params);
  F.Body = launch("k0", LaunchClass::Generic, loop("b", Blocks, ForKind::BlockX, std::move(Body)));
  return F;
}

} // namespace

TEST(InterpreterTest, SerialGemm) {
  Func F = serialGemm();
  auto Args = gemmArgs(5, 4, 3);
  InterpResult R = interpret(F, {{"M", 5}, {"N", 4}, {"K", 3}}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  expectGemm(Args, 5, 4, 3);
}

TEST(InterpreterTest, SerialGemm64IsFast) {
  Func F = serialGemm();
  auto Args = gemmArgs(64, 64, 64);
  auto Start = std::chrono::steady_clock::now();
  InterpResult R = interpret(F, {{"M", 64}, {"N", 64}, {"K", 64}}, Args);
  double Seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  ASSERT_TRUE(R.Ok) << R.Error;
  expectGemm(Args, 64, 64, 64);
  // Generous: a debug build on a loaded machine must still pass.
  EXPECT_LT(Seconds, 5.0);
}

TEST(InterpreterTest, MissingSizeAndBadShapeAreErrors) {
  Func F = serialGemm();
  auto Args = gemmArgs(5, 4, 3);
  InterpResult R = interpret(F, {{"M", 5}, {"N", 4}}, Args);
  EXPECT_FALSE(R.Ok);
  EXPECT_NE(R.Error.find("size 'K'"), std::string::npos) << R.Error;
  R = interpret(F, {{"M", 5}, {"N", 4}, {"K", 4}}, Args);
  EXPECT_FALSE(R.Ok);
  EXPECT_NE(R.Error.find("has shape [5, 3] but the parameter has shape [5, 4]"), std::string::npos)
      << R.Error;
}

TEST(InterpreterTest, F16StoresRound) {
  // C[x] = f16(A[x] / 3): every stored value is the nearest f16.
  Func F;
  F.Name = "third";
  F.Params = {param("A", DType::F32, {i(4)}, BufferRole::Input),
              param("C", DType::F16, {i(4)}, BufferRole::Output)};
  F.Body =
      loop("x", 4, ForKind::Serial,
           store("C", {v("x")},
                 cast(DType::F16, binary(BinaryOp::Div, load(DType::F32, "A", {v("x")}), f(3.0)))));
  std::map<std::string, TensorData> Args = {{"A", tensor(DType::F32, {4}, {1, 2, 100000, -1e-6})},
                                            {"C", tensor(DType::F16, {4})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  const auto &C = Args["C"].Values;
  EXPECT_EQ(C[0], 0.333251953125);
  EXPECT_EQ(C[1], 0.66650390625);
  EXPECT_EQ(C[2], 33344.0); // f16 spacing is 32 here
  EXPECT_EQ(C[3], decodeF16(encodeF16(static_cast<float>(-1e-6f / 3.0f))));
}

TEST(InterpreterTest, IntegerSemantics) {
  // i32 wraps, / and % truncate toward zero, division by zero yields 0.
  Func F;
  F.Name = "ints";
  F.Params = {param("C", DType::I32, {i(6)}, BufferRole::Output),
              param("D", DType::I64, {i(1)}, BufferRole::Output)};
  auto I32 = [](int64_t V) { return intImm(V, DType::I32); };
  F.Body = block({
      store("C", {i(0)}, add(I32(2147483647), I32(1))),
      store("C", {i(1)}, mul(I32(65536), I32(65536))),
      store("C", {i(2)}, binary(BinaryOp::Div, I32(-7), I32(2))),
      store("C", {i(3)}, binary(BinaryOp::Mod, I32(-7), I32(2))),
      store("C", {i(4)}, binary(BinaryOp::Div, I32(5), I32(0))),
      store("C", {i(5)}, cast(DType::I32, intImm(int64_t(1) << 40))), // saturates
      store("D", {i(0)}, add(intImm(INT64_MAX), intImm(1))),
  });
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::I32, {6}, {0, 0, 0, 0, 0, 0})},
                                            {"D", tensor(DType::I64, {1}, {0})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_EQ(Args["C"].Values, (std::vector<double>{-2147483648.0, 0, -3, -1, 0, 2147483647.0}));
  EXPECT_EQ(Args["D"].Values[0], -9223372036854775808.0);
}

TEST(InterpreterTest, F32ArithmeticIsSinglePrecision) {
  // 1 + 2^-30 is 1 in f32 and not in f64.
  Func F;
  F.Name = "prec";
  F.Params = {param("C", DType::F32, {i(1)}, BufferRole::Output),
              param("D", DType::F64, {i(1)}, BufferRole::Output)};
  F.Body = block({
      store("C", {i(0)}, sub(add(f(1.0), f(std::ldexp(1.0, -30))), f(1.0))),
      store("D", {i(0)},
            sub(add(floatImm(1.0, DType::F64), floatImm(std::ldexp(1.0, -30), DType::F64)),
                floatImm(1.0, DType::F64))),
  });
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::F32, {1})},
                                            {"D", tensor(DType::F64, {1})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_EQ(Args["C"].Values[0], 0.0);
  EXPECT_EQ(Args["D"].Values[0], std::ldexp(1.0, -30));
}

TEST(InterpreterTest, MathIntrinsicsInF32) {
  Func F;
  F.Name = "math";
  F.Params = {param("A", DType::F32, {i(3)}, BufferRole::Input),
              param("C", DType::F32, {i(3), i(3)}, BufferRole::Output)};
  Expr X = load(DType::F32, "A", {v("x")});
  F.Body = loop("x", 3, ForKind::Serial,
                block({store("C", {v("x"), i(0)}, call(Intrinsic::Gelu, {X})),
                       store("C", {v("x"), i(1)}, call(Intrinsic::Sigmoid, {X})),
                       store("C", {v("x"), i(2)}, call(Intrinsic::Relu, {X}))}));
  std::map<std::string, TensorData> Args = {{"A", tensor(DType::F32, {3}, {-1.5, 0.25, 3})},
                                            {"C", tensor(DType::F32, {3, 3})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  for (int X = 0; X < 3; ++X) {
    float A = static_cast<float>(Args["A"].Values[X]);
    EXPECT_EQ(Args["C"].Values[X * 3 + 0], 0.5f * A * (1.0f + erff(A * 0.70710678118654752440f)));
    EXPECT_EQ(Args["C"].Values[X * 3 + 1], 1.0f / (1.0f + expf(-A)));
    EXPECT_EQ(Args["C"].Values[X * 3 + 2], std::max(A, 0.0f));
  }
}

/// Out[b*T + t] = In[b*T + T-1-t]: each block reverses its tile through
/// shared memory, so every thread reads what another one wrote.
Func reverseTiles(int64_t Blocks, int64_t T, bool WithBarrier) {
  Expr Base = mul(v("b"), i(T));
  std::vector<Stmt> Body = {
      loop("t", T, ForKind::ThreadX,
           store("S", {v("t")}, load(DType::F32, "In", {add(Base, v("t"))}))),
  };
  if (WithBarrier)
    Body.push_back(barrier());
  Body.push_back(
      loop("t", T, ForKind::ThreadX,
           store("Out", {add(Base, v("t"))}, load(DType::F32, "S", {sub(i(T - 1), v("t"))}))));
  return kernel1D({param("In", DType::F32, {i(Blocks * T)}, BufferRole::Input),
                   param("Out", DType::F32, {i(Blocks * T)}, BufferRole::Output)},
                  allocate(local("S", DType::F32, {i(T)}, MemScope::Shared), block(Body)), Blocks);
}

std::map<std::string, TensorData> rangeArgs(int64_t N) {
  std::vector<double> In;
  for (int64_t X = 0; X < N; ++X)
    In.push_back(static_cast<double>(X));
  return {{"In", tensor(DType::F32, {N}, In)}, {"Out", tensor(DType::F32, {N})}};
}

TEST(InterpreterTest, SharedMemoryKernelWithBarrier) {
  Func F = reverseTiles(3, 64, /*WithBarrier=*/true);
  auto Args = rangeArgs(192);
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_EQ(R.Launches, 1u);
  for (int64_t X = 0; X < 192; ++X)
    EXPECT_EQ(Args["Out"].Values[X], static_cast<double>(X / 64 * 64 + 63 - X % 64));
}

TEST(InterpreterTest, MissingBarrierIsARace) {
  Func F = reverseTiles(3, 64, /*WithBarrier=*/false);
  auto Args = rangeArgs(192);
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "shared-memory race on S[63]: written by thread (63, 0, 0) and read by "
                     "thread (0, 0, 0) of block (0, 0, 0) with no barrier between");
  InterpOptions NoRaces;
  NoRaces.CheckRaces = false;
  Args = rangeArgs(192);
  EXPECT_TRUE(interpret(F, {}, Args, NoRaces).Ok);
}

TEST(InterpreterTest, ReadThenWriteByAnotherThreadIsARace) {
  // S[t] = S[(t + 1) % T] with no barrier: thread 7 reads S[0], which
  // thread 0 then overwrites.
  int64_t T = 8;
  Stmt Body = allocate(
      local("S", DType::F32, {i(T)}, MemScope::Shared),
      block(
          {loop("t", T, ForKind::ThreadX, store("S", {v("t")}, f(1.0))), barrier(),
           loop("t", T, ForKind::ThreadX,
                store("S", {v("t")},
                      load(DType::F32, "S", {binary(BinaryOp::Mod, add(v("t"), i(1)), i(T))})))}));
  Func F = kernel1D({}, Body);
  std::map<std::string, TensorData> Args;
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "shared-memory race on S[0]: read by thread (7, 0, 0) and written by "
                     "thread (0, 0, 0) of block (0, 0, 0) with no barrier between");
}

TEST(InterpreterTest, ConflictingGlobalWrites) {
  // Every thread stores C[b]: the store sits outside the thread loop.
  Func F =
      kernel1D({param("C", DType::F32, {i(2)}, BufferRole::Output)},
               block({loop("t", 4, ForKind::ThreadX, block({})), store("C", {v("b")}, f(1.0))}), 2);
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::F32, {2})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "conflicting writes to C[0] by thread (0, 0, 0) of block (0, 0, 0) and "
                     "thread (1, 0, 0) of block (0, 0, 0) in one launch");
}

TEST(InterpreterTest, GlobalReadOfAnotherBlocksWriteIsARace) {
  // Block b writes C[b] and reads C[1 - b] in the same launch.
  Func F = kernel1D({param("C", DType::F32, {i(2)}, BufferRole::Output),
                     param("D", DType::F32, {i(2)}, BufferRole::Output)},
                    block({store("C", {v("b")}, f(1.0)),
                           store("D", {v("b")}, load(DType::F32, "C", {sub(i(1), v("b"))}))}),
                    2);
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::F32, {2})},
                                            {"D", tensor(DType::F32, {2})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  // Block 0 reads C[1] before block 1 wrote it: uninitialized on the CPU's
  // schedule; the race shows once C is initialized by an earlier launch.
  EXPECT_NE(R.Error.find("read of uninitialized C[1]"), std::string::npos) << R.Error;

  Func G = F;
  G.Body = block({loop("x", 2, ForKind::Serial, store("C", {v("x")}, f(0.0))), F.Body});
  Args = {{"C", tensor(DType::F32, {2})}, {"D", tensor(DType::F32, {2})}};
  R = interpret(G, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "global-memory race on C[1]: read by thread (0, 0, 0) of block (0, 0, 0) "
                     "and written by thread (0, 0, 0) of block (1, 0, 0) in one launch");
}

TEST(InterpreterTest, OutOfBoundsStore) {
  // for t in 0..4 thread.x { C[t + 1] = 1 } with C[4].
  Func F = kernel1D({param("C", DType::F32, {i(4)}, BufferRole::Output)},
                    loop("t", 4, ForKind::ThreadX, store("C", {add(v("t"), i(1))}, f(1.0))));
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::F32, {4})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "out-of-bounds store to C[4] (shape [4]) in block (0, 0, 0) "
                     "thread (3, 0, 0)");
}

TEST(InterpreterTest, PaddingIsNotAddressable) {
  Buffer S = local("S", DType::F32, {i(2), i(4)}, MemScope::Shared);
  S.Padding = {0, 1};
  Func F = kernel1D({}, allocate(S, store("S", {i(1), i(4)}, f(0.0))));
  std::map<std::string, TensorData> Args;
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "out-of-bounds store to S[1, 4] (shape [2, 4]) in block (0, 0, 0) "
                     "thread (0, 0, 0)");
}

TEST(InterpreterTest, DivergentBarrier) {
  Func F = kernel1D({}, loop("t", 64, ForKind::ThreadX, ifThen(lt(v("t"), i(32)), barrier())));
  std::map<std::string, TensorData> Args;
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error.rfind("barrier in divergent control flow", 0), 0u) << R.Error;
}

TEST(InterpreterTest, UniformBarrierInsideIf) {
  Func F = kernel1D({}, loop("t", 64, ForKind::ThreadX, ifThen(lt(v("b"), i(1)), barrier())));
  std::map<std::string, TensorData> Args;
  InterpResult R = interpret(F, {}, Args);
  EXPECT_TRUE(R.Ok) << R.Error;
}

TEST(InterpreterTest, WarpShuffleButterflyReduction) {
  // Two warps; each sums its 32 values with shfl_xor 16, 8, 4, 2, 1 and
  // lane 0 stores the warp's total.
  Expr Value = load(DType::F32, "A", {v("t")});
  Stmt Store = ifThen(binary(BinaryOp::Eq, binary(BinaryOp::Mod, v("t"), i(32)), i(0)),
                      store("C", {binary(BinaryOp::Div, v("t"), i(32))}, var("s1", DType::F32)));
  Stmt Body = Store;
  for (int Step = 1; Step <= 16; Step *= 2) {
    std::string In = "s" + std::to_string(Step * 2), Out = "s" + std::to_string(Step);
    Expr X = var(Step == 16 ? "v" : In, DType::F32);
    Body = letStmt(Out, add(X, call(Intrinsic::ShflXor, {X, intImm(Step, DType::I32)})), Body);
  }
  Body = letStmt("v", Value, Body);
  Func F = kernel1D({param("A", DType::F32, {i(64)}, BufferRole::Input),
                     param("C", DType::F32, {i(2)}, BufferRole::Output)},
                    loop("t", 64, ForKind::ThreadX, Body));
  std::vector<double> A;
  for (int X = 0; X < 64; ++X)
    A.push_back(X);
  std::map<std::string, TensorData> Args = {{"A", tensor(DType::F32, {64}, A)},
                                            {"C", tensor(DType::F32, {2})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_EQ(Args["C"].Values, (std::vector<double>{496, 1520}));
}

TEST(InterpreterTest, ShuffleFromInactiveLaneIsAnError) {
  // Only 16 lanes run; shfl_xor 16 reads lanes that do not.
  Expr X = load(DType::F32, "A", {v("t")});
  Func F =
      kernel1D({param("A", DType::F32, {i(16)}, BufferRole::Input),
                param("C", DType::F32, {i(16)}, BufferRole::Output)},
               loop("t", 16, ForKind::ThreadX,
                    store("C", {v("t")}, call(Intrinsic::ShflXor, {X, intImm(16, DType::I32)}))));
  std::map<std::string, TensorData> Args = {
      {"A", tensor(DType::F32, {16}, std::vector<double>(16, 1.0))},
      {"C", tensor(DType::F32, {16})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_NE(R.Error.find("shfl_xor by thread (0, 0, 0)"), std::string::npos) << R.Error;
}

TEST(InterpreterTest, UninitializedRead) {
  Func F = kernel1D(
      {param("C", DType::F32, {i(4)}, BufferRole::Output)},
      allocate(local("S", DType::F32, {i(4)}, MemScope::Shared),
               block({loop("t", 2, ForKind::ThreadX, store("S", {v("t")}, f(1.0))), barrier(),
                      loop("t", 4, ForKind::ThreadX,
                           store("C", {v("t")}, load(DType::F32, "S", {v("t")})))})));
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::F32, {4})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "read of uninitialized S[2] in block (0, 0, 0) thread (2, 0, 0)");
}

TEST(InterpreterTest, UninitializedOutputRead) {
  Func F;
  F.Name = "acc";
  F.Params = {param("C", DType::F32, {i(1)}, BufferRole::Output)};
  F.Body = store("C", {i(0)}, add(load(DType::F32, "C", {i(0)}), f(1.0)));
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::F32, {1})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "read of uninitialized C[0] in block (0, 0, 0) thread (0, 0, 0)");
}

/// Each of T threads copies In[t] into S[t] with cp.async, then reads
/// S[T-1-t]; Wait says whether the group is waited for before the barrier.
Func asyncCopyKernel(int64_t T, bool Wait) {
  std::vector<Stmt> Body = {
      loop("t", T, ForKind::ThreadX,
           std::make_shared<AsyncCopyNode>("S", std::vector<Expr>{v("t")}, "In",
                                           std::vector<Expr>{v("t")}, 1)),
      std::make_shared<AsyncCommitNode>(),
  };
  if (Wait)
    Body.push_back(std::make_shared<AsyncWaitNode>(0));
  Body.push_back(barrier());
  Body.push_back(loop("t", T, ForKind::ThreadX,
                      store("Out", {v("t")}, load(DType::F32, "S", {sub(i(T - 1), v("t"))}))));
  return kernel1D({param("In", DType::F32, {i(T)}, BufferRole::Input),
                   param("Out", DType::F32, {i(T)}, BufferRole::Output)},
                  allocate(local("S", DType::F32, {i(T)}, MemScope::Shared), block(Body)));
}

TEST(InterpreterTest, AsyncCopyVisibleAfterWait) {
  Func F = asyncCopyKernel(32, /*Wait=*/true);
  auto Args = rangeArgs(32);
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  for (int X = 0; X < 32; ++X)
    EXPECT_EQ(Args["Out"].Values[X], 31 - X);
}

TEST(InterpreterTest, AsyncCopyReadBeforeWait) {
  Func F = asyncCopyKernel(32, /*Wait=*/false);
  auto Args = rangeArgs(32);
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "async copy not yet waited for: S[31] read in block (0, 0, 0) "
                     "thread (0, 0, 0)");
}

TEST(InterpreterTest, AsyncWaitKeepsYoungerGroupsInFlight) {
  // Two groups; async_wait(1) retires only the first.
  auto Copy = [](int64_t Dst) {
    return std::make_shared<AsyncCopyNode>("S", std::vector<Expr>{i(Dst)}, "In",
                                           std::vector<Expr>{i(Dst)}, 2);
  };
  Func F = kernel1D(
      {param("In", DType::F32, {i(4)}, BufferRole::Input),
       param("Out", DType::F32, {i(4)}, BufferRole::Output)},
      allocate(local("S", DType::F32, {i(4)}, MemScope::Shared),
               block({Copy(0), std::make_shared<AsyncCommitNode>(), Copy(2),
                      std::make_shared<AsyncCommitNode>(), std::make_shared<AsyncWaitNode>(1),
                      store("Out", {i(1)}, load(DType::F32, "S", {i(1)})),
                      store("Out", {i(2)}, load(DType::F32, "S", {i(2)}))})));
  auto Args = rangeArgs(4);
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(Args["Out"].Values[1], 1.0);
  EXPECT_NE(R.Error.find("async copy not yet waited for: S[2]"), std::string::npos) << R.Error;
}

TEST(InterpreterTest, PerLaneLoopBoundsAndGuardedLoads) {
  // Triangle: C[t] = sum_{j <= t} A[j], the inner loop's extent differs per
  // thread; and select(t + 1 < 8, A[t + 1], 0) must not load A[8].
  Expr T = v("t");
  Stmt Sum = allocate(
      local("acc", DType::F32, {i(1)}, MemScope::Register),
      block(
          {store("acc", {i(0)}, f(0.0)),
           forLoop("j", i(0), add(T, i(1)), ForKind::Serial,
                   store("acc", {i(0)},
                         add(load(DType::F32, "acc", {i(0)}), load(DType::F32, "A", {v("j")})))),
           store("C", {T}, load(DType::F32, "acc", {i(0)})),
           store("D", {T},
                 select(lt(add(T, i(1)), i(8)), load(DType::F32, "A", {add(T, i(1))}), f(0.0)))}));
  Func F = kernel1D({param("A", DType::F32, {i(8)}, BufferRole::Input),
                     param("C", DType::F32, {i(8)}, BufferRole::Output),
                     param("D", DType::F32, {i(8)}, BufferRole::Output)},
                    loop("t", 8, ForKind::ThreadX, Sum));
  std::map<std::string, TensorData> Args = {
      {"A", tensor(DType::F32, {8}, {1, 2, 3, 4, 5, 6, 7, 8})},
      {"C", tensor(DType::F32, {8})},
      {"D", tensor(DType::F32, {8})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_EQ(Args["C"].Values, (std::vector<double>{1, 3, 6, 10, 15, 21, 28, 36}));
  EXPECT_EQ(Args["D"].Values, (std::vector<double>{2, 3, 4, 5, 6, 7, 8, 0}));
}

/// A 2-D tiled GEMM: 16x16 threads per block, a block per 16x16 tile of C,
/// A and B tiles staged in shared memory with two barriers per K step.
Func tiledGemm() {
  const int64_t T = 16;
  Func F;
  F.Name = "tiled";
  F.Sizes = {"M", "N", "K"};
  F.Params = {param("A", DType::F32, {v("M"), v("K")}, BufferRole::Input),
              param("B", DType::F32, {v("K"), v("N")}, BufferRole::Input),
              param("C", DType::F32, {v("M"), v("N")}, BufferRole::Output)};
  Expr Row = add(mul(v("by"), i(T)), v("ty")), Col = add(mul(v("bx"), i(T)), v("tx"));
  auto Threads = [&](Stmt S) {
    return loop("ty", T, ForKind::ThreadY, loop("tx", T, ForKind::ThreadX, std::move(S)));
  };
  Expr K0 = mul(v("kt"), i(T));
  Stmt KStep = block({
      Threads(
          block({store("As", {v("ty"), v("tx")}, load(DType::F32, "A", {Row, add(K0, v("tx"))})),
                 store("Bs", {v("ty"), v("tx")}, load(DType::F32, "B", {add(K0, v("ty")), Col}))})),
      barrier(),
      Threads(loop("k", T, ForKind::Unrolled,
                   store("acc", {i(0)},
                         add(load(DType::F32, "acc", {i(0)}),
                             mul(load(DType::F32, "As", {v("ty"), v("k")}),
                                 load(DType::F32, "Bs", {v("k"), v("tx")})))))),
      barrier(),
  });
  Stmt Tile = allocate(
      local("As", DType::F32, {i(T), i(T)}, MemScope::Shared),
      allocate(
          local("Bs", DType::F32, {i(T), i(T)}, MemScope::Shared),
          allocate(local("acc", DType::F32, {i(1)}, MemScope::Register),
                   block({Threads(store("acc", {i(0)}, f(0.0))),
                          loop("kt", binary(BinaryOp::Div, v("K"), i(T)), ForKind::Serial, KStep),
                          Threads(store("C", {Row, Col}, load(DType::F32, "acc", {i(0)})))}))));
  F.Body = launch("C", LaunchClass::Contraction,
                  loop("by", binary(BinaryOp::Div, v("M"), i(T)), ForKind::BlockY,
                       loop("bx", binary(BinaryOp::Div, v("N"), i(T)), ForKind::BlockX, Tile)));
  return F;
}

TEST(InterpreterTest, TiledSharedMemoryGemm64) {
  Func F = tiledGemm();
  auto Args = gemmArgs(64, 64, 64);
  auto Start = std::chrono::steady_clock::now();
  InterpResult R = interpret(F, {{"M", 64}, {"N", 64}, {"K", 64}}, Args);
  double Seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  ASSERT_TRUE(R.Ok) << R.Error;
  expectGemm(Args, 64, 64, 64);
  EXPECT_LT(Seconds, 5.0);
}

TEST(InterpreterTest, StepLimitStopsHangs) {
  Func F;
  F.Name = "spin";
  F.Body = loop("x", intImm(int64_t(1) << 50), ForKind::Serial, block({}));
  std::map<std::string, TensorData> Args;
  InterpOptions Opts;
  Opts.MaxSteps = 1000;
  InterpResult R = interpret(F, {}, Args, Opts);
  ASSERT_FALSE(R.Ok);
  EXPECT_NE(R.Error.find("stopped after 1000 steps"), std::string::npos) << R.Error;
}

TEST(InterpreterTest, UndefinedNamesAreErrorsNotCrashes) {
  Func F;
  F.Name = "bad";
  F.Params = {param("C", DType::F32, {i(1)}, BufferRole::Output)};
  F.Body = store("C", {v("nope")}, load(DType::F32, "Missing", {}));
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::F32, {1})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "use of undefined variable 'nope'");
}

TEST(InterpreterTest, AsyncCopyOverDataAnotherThreadReadIsARace) {
  // Thread t reads S[(t + 1) % 32], then, with no barrier, issues a copy
  // into S[t]: the copy may land before thread t - 1 has read it.
  Expr T = v("t");
  Func F = kernel1D(
      {param("In", DType::F32, {i(32)}, BufferRole::Input),
       param("Out", DType::F32, {i(32)}, BufferRole::Output)},
      allocate(local("S", DType::F32, {i(32)}, MemScope::Shared),
               block({loop("t", 32, ForKind::ThreadX, store("S", {T}, f(0.0))), barrier(),
                      loop("t", 32, ForKind::ThreadX,
                           block({store("Out", {T},
                                        load(DType::F32, "S",
                                             {binary(BinaryOp::Mod, add(T, i(1)), i(32))})),
                                  std::make_shared<AsyncCopyNode>("S", std::vector<Expr>{T}, "In",
                                                                  std::vector<Expr>{T}, 1),
                                  std::make_shared<AsyncCommitNode>(),
                                  std::make_shared<AsyncWaitNode>(0)}))})));
  auto Args = rangeArgs(32);
  InterpResult R = interpret(F, {}, Args);
  ASSERT_FALSE(R.Ok);
  EXPECT_EQ(R.Error, "shared-memory race on S[0]: read by thread (31, 0, 0) and written by "
                     "thread (0, 0, 0) of block (0, 0, 0) with no barrier between");
}

TEST(InterpreterTest, LogicalAndShortCircuitsPerLane) {
  // if t < 4 && A[t] > 0 with A[4]: lanes 4..7 must not load A[t].
  Expr T = v("t");
  Func F =
      kernel1D({param("A", DType::F32, {i(4)}, BufferRole::Input),
                param("C", DType::F32, {i(8)}, BufferRole::Output)},
               loop("t", 8, ForKind::ThreadX,
                    store("C", {T},
                          select(binary(BinaryOp::And, lt(T, i(4)),
                                        binary(BinaryOp::Gt, load(DType::F32, "A", {T}), f(0.0))),
                                 f(1.0), f(0.0)))));
  std::map<std::string, TensorData> Args = {{"A", tensor(DType::F32, {4}, {1, -1, 2, 0})},
                                            {"C", tensor(DType::F32, {8})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_EQ(Args["C"].Values, (std::vector<double>{1, 0, 1, 0, 0, 0, 0, 0}));
}

TEST(InterpreterTest, WarpAndLaneLoopsSplitThreadX) {
  // for w in 0..2 warp { for l in 0..32 lane { C[w * 32 + l] = shfl_down(l, 1) } }:
  // 64 threads; the last lane of each warp reads itself.
  Expr L = v("l");
  Func F = kernel1D(
      {param("C", DType::I64, {i(64)}, BufferRole::Output)},
      loop("w", 2, ForKind::Warp,
           loop("l", 32, ForKind::Lane,
                store("C", {add(mul(v("w"), i(32)), L)}, call(Intrinsic::ShflDown, {L, i(1)})))));
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::I64, {64})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  for (int X = 0; X < 64; ++X)
    EXPECT_EQ(Args["C"].Values[X], X % 32 == 31 ? 31 : X % 32 + 1) << X;
}

TEST(InterpreterTest, LaunchesAreOrderedThroughGlobalIntermediates) {
  // Launch 1: thread t writes T[t]. Launch 2: thread t reads T[7 - t]. A
  // different thread wrote it, but in an earlier launch: no race.
  Expr T = v("t");
  Stmt First =
      kernel1D({}, loop("t", 8, ForKind::ThreadX, store("Tmp", {T}, cast(DType::F32, T)))).Body;
  Stmt Second = kernel1D({}, loop("t", 8, ForKind::ThreadX,
                                  store("C", {T}, load(DType::F32, "Tmp", {sub(i(7), T)}))))
                    .Body;
  Func F;
  F.Name = "two";
  F.Params = {param("C", DType::F32, {i(8)}, BufferRole::Output)};
  F.Body = allocate(local("Tmp", DType::F32, {i(8)}, MemScope::Global), block({First, Second}));
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::F32, {8})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_EQ(R.Launches, 2u);
  EXPECT_EQ(Args["C"].Values, (std::vector<double>{7, 6, 5, 4, 3, 2, 1, 0}));
}

TEST(InterpreterTest, BlocksOfAGridRunWithTheirOwnSharedMemory) {
  // Grid 3 x 2; each block writes its linear id to shared memory and reads
  // it back after a barrier.
  Func F;
  F.Name = "grid";
  F.Params = {param("C", DType::I64, {i(2), i(3)}, BufferRole::Output)};
  Expr Id = add(mul(v("by"), i(3)), v("bx"));
  F.Body = launch("C", LaunchClass::Generic, loop(
      "by", 2, ForKind::BlockY,
      loop("bx", 3, ForKind::BlockX,
           allocate(local("S", DType::I64, {i(1)}, MemScope::Shared),
                    block({loop("t", 4, ForKind::ThreadX,
                                ifThen(binary(BinaryOp::Eq, v("t"), i(0)), store("S", {i(0)}, Id))),
                           barrier(),
                           loop("t", 4, ForKind::ThreadX,
                                ifThen(binary(BinaryOp::Eq, v("t"), i(3)),
                                       store("C", {v("by"), v("bx")},
                                             load(DType::I64, "S", {i(0)}))))})))));
  std::map<std::string, TensorData> Args = {{"C", tensor(DType::I64, {2, 3})}};
  InterpResult R = interpret(F, {}, Args);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_EQ(Args["C"].Values, (std::vector<double>{0, 1, 2, 3, 4, 5}));
}
