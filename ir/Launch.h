//===- Launch.h - The one analysis of a launch: grid, block, shared memory ===//
//
// Everything that asks what a launch needs of the GPU reads it here: the
// interpreter (the grid and block it simulates), the verifier (barriers
// against the block size), the resource check (limits per arch), the CUDA
// emitter (the kernel's signature and launch configuration) and
// `tdslc --emit=report`. So the five cannot disagree on how a warp loop
// counts or how shared tiles are laid out.
//
// Tests: test/ir/verify-errors.tir, test/backend/resource-check.tir,
// test/unit/IRTest.cpp (LaunchShape)
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_LAUNCH_H
#define TDSL_IR_LAUNCH_H

#include "ir/IR.h"

#include "llvm/ADT/StringSet.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tdsl::ir {

/// What one launch asks of the GPU and which tensors it touches, read off
/// its body.
struct LaunchShape {
  /// Blocks along x, y, z: the extent of the block loop bound to that
  /// dimension (1 without one).
  Expr Grid[3];
  /// Threads along x, y, z: the widest thread loop bound to it. A warp
  /// loop of extent W covers 32 * W threads along x, a lane loop its extent.
  int64_t Block[3] = {1, 1, 1};
  /// Thread, warp and lane loops whose extent is not a positive constant
  /// (they do not size the block; the verifier rejects them).
  std::vector<const ForNode *> NonConstantThreads;
  /// Problems that make the grid undefined ("binds block.x twice").
  std::vector<std::string> GridProblems;

  /// Shared tiles, in allocation order, and each one's byte offset in the
  /// block's shared memory (16-byte aligned); the most live at once. Tiles
  /// are stacked: one starts where those around it end, so tiles in
  /// sibling scopes share bytes (the epilogue's staging tile reuses the
  /// operand tiles'), and the code must put a barrier between the last
  /// access of one and the first of the next (the interpreter checks).
  std::vector<const AllocateNode *> SharedAllocs;
  std::vector<int64_t> SharedOffsets;
  int64_t SharedBytes = 0;
  /// Whether two tiles share bytes: their sum passes SharedBytes. Such a
  /// launch needs one byte array under them (the backend's dynamic shared
  /// memory), not a C array per tile, which the compiler keeps apart.
  bool SharedReused = false;
  /// The shared bytes of the kernel version whose test fails (the else of
  /// an if whose then holds the tensor copies): its own tiles alone, so
  /// that its launch leaves the rest to L1. 0 where no version copies.
  int64_t GuardedSharedBytes = 0;
  /// Shared tiles whose shape is not constant (not counted above).
  std::vector<std::string> NonConstantShared;

  /// Buffers loaded or stored, in first-use order; those stored; those
  /// allocated inside the launch.
  std::vector<std::string> Buffers;
  llvm::StringSet<> Stored, LocalBuffers;
  /// aligned(X[0], N) tests, each once, in first-use order: the launcher
  /// computes them and passes them in.
  std::vector<std::pair<std::string, int64_t>> AlignmentTests;

  /// What the bulk tensor copy engine reads (tensor_copy): each tensor with
  /// a box and the swizzle its destination takes (bytes: 0, 32, 64, 128),
  /// once, in first-use order; the launcher makes a tensor map of each
  /// and passes it by value. Such a launch carves its tiles from the
  /// dynamic shared memory at an offset aligned to TensorCopyAlign, which
  /// SharedBytes includes the slack for, and places each copy's
  /// destination at a multiple of it (the engine's swizzle repeats every
  /// 1024 bytes and runs on the address).
  struct TensorMapUse {
    std::string Tensor;
    std::vector<int64_t> Box;
    int64_t SwizzleBytes = 0;
    bool operator==(const TensorMapUse &O) const {
      return Tensor == O.Tensor && Box == O.Box && SwizzleBytes == O.SwizzleBytes;
    }
  };
  std::vector<TensorMapUse> TensorMaps;
  static constexpr int64_t TensorCopyAlign = 1024;
  /// The buffers of mbarriers (8-byte words whatever the index type).
  llvm::StringSet<> Mbarriers;

  int64_t threads() const { return Block[0] * Block[1] * Block[2]; }
  /// The byte offset of shared tile A (one of SharedAllocs).
  int64_t sharedOffset(const AllocateNode *A) const;
};

/// The shape of launch L.
/// Whether S holds a tensor_copy.
bool containsTensorCopy(const Stmt &S);

LaunchShape launchShape(const LaunchNode &L);

/// The swizzle of a tensor_copy destination in bytes (ir/IR.md): 16 <<
/// Bits for the engine's swizzles, 0 without one.
int64_t tensorCopySwizzleBytes(const Buffer &Dst);

/// Whether the host can evaluate E: sizes (Sizes), constants, arithmetic,
/// and aligned() tests of a global buffer's first element.
bool hostEvaluable(const Expr &E, const llvm::StringSet<> &Sizes);

/// The `if C { A } else { B }` that versions a contraction launch, if it
/// has one: the first such statement on the launch's straight-line path
/// (through its GPU loops, lets, allocations and blocks, not into serial
/// loops) whose condition reads only sizes (Sizes) and aligned() tests,
/// which the host can evaluate. The backend writes such a launch as two
/// kernels, each holding one branch, so that each gets its own registers
/// (ptxas allocates them for the whole kernel, the busier branch's demand
/// for both), and the launcher picks one by C. Other launch classes keep
/// one kernel: they run far below the register limit. nullptr if none.
const IfNode *launchVersion(const LaunchNode &L, const llvm::StringSet<> &Sizes);

/// The bytes a shared buffer occupies in the block's shared memory:
/// (shape + padding) elements, rounded up to 16 bytes. nullopt if its
/// shape is not constant.
std::optional<int64_t> sharedAllocBytes(const Buffer &B);

/// Calls Fn on each launch of F in the order the host runs them, with the
/// global allocations around it (outermost first).
void forEachLaunch(
    const Func &F,
    const std::function<void(const LaunchNode &, const std::vector<const Buffer *> &)> &Fn);

/// Whether S is host structure: a block, a let or a global allocation,
/// which group launches and run on the host.
bool isHostStructure(const Stmt &S);

/// Calls Fn on S and, through host structure, on every statement at the
/// host level inside it, outermost first: the blocks, lets and global
/// allocations, and what they hold (launches, and in the IR before
/// map-to-gpu any other statement). Fn sees nothing inside those.
void forEachHostStmt(const Stmt &S, const std::function<void(const Stmt &)> &Fn);

} // namespace tdsl::ir

#endif // TDSL_IR_LAUNCH_H
