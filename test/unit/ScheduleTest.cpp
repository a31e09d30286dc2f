//===- ScheduleTest.cpp - Knob parsing, lookup and checks -----------------===//
//
// The command-line knob syntax, "later entries win", and the combinations
// checkSchedule() must reject before any pass runs (passes/Schedule.h).
//
//===----------------------------------------------------------------------===//
#include "passes/Schedule.h"

#include <gtest/gtest.h>

using namespace tdsl;

namespace {

ir::Knob knob(const std::string &Text) {
  std::string Error;
  std::optional<ir::Knob> K = parseKnob(Text, Error);
  EXPECT_TRUE(K.has_value()) << Text << ": " << Error;
  return K.value_or(ir::Knob());
}

ir::Func withKnobs(std::initializer_list<const char *> Texts) {
  ir::Func F;
  F.Name = "k";
  for (const char *T : Texts)
    F.Schedule.push_back(knob(T));
  return F;
}

TEST(Schedule, ParsesTheThreeValueForms) {
  ir::Knob I = knob("k_tile=16");
  EXPECT_EQ(I.Key, "k_tile");
  EXPECT_EQ(I.Ints, std::vector<int64_t>({16}));
  EXPECT_FALSE(I.IsList);
  ir::Knob L = knob(" block_tile = [64, 32] ");
  EXPECT_EQ(L.Key, "block_tile");
  EXPECT_EQ(L.Ints, std::vector<int64_t>({64, 32}));
  EXPECT_TRUE(L.IsList);
  ir::Knob W = knob("prefetch=on");
  EXPECT_EQ(W.Word, "on");
  EXPECT_TRUE(W.Ints.empty());
}

TEST(Schedule, RejectsMalformedText) {
  for (const char *Bad : {"k_tile", "=3", "k_tile=", "block_tile=[64,", "k_tile=1x",
                          "block_tile=[a,b]", "padding=a-b"}) {
    std::string Error;
    EXPECT_FALSE(parseKnob(Bad, Error).has_value()) << Bad;
    EXPECT_FALSE(Error.empty()) << Bad;
  }
}

TEST(Schedule, LaterEntriesWin) {
  ir::Func F = withKnobs({"k_tile=8", "k_tile=32"});
  ASSERT_NE(findKnob(F, "k_tile"), nullptr);
  EXPECT_EQ(findKnob(F, "k_tile")->Ints[0], 32);
  EXPECT_EQ(contractionSchedule(F).TileK, 32);
  EXPECT_EQ(findKnob(F, "block_tile"), nullptr);
}

TEST(Schedule, DefaultsAreAValidLaunch) {
  ir::Func F = withKnobs({});
  F.MaxSharedBytes = 48 * 1024;
  EXPECT_TRUE(checkSchedule(F).empty());
  ContractionSchedule S = contractionSchedule(F);
  EXPECT_EQ(S.threads(), 256);
  EXPECT_EQ(S.BlockM % S.ThreadM, 0);
  EXPECT_EQ(S.ThreadN % S.VectorWidth, 0);
  // Two stages need the prefetch registers; turning prefetch off alone
  // falls back to one stage rather than an error.
  EXPECT_TRUE(S.Prefetch);
  EXPECT_EQ(S.Stages, 2);
  ir::Func NoPrefetch = withKnobs({"prefetch=off"});
  NoPrefetch.MaxSharedBytes = 48 * 1024;
  EXPECT_TRUE(checkSchedule(NoPrefetch).empty());
  EXPECT_EQ(contractionSchedule(NoPrefetch).Stages, 1);
  // Copy runs are off unless asked for (measured slower on the H200).
  EXPECT_FALSE(S.CopyRuns);
  EXPECT_TRUE(contractionSchedule(withKnobs({"copy_runs=on"})).CopyRuns);
}

/// The message checkSchedule gives for Key, or "" when it accepts F.
std::string problemFor(ir::Func F, const std::string &Key, int64_t Smem = 227 * 1024) {
  F.MaxSharedBytes = Smem;
  for (const ScheduleProblem &P : checkSchedule(F))
    if (P.Key == Key)
      return P.Message;
  return "";
}

TEST(Schedule, ImpossibleCombinationsAreProblems) {
  EXPECT_NE(problemFor(withKnobs({"block_tile=[64,64]", "thread_tile=[3,8]"}), "block_tile")
                .find("not a multiple of the thread tile"),
            std::string::npos);
  EXPECT_NE(problemFor(withKnobs({"block_tile=[256,256]", "thread_tile=[2,2]"}), "block_tile")
                .find("the limit is 1024"),
            std::string::npos);
  EXPECT_NE(problemFor(withKnobs({"block_tile=[256,256]", "k_tile=128"}), "block_tile")
                .find("shared-memory tiles need"),
            std::string::npos);
  // The same tiles fit the opt-in limit but not a 48 KiB target.
  ir::Func Mid = withKnobs({"block_tile=[128,128]", "k_tile=32"});
  EXPECT_EQ(problemFor(Mid, "block_tile"), "");
  EXPECT_NE(problemFor(Mid, "block_tile", 16 * 1024), "");
  EXPECT_NE(problemFor(withKnobs({"thread_vector=4", "block_tile=[32,32]", "thread_tile=[2,2]"}), "thread_vector")
                .find("does not divide"),
            std::string::npos);
  EXPECT_NE(problemFor(withKnobs({"prefetch=off", "stages=2"}), "stages").find("prefetch"), std::string::npos);
  EXPECT_NE(problemFor(withKnobs({"threads=100"}), "threads"), "");
  EXPECT_NE(problemFor(withKnobs({"rows_per_block=3"}), "rows_per_block"), "");
  // block_per_row is auto, on or off, and leaves no pinned knob of the
  // other mapping unused; reduce_threads is whole warps.
  EXPECT_NE(problemFor(withKnobs({"block_per_row=maybe"}), "block_per_row"), "");
  EXPECT_NE(problemFor(withKnobs({"block_per_row=2"}), "block_per_row"), "");
  EXPECT_NE(problemFor(withKnobs({"rows_per_block=4", "block_per_row=on"}), "block_per_row")
                .find("rows_per_block"),
            std::string::npos);
  EXPECT_NE(problemFor(withKnobs({"reduce_threads=64", "block_per_row=off"}), "block_per_row")
                .find("reduce_threads"),
            std::string::npos);
  EXPECT_EQ(problemFor(withKnobs({"rows_per_block=4", "block_per_row=off"}), "block_per_row"), "");
  EXPECT_EQ(problemFor(withKnobs({"reduce_threads=96", "block_per_row=on"}), "block_per_row"), "");
  EXPECT_EQ(problemFor(withKnobs({"rows_per_block=4", "reduce_threads=64"}), "block_per_row"), "");
  EXPECT_NE(problemFor(withKnobs({"reduce_threads=100"}), "reduce_threads"), "");
  EXPECT_NE(problemFor(withKnobs({"reduce_threads=2048"}), "reduce_threads"), "");
  EXPECT_NE(problemFor(withKnobs({"prefetch=maybe"}), "prefetch"), "");
  EXPECT_NE(problemFor(withKnobs({"copy_runs=4"}), "copy_runs"), "");
  EXPECT_NE(problemFor(withKnobs({"block_tile=[1,2,3]"}), "block_tile"), "");
  EXPECT_NE(problemFor(withKnobs({"tile=4"}), "tile").find("unknown key"), std::string::npos);
  EXPECT_EQ(problemFor(withKnobs({"padding=auto", "padding=3"}), "padding"), "");
}

TEST(Schedule, TensorCoreKnobs) {
  // The defaults: 128x128 blocks of four 64x64 warps, k tiles of 32 through
  // four stages; a batched nest narrows its warps itself (tile-mma).
  MmaSchedule D = mmaSchedule(ir::Func());
  EXPECT_EQ(D.threads(), 128);
  EXPECT_EQ(D.sharedBytes(2), 4 * 32 * 256 * 2);
  EXPECT_TRUE(D.Unusable.empty());
  EXPECT_NE(problemFor(withKnobs({"tensor_cores=maybe"}), "tensor_cores"), "");
  EXPECT_NE(problemFor(withKnobs({"ldmatrix=2"}), "ldmatrix"), "");
  EXPECT_NE(problemFor(withKnobs({"double_buffer=yes"}), "double_buffer"), "");
  EXPECT_NE(problemFor(withKnobs({"swizzle=on"}), "swizzle").find("'auto' or 'off'"),
            std::string::npos);
  EXPECT_NE(problemFor(withKnobs({"block_order=cols"}), "block_order"), "");
  EXPECT_NE(problemFor(withKnobs({"stages=9"}), "stages"), "");
  EXPECT_NE(problemFor(withKnobs({"warp_tile=[64,40]"}), "warp_tile").find("multiple of 16x16"),
            std::string::npos);
  EXPECT_NE(problemFor(withKnobs({"warp_tile=[64,64]", "block_tile=[96,128]"}), "warp_tile")
                .find("not a multiple of the warp tile"),
            std::string::npos);
  EXPECT_NE(problemFor(withKnobs({"warp_tile=[16,16]", "block_tile=[256,256]"}), "warp_tile")
                .find("the limit is 1024"),
            std::string::npos);
  // A k tile or block tile pinned for the CUDA cores that the tensor cores
  // cannot take is no problem: tile-mma leaves the nest to tile-contraction.
  ir::Func Cores = withKnobs({"k_tile=8", "block_tile=[32,32]"});
  EXPECT_EQ(problemFor(Cores, "k_tile"), "");
  EXPECT_NE(mmaSchedule(Cores).Unusable.find("multiple of 16"), std::string::npos);
  EXPECT_EQ(mmaSchedule(Cores).WarpM, 32); // the warp tile follows the block tile
  // The passes' schedules hold the tiles to F's own shared-memory limit
  // (the least of its --arch list): 7 stages of 128x128 k 32 f16 tiles
  // (112 KiB) fit the H200's 227 KiB, not sm_86's 99 KiB.
  ir::Func Small = withKnobs({"stages=7"});
  EXPECT_TRUE(mmaSchedule(Small).Unusable.empty());
  Small.MaxSharedBytes = 99 * 1024;
  EXPECT_NE(mmaSchedule(Small).Unusable.find("the target allows 101376"), std::string::npos);
  ir::Func SmallCores = withKnobs({"k_tile=64", "stages=2"});
  EXPECT_TRUE(problemFor(SmallCores, "k_tile").empty());
  SmallCores.MaxSharedBytes = 48 * 1024;
  std::vector<ScheduleProblem> Problems;
  contractionSchedule(SmallCores, 4, &Problems);
  ASSERT_EQ(Problems.size(), 1u);
  EXPECT_NE(Problems[0].Message.find("shared-memory tiles need"), std::string::npos);
  // With tensor_cores = on the same k tile is one.
  EXPECT_NE(problemFor(withKnobs({"tensor_cores=on", "k_tile=8"}), "k_tile")
                .find("on tensor cores"),
            std::string::npos);
  EXPECT_NE(problemFor(withKnobs({"tensor_cores=on", "stages=8", "k_tile=64",
                                  "block_tile=[256,256]"}),
                       "block_tile")
                .find("shared-memory tiles need"),
            std::string::npos);
  // Off: the tensor-core limits do not apply.
  EXPECT_EQ(problemFor(withKnobs({"tensor_cores=off", "warp_tile=[64,40]"}), "warp_tile"), "");
}

} // namespace
