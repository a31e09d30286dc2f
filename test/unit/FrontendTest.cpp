//===- FrontendTest.cpp - Sema fields that --emit=ast does not show -------===//
//
// Lowering and the reference evaluator read pointers and enums that the
// text dump only summarises (Access::Target, Tensor::Definition, Call::Fn,
// Kernel::Sched, ...); these tests pin them down through the public API.
//
//===----------------------------------------------------------------------===//
#include "frontend/Frontend.h"
#include "frontend/Reference.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tdsl;
using namespace tdsl::ast;

namespace {

/// Parses and checks Src; Errors receives the diagnostics text.
struct Checked {
  llvm::SourceMgr SM;
  std::unique_ptr<Module> M;
  std::string Errors;

  explicit Checked(llvm::StringRef Src) {
    SM.setDiagHandler(
        [](const llvm::SMDiagnostic &D, void *Ctx) {
          llvm::raw_string_ostream OS(*static_cast<std::string *>(Ctx));
          D.print(nullptr, OS, /*ShowColors=*/false);
        },
        &Errors);
    unsigned ID = SM.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(Src, "test.tdsl"), llvm::SMLoc());
    DiagEngine Diags(SM);
    M = parseAndCheck(SM, ID, Diags);
  }
};

TEST(FrontendTest, GemmFieldsAreFilled) {
  Checked C("kernel gemm(A: f16[M, K], B: f16[K, N], alpha: f32) -> (C: f16[M, N]) {\n"
            "  acc[m, n] += A[m, k] * B[k, n]\n"
            "  C[m, n] = f16(alpha * acc[m, n])\n"
            "}\n"
            "schedule gemm { tile = [128, 64, 32]; tensor_cores = on }\n");
  ASSERT_TRUE(C.M) << C.Errors;
  ASSERT_EQ(C.M->Kernels.size(), 1u);
  Kernel &K = *C.M->Kernels[0];
  EXPECT_EQ(K.SizeSymbols, (std::vector<std::string>{"M", "K", "N"}));
  ASSERT_EQ(K.Intermediates.size(), 1u);
  Tensor &Acc = *K.Intermediates[0];
  EXPECT_EQ(Acc.Role, TensorRole::Intermediate);
  EXPECT_EQ(Acc.Type, DType::F32);
  EXPECT_FALSE(Acc.TypeAnnotated);
  ASSERT_EQ(Acc.Shape.size(), 2u);
  EXPECT_EQ(Acc.Shape[0], Affine::symbol("M"));
  EXPECT_EQ(Acc.Shape[1], Affine::symbol("N"));
  EXPECT_EQ(K.lookup("acc"), &Acc);

  Stmt &S0 = *K.Body[0];
  EXPECT_EQ(S0.Target, &Acc);
  EXPECT_EQ(Acc.Definition, &S0);
  EXPECT_EQ(S0.Op, AssignOp::Add);
  EXPECT_EQ(S0.Indices, (std::vector<std::string>{"m", "n"}));
  EXPECT_EQ(S0.Reduced, (std::vector<std::string>{"k"}));
  EXPECT_EQ(S0.Ranges.at("k"), Affine::symbol("K"));
  EXPECT_EQ(S0.ValueType, DType::F32);
  auto &Mul = static_cast<Binary &>(*S0.Value);
  EXPECT_EQ(Mul.Op, BinaryOp::Mul);
  EXPECT_EQ(Mul.OperandType, DType::F32);
  auto &ReadA = static_cast<Access &>(*Mul.LHS);
  EXPECT_EQ(ReadA.Target, K.Inputs[0].get());
  ASSERT_EQ(ReadA.AffineSubs.size(), 2u);
  EXPECT_EQ(ReadA.AffineSubs[1], Affine::symbol("k"));
  auto &IndexM = static_cast<Name &>(*ReadA.Subscripts[0]);
  EXPECT_EQ(IndexM.Resolved, NameKind::Index);

  Stmt &S1 = *K.Body[1];
  EXPECT_EQ(S1.Target, K.Outputs[0].get());
  EXPECT_EQ(K.Outputs[0]->Definition, &S1);
  EXPECT_EQ(S1.ValueType, DType::F16);
  auto &Cast = static_cast<Call &>(*S1.Value);
  EXPECT_EQ(Cast.Fn, Callee::Cast);
  EXPECT_EQ(Cast.CastTo, DType::F16);
  EXPECT_EQ(Cast.Type, DType::F16);
  EXPECT_EQ(Cast.ArgType, DType::F32);
  auto &Scale = static_cast<Binary &>(*Cast.Args[0]);
  auto &Alpha = static_cast<Name &>(*Scale.LHS);
  EXPECT_EQ(Alpha.Resolved, NameKind::Tensor);
  EXPECT_EQ(Alpha.Target, K.Inputs[2].get());

  ASSERT_TRUE(K.Sched);
  ASSERT_EQ(K.Sched->Entries.size(), 2u);
  EXPECT_EQ(K.Sched->Entries[0].Key, "tile");
  EXPECT_EQ(K.Sched->Entries[0].Ints, (std::vector<int64_t>{128, 64, 32}));
  EXPECT_EQ(K.Sched->Entries[1].Word, "on");
}

TEST(FrontendTest, AffineSubscriptsAndDims) {
  Checked C("kernel conv(X: f32[L + R - 1], W: f32[R]) -> (Y: f32[L]) {\n"
            "  Y[i] += X[i + r] * W[r]\n"
            "}\n");
  ASSERT_TRUE(C.M) << C.Errors;
  Kernel &K = *C.M->Kernels[0];
  Affine XDim = K.Inputs[0]->Dims[0].Value;
  EXPECT_EQ(XDim.Constant, -1);
  EXPECT_EQ(XDim.Coeffs.at("L"), 1);
  EXPECT_EQ(XDim.Coeffs.at("R"), 1);
  auto &Mul = static_cast<Binary &>(*K.Body[0]->Value);
  auto &ReadX = static_cast<Access &>(*Mul.LHS);
  EXPECT_EQ(ReadX.AffineSubs[0], Affine::symbol("i") + Affine::symbol("r"));
}

TEST(FrontendTest, SizeSymbolAsValueAndCallees) {
  Checked C("kernel k(X: f16[R, C]) -> (Y: f32[R]) {\n"
            "  Y[r] += max(X[r, c], 0.0) / C\n"
            "}\n");
  ASSERT_TRUE(C.M) << C.Errors;
  auto &Div = static_cast<Binary &>(*C.M->Kernels[0]->Body[0]->Value);
  auto &Max = static_cast<Call &>(*Div.LHS);
  EXPECT_EQ(Max.Fn, Callee::Max);
  EXPECT_EQ(Max.ArgType, DType::F32);
  auto &Size = static_cast<Name &>(*Div.RHS);
  EXPECT_EQ(Size.Resolved, NameKind::Size);
  EXPECT_EQ(Size.Type, DType::I32);
}

TEST(FrontendTest, ErrorsGiveNullAndLocatedMessages) {
  Checked C("kernel k(X: f32[N]) -> (Y: f32[N]) {\n"
            "  Y[i] = X[i + 1]\n"
            "}\n");
  EXPECT_FALSE(C.M);
  EXPECT_NE(C.Errors.find("test.tdsl:2:12: error: subscript 'i + 1' of 'X' may be "
                          "out of bounds"),
            std::string::npos)
      << C.Errors;
}

TEST(FrontendTest, EmptyBufferIsAnEmptyModule) {
  Checked C("");
  ASSERT_TRUE(C.M) << C.Errors;
  EXPECT_TRUE(C.M->Kernels.empty());
  std::string Dump;
  llvm::raw_string_ostream OS(Dump);
  printAST(*C.M, OS);
  EXPECT_EQ(OS.str(), "module 'test.tdsl'\n");
}

} // namespace

namespace {

/// The reference's outputs and their scales for Src's one kernel at Sizes,
/// every input element set to Fill.
struct Evaluated {
  std::map<std::string, ir::TensorData> Out;
  std::map<std::string, std::vector<double>> Terms;
};

Evaluated evaluate(llvm::StringRef Src, const std::map<std::string, int64_t> &Sizes,
                   const std::map<std::string, std::vector<double>> &Fill) {
  Checked C(Src);
  EXPECT_TRUE(C.M) << C.Errors;
  Evaluated E;
  if (!C.M)
    return E;
  const Kernel &K = *C.M->Kernels[0];
  std::map<std::string, ir::TensorData> In;
  for (const auto &T : K.Inputs) {
    ir::TensorData D;
    D.Type = T->Type;
    for (const Affine &A : T->Shape)
      D.Shape.push_back(A.evaluate(Sizes));
    D.Values = Fill.at(T->Name);
    In[T->Name] = D;
  }
  E.Out = evaluateReference(K, Sizes, In, &E.Terms);
  return E;
}

} // namespace

// The scale of a value is its size where nothing cancels, and the size of
// the cancelled terms where something does, carried through functions.
TEST(FrontendTest, ReferenceScalesFollowCancellation) {
  Evaluated Plain = evaluate("kernel k(X: f32[N]) -> (Y: f32[N]) {\n"
                             "  Y[i] = exp(X[i] * 2.0) + 1.0\n"
                             "}\n",
                             {{"N", 2}}, {{"X", {0.5, -1.0}}});
  ASSERT_EQ(Plain.Terms["Y"].size(), 2u);
  for (size_t I = 0; I < 2; ++I)
    EXPECT_DOUBLE_EQ(Plain.Terms["Y"][I], std::fabs(Plain.Out["Y"].Values[I]));

  // var = E[x^2] - E[x]^2 over one column: x^2 - x^2 in f32 terms.
  Evaluated Var = evaluate("kernel k(X: f32[R, C]) -> (V: f32[R]) {\n"
                           "  s[r] += X[r, c]\n"
                           "  q[r] += X[r, c] * X[r, c]\n"
                           "  V[r] = q[r] / C - (s[r] / C) * (s[r] / C)\n"
                           "}\n",
                           {{"R", 1}, {"C", 1}}, {{"X", {0.7}}});
  ASSERT_EQ(Var.Terms["V"].size(), 1u);
  EXPECT_NEAR(Var.Terms["V"][0], 2 * 0.7f * 0.7f, 1e-6);
  EXPECT_LT(std::fabs(Var.Out["V"].Values[0]), 1e-7);

  // A sum of both signs: the scale is the sum of the sizes; a function of
  // it carries that excess through its derivative (exp' = exp).
  Evaluated Sum = evaluate("kernel k(X: f32[N]) -> (S: f32, E: f32) {\n"
                           "  t += X[i]\n"
                           "  S = t\n"
                           "  E = exp(t)\n"
                           "}\n",
                           {{"N", 2}}, {{"X", {3.0, -3.0}}});
  EXPECT_DOUBLE_EQ(Sum.Out["S"].Values[0], 0.0);
  EXPECT_DOUBLE_EQ(Sum.Terms["S"][0], 6.0);
  EXPECT_DOUBLE_EQ(Sum.Out["E"].Values[0], 1.0);
  EXPECT_DOUBLE_EQ(Sum.Terms["E"][0], 1.0 + 1.0 * 6.0);

  // gelu(x) = x (1 + erf(x / sqrt 2)) / 2 cancels for x < 0, where a
  // kernel's f32 erf rounds to -1 and gives -0: the scale is x's own size
  // there (not the value's, 1e-22 at -10), and the value's where x > 0.
  Evaluated Gelu = evaluate("kernel k(X: f32[N]) -> (Y: f32[N]) {\n"
                            "  Y[i] = gelu(X[i])\n"
                            "}\n",
                            {{"N", 2}}, {{"X", {-10.0, 3.0}}});
  EXPECT_LT(std::fabs(Gelu.Out["Y"].Values[0]), 1e-20);
  EXPECT_NEAR(Gelu.Terms["Y"][0], 10.0, 1e-12);
  EXPECT_DOUBLE_EQ(Gelu.Terms["Y"][1], std::fabs(Gelu.Out["Y"].Values[1]));
}
