//===- Report.h - tdslc --emit=report: what each kernel costs -------------===//
//
// Per .tdsl kernel: each launch's grid and block (as expressions of the
// size symbols, from the final loop IR), its shared memory, what ptxas says
// about its registers, barriers and spills; and the kernel's FLOPs and
// bytes moved (from the checked AST: every statement's arithmetic over its
// index domain; each input read once and each output written once, the
// traffic a perfectly fused kernel has) with their ratio.
//
// Tests: test/driver/report.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_DRIVER_REPORT_H
#define TDSL_DRIVER_REPORT_H

#include "frontend/AST.h"
#include "ir/IR.h"
#include "driver/Toolchain.h"

#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tdsl {

struct ReportOptions {
  std::map<std::string, int64_t> Sizes; ///< where the counts are evaluated
  int64_t DefaultSize = 4096;           ///< for every symbol not in Sizes
  std::vector<KernelResources> Ptxas;   ///< from parsePtxasVerbose
  std::string SymbolPrefix = "tdsl_";   ///< the kernels' (--symbol-prefix)
};

void printReport(const ast::Module &AST, const ir::Module &IR, const ReportOptions &Opts,
                 llvm::raw_ostream &OS);

} // namespace tdsl

#endif // TDSL_DRIVER_REPORT_H
