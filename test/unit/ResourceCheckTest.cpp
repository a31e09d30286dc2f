//===- ResourceCheckTest.cpp - Unit tests of backend/ResourceCheck --------===//
// The checks the IR verifier already rejects (too many threads) cannot be
// reached through tdsl-opt; they are tested here on parsed, unverified IR.
// The shared-memory and grid checks are in test/backend/resource-check.tir.
#include "backend/ResourceCheck.h"
#include "test/unit/ParseIR.h"
#include "ir/Launch.h"


#include <gtest/gtest.h>

using namespace tdsl;

namespace {

TEST(ResourceCheck, ArchLimits) {
  EXPECT_EQ(archLimits(75).MaxSharedBytes, 64 * 1024);
  EXPECT_EQ(archLimits(80).MaxSharedBytes, 163 * 1024);
  EXPECT_EQ(archLimits(86).MaxSharedBytes, 99 * 1024);
  EXPECT_EQ(archLimits(89).MaxSharedBytes, 99 * 1024);
  EXPECT_EQ(archLimits(90).MaxSharedBytes, 227 * 1024);
  EXPECT_EQ(archLimits(90).DefaultSharedBytes, 48 * 1024);
}

TEST(ResourceCheck, PaddingAndAlignmentCount) {
  ir::Buffer B;
  B.Name = "S";
  B.Type = DType::F16;
  B.Scope = ir::MemScope::Shared;
  B.Shape = {ir::intImm(3), ir::intImm(5)};
  B.Padding = {0, 2};
  // 3 * (5 + 2) * 2 = 42 bytes, laid out in 16-byte steps.
  EXPECT_EQ(ir::sharedAllocBytes(B), 48);
  B.Shape = {ir::var("M"), ir::intImm(5)};
  EXPECT_FALSE(ir::sharedAllocBytes(B).has_value());
}

TEST(ResourceCheck, ThreadsPerBlock) {
  ir::Module M = test::parseIR(R"(func k<M>(in A: f32[M], out C: f32[M]) {
  launch wide generic {
    for bx in 0..M block.x {
      for ty in 0..32 thread.y {
        for tx in 0..64 thread.x {
          C[0] = A[0]
        }
      }
    }
  }
  launch deep generic {
    for bx in 0..M block.x {
      for tz in 0..128 thread.z {
        C[0] = A[0]
      }
    }
  }
})");
  std::vector<std::string> Problems = checkResources(M, "sm_90");
  ASSERT_EQ(Problems.size(), 2u);
  EXPECT_EQ(Problems[0], "kernel 'k' launch 'wide' needs 2048 threads per block; at most 1024 are "
                         "allowed");
  EXPECT_EQ(Problems[1], "kernel 'k' launch 'deep' has a block of 128 threads along z; at most 64 "
                         "are allowed");
}

} // namespace
