//===- Schedule.h - Schedule knobs: the keys, their checks, kernel classes -===//
//
// A schedule is what the optimizing passes choose for a launch: tile sizes
// per level, threads, vector width, unroll factors, padding, prefetching.
// Each pass chooses by itself from the kernel's class; a user pins a choice
// with a `schedule NAME { key = value }` block in the .tdsl file or with
// `--schedule=key=value` on the command line (which wins). The pinned
// knobs travel on ir::Func::Schedule and print in the IR; every key is
// listed in knobSpecs() with the pass that reads it, and checkSchedule()
// rejects an unknown key, a malformed value or an impossible combination
// (a tile over the shared-memory limit, more than 1024 threads) before any
// pass runs, so a bad schedule is a located error, never wrong code.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_PASSES_SCHEDULE_H
#define TDSL_PASSES_SCHEDULE_H

#include "ir/IR.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace tdsl {

/// One key a pass reads.
struct KnobSpec {
  const char *Key;
  const char *Pass;    ///< the pass that reads it
  const char *Values;  ///< "[BM, BN]", "N", "on | off", ...
  const char *Summary; ///< one line, for the docs and --help
};
const std::vector<KnobSpec> &knobSpecs();

/// The last knob called Key in F's schedule (later entries win), or null.
const ir::Knob *findKnob(const ir::Func &F, llvm::StringRef Key);

/// Appends to Knobs the value Pass chose for Key (Ints, or a Word), unless
/// F pins Key: a pinned knob wins over what a pass would choose. Returns
/// whether it appended.
bool chooseKnob(const ir::Func &F, std::vector<ir::Knob> &Knobs, llvm::StringRef Key,
                std::vector<int64_t> Ints, llvm::StringRef Word, llvm::StringRef Pass);

/// Parses the command-line form "key=64", "key=[128,128]" or "key=off".
/// Returns the knob, or nothing with Error set.
std::optional<ir::Knob> parseKnob(llvm::StringRef Text, std::string &Error);

/// A problem with a pinned knob: the key, its .tdsl line (0: command line)
/// and what is wrong.
struct ScheduleProblem {
  std::string Key;
  unsigned Line = 0;
  std::string Message;
};

/// Every problem with F's pinned knobs, for a target whose blocks may use
/// F.MaxSharedBytes of shared memory.
std::vector<ScheduleProblem> checkSchedule(const ir::Func &F);

/// What the tile-contraction pass builds: a block computes BlockM x BlockN
/// outputs, TileK of the reduction at a time, with (BlockM / ThreadM) x
/// (BlockN / ThreadN) threads of ThreadM x ThreadN outputs each.
struct ContractionSchedule {
  int64_t BlockM = 128, BlockN = 128, TileK = 16;
  int64_t ThreadM = 8, ThreadN = 8;
  /// Consecutive outputs a thread owns along each tile dimension, so that
  /// its shared-memory reads are VectorWidth-wide (1: interleaved).
  int64_t VectorWidth = 4;
  /// Load the next k tile into registers while computing this one, and
  /// keep two shared-memory buffers per operand, so that tile k+1 is
  /// stored while tile k is read and one barrier per k tile suffices. On
  /// by default, together with two resident blocks per SM (min_blocks,
  /// which keeps the prefetch registers from costing the second block):
  /// faster on the H200 than neither, and than prefetch without it
  /// (bench/RESULTS.md).
  bool Prefetch = true;
  /// Copy 4-byte operand tiles in runs of 4 along the contiguous index
  /// (one 16-byte global load each where a test proves it aligned). Off
  /// by default: slower on the H200 (bench/RESULTS.md); fewer load
  /// instructions did not pay there.
  bool CopyRuns = false;
  /// Shared-memory buffers per operand: 2 needs Prefetch; pinning
  /// prefetch = off alone gives 1.
  int64_t Stages = 2;
  /// Resident blocks per SM the kernel's registers must allow, which
  /// tile-contraction hands to the backend as min_blocks (0: none).
  int64_t MinBlocks = 2;
  /// Columns of the thread grid one warp spans (its lanes form a
  /// (32 / LaneCols) x LaneCols patch); 0: a whole row of threads.
  int64_t LaneCols = 8;
  int64_t threads() const { return (BlockM / ThreadM) * (BlockN / ThreadN); }
};
/// F's contraction schedule: the defaults with F's pinned knobs applied.
/// Problems (if non-null) receives what makes the pinned values impossible;
/// ElemBytes is the size of the staged operands' elements. The tiles must
/// fit F.MaxSharedBytes (the least of its --arch list).
ContractionSchedule contractionSchedule(const ir::Func &F, int64_t ElemBytes = 4,
                                        std::vector<ScheduleProblem> *Problems = nullptr);

/// Whether contractions run on tensor cores (the tensor_cores knob).
enum class TensorCores { Auto, On, Off };

/// What the tile-mma pass builds: a block computes BlockM x BlockN outputs
/// with (BlockM / WarpM) x (BlockN / WarpN) warps of WarpM x WarpN outputs
/// each, a grid of 16 x 8 mma tiles; the operands' k tiles of TileK pass
/// through a ring of Stages shared-memory buffers.
struct MmaSchedule {
  TensorCores Mode = TensorCores::Auto;
  int64_t BlockM = 128, BlockN = 128;
  int64_t TileK = 32; ///< mmaSchedule makes it 64 bytes of operand row unless pinned
  int64_t WarpM = 64, WarpN = 64;
  int64_t Stages = 4;
  bool LdMatrix = true, Swizzle = true, Grouped = true;
  /// Two fragment buffers, the next k step's loaded during this one's
  /// mmas, and the refill issued without a branch. Unpinned, on in the
  /// kernel version whose copies are 16-byte cp.async when every operand's
  /// fragments come by ldmatrix and there is no batch (faster on the H200
  /// at most shapes, bench/RESULTS.md); off in the guarded version and for
  /// per-element fragment loads, where the second buffer spills (ptxas -v,
  /// sm_90).
  std::optional<bool> DoubleBuffer;
  /// The outputs through a shared tile (passes/MmaEpilogue.h); unpinned,
  /// wherever that tile can be built.
  std::optional<bool> StageEpilogue;
  /// few_tiles: a second launch of small tiles for sizes with few blocks.
  bool FewTiles = true;
  /// split_k: a launch that splits long k loops of few output tiles.
  bool SplitK = true;
  /// copy_engine: on sm_90, the operands' k tiles by the bulk tensor copy
  /// engine where it can take them (passes/MmaKLoop.h).
  bool CopyEngine = true;
  /// Why the pinned CUDA-core knobs leave no tensor-core schedule ("" if
  /// they do not).
  std::string Unusable;
  int64_t threads() const { return 32 * (BlockM / WarpM) * (BlockN / WarpN); }
  int64_t sharedBytes(int64_t ElemBytes) const {
    return Stages * TileK * (BlockM + BlockN) * ElemBytes;
  }
};
/// F's tensor-core schedule: the defaults with F's pinned knobs applied;
/// Problems and the shared-memory limit as for contractionSchedule.
MmaSchedule mmaSchedule(const ir::Func &F, int64_t ElemBytes = 2,
                        std::vector<ScheduleProblem> *Problems = nullptr);

/// The value of an `on | off` knob, or Default when it is not pinned.
bool knobEnabled(const ir::Func &F, llvm::StringRef Key, bool Default);
/// The value of a one-integer knob, or Default when it is not pinned.
int64_t knobInt(const ir::Func &F, llvm::StringRef Key, int64_t Default);

} // namespace tdsl

#endif // TDSL_PASSES_SCHEDULE_H
