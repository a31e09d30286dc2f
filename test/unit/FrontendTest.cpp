//===- FrontendTest.cpp - Sema fields that --emit=ast does not show -------===//
//
// Lowering and the reference evaluator read pointers and enums that the
// text dump only summarises (Access::Target, Tensor::Definition, Call::Fn,
// Kernel::Sched, ...); these tests pin them down through the public API.
//
//===----------------------------------------------------------------------===//
#include "frontend/Frontend.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

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
