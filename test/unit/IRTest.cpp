//===- IRTest.cpp - Unit tests of the loop IR, its text form and checks ---===//
#include "ir/IR.h"
#include "ir/IRParser.h"
#include "ir/Launch.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Simplify.h"
#include "ir/Simplify.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace tdsl;
using namespace tdsl::ir;

namespace {

/// Parses Text; diagnostics are collected into Errors instead of printed.
std::optional<Module> parse(llvm::StringRef Text, std::string *Errors = nullptr) {
  llvm::SourceMgr SM;
  std::string Captured;
  SM.setDiagHandler(
      [](const llvm::SMDiagnostic &D, void *Ctx) {
        llvm::raw_string_ostream OS(*static_cast<std::string *>(Ctx));
        D.print("test", OS, /*ShowColors=*/false);
      },
      &Captured);
  unsigned Id = SM.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(Text, "test.tir"),
                                      llvm::SMLoc());
  DiagEngine Diags(SM);
  std::optional<Module> M = parseIRModule(SM, Id, Diags);
  if (Errors)
    *Errors = Captured;
  return M;
}

std::string print(const Module &M) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printModule(M, OS);
  return OS.str();
}

/// The value stored by the single store of "func f<>(out O: T[1]) { O[0] = E }".
Expr parseValue(const std::string &ExprText, DType T) {
  std::optional<Module> M =
      parse("func f<>(out O: " + dtypeName(T).str() + "[1]) {\n  O[0] = " + ExprText + "\n}\n");
  if (!M)
    return nullptr;
  const Stmt &Body = M->Funcs[0].Body;
  if (Body->Kind != StmtKind::Store)
    return nullptr;
  return static_cast<const StoreNode &>(*Body).Value;
}

bool sameBits(double A, double B) { return std::memcmp(&A, &B, sizeof(double)) == 0; }

Func makeFunc(Stmt Body, std::vector<Buffer> Params = {}, std::vector<std::string> Sizes = {}) {
  Func F;
  F.Name = "f";
  F.Sizes = std::move(Sizes);
  F.Params = std::move(Params);
  F.Body = std::move(Body);
  return F;
}

Buffer param(const std::string &Name, DType T, std::vector<Expr> Shape,
             BufferRole Role = BufferRole::Output) {
  Buffer B;
  B.Name = Name;
  B.Type = T;
  B.Shape = std::move(Shape);
  B.Role = Role;
  return B;
}

bool anyContains(const std::vector<std::string> &Msgs, llvm::StringRef Needle) {
  for (const std::string &M : Msgs)
    if (llvm::StringRef(M).contains(Needle))
      return true;
  return false;
}

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

TEST(IRBuilders, ComputeTypes) {
  Expr I = var("i"), F = floatImm(1.5);
  EXPECT_EQ(I->Type, DType::I64);
  EXPECT_EQ(add(I, intImm(1))->Type, DType::I64);
  EXPECT_EQ(lt(I, intImm(1))->Type, DType::Bool);
  EXPECT_EQ(binary(BinaryOp::And, lt(I, I), lt(I, I))->Type, DType::Bool);
  EXPECT_EQ(unary(UnaryOp::Not, lt(I, I))->Type, DType::Bool);
  EXPECT_EQ(unary(UnaryOp::Neg, F)->Type, DType::F32);
  EXPECT_EQ(select(lt(I, I), F, F)->Type, DType::F32);
  EXPECT_EQ(call(Intrinsic::Exp, {floatImm(1.0, DType::F64)})->Type, DType::F64);
  EXPECT_EQ(cast(DType::F16, F)->Type, DType::F16);
  EXPECT_EQ(cast(DType::F32, F), F) << "a cast to the same type is the operand";
  EXPECT_EQ(asConstInt(intImm(7)), std::optional<int64_t>(7));
  EXPECT_FALSE(asConstInt(F));
}

TEST(IRBuilders, FloatImmRoundsToItsType) {
  auto Value = [](const Expr &E) { return static_cast<const FloatImmNode &>(*E).Value; };
  EXPECT_EQ(Value(floatImm(0.1)), static_cast<double>(0.1f));
  EXPECT_EQ(Value(floatImm(0.1, DType::F64)), 0.1);
  EXPECT_EQ(Value(floatImm(65520.0, DType::F16)), std::numeric_limits<double>::infinity());
  EXPECT_EQ(Value(floatImm(1.0 + 1.0 / 2048, DType::F16)), 1.0) << "ties to even";
}

// tf32 rounds to nearest with ties away from zero (cvt.rna.tf32.f32): half
// a tf32 ulp above 1 goes up, where ties to even would stay at 1.
TEST(DTypes, Tf32RoundsTiesAway) {
  const double Ulp = std::ldexp(1.0, -10);
  EXPECT_EQ(convertValue(1.0 + Ulp / 2, DType::F32, DType::TF32), 1.0 + Ulp);
  EXPECT_EQ(convertValue(-(1.0 + Ulp / 2), DType::F32, DType::TF32), -(1.0 + Ulp));
  EXPECT_EQ(convertValue(1.0 + 3 * Ulp / 2, DType::F32, DType::TF32), 1.0 + 2 * Ulp);
  EXPECT_EQ(convertValue(1.0 + Ulp / 2 - std::ldexp(1.0, -23), DType::F32, DType::TF32), 1.0);
  EXPECT_EQ(convertValue(3.0, DType::F32, DType::TF32), 3.0);
  float Max = std::numeric_limits<float>::max();
  EXPECT_TRUE(std::isinf(convertValue(Max, DType::F32, DType::TF32)));
  EXPECT_TRUE(std::isnan(convertValue(std::nan(""), DType::F32, DType::TF32)));
}

TEST(IRBuilders, StructuralEquality) {
  EXPECT_TRUE(structurallyEqual(add(var("i"), intImm(1)), add(var("i"), intImm(1))));
  EXPECT_FALSE(structurallyEqual(add(var("i"), intImm(1)), add(var("j"), intImm(1))));
  EXPECT_FALSE(structurallyEqual(intImm(1), intImm(1, DType::I32)));
  EXPECT_FALSE(structurallyEqual(floatImm(0.0), floatImm(-0.0)));
  double NaN = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(structurallyEqual(floatImm(NaN), floatImm(NaN)));
  EXPECT_FALSE(structurallyEqual(load(DType::F32, "A", {var("i")}),
                                 load(DType::F32, "B", {var("i")})));
  EXPECT_TRUE(structurallyEqual(nullptr, nullptr));
  EXPECT_FALSE(structurallyEqual(var("i"), nullptr));
}

//===----------------------------------------------------------------------===//
// Traversals
//===----------------------------------------------------------------------===//

TEST(IRMutator, IdentityKeepsEveryPointer) {
  Expr Idx = add(var("i"), intImm(1));
  Stmt S = forLoop("i", intImm(0), var("N"), ForKind::Serial,
                   block({store("A", {Idx}, floatImm(1.0)), barrier(),
                          ifThen(lt(var("i"), intImm(3)), store("A", {var("i")}, floatImm(2.0)))}));
  IRMutator Identity;
  EXPECT_EQ(Identity.mutate(S), S);
  EXPECT_EQ(Identity.mutate(Idx), Idx);
}

TEST(IRMutator, RebuildsOnlyThePathToAChange) {
  struct RenameJ : IRMutator {
    Expr visitVar(const VarNode &N, const Expr &E) override {
      return N.Name == "j" ? var("k") : E;
    }
  };
  Stmt Untouched = store("A", {var("i")}, floatImm(1.0));
  Stmt Touched = store("A", {var("j")}, floatImm(2.0));
  Stmt Body = block({Untouched, Touched});
  Stmt Loop = forLoop("i", intImm(0), intImm(4), ForKind::Serial, Body);
  RenameJ M;
  Stmt Out = M.mutate(Loop);
  ASSERT_NE(Out, Loop);
  const auto &NewFor = static_cast<const ForNode &>(*Out);
  EXPECT_EQ(NewFor.Min, static_cast<const ForNode &>(*Loop).Min);
  const auto &NewBody = static_cast<const BlockNode &>(*NewFor.Body);
  EXPECT_EQ(NewBody.Stmts[0], Untouched);
  EXPECT_NE(NewBody.Stmts[1], Touched);
  EXPECT_EQ(toString(NewBody.Stmts[1]), "A[k] = 2.0\n");
}

TEST(IRHelpers, SubstituteStopsAtRebinding) {
  Stmt Kept = store("A", {var("j")}, floatImm(1.0));
  Stmt Inner = forLoop("i", intImm(0), var("i"), ForKind::Serial,
                       store("A", {var("i")}, floatImm(2.0)));
  Stmt S = block({store("A", {var("i")}, floatImm(0.0)), Kept, Inner});
  Stmt Out = substitute(S, "i", intImm(7));
  const auto &B = static_cast<const BlockNode &>(*Out);
  EXPECT_EQ(toString(B.Stmts[0]), "A[7] = 0.0\n");
  EXPECT_EQ(B.Stmts[1], Kept);
  // The inner loop's extent sees the outer i; its body sees its own.
  EXPECT_EQ(toString(B.Stmts[2]), "for i in 0..7 serial {\n  A[i] = 2.0\n}\n");
  EXPECT_EQ(substitute(Kept, "i", intImm(7)), Kept);
}

//===----------------------------------------------------------------------===//
// Printer
//===----------------------------------------------------------------------===//

TEST(Printer, MinimalParentheses) {
  Expr A = var("a"), B = var("b"), C = var("c");
  EXPECT_EQ(toString(mul(add(A, B), C)), "(a + b) * c");
  EXPECT_EQ(toString(add(A, mul(B, C))), "a + b * c");
  EXPECT_EQ(toString(sub(sub(A, B), C)), "a - b - c");
  EXPECT_EQ(toString(sub(A, sub(B, C))), "a - (b - c)");
  EXPECT_EQ(toString(unary(UnaryOp::Neg, add(A, B))), "-(a + b)");
  EXPECT_EQ(toString(unary(UnaryOp::Neg, intImm(5))), "-(5)");
  EXPECT_EQ(toString(mul(intImm(-5), A)), "-5 * a");
  EXPECT_EQ(toString(add(select(lt(A, B), A, B), intImm(1))), "(a < b ? a : b) + 1");
  EXPECT_EQ(toString(binary(BinaryOp::Max, A, add(B, C))), "max(a, b + c)");
  EXPECT_EQ(toString(cast(DType::F16, floatImm(1.0))), "f16(1.0)");
  EXPECT_EQ(toString(load(DType::F32, "s", {})), "s[]");
}

TEST(Printer, Literals) {
  EXPECT_EQ(toString(intImm(3, DType::I32)), "3_i32");
  EXPECT_EQ(toString(intImm(1, DType::Bool)), "1_bool");
  EXPECT_EQ(toString(floatImm(0.1)), "0.1");
  EXPECT_EQ(toString(floatImm(0.1, DType::F64)), "0.1_f64");
  EXPECT_EQ(toString(floatImm(1.0 / 3.0, DType::F64)), "0.3333333333333333_f64");
  EXPECT_EQ(toString(floatImm(2.0, DType::BF16)), "2.0_bf16");
  EXPECT_EQ(toString(floatImm(-0.0)), "-0.0");
  EXPECT_EQ(toString(floatImm(1e20)), "1e20");
  EXPECT_EQ(toString(floatImm(-std::numeric_limits<double>::infinity(), DType::F16)),
            "-inf_f16");
  EXPECT_EQ(toString(floatImm(std::numeric_limits<double>::quiet_NaN(), DType::F64)),
            "nan_f64");
}

TEST(Printer, StatementsAndFunctions) {
  Buffer S;
  S.Name = "S";
  S.Type = DType::F16;
  S.Shape = {intImm(64), intImm(32)};
  S.Scope = MemScope::Shared;
  S.Swz = {3, 3, 3};
  Knob MinBlocks;
  MinBlocks.Key = "min_blocks";
  MinBlocks.Ints = {2};
  MinBlocks.SetBy = "tile-contraction";
  Stmt Body = launch("copy", LaunchClass::Contraction, forLoop(
      "b", intImm(0), var("N"), ForKind::BlockX,
      allocate(S, block({std::make_shared<AsyncCopyNode>(
                             "S", std::vector<Expr>{intImm(0), intImm(0)}, "A",
                             std::vector<Expr>{var("b")}, 8, 5,
                             binary(BinaryOp::Lt, var("b"), intImm(4))),
                         std::make_shared<AsyncCommitNode>(),
                         std::make_shared<AsyncWaitNode>(0), barrier(6)})),
      2), {MinBlocks}, 2);
  Func F = makeFunc(Body, {param("A", DType::F16, {var("N")}, BufferRole::Input)}, {"N"});
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  printFunc(F, OS);
  EXPECT_EQ(OS.str(), "func f<N>(in A: f16[N]) {\n"
                      "  launch copy contraction schedule(min_blocks = 2 by \"tile-contraction\") @2 {\n"
                      "    for b in 0..N block.x @2 {\n"
                      "      alloc S: f16[64, 32] shared swizzle(3, 3, 3) {\n"
                      "        async_copy S[0, 0] <- A[b] x 8 when (b < 4) @5\n"
                      "        async_commit\n"
                      "        async_wait(0)\n"
                      "        barrier @6\n"
                      "      }\n"
                      "    }\n"
                      "  }\n"
                      "}\n");
  EXPECT_TRUE(verifyFunc(F).empty());
}

TEST(Printer, LoopRangesPrintTheirEnd) {
  auto Range = [](Expr Min, Expr Ext) {
    std::string S = toString(forLoop("i", Min, Ext, ForKind::Serial, block({})));
    return S.substr(0, S.find(" serial"));
  };
  EXPECT_EQ(Range(intImm(0), var("N")), "for i in 0..N");
  EXPECT_EQ(Range(intImm(2), intImm(4)), "for i in 2..6");
  EXPECT_EQ(Range(var("j"), intImm(4)), "for i in j..j + 4");
  EXPECT_EQ(Range(var("j"), sub(var("N"), var("j"))), "for i in j..N");
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

TEST(IRParser, FloatLiteralsRoundTripBitExactly) {
  std::mt19937_64 Rng(42);
  for (int I = 0; I < 3000; ++I) {
    uint32_t Bits32 = static_cast<uint32_t>(Rng());
    float F32;
    std::memcpy(&F32, &Bits32, 4);
    uint64_t Bits64 = Rng();
    double F64;
    std::memcpy(&F64, &Bits64, 8);
    for (auto [V, T] : {std::pair<double, DType>{F32, DType::F32}, {F64, DType::F64}}) {
      if (std::isnan(V))
        continue;
      Expr E = floatImm(V, T);
      Expr Back = parseValue(toString(E), T);
      ASSERT_TRUE(Back) << toString(E);
      ASSERT_EQ(Back->Kind, ExprKind::FloatImm) << toString(E);
      EXPECT_TRUE(sameBits(static_cast<const FloatImmNode &>(*Back).Value, V))
          << toString(E);
    }
  }
}

TEST(IRParser, EverySmallFloatRoundTrips) {
  for (uint32_t Bits = 0; Bits < 0x10000; Bits += 7) {
    for (DType T : {DType::F16, DType::BF16}) {
      double V = T == DType::F16 ? decodeF16(static_cast<uint16_t>(Bits))
                                 : decodeBF16(static_cast<uint16_t>(Bits));
      if (std::isnan(V))
        continue;
      Expr E = floatImm(V, T);
      Expr Back = parseValue(toString(E), T);
      ASSERT_TRUE(Back) << toString(E);
      EXPECT_TRUE(sameBits(static_cast<const FloatImmNode &>(*Back).Value, V))
          << toString(E);
    }
  }
}

TEST(IRParser, ResolvesNamesAndTypes) {
  std::optional<Module> M = parse("func f<N>(in A: f16[N], out B: f32[N]) {\n"
                                  "  for i in 0..N serial {\n"
                                  "    let t: f32 = f32(A[i]) {\n"
                                  "      B[i] = t * 2.0\n"
                                  "    }\n"
                                  "  }\n"
                                  "}\n");
  ASSERT_TRUE(M);
  const Func &F = M->Funcs[0];
  EXPECT_EQ(F.Sizes, std::vector<std::string>{"N"});
  ASSERT_EQ(F.Params.size(), 2u);
  EXPECT_EQ(F.Params[0].Role, BufferRole::Input);
  EXPECT_EQ(F.Params[1].Role, BufferRole::Output);
  const auto &Loop = static_cast<const ForNode &>(*F.Body);
  const auto &Let = static_cast<const LetNode &>(*Loop.Body);
  EXPECT_EQ(Let.Value->Type, DType::F32);
  const auto &St = static_cast<const StoreNode &>(*Let.Body);
  const auto &Mul = static_cast<const BinaryNode &>(*St.Value);
  EXPECT_EQ(Mul.A->Kind, ExprKind::Var);
  EXPECT_EQ(Mul.A->Type, DType::F32) << "a let variable carries its declared type";
  EXPECT_EQ(St.Indices[0]->Type, DType::I64) << "loop variables are i64";
  EXPECT_TRUE(verifyModule(*M).empty());
}

TEST(IRParser, RoundTripIsByteIdentical) {
  const char *Text = "func gemm<M, N, K>(in A: f16[M, K], in B: f16[K, N], out C: f32[M, N]) {\n"
                     "  for m in 0..M serial @3 {\n"
                     "    for n in 0..N serial @3 {\n"
                     "      alloc acc: f32[1] register @3 {\n"
                     "        acc[0] = 0.0\n"
                     "        for k in 0..K serial @3 {\n"
                     "          acc[0] = acc[0] + f32(A[m, k]) * f32(B[k, n])\n"
                     "        }\n"
                     "        C[m, n] = acc[0]\n"
                     "      }\n"
                     "    }\n"
                     "  }\n"
                     "}\n";
  std::optional<Module> M = parse(Text);
  ASSERT_TRUE(M);
  EXPECT_EQ(print(*M), Text);
}

TEST(IRParser, ReportsLocatedErrors) {
  std::string Errors;
  EXPECT_FALSE(parse("func f<>(out A: f32[4]) {\n  A[0] = B[0]\n}\n", &Errors));
  EXPECT_NE(Errors.find("test.tir:2:10: error: unknown buffer 'B'"), std::string::npos)
      << Errors;
  EXPECT_FALSE(parse("func f<>(out A: f32[4]) {\n  A[0] = \x01\n}\n", &Errors));
  EXPECT_NE(Errors.find("2:10: error: unexpected character"), std::string::npos) << Errors;
}

TEST(IRParser, SurvivesHostileInput) {
  std::string Deep = "func f<N>(out A: i64[1]) {\n  A[0] = " + std::string(100000, '(') + "N";
  EXPECT_FALSE(parse(Deep));
  std::string Loops = "func f<>() {";
  for (int I = 0; I < 1000; ++I)
    Loops += "for i in 0..1 serial {";
  EXPECT_FALSE(parse(Loops));
  std::string Chain = "func f<N>(out A: i64[1]) {\n  A[0] = N";
  for (int I = 0; I < 100000; ++I)
    Chain += " - N";
  EXPECT_FALSE(parse(Chain + "\n}\n"));
  EXPECT_FALSE(parse(llvm::StringRef("func\0f", 6)));
  EXPECT_TRUE(parse("")) << "an empty module is valid";
}

//===----------------------------------------------------------------------===//
// Verifier: the checks the parser makes unreachable from text
//===----------------------------------------------------------------------===//

TEST(Verifier, NamesMustBeInScope) {
  Func F = makeFunc(store("A", {var("j")}, floatImm(1.0)), {param("A", DType::F32, {intImm(4)})});
  EXPECT_TRUE(anyContains(verifyFunc(F), "in func 'f': variable 'j' is not in scope: j"));
  F.Body = store("B", {intImm(0)}, floatImm(1.0));
  EXPECT_TRUE(anyContains(verifyFunc(F), "buffer 'B' is not defined here"));
  F.Body = forLoop("i", intImm(0), intImm(4), ForKind::Serial, barrier());
  F.Body = block({F.Body, store("A", {var("i")}, floatImm(1.0))});
  EXPECT_TRUE(anyContains(verifyFunc(F), "variable 'i' is not in scope"))
      << "a loop variable is visible in its body only";
}

TEST(Verifier, RanksAndTypes) {
  std::vector<Buffer> Params = {param("A", DType::F32, {intImm(4), intImm(4)})};
  Func F = makeFunc(store("A", {intImm(0)}, floatImm(1.0)), Params);
  EXPECT_TRUE(anyContains(verifyFunc(F), "buffer 'A' of rank 2 indexed with 1 subscripts"));
  F.Body = store("A", {intImm(0), add(intImm(0), intImm(1, DType::I32))}, floatImm(1.0));
  EXPECT_TRUE(anyContains(verifyFunc(F), "operands of '+' differ in type (i64 and i32)"));
  F.Body = store("A", {intImm(0), intImm(0)}, load(DType::F16, "A", {intImm(0), intImm(0)}));
  EXPECT_TRUE(anyContains(verifyFunc(F), "load of type f16 from f32 buffer 'A'"));
  F.Body = store("A", {intImm(0), intImm(0)}, var("x", DType::F32));
  F.Sizes = {"x"};
  EXPECT_TRUE(anyContains(verifyFunc(F), "variable 'x' used as f32 but bound as i64"));
  F.Sizes = {};
  F.Body = store("A", {intImm(0), intImm(0)},
                 std::make_shared<FloatImmNode>(DType::F32, 0.1));
  EXPECT_TRUE(anyContains(verifyFunc(F), "float literal not representable in f32"));
  F.Body = store("A", {intImm(0), intImm(0)},
                 std::make_shared<CallNode>(DType::F32, Intrinsic::Exp,
                                            std::vector<Expr>{floatImm(1.0), floatImm(2.0)}));
  EXPECT_TRUE(anyContains(verifyFunc(F), "'exp' takes 1 arguments, not 2"));
  F.Body = store("A", {floatImm(0.0), intImm(0)}, floatImm(1.0));
  EXPECT_TRUE(anyContains(verifyFunc(F), "has non-integer type f32"));
}

TEST(Verifier, FunctionShape) {
  Func F = makeFunc(block({}), {param("A", DType::F32, {intImm(4)}, BufferRole::Temp)});
  EXPECT_TRUE(anyContains(verifyFunc(F), "parameter 'A' is neither an input nor an output"));
  // Names spelled like reserved words are fine: the printer escapes them.
  F = makeFunc(forLoop("exp", intImm(0), intImm(4), ForKind::Serial, block({})));
  EXPECT_TRUE(verifyFunc(F).empty());
  F = makeFunc(forLoop("1x", intImm(0), intImm(4), ForKind::Serial, block({})));
  EXPECT_TRUE(anyContains(verifyFunc(F), "loop variable name '1x' is not an identifier"));
  F = makeFunc(nullptr);
  EXPECT_TRUE(anyContains(verifyFunc(F), "function has no body"));
}

TEST(Verifier, AcceptsAValidKernel) {
  std::optional<Module> M = parse(R"(func k<N>(in A: f32[N], out B: f32[N]) {
  launch k0 generic {
    for b in 0..(N + 127) / 128 block.x {
      alloc S: f32[128] shared pad [1] {
        for t in 0..128 thread.x {
          if b * 128 + t < N {
            S[t] = A[b * 128 + t]
          }
        }
        barrier
        for w in 0..4 warp {
          for l in 0..32 lane {
            alloc r: f32[1] register {
              r[0] = S[w * 32 + l]
              r[0] = r[0] + shfl_xor(r[0], 16)
              if b * 128 + w * 32 + l < N {
                B[b * 128 + w * 32 + l] = r[0]
              }
            }
          }
        }
      }
    }
  }
}
)");
  ASSERT_TRUE(M);
  std::vector<std::string> Errors = verifyModule(*M);
  EXPECT_TRUE(Errors.empty()) << (Errors.empty() ? "" : Errors[0]);
}

//===----------------------------------------------------------------------===//
// Simplify
//===----------------------------------------------------------------------===//

TEST(Simplify, KeepsPointersWhenNothingChanges) {
  Expr E = add(mul(var("i"), intImm(4)), load(DType::I64, "A", {var("j")}));
  EXPECT_EQ(simplifyExpr(E), E);
  std::optional<Module> M = parse("func f<N>(in x: f32, out A: f32[N]) {\n"
                                  "  for i in 0..N serial {\n"
                                  "    A[i] = x[] + 0.0\n"
                                  "    A[i + 1] = x[] * 2.0\n"
                                  "  }\n"
                                  "}\n");
  ASSERT_TRUE(M);
  Func &F = M->Funcs[0];
  Stmt Before = F.Body;
  simplify(F);
  EXPECT_EQ(F.Body, Before);
}

TEST(Simplify, FoldsAndSharesUnchangedSubtrees) {
  Stmt Kept = store("A", {var("i")}, floatImm(1.0));
  Stmt Folded = store("A", {add(add(var("i"), intImm(1)), intImm(2))}, floatImm(2.0));
  Stmt S = block({Kept, Folded});
  Stmt Out = simplifyStmt(S);
  ASSERT_EQ(Out->Kind, StmtKind::Block);
  const auto &B = static_cast<const BlockNode &>(*Out);
  EXPECT_EQ(B.Stmts[0], Kept);
  EXPECT_EQ(toString(B.Stmts[1]), "A[i + 3] = 2.0\n");
}

TEST(Simplify, FloatFoldingRoundsToTheType) {
  Expr Sum = simplifyExpr(add(floatImm(0.1), floatImm(0.2)));
  ASSERT_EQ(Sum->Kind, ExprKind::FloatImm);
  EXPECT_EQ(static_cast<const FloatImmNode &>(*Sum).Value, static_cast<double>(0.1f + 0.2f));
  Expr Sum64 = simplifyExpr(add(floatImm(0.1, DType::F64), floatImm(0.2, DType::F64)));
  EXPECT_EQ(static_cast<const FloatImmNode &>(*Sum64).Value, 0.1 + 0.2);
  // Not folded: x + 0.0 is -0.0 + 0.0 = +0.0 for x = -0.0.
  Expr X = load(DType::F32, "x", {});
  Expr Plus0 = add(X, floatImm(0.0));
  EXPECT_EQ(simplifyExpr(Plus0), Plus0);
}

TEST(Simplify, ExtentOneLoopsSubstituteTheirVariable) {
  Stmt S = forLoop("k", var("j"), intImm(1), ForKind::Serial,
                   store("A", {add(var("k"), intImm(1))}, floatImm(1.0)));
  EXPECT_EQ(toString(simplifyStmt(S)), "A[j + 1] = 1.0\n");
  Stmt T = forLoop("t", intImm(0), intImm(1), ForKind::ThreadX,
                   store("A", {var("t")}, floatImm(1.0)));
  EXPECT_EQ(simplifyStmt(T), T) << "thread loops keep their meaning";
}

} // namespace

//===----------------------------------------------------------------------===//
// LaunchShape: the one analysis of a launch

TEST(LaunchShape, GridBlockSharedAndUses) {
  std::optional<Module> M = parse(R"(func k<N>(in A: f32[N], out B: f32[N]) {
  alloc t: f32[N] global {
    launch t generic {
      for b in 0..(N + 127) / 128 block.x {
        alloc S: f32[4, 5] shared pad [0, 3] {
          alloc H: f16[3] shared {
            for w in 0..4 warp {
              for l in 0..32 lane {
                if aligned(A[0], 16) {
                  S[0, l % 4] = A[b * 128 + w * 32 + l]
                }
              }
            }
            for y in 0..2 thread.y {
              t[b] = 1.0
            }
          }
        }
      }
    }
    launch B elementwise {
      for b in 0..N block.y {
        B[b] = t[b]
      }
    }
  }
}
)");
  ASSERT_TRUE(M);
  std::vector<std::string> Names;
  std::vector<size_t> Depth;
  forEachLaunch(M->Funcs[0], [&](const LaunchNode &L, const std::vector<const Buffer *> &A) {
    Names.push_back(L.Name);
    Depth.push_back(A.size());
  });
  EXPECT_EQ(Names, (std::vector<std::string>{"t", "B"}));
  EXPECT_EQ(Depth, (std::vector<size_t>{1, 1}));

  Stmt Body = M->Funcs[0].Body;
  ASSERT_EQ(Body->Kind, StmtKind::Allocate);
  Stmt Inner = static_cast<const AllocateNode &>(*Body).Body;
  ASSERT_EQ(Inner->Kind, StmtKind::Block);
  Stmt First = static_cast<const BlockNode &>(*Inner).Stmts[0];
  ASSERT_EQ(First->Kind, StmtKind::Launch);
  LaunchShape S = launchShape(static_cast<const LaunchNode &>(*First));
  EXPECT_EQ(toString(S.Grid[0]), "(N + 127) / 128");
  EXPECT_EQ(toString(S.Grid[1]), "1");
  // A warp loop of 4 covers 128 threads along x; thread.y 2.
  EXPECT_EQ(S.Block[0], 128);
  EXPECT_EQ(S.Block[1], 2);
  EXPECT_EQ(S.threads(), 256);
  // (4 x (5 + 3)) f32 = 128 B; 3 f16 = 6 B rounded to 16, at offset 128.
  ASSERT_EQ(S.SharedAllocs.size(), 2u);
  EXPECT_EQ(S.SharedOffsets, (std::vector<int64_t>{0, 128}));
  EXPECT_EQ(S.SharedBytes, 144);
  EXPECT_FALSE(S.SharedReused);
  EXPECT_EQ(S.Buffers, (std::vector<std::string>{"A", "S", "t"}));
  EXPECT_TRUE(S.Stored.count("t") && S.Stored.count("S") && !S.Stored.count("A"));
  ASSERT_EQ(S.AlignmentTests.size(), 1u);
  EXPECT_EQ(S.AlignmentTests[0], (std::pair<std::string, int64_t>{"A", 16}));
  EXPECT_TRUE(S.GridProblems.empty());
}

TEST(LaunchShape, SiblingSharedTilesShareBytes) {
  // P holds both scopes; X and then Y (siblings) start where P ends, and
  // Z inside Y above it: the block needs P + max(X, Y + Z).
  std::optional<Module> M = parse(R"(func k<N>(in A: f32[N], out B: f32[N]) {
  launch B generic {
    for b in 0..N block.x {
      alloc P: f32[4] shared {
        alloc X: f32[64] shared {
          X[0] = A[b]
        }
        barrier
        alloc Y: f16[8] shared {
          alloc Z: f32[2] shared {
            B[b] = f32(Y[0]) + Z[0] + P[0]
          }
        }
      }
    }
  }
}
)");
  ASSERT_TRUE(M);
  LaunchShape S;
  forEachLaunch(M->Funcs[0], [&](const LaunchNode &L, const std::vector<const Buffer *> &) {
    S = launchShape(L);
  });
  ASSERT_EQ(S.SharedAllocs.size(), 4u);
  EXPECT_EQ(S.SharedOffsets, (std::vector<int64_t>{0, 16, 16, 32}));
  EXPECT_EQ(S.SharedBytes, 16 + 256);
  EXPECT_TRUE(S.SharedReused);
}
