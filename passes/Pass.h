//===- Pass.h - The pass registry and the default pipeline ----------------===//
//
// Every pass registers here with its command-line name (kebab-case) and a
// one-line summary. The default pipeline is ONE list, in Pipeline.cpp;
// nothing else calls a pass.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_PASS_H
#define TDSL_PASSES_PASS_H

#include "ir/IR.h"

#include <functional>
#include <string>
#include <vector>

namespace tdsl {

struct PassInfo {
  const char *Name;    ///< "simplify"
  const char *Summary; ///< one line for --list-passes
  std::function<void(ir::Func &)> Run;
  /// The lowest -O level whose default pipeline runs it.
  int MinOptLevel = 1;
};

/// Every registered pass, in pipeline order.
const std::vector<PassInfo> &allPasses();
/// The pass called Name, or null.
const PassInfo *findPass(const std::string &Name);
/// The default pipeline at -O<Level>: pass names in order. -O0 maps each
/// nest naively; -O1 adds the kernel-class passes and simplify; -O2 (and
/// -O3, the same) adds the refinements: vectorize, pad-shared, unroll.
std::vector<std::string> defaultPipeline(int OptLevel);

} // namespace tdsl

#endif // TDSL_PASSES_PASS_H
