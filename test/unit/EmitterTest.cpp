//===- EmitterTest.cpp - IR the CUDA emitter refuses rather than drops ----===//
// The backend writes every statement it is given or refuses the function
// with a message (tdslc reports it as an internal error); it never turns a
// statement it cannot write into a comment. These inputs are parseable IR
// that no pass produces, so they are reached here rather than from tdslc.
#include "backend/CudaEmitter.h"
#include "test/unit/ParseIR.h"


#include <gtest/gtest.h>

#include <cstdio>

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

// A shared tile is a C array of its shape, its extents named after the
// words the pass gave them; a name in scope with another value takes the
// tile's name too, and a dim without a name keeps its number.
TEST(Emitter, NamesTheExtentsOfSharedTiles) {
  std::string Cuda;
  EXPECT_EQ(emit(R"(func f<N>(out Y: f32[N]) {
  launch Y generic {
    for b in 0..N block.x {
      alloc A_tile: f32[2, 16, 128] shared pad [0, 0, 4] names [stages, tile_k, block_m] {
        alloc B_tile: f32[3, 16, 64] shared names [stages, tile_k, block_n] {
          alloc T: f32[8, 8] shared {
            for t in 0..128 thread.x {
              A_tile[1, t % 16, t] = 1.0
              B_tile[2, t % 16, t % 64] = A_tile[1, t % 16, t]
              T[t % 8, t / 16] = B_tile[2, 0, t % 64]
              barrier
              Y[b * 128 + t] = T[t % 8, 0]
            }
          }
        }
      }
    }
  }
})",
                 &Cuda),
            "");
  for (const char *Line :
       {"constexpr int kStages = 2;", "constexpr int kTileK = 16;", "constexpr int kBlockM = 128;",
        "__shared__ __align__(16) float A_tile[kStages][kTileK][kBlockM + 4];",
        "constexpr int kBTileStages = 3;", "constexpr int kBlockN = 64;",
        "__shared__ __align__(16) float B_tile[kBTileStages][kTileK][kBlockN];",
        "__shared__ __align__(16) float T[8][8];", "B_tile[2][t % 16][t % 64] = A_tile[1][t % 16][t];",
        "T[t % 8][t / 16] = B_tile[2][0][t % 64];"})
    EXPECT_NE(Cuda.find(Line), std::string::npos) << Line << "\n" << Cuda;
  // kTileK is declared once: the second tile's is in scope with its value.
  EXPECT_EQ(Cuda.find("kTileK = 16", Cuda.find("kTileK = 16") + 1), std::string::npos);
}

// A swizzled ring of stages: one subscript for the stage, the swizzled
// offset within it spelled with the named extents.
TEST(Emitter, SwizzledTilesKeepTheStageOutsideTheSwizzle) {
  std::string Cuda;
  EXPECT_EQ(emit(R"(func f<N>(out Y: f32[N]) {
  launch Y generic {
    for b in 0..N block.x {
      alloc S: f16[4, 64, 32] shared names [stages, block_m, tile_k] swizzle(2, 3, 3) {
        for t in 0..64 thread.x {
          S[b % 4, t, 8] = 1.0_f16
          barrier
          Y[b * 64 + t] = f32(S[b % 4, t, 8])
        }
      }
    }
  }
})",
                 &Cuda),
            "");
  EXPECT_NE(Cuda.find("__shared__ __align__(16) __half S[kStages][kBlockM * kTileK];"),
            std::string::npos)
      << Cuda;
  EXPECT_NE(Cuda.find("S[b % 4][tdsl_swizzle<2, 3, 3>(t * kTileK + 8)]"), std::string::npos)
      << Cuda;
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

// mbarrier statements become the device helpers of tdsl/device.cuh on the
// buffer's word; a tensor_copy reads through a tensor map the launcher
// makes (only where the kernel that reads it runs) and passes by value,
// and its launch carves its tiles from a 1024-byte aligned base.
TEST(Emitter, WritesMbarriersAndTensorCopies) {
  std::string Cuda;
  const char *Ring = R"(func f<N>(in A: f32[N, 8], out Y: f32[N]) {
  launch Y generic {
    for b in 0..1 block.x {
      alloc bar: i64[2] shared {
        alloc S: f32[16, 8] shared {
          for t in 0..64 thread.x {
            if t == 0 {
              mbarrier init bar[1] (2)
            }
          }
          barrier
          for t in 0..64 thread.x {
            mbarrier arrive_warp bar[1]
            mbarrier wait bar[1] (0)
            if t == 0 {
              mbarrier expect_tx bar[0] (512)
              %s
            }
            mbarrier arrive bar[0]
          }
        }
      }
    }
  }
})";
  char Text[2048];
  std::snprintf(Text, sizeof Text, Ring, "");
  EXPECT_EQ(emit(Text, &Cuda), "");
  for (const char *Call : {"tdsl_mbarrier_init(&bar[1], int(2));",
                           "tdsl_mbarrier_arrive_warp(&bar[1]);",
                           "tdsl_mbarrier_wait(&bar[1], int(0));",
                           "tdsl_mbarrier_expect_tx(&bar[0], int(512));",
                           "tdsl_mbarrier_arrive(&bar[0]);"})
    EXPECT_NE(Cuda.find(Call), std::string::npos) << Call << "\n" << Cuda;
  std::snprintf(Text, sizeof Text, Ring, "tensor_copy S[0, 0] <- A[b * 16, 0] box [16, 8] on bar[0]");
  EXPECT_EQ(emit(Text, &Cuda), "");
  for (const char *Piece :
       {"uint64_t *const bar = reinterpret_cast<uint64_t *>(tdsl_tiles + 0);",
        "const __grid_constant__ tdsl_tensor_map tdsl_map0_A, Index N)",
        "unsigned char *const tdsl_tiles = tdsl_align_shared<1024>(tdsl_smem);",
        "reinterpret_cast<float (*)[8]>(tdsl_tiles + 1024)",
        "tdsl_tensor_copy(&S[0][0], &tdsl_map0_A, &bar[0], int(0), "
        "int(b * 16));",
        "tdsl_tensor_map tdsl_map0_A = {};",
        "const int64_t dims[] = {int64_t(N), int64_t(8)}, box[] = {16, 8};",
        "status = tdsl_make_tensor_map(&tdsl_map0_A, A, 4, 2, dims, box, 0);"})
    EXPECT_NE(Cuda.find(Piece), std::string::npos) << Piece << "\n" << Cuda;
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
