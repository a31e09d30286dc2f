//===- Pipeline.cpp - The one list of passes, in order --------------------===//
#include "passes/Pass.h"
#include "passes/MapElementwise.h"
#include "passes/MapToGPU.h"
#include "passes/PadShared.h"
#include "passes/ReduceRows.h"
#include "passes/RowChain.h"
#include "passes/Simplify.h"
#include "passes/TileContraction.h"
#include "passes/TileMma.h"
#include "passes/TileTranspose.h"
#include "passes/Unroll.h"
#include "passes/Vectorize.h"

namespace tdsl {

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> Passes = {
      // The kernel-class passes come first: each turns the naive nests of
      // its class (contraction, row reduction, transpose) into a tiled
      // launch, or declines with a remark and leaves the nest to map-to-gpu.
      // Contractions first: the GEMM-shaped nests get block, thread and
      // register tiles with shared-memory staging.
      // Contractions of f16 and bf16 go to the tensor cores (sm_80 on);
      // what tile-mma declines, tile-contraction tiles for the CUDA cores.
      {"tile-mma", "f16 and bf16 contractions on tensor cores: mma.sync, ldmatrix, cp.async stages",
       tileMma},
      {"tile-contraction",
       "block/thread/register tiles for contractions, operands staged in shared memory",
       tileContraction},
      // Row chains (softmax, layernorm as the fusion stage left them): a
      // block per row for every phase; before reduce-rows, which would
      // decline the chain, and after the contraction passes.
      {"row-chain", "one block per row for a chain of row reductions and maps, the row read once",
       rowChain},
      // Row reductions along the contiguous dimension (a lone row sum):
      // after tile-contraction, which takes the contractions it would also
      // match (Q . K^T), and before map-to-gpu, whose thread per row strides.
      {"reduce-rows",
       "one warp or one block per row of a row reduction, shuffle butterflies; reductions with "
       "few outputs split in two first",
       reduceRows},
      // Transposes: the naive mapping writes along i and reads along j with
      // a stride, so the reads are staged through a shared tile first.
      {"tile-transpose", "stage transposed reads through a shared-memory tile",
       tileTranspose},
      // Elementwise nests: after the transpose pass (a permute is a store of
      // one load too, and the shared tile serves it better).
      {"map-elementwise",
       "runs of 16 bytes per thread where aligned, else single elements; all loads before the "
       "first store",
       mapElementwise},
      // Every nest no class pass took: one thread per output element. At
      // -O0 it is the only pass, so naive code still runs on a GPU.
      {"map-to-gpu", "one launch per statement, one thread per output element", mapToGPU, 0},
      // Then the passes that refine any launch (from -O2 on: -O1 is the
      // kernel-class code without them): wide accesses first, since the
      // padding must keep them aligned, and unrolling last but one.
      {"vectorize", "one 8- or 16-byte access for provably aligned shared and global copies",
       vectorize, 2},
      // Padding from a bank model of the accesses as the tiling passes
      // left them (unroll only repeats them).
      {"pad-shared", "pad shared-memory rows where a bank model finds conflicts", padShared, 2},
      {"unroll", "unroll small constant loops fully, inner variable loops partially", unroll, 2},
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
  // -O0 is naive code that still runs on a GPU: only the mapping. No pass
  // is reserved for -O3 yet, so it is -O2 (the README and --help say so).
  std::vector<std::string> Names;
  for (const PassInfo &P : allPasses())
    if (P.MinOptLevel <= OptLevel)
      Names.push_back(P.Name);
  return Names;
}

} // namespace tdsl
