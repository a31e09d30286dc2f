//===- Pipeline.cpp - The one list of passes, in order --------------------===//
#include "passes/Pass.h"
#include "passes/MapToGPU.h"
#include "passes/Simplify.h"

namespace tdsl {

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> Passes = {
      // First: every later pass starts from IR that already runs on a GPU
      // (one thread per output element), and -O0 stops right here.
      {"map-to-gpu", "one launch per statement, one thread per output element", mapToGPU},
      // Folds constants and drops trivial control flow; run last so later
      // passes may emit naive index math and rely on it being cleaned up.
      {"simplify", "fold constants, simplify index arithmetic, drop empty loops",
       simplify},
  };
  return Passes;
}

const PassInfo *findPass(const std::string &Name) {
  for (const PassInfo &P : allPasses())
    if (Name == P.Name)
      return &P;
  return nullptr;
}

std::vector<std::string> defaultPipeline(int OptLevel) {
  // -O0 is naive code that still runs on a GPU: only the mapping.
  if (OptLevel <= 0)
    return {"map-to-gpu"};
  std::vector<std::string> Names;
  for (const PassInfo &P : allPasses())
    Names.push_back(P.Name);
  return Names;
}

} // namespace tdsl
