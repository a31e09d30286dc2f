//===- Schedule.cpp - Schedule knobs: the keys, their checks ---------------===//
#include "passes/Schedule.h"
#include "ir/Match.h"
#include "passes/ContractionMatch.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <string>

namespace tdsl {

using namespace ir;

const std::vector<KnobSpec> &knobSpecs() {
  static const std::vector<KnobSpec> Specs = {
      {"block_tile", "tile-contraction", "[BM, BN]",
       "outputs per block of a contraction (default [128, 128])"},
      {"k_tile", "tile-contraction", "BK",
       "reduction elements staged in shared memory per step (default 16)"},
      {"thread_tile", "tile-contraction", "[TM, TN]",
       "outputs per thread of a contraction, held in registers (default [8, 8])"},
      {"thread_vector", "tile-contraction", "1 | 2 | 4",
       "consecutive outputs per thread and row, read from shared memory at once "
       "(default 4)"},
      {"prefetch", "tile-contraction", "on | off",
       "load the next k tile into registers while computing this one (default on)"},
      {"copy_runs", "tile-contraction", "on | off",
       "copy 4-byte operand tiles in runs of 4 along the contiguous index, one 16-byte load "
       "where a test proves it aligned (default off: slower on the H200, bench/RESULTS.md)"},
      {"lane_cols", "tile-contraction", "1 | 2 | 4 | 8 | 16 | 32",
       "columns of the thread grid a warp spans: its lanes form a (32 / N) x N patch "
       "(default 8)"},
      {"stages", "tile-contraction, tile-mma", "1 .. 8",
       "shared-memory buffers per operand. CUDA cores: 2 stores tile k+1 while tile k is "
       "read, one barrier per tile (default 2; 1 when prefetch = off; 2 needs prefetch = on; "
       "more counts as 2). Tensor cores: a ring of N k tiles filled by cp.async, N - 1 in "
       "flight (default 4; 1: synchronous copies)"},
      {"fuse", "fuse", "on | off",
       "the fusion stage before lowering (graph/Fuse.h); off lowers every statement as its own "
       "launch (default on; -O0 and --disable-pass=fuse leave the stage out)"},
      {"fuse_inline", "fuse", "on | off",
       "compute a map that writes an intermediate where it is read, when every reader takes one "
       "value per point of its domain (default on)"},
      {"fuse_epilogue", "fuse", "on | off",
       "run the maps that read a contraction's result in its launch, on its accumulators "
       "(default on)"},
      {"fuse_factor", "fuse", "on | off",
       "multiply a contraction's sum by its factors free of the reduced indices once per output "
       "(alpha * A * B), and divide it by such divisors and negate it likewise (A * B / s, "
       "-(A * B); floats only), so it tiles like a plain GEMM (default on)"},
      {"fuse_prologue", "fuse", "on | off",
       "compute a contraction's operand that is a function of a tile operand (relu(A), A * s[k], "
       "f16(Aq)) first, in a launch of its own, so it tiles two plain operands (default on)"},
      {"fuse_siblings", "fuse", "on | off",
       "one launch for contractions that read one operand over the same index space (a gated "
       "MLP's X . Wg and X . Wu), each with its own accumulators, the operand staged once "
       "(default on)"},
      {"fuse_rows", "fuse", "on | off",
       "one launch for a row reduction and the reductions and maps over the same rows after it "
       "(softmax, layernorm), the values per row held in registers (default on)"},
      {"fuse_beside", "fuse", "on | off",
       "one launch for consecutive maps over the same domain that read a tensor at the same "
       "subscripts (Y = X * 2; Z = relu(X)), each such tensor read once (default on)"},
      {"tensor_cores", "tile-mma", "auto | on | off",
       "f16, bf16, tf32() and i8 contractions on tensor cores (mma.sync, sm_80 and newer); off "
       "gives the "
       "CUDA-core kernel; on also says (--remarks) why a nest that is no contraction was not "
       "taken (default auto)"},
      {"warp_tile", "tile-mma", "[WM, WN]",
       "outputs per warp on tensor cores, multiples of 16 (default [64, 64])"},
      {"ldmatrix", "tile-mma", "on | off",
       "fragments from shared memory by ldmatrix (on, default) or by one load per element"},
      {"double_buffer", "tile-mma", "on | off",
       "two fragment buffers on tensor cores, the next k step's loaded during this one's mmas, "
       "with the barrier before a tile's last step (needs an even number of k steps; default: "
       "on where the operands take 16-byte cp.async and their fragments ldmatrix, unbatched; "
       "off elsewhere, where it spills or was slower)"},
      {"stage_epilogue", "tile-mma", "on | off",
       "write a tensor-core block's outputs through a shared tile over the operand tiles' "
       "bytes, then to memory in 16-byte rows, instead of each lane's scattered elements "
       "(default on where each output is written once at the contraction's index and the "
       "tile fits)"},
      {"few_tiles", "tile-mma, tile-contraction", "auto | off",
       "where the sizes are open, a second launch of 64x64 block tiles (32x32 warps) for the "
       "sizes whose default blocks number fewer than 128 (skinny and small products, small "
       "batches), which would leave most SMs idle; on CUDA cores, 32x128 block tiles for rows "
       "of at most 64, 128x32 for a constant of at most 64 columns (auto, default); off: the "
       "default block alone"},
      {"split_k", "tile-contraction, tile-mma", "auto | off",
       "a launch that splits the k loop of each output tile (64x64 on tensor cores, the "
       "block tile on CUDA cores) over up to 64 blocks, adding their partials in a second "
       "launch, for the sizes whose tiles number fewer than 256 and whose k loop has 32 k "
       "tiles or more, where the partials cost little beside the operands' bytes (tensor "
       "cores) or the FLOPs (CUDA cores): skinny products and long k, which would leave "
       "most SMs idle (auto, default; not with a pinned block, thread or k tile on CUDA "
       "cores); off: no split"},
      {"swizzle", "tile-mma", "auto | off",
       "XOR-swizzle the shared tiles so that cp.async writes and ldmatrix reads are free of "
       "bank conflicts, or pad the rows of f32 tiles whose fragments load an element at a time "
       "(default auto: the bank model chooses)"},
      {"copy_engine", "tile-mma", "auto | off",
       "on sm_90 (every --arch), the operands' k tiles come by the bulk tensor copy engine: "
       "k tiles of 128 bytes a row in the engine's swizzle, three stages, one thread issuing "
       "the copies, each warp releasing a stage once it has read it, no block barrier in the k "
       "loop (auto, default, where the tensors allow it; the few_tiles launch where its tiles "
       "number 264 or more, in a launch of its own); off: 16-byte cp.async by every thread"},
      {"block_order", "tile-mma", "rows | grouped",
       "the order of output tiles over the grid: row by row, or in groups of 8 block rows "
       "that share B tiles in L2 (default grouped)"},
      {"min_blocks", "backend", "N",
       "blocks per SM the kernel's register use must allow (__launch_bounds__'s second "
       "argument; default none, 2 for a contraction whose register tile leaves room)"},
      {"fdiv", "backend", "call | inline",
       "how f32 division is spelled: CUDA's '/' (call, default), whose slow path is a "
       "subroutine call, and what is live across a call spills; or tdsl_fdiv (inline, what "
       "row-chain chooses where it keeps terms across its quotients): no call, more code at "
       "each division. Both round as IEEE"},
      {"fexp", "backend", "ex2 | ex2sq | expf",
       "how f32 exp is spelled: ex2.approx.ftz of x log2(e) / 2, squared (ex2sq, default: "
       "three instructions, within 6e-6 relative of e^x), ex2.approx of x log2(e) (ex2: five, "
       "the same bounds), or CUDA's expf (about ten instructions, within 2 ulp)"},
      {"rows_per_block", "reduce-rows", "W",
       "rows of a row reduction per block, one warp each (default 8; pinned without "
       "reduce_threads it asks for one warp per row)"},
      {"reduce_threads", "reduce-rows", "N",
       "threads of the block that reduces one row (default 256; pinned without "
       "rows_per_block it asks for one block per row)"},
      {"online_softmax", "row-chain", "on | off",
       "where a row chain re-reads its row, a max and the sum of exp(x - max) after it fold "
       "in one sweep, the sum rescaled where the running max grows (default on)"},
      {"peel_rows", "row-chain", "on | off",
       "a row of halves that is not whole 16-byte runs (8 or 16 lanes, a warp or a block a "
       "row) takes its runs from its first 16-byte boundary and its head and tail an element "
       "at a time, "
       "where its tensors allow (default on; off: such rows go an element at a time)"},
      {"block_per_row", "reduce-rows", "auto | on | off",
       "one block per row of a row reduction (on) or one warp (off); default auto: a block "
       "for rows of unknown length, of 1024 or more elements, or few rows"},
      {"transpose_tile", "tile-transpose", "T",
       "side of the square shared-memory tile of a transpose (default 32)"},
      {"threads", "map-elementwise, map-to-gpu", "N",
       "threads per block of elementwise and one-thread-per-output kernels (default 256)"},
      {"max_blocks", "map-elementwise", "N",
       "most blocks of an elementwise launch; each loops over every N-th chunk "
       "(grid-stride; default 0: one block per chunk)"},
      {"items_per_thread", "map-elementwise", "U",
       "elements per thread of an elementwise kernel, all loaded before the first store "
       "(default 4)"},
      {"unroll", "unroll", "N",
       "partial unroll factor of inner loops of unknown trip count "
       "(default 4; 1 turns it off)"},
      {"unroll_limit", "unroll", "N", "largest constant trip count unrolled fully (default 16)"},
      {"padding", "pad-shared", "auto | off | N",
       "elements added to each shared-memory row (default auto: the bank-conflict model "
       "chooses)"},
  };
  return Specs;
}

const Knob *findKnob(const Func &F, llvm::StringRef Key) { return findKnob(F.Schedule, Key); }

bool chooseKnob(const Func &F, std::vector<Knob> &Knobs, llvm::StringRef Key,
                std::vector<int64_t> Ints, llvm::StringRef Word, llvm::StringRef Pass) {
  if (findKnob(F, Key))
    return false;
  Knob K;
  K.Key = Key.str();
  K.Ints = std::move(Ints);
  K.Word = Word.str();
  K.SetBy = Pass.str();
  Knobs.push_back(std::move(K));
  return true;
}

std::optional<Knob> parseKnob(llvm::StringRef Text, std::string &Error) {
  auto [Key, Value] = Text.split('=');
  Key = Key.trim();
  Value = Value.trim();
  Knob K;
  K.Key = Key.str();
  if (Key.empty() || !Text.contains('=') || Value.empty()) {
    Error = "expected KEY=VALUE, found '" + Text.str() + "'";
    return std::nullopt;
  }
  auto ParseInt = [&](llvm::StringRef S) {
    int64_t V;
    if (S.trim().getAsInteger(10, V)) {
      Error = "'" + S.trim().str() + "' is not an integer (in '" + Text.str() + "')";
      return false;
    }
    K.Ints.push_back(V);
    return true;
  };
  if (Value.startswith("[")) {
    if (!Value.endswith("]")) {
      Error = "missing ']' in '" + Text.str() + "'";
      return std::nullopt;
    }
    K.IsList = true;
    llvm::SmallVector<llvm::StringRef, 4> Parts;
    Value.drop_front().drop_back().split(Parts, ',');
    for (llvm::StringRef P : Parts)
      if (!ParseInt(P))
        return std::nullopt;
  } else if (llvm::isDigit(Value.front()) || Value.front() == '-') {
    if (!ParseInt(Value))
      return std::nullopt;
  } else {
    if (!llvm::all_of(Value, [](char C) { return llvm::isAlnum(C) || C == '_'; })) {
      Error = "'" + Value.str() + "' is not an integer, a list or a word";
      return std::nullopt;
    }
    K.Word = Value.str();
  }
  return K;
}

namespace {

/// Reads pinned knobs, recording what is malformed.
class KnobReader {
public:
  KnobReader(const Func &F, std::vector<ScheduleProblem> *Problems)
      : F(F), Problems(Problems) {}

  void problem(const Knob &K, std::string Message) {
    if (Problems)
      Problems->push_back({K.Key, K.Line, std::move(Message)});
  }

  /// A list of N integers in [Lo, Hi] (a single integer fills every slot).
  const Knob *ints(llvm::StringRef Key, size_t N, int64_t Lo, int64_t Hi, int64_t *Out) {
    const Knob *K = findKnob(F, Key);
    if (!K)
      return nullptr;
    bool Shape = K->Word.empty() && (K->Ints.size() == N || (N > 1 && K->Ints.size() == 1 &&
                                                             !K->IsList));
    if (!Shape) {
      problem(*K, "expects " + std::string(N == 1 ? "an integer" : "a list of " +
                                                                      std::to_string(N) +
                                                                      " integers"));
      return nullptr;
    }
    for (size_t I = 0; I < N; ++I) {
      int64_t V = K->Ints[K->Ints.size() == 1 ? 0 : I];
      if (V < Lo || V > Hi) {
        problem(*K, "value " + std::to_string(V) + " is outside [" + std::to_string(Lo) +
                        ", " + std::to_string(Hi) + "]");
        return nullptr;
      }
    }
    for (size_t I = 0; I < N; ++I)
      Out[I] = K->Ints[K->Ints.size() == 1 ? 0 : I];
    return K;
  }

  /// on | off.
  std::optional<bool> onOff(llvm::StringRef Key) {
    const Knob *K = findKnob(F, Key);
    if (!K)
      return std::nullopt;
    if (K->Word == "on")
      return true;
    if (K->Word == "off")
      return false;
    problem(*K, "expects 'on' or 'off'");
    return std::nullopt;
  }

private:
  const Func &F;
  std::vector<ScheduleProblem> *Problems;
};

bool isPowerOf2(int64_t V) { return V > 0 && (V & (V - 1)) == 0; }

} // namespace

ContractionSchedule contractionSchedule(const Func &F, int64_t ElemBytes,
                                        std::vector<ScheduleProblem> *Problems) {
  const int64_t MaxSharedBytes = F.MaxSharedBytes;
  ContractionSchedule S;
  KnobReader R(F, Problems);
  int64_t Block[2], Thread[2], K, Vec;
  const Knob *BlockK = R.ints("block_tile", 2, 1, 1024, Block);
  const Knob *ThreadK = R.ints("thread_tile", 2, 1, 16, Thread);
  if (BlockK) {
    S.BlockM = Block[0];
    S.BlockN = Block[1];
  }
  if (ThreadK) {
    S.ThreadM = Thread[0];
    S.ThreadN = Thread[1];
  }
  if (R.ints("k_tile", 1, 1, 256, &K))
    S.TileK = K;
  const Knob *VecK = R.ints("thread_vector", 1, 1, 4, &Vec);
  if (VecK && !isPowerOf2(Vec)) {
    R.problem(*VecK, "expects 1, 2 or 4");
    VecK = nullptr;
  }
  if (VecK)
    S.VectorWidth = Vec;
  if (std::optional<bool> P = R.onOff("prefetch")) {
    S.Prefetch = *P;
    if (!*P)
      S.Stages = 1;
  }
  if (std::optional<bool> C = R.onOff("copy_runs"))
    S.CopyRuns = *C;
  int64_t LaneCols;
  if (const Knob *LK = R.ints("lane_cols", 1, 1, 32, &LaneCols)) {
    if (!isPowerOf2(LaneCols))
      R.problem(*LK, "expects a power of 2");
    else
      S.LaneCols = LaneCols;
  }
  int64_t Stages;
  if (const Knob *StK = R.ints("stages", 1, 1, 8, &Stages)) {
    S.Stages = std::min<int64_t>(Stages, 2);
    if (Stages == 2 && !S.Prefetch) {
      R.problem(*StK, "2 stages need prefetch = on (tile k+1 waits in registers)");
      S.Stages = 1;
    }
  }

  // The combination must make a launch the hardware runs: blame the knob
  // the user pinned (the block tile when both are defaults' neighbours).
  const Knob *Blame = BlockK ? BlockK : ThreadK;
  if (S.BlockM % S.ThreadM || S.BlockN % S.ThreadN) {
    if (Blame)
      R.problem(*Blame, "block tile " + std::to_string(S.BlockM) + "x" +
                            std::to_string(S.BlockN) + " is not a multiple of the thread tile " +
                            std::to_string(S.ThreadM) + "x" + std::to_string(S.ThreadN));
    S = ContractionSchedule();
    return S;
  }
  if (S.threads() > 1024) {
    if (Blame)
      R.problem(*Blame, "needs " + std::to_string(S.threads()) +
                            " threads per block (block tile / thread tile); the limit is 1024");
    S = ContractionSchedule();
    return S;
  }
  if ((S.ThreadM % S.VectorWidth || S.ThreadN % S.VectorWidth)) {
    if (VecK)
      R.problem(*VecK, "thread_vector " + std::to_string(S.VectorWidth) +
                           " does not divide the thread tile " + std::to_string(S.ThreadM) +
                           "x" + std::to_string(S.ThreadN));
    S.VectorWidth = 1;
  }
  // Padding adds at most a few elements per row; leave room for it.
  int64_t Bytes = S.Stages * S.TileK * (S.BlockM + S.BlockN + 16) * ElemBytes;
  if (Bytes > MaxSharedBytes) {
    const Knob *Big = BlockK ? BlockK : findKnob(F, "k_tile");
    if (Big)
      R.problem(*Big, "the shared-memory tiles need " + std::to_string(Bytes) + " bytes" +
                          (S.Stages > 1 ? " (" + std::to_string(S.Stages) + " stages)" : "") +
                          "; the target allows " + std::to_string(MaxSharedBytes));
    S = ContractionSchedule();
  }
  return S;
}

MmaSchedule mmaSchedule(const Func &F, int64_t ElemBytes,
                        std::vector<ScheduleProblem> *Problems) {
  const int64_t MaxSharedBytes = F.MaxSharedBytes;
  MmaSchedule S;
  KnobReader R(F, Problems);
  if (const Knob *K = findKnob(F, "tensor_cores")) {
    if (K->Word == "on")
      S.Mode = TensorCores::On;
    else if (K->Word == "off")
      S.Mode = TensorCores::Off;
    else if (K->Word != "auto")
      R.problem(*K, "expects 'auto', 'on' or 'off'");
  }
  int64_t Block[2], Warp[2], K, Stages;
  const Knob *BlockK = R.ints("block_tile", 2, 1, 1024, Block);
  const Knob *WarpK = R.ints("warp_tile", 2, 16, 256, Warp);
  if (BlockK) {
    S.BlockM = Block[0];
    S.BlockN = Block[1];
  }
  if (WarpK) {
    S.WarpM = Warp[0];
    S.WarpN = Warp[1];
  }
  // 64 bytes of each operand row per k tile, two mma k steps.
  S.TileK = 64 / ElemBytes;
  const Knob *KK = R.ints("k_tile", 1, 1, 256, &K);
  if (KK)
    S.TileK = K;
  if (R.ints("stages", 1, 1, 8, &Stages))
    S.Stages = Stages;
  if (std::optional<bool> L = R.onOff("ldmatrix"))
    S.LdMatrix = *L;
  if (std::optional<bool> D = R.onOff("double_buffer"))
    S.DoubleBuffer = *D;
  if (std::optional<bool> E = R.onOff("stage_epilogue"))
    S.StageEpilogue = *E;
  if (const Knob *T = findKnob(F, "few_tiles")) {
    if (T->Word == "off")
      S.FewTiles = false;
    else if (T->Word != "auto")
      R.problem(*T, "expects 'auto' or 'off'");
  }
  if (const Knob *T = findKnob(F, "split_k")) {
    if (T->Word == "off")
      S.SplitK = false;
    else if (T->Word != "auto")
      R.problem(*T, "expects 'auto' or 'off'");
  }
  if (const Knob *T = findKnob(F, "copy_engine")) {
    if (T->Word == "off")
      S.CopyEngine = false;
    else if (T->Word != "auto")
      R.problem(*T, "expects 'auto' or 'off'");
  }
  if (const Knob *Sw = findKnob(F, "swizzle")) {
    if (Sw->Word == "off")
      S.Swizzle = false;
    else if (Sw->Word != "auto")
      R.problem(*Sw, "expects 'auto' or 'off'");
  }
  if (const Knob *O = findKnob(F, "block_order")) {
    if (O->Word == "rows")
      S.Grouped = false;
    else if (O->Word != "grouped")
      R.problem(*O, "expects 'rows' or 'grouped'");
  }
  // Only when the tensor-core path may run: its limits are not the CUDA-core
  // path's, and a pinned block tile is read by both.
  if (S.Mode == TensorCores::Off)
    return S;
  // Unless warp_tile or tensor_cores = on is pinned, a block tile or k tile
  // pinned for the CUDA cores that the tensor cores cannot take leaves the
  // contraction to tile-contraction (Unusable, said in a remark), and the
  // warp tile follows a smaller block tile.
  bool Own = WarpK || S.Mode == TensorCores::On;
  if (!WarpK) {
    S.WarpM = std::min<int64_t>(S.WarpM, S.BlockM);
    S.WarpN = std::min<int64_t>(S.WarpN, S.BlockN);
  }
  const Knob *Blame = WarpK ? WarpK : BlockK;
  auto Unusable = [&](const Knob *K, const std::string &Why) {
    if (!S.Unusable.empty())
      return;
    S.Unusable = Why;
    if (Own && K)
      R.problem(*K, Why + " (on tensor cores)");
  };
  if (S.WarpM % 16 || S.WarpN % 16)
    Unusable(Blame, "warp tile " + std::to_string(S.WarpM) + "x" + std::to_string(S.WarpN) +
                        " is not a multiple of 16x16 (mma tiles, ldmatrix pairs)");
  else if (S.BlockM % S.WarpM || S.BlockN % S.WarpN)
    Unusable(Blame, "block tile " + std::to_string(S.BlockM) + "x" + std::to_string(S.BlockN) +
                        " is not a multiple of the warp tile " + std::to_string(S.WarpM) + "x" +
                        std::to_string(S.WarpN));
  else if (S.threads() > 1024)
    Unusable(Blame, "needs " + std::to_string(S.threads()) +
                        " threads per block; the limit is 1024");
  // The mma's k is 32 bytes of operands: 16 f16, 8 tf32, 32 i8.
  int64_t MmaK = 32 / ElemBytes;
  if (S.TileK % MmaK)
    Unusable(KK, "k tile " + std::to_string(S.TileK) + " is not a multiple of " +
                     std::to_string(MmaK) + " (the mma's k for " + std::to_string(ElemBytes * 8) +
                     "-bit operands)");
  int64_t Bytes = S.sharedBytes(ElemBytes);
  if (Bytes > MaxSharedBytes)
    Unusable(BlockK ? BlockK : KK ? KK : findKnob(F, "stages"),
             "the shared-memory tiles need " + std::to_string(Bytes) + " bytes (" +
                 std::to_string(S.Stages) + " stages); the target allows " +
                 std::to_string(MaxSharedBytes));
  return S;
}

bool knobEnabled(const Func &F, llvm::StringRef Key, bool Default) {
  KnobReader R(F, nullptr);
  return R.onOff(Key).value_or(Default);
}

int64_t knobInt(const Func &F, llvm::StringRef Key, int64_t Default) {
  KnobReader R(F, nullptr);
  int64_t V;
  return R.ints(Key, 1, INT64_MIN, INT64_MAX, &V) ? V : Default;
}

std::vector<ScheduleProblem> checkSchedule(const Func &F) {
  std::vector<ScheduleProblem> Problems;
  for (const Knob &K : F.Schedule)
    if (!llvm::any_of(knobSpecs(), [&](const KnobSpec &S) { return K.Key == S.Key; })) {
      std::string Keys;
      for (const KnobSpec &S : knobSpecs())
        Keys += (Keys.empty() ? "" : ", ") + std::string(S.Key);
      Problems.push_back({K.Key, K.Line, "unknown key (the keys: " + Keys + ")"});
    }
  // The shared tiles' bytes depend on the operands' size: the CUDA-core
  // limits are checked for the widest F's contractions use (4 bytes when
  // it has none), the tensor-core ones for each size they use (16-bit
  // when none), each problem once.
  struct OperandSizes : IRVisitor {
    std::vector<int64_t> Sizes;
    void visitStmt(const Stmt &S) {
      if (S->Kind == StmtKind::For)
        if (std::optional<ContractionNest> C =
                matchContraction(S, nullptr, /*ExplainAll=*/false, /*Nests=*/true)) {
          for (const ContractionOperand &O : C->Operands)
            if (!llvm::is_contained(Sizes, dtypeBytes(O.Type)))
              Sizes.push_back(dtypeBytes(O.Type));
          return;
        }
      visit(S);
    }
    void visitBlock(const BlockNode &N) override {
      for (const Stmt &S : N.Stmts)
        visitStmt(S);
    }
    void visitAllocate(const AllocateNode &N) override { visitStmt(N.Body); }
  } W;
  if (F.Body)
    W.visitStmt(F.Body);
  std::vector<int64_t> &Sizes = W.Sizes;
  contractionSchedule(F, Sizes.empty() ? 4 : *std::max_element(Sizes.begin(), Sizes.end()), &Problems);
  if (Sizes.empty())
    Sizes.push_back(2);
  for (int64_t Bytes : Sizes) {
    std::vector<ScheduleProblem> Mma;
    mmaSchedule(F, Bytes, &Mma);
    for (ScheduleProblem &P : Mma)
      if (!llvm::any_of(Problems, [&](const ScheduleProblem &Q) {
            return Q.Key == P.Key && Q.Message == P.Message;
          }))
        Problems.push_back(std::move(P));
  }
  KnobReader R(F, &Problems);
  int64_t V;
  if (const Knob *K = R.ints("rows_per_block", 1, 1, 32, &V); K && !isPowerOf2(V))
    R.problem(*K, "expects a power of 2");
  if (const Knob *K = R.ints("reduce_threads", 1, 32, 1024, &V); K && V % 32)
    R.problem(*K, "expects a multiple of 32 (whole warps)");
  if (const Knob *K = findKnob(F, "block_per_row")) {
    if (K->Word != "auto" && K->Word != "on" && K->Word != "off")
      R.problem(*K, "expects 'auto', 'on' or 'off'");
    else if (K->Word == "on" && findKnob(F, "rows_per_block"))
      R.problem(*K, "'on' leaves rows_per_block (rows of one warp each) unused");
    else if (K->Word == "off" && findKnob(F, "reduce_threads"))
      R.problem(*K, "'off' leaves reduce_threads (the threads of a block per row) unused");
  }
  if (const Knob *K = R.ints("transpose_tile", 1, 8, 64, &V); K && V % 8)
    R.problem(*K, "expects a multiple of 8");
  if (const Knob *K = R.ints("threads", 1, 32, 1024, &V); K && V % 32)
    R.problem(*K, "expects a multiple of 32 (whole warps)");
  R.onOff("fuse");
  R.onOff("fuse_inline");
  R.onOff("fuse_epilogue");
  R.onOff("fuse_factor");
  R.onOff("fuse_prologue");
  R.onOff("fuse_siblings");
  R.onOff("fuse_rows");
  R.onOff("fuse_beside");
  R.onOff("online_softmax");
  R.onOff("peel_rows");
  R.ints("unroll", 1, 1, 64, &V);
  R.ints("min_blocks", 1, 1, 32, &V);
  if (const Knob *K = findKnob(F, "fdiv"); K && K->Word != "call" && K->Word != "inline")
    R.problem(*K, "expects 'call' or 'inline'");
  if (const Knob *K = findKnob(F, "fexp");
      K && K->Word != "ex2" && K->Word != "ex2sq" && K->Word != "expf")
    R.problem(*K, "expects 'ex2', 'ex2sq' or 'expf'");
  R.ints("items_per_thread", 1, 1, 16, &V);
  R.ints("max_blocks", 1, 0, INT32_MAX, &V);
  R.ints("unroll_limit", 1, 1, 256, &V);
  if (const Knob *K = findKnob(F, "padding"); K && K->Word != "auto" && K->Word != "off")
    R.ints("padding", 1, 0, 32, &V);
  return Problems;
}

} // namespace tdsl
