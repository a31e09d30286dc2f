//===- EmitterTest.cpp - IR the CUDA emitter refuses rather than drops ----===//
// The backend writes every statement it is given or refuses the function
// with a message (tdslc reports it as an internal error); it never turns a
// statement it cannot write into a comment. These inputs are parseable IR
// that no pass produces, so they are reached here rather than from tdslc.
#include "backend/CudaEmitter.h"
#include "test/unit/ParseIR.h"


#include <gtest/gtest.h>

using namespace tdsl;

namespace {

/// emitCuda's message; a refusal must be flagged internal (a compiler
/// bug, exit status 2 in tdslc).
std::string emit(llvm::StringRef Text, std::string *Out = nullptr) {
  ir::Module M = test::parseIR(Text);
  std::string Cuda;
  llvm::raw_string_ostream OS(Cuda);
  bool Internal = false;
  std::string Problem = emitCuda(M, CudaEmitOptions(), OS, &Internal);
  EXPECT_EQ(Internal, !Problem.empty());
  if (Out)
    *Out = OS.str();
  return Problem;
}

TEST(Emitter, WritesALaunch) {
  std::string Cuda;
  EXPECT_EQ(emit(R"(func f<N>(out Y: f32[N]) {
  launch Y generic {
    for b in 0..N block.x {
      alloc r: f32[1] register {
        r[0] = 1.0
        Y[b] = r[0]
      }
    }
  }
})",
                 &Cuda),
            "");
  EXPECT_NE(Cuda.find("tdsl_f_Y(float *__restrict__ Y, Index N)"), std::string::npos);
  // A one-element register buffer is a scalar.
  EXPECT_NE(Cuda.find("float r;\n"), std::string::npos);
  EXPECT_NE(Cuda.find("Y[b] = r;"), std::string::npos);
}

TEST(Emitter, RefusesALaunchInsideALaunch) {
  EXPECT_EQ(emit(R"(func f<N>(out Y: f32[N]) {
  launch Y generic {
    for b in 0..N block.x {
      launch Z generic {
        for c in 0..N block.y {
          Y[c] = 1.0
        }
      }
    }
  }
})"),
            "launch 'Y' of 'f' holds launch 'Z', which no backend path "
            "writes yet");
}

TEST(Emitter, RefusesStatementsOutsideLaunches) {
  EXPECT_EQ(emit(R"(func f<N>(out Y: f32[N]) {
  Y[0] = 1.0
})"),
            "'f' has a statement outside any launch at the host level (only "
            "launches and "
            "global allocations are emitted there)");
}

} // namespace
