//===- PassManagerTest.cpp - The pass manager's verifier, hook and printing ===//
//
// What lit cannot reach through the tools: a pass that breaks the IR on
// purpose (the registry has none), and the stage hook --check relies on
// (passes/PassManager.h).
//
//===----------------------------------------------------------------------===//
#include "passes/PassManager.h"
#include "test/unit/ParseIR.h"

#include "ir/Diagnostics.h"


#include <gtest/gtest.h>

using namespace tdsl;

namespace {

using Passes = std::vector<const PassInfo *>;

const char *const Input = "func k<N>(out A: f32[N]) {\n"
                          "  A[N - 1] = 2.0\n"
                          "}\n";

/// Stores to a buffer nobody declared: the verifier's "unknown buffer".
const PassInfo BreakIR = {"break-ir", "stores to an undeclared buffer", [](ir::Func &F) {
                            F.Body = ir::store("nowhere", {ir::intImm(0)}, ir::floatImm(1.0));
                          }};
const PassInfo DoNothing = {"do-nothing", "returns every node as it is", [](ir::Func &) {}};

TEST(PassManager, ReportsAPassThatBreaksTheIRAsItsInternalError) {
  ir::Module M = test::parseIR(Input);
  PassManagerOptions Opts;
  Opts.VerifyEach = true;
  PassManager PM(Passes{&DoNothing, &BreakIR, &DoNothing}, Opts, "tool");
  std::vector<std::string> Stages;
  PM.setStageHook([&](llvm::StringRef S, const ir::Module &, bool) { Stages.push_back(S.str()); });
  std::string Err;
  llvm::raw_string_ostream OS(Err);
  EXPECT_EQ(PM.run(M, "input", OS), PassManagerStatus::InternalError);
  EXPECT_NE(OS.str().find("tool: error: internal error: pass 'break-ir' produced invalid IR"),
            std::string::npos)
      << OS.str();
  // The stages after the broken one never run.
  EXPECT_EQ(Stages, std::vector<std::string>({"input", "do-nothing"}));
}

TEST(PassManager, WithoutVerifyEachTheBrokenIRGoesOn) {
  ir::Module M = test::parseIR(Input);
  PassManager PM(Passes{&BreakIR, &DoNothing}, PassManagerOptions(), "tool");
  std::string Err;
  llvm::raw_string_ostream OS(Err);
  EXPECT_EQ(PM.run(M, "", OS), PassManagerStatus::Ok);
  EXPECT_EQ(OS.str(), "");
}

TEST(PassManager, TheHookSeesWhichStagesChangedTheModule) {
  ir::Module M = test::parseIR("func k<N>(out A: f32[N]) {\n  A[N + 1 - 2] = 1.0 * 2.0\n}\n");
  PassManager PM(Passes{&DoNothing, findPass("simplify"), findPass("simplify")},
                 PassManagerOptions(), "tool");
  std::vector<std::pair<std::string, bool>> Stages;
  PM.setStageHook([&](llvm::StringRef S, const ir::Module &, bool Changed) {
    Stages.push_back({S.str(), Changed});
  });
  std::string Err;
  llvm::raw_string_ostream OS(Err);
  ASSERT_EQ(PM.run(M, "input", OS), PassManagerStatus::Ok);
  // The initial stage counts as a change; the second simplify finds
  // nothing left to fold.
  std::vector<std::pair<std::string, bool>> Expected = {
      {"input", true}, {"do-nothing", false}, {"simplify", true}, {"simplify", false}};
  EXPECT_EQ(Stages, Expected);
}

TEST(PassManager, PrintsChangedStagesAndMarksTheOthers) {
  ir::Module M = test::parseIR(Input);
  PassManagerOptions Opts;
  Opts.PrintAfterChange = true;
  PassManager PM(Passes{&DoNothing}, Opts, "tool");
  std::string Err;
  llvm::raw_string_ostream OS(Err);
  ASSERT_EQ(PM.run(M, "input", OS), PassManagerStatus::Ok);
  EXPECT_EQ(OS.str(), "// -----// IR Dump After input //----- //\n"
                      "func k<N>(out A: f32[N]) {\n"
                      "  A[N - 1] = 2.0\n"
                      "}\n"
                      "// -----// IR Dump After do-nothing (unchanged) //----- //\n");
}

TEST(PassManager, RejectsAnUnknownPassToPrintAfter) {
  PassManagerOptions Opts;
  Opts.PrintAfter = {"simplify", "lower"};
  EXPECT_EQ(PassManager::checkOptions(Opts, "lower"), "");
  Opts.PrintAfter = {"no-such-pass"};
  EXPECT_NE(PassManager::checkOptions(Opts, "lower").find("unknown pass 'no-such-pass'"),
            std::string::npos);
}

} // namespace
