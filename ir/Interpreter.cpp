//===- Interpreter.cpp - Runs loop IR on the CPU, threads in lockstep -----===//
//
// Two steps. Compilation mirrors the IR into CExpr/CStmt nodes whose
// variables and buffers are resolved to slots, so execution never looks up a
// name. Execution runs that tree for a list of active lanes (the threads of
// one block, SIMT style): each expression node computes one value per active
// lane into an array it owns. A node is never re-entered while it runs (the
// tree has no cycles and expressions no recursion), so one array per node is
// safe and the inner loop allocates nothing.
//
// The Func body outside kernels is walked by execHost(); a `launch` there
// runs its grid (ir/Launch.h sizes it), any other statement (the IR before
// map-to-gpu) runs as a launch of one thread in one block.
//
// Checking: every access is bounds-checked against the buffer's shape; every
// element carries the generation of the allocation that last wrote it
// (uninitialized reads); shared and global elements carry the epoch (barrier
// interval, or launch) of their last accesses and who made them (races).
//
//===----------------------------------------------------------------------===//
#include "ir/Interpreter.h"
#include "ir/Fragment.h"
#include "ir/Launch.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

namespace tdsl::ir {

int64_t TensorData::numElements() const {
  int64_t N = 1;
  for (int64_t D : Shape)
    N *= D;
  return N;
}

namespace {

/// One lane's value: bool and integers in I, floats in F (an f32 or f16
/// value is held as the double it converts to exactly).
union Value {
  int64_t I;
  double F;
};

using LaneList = std::vector<uint32_t>;

constexpr uint32_t NoThread = ~0u;
/// Larger allocations are refused rather than exhausting the host.
constexpr int64_t MaxBufferElements = int64_t(1) << 28;
/// CUDA's warp: shuffles exchange values between 32 consecutive threads.
constexpr uint32_t WarpSize = 32;

bool holdsInt(DType T) { return !isFloat(T); }

/// Two's-complement wrap of V to T's width, as CUDA's integer arithmetic.
int64_t wrapInt(uint64_t V, DType T) {
  switch (T) {
  case DType::Bool: return V != 0;
  case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(V));
  case DType::I32: return static_cast<int32_t>(static_cast<uint32_t>(V));
  default: return static_cast<int64_t>(V);
  }
}

bool truthy(Value V, DType T) { return holdsInt(T) ? V.I != 0 : V.F != 0.0; }

/// The conversion rules of convertValue(), done on integers directly where
/// going through a double would lose bits of an i64.
Value castValue(Value V, DType From, DType To) {
  Value R;
  if (holdsInt(From) && holdsInt(To)) {
    if (To == DType::Bool)
      R.I = V.I != 0;
    else if (To == DType::I64)
      R.I = V.I;
    else
      R.I = std::clamp<int64_t>(V.I, static_cast<int64_t>(dtypeLowest(To)),
                                static_cast<int64_t>(dtypeHighest(To)));
  } else if (holdsInt(From)) {
    if (To == DType::F32)
      R.F = static_cast<float>(V.I); // one rounding, not two via double
    else
      R.F = convertValue(static_cast<double>(V.I), From, To);
  } else if (holdsInt(To)) {
    R.I = To == DType::Bool ? V.F != 0.0 : saturateInt(V.F, To);
  } else {
    R.F = convertValue(V.F, From, To);
  }
  return R;
}

Value fromDouble(double D, DType T) {
  Value R;
  if (holdsInt(T))
    R.I = T == DType::Bool ? D != 0.0 : saturateInt(D, T);
  else
    R.F = convertValue(D, DType::F64, T);
  return R;
}

double toDouble(Value V, DType T) { return holdsInt(T) ? static_cast<double>(V.I) : V.F; }

template <typename FT> FT floatArith(BinaryOp Op, FT A, FT B) {
  switch (Op) {
  case BinaryOp::Add: return A + B;
  case BinaryOp::Sub: return A - B;
  case BinaryOp::Mul: return A * B;
  case BinaryOp::Div: return A / B;
  case BinaryOp::Mod: return std::fmod(A, B);
  // fminf/fmaxf: a NaN operand yields the other one, as on the GPU.
  case BinaryOp::Min: return std::fmin(A, B);
  case BinaryOp::Max: return std::fmax(A, B);
  default: return FT(0);
  }
}

/// Integer arithmetic in T. Division by zero yields 0 (a GPU yields garbage;
/// the interpreter must not trap), and INT_MIN / -1 wraps.
int64_t intArith(BinaryOp Op, DType T, int64_t A, int64_t B) {
  uint64_t UA = static_cast<uint64_t>(A), UB = static_cast<uint64_t>(B);
  switch (Op) {
  case BinaryOp::Add: return wrapInt(UA + UB, T);
  case BinaryOp::Sub: return wrapInt(UA - UB, T);
  case BinaryOp::Mul: return wrapInt(UA * UB, T);
  case BinaryOp::Div:
    if (B == 0)
      return 0;
    if (B == -1)
      return wrapInt(0 - UA, T);
    return wrapInt(static_cast<uint64_t>(A / B), T);
  case BinaryOp::Mod:
    if (B == 0 || B == -1)
      return 0;
    return A % B;
  case BinaryOp::Min: return std::min(A, B);
  case BinaryOp::Max: return std::max(A, B);
  default: return 0;
  }
}

template <typename T> int64_t compare(BinaryOp Op, T A, T B) {
  switch (Op) {
  case BinaryOp::Lt: return A < B;
  case BinaryOp::Le: return A <= B;
  case BinaryOp::Gt: return A > B;
  case BinaryOp::Ge: return A >= B;
  case BinaryOp::Eq: return A == B;
  case BinaryOp::Ne: return A != B;
  default: return 0;
  }
}

/// Math in the operand's own precision: FT = float calls expf and friends.
template <typename FT> FT floatMath(Intrinsic Fn, FT X, FT Y) {
  switch (Fn) {
  case Intrinsic::Exp: return std::exp(X);
  case Intrinsic::Log: return std::log(X);
  case Intrinsic::Sqrt: return std::sqrt(X);
  case Intrinsic::Rsqrt: return FT(1) / std::sqrt(X);
  case Intrinsic::Tanh: return std::tanh(X);
  case Intrinsic::Sigmoid: return FT(1) / (FT(1) + std::exp(-X));
  case Intrinsic::Erf: return std::erf(X);
  // x scaled by 1/sqrt(2) rounded to FT, as tdsl_gelu (tdsl/device.cuh).
  case Intrinsic::Gelu: return FT(0.5) * X * (FT(1) + std::erf(X * FT(0.70710678118654752440L)));
  case Intrinsic::Relu: return std::fmax(X, FT(0));
  case Intrinsic::Abs: return std::fabs(X);
  case Intrinsic::Pow: return std::pow(X, Y);
  default: return X;
  }
}

int64_t intMath(Intrinsic Fn, DType T, int64_t X, int64_t Y) {
  switch (Fn) {
  case Intrinsic::Abs: return X < 0 ? wrapInt(0 - static_cast<uint64_t>(X), T) : X;
  case Intrinsic::Relu: return std::max<int64_t>(X, 0);
  default: {
    double R = floatMath<double>(Fn, static_cast<double>(X), static_cast<double>(Y));
    return T == DType::Bool ? R != 0.0 : saturateInt(R, T);
  }
  }
}

//===----------------------------------------------------------------------===//
// The compiled tree
//===----------------------------------------------------------------------===//

enum class CExprKind : uint8_t { Const, Var, Load, Unary, Binary, Select, Cast, Call };

struct CExpr {
  CExprKind Kind = CExprKind::Const;
  DType Type = DType::I64;        ///< of the result
  DType OperandType = DType::I64; ///< of the first operand
  UnaryOp UOp = UnaryOp::Neg;
  BinaryOp BOp = BinaryOp::Add;
  bool IsComparison = false; ///< BOp yields bool
  Intrinsic Fn = Intrinsic::Exp;
  unsigned Slot = 0; ///< variable or buffer
  Value Imm{};
  std::vector<CExpr *> Ops; ///< operands, or a load's indices
  /// Depends only on size symbols and host-level variables: evaluable
  /// before a launch (block and thread extents must be).
  bool Uniform = true;
  std::vector<Value> Out; ///< one per lane
  std::vector<const Value *> OpVals;
  LaneList LanesA, LanesB;        ///< select and && || : lanes of each side
  std::vector<uint8_t> ActiveMap; ///< shuffles: which lanes take part
};

struct CStmt {
  StmtKind Kind = StmtKind::Block;
  unsigned Line = 0;
  const StmtNode *Node = nullptr;
  bool Host = false; ///< walked by execHost (contains a launch)
  ForKind Loop = ForKind::Serial;
  unsigned Slot = 0;                ///< variable (For, Let) or buffer (Store, Allocate, copy dst)
  unsigned SrcSlot = 0;             ///< async_copy and ldmatrix source; mma A
  unsigned Slot3 = 0;               ///< mma B
  unsigned Count = 0;               ///< async_copy elements, async_wait pending groups
  CExpr *A = nullptr;               ///< For min, If cond, Let and Store value
  CExpr *B = nullptr;               ///< For extent
  std::vector<CExpr *> Idx, SrcIdx, Idx3; ///< indices; Allocate: its shape
  std::vector<const Value *> IdxVals, SrcIdxVals, Idx3Vals;
  CExpr *Cond = nullptr; ///< async_copy: Valid
  std::vector<CStmt *> Body;        ///< Block: all; For/Let/Allocate: one; If: then, else
  CExpr *Grid[3] = {};              ///< a launch: blocks along x, y, z
  int64_t BlockDim[3] = {1, 1, 1};  ///< a launch: threads along x, y, z
  LaneList Lanes, Lanes2;
};

struct VarSlot {
  std::string Name;
  bool HostBound = false; ///< a size or a host-level variable
  std::vector<Value> Lanes;
};

struct AccessRecord {
  uint32_t Epoch = 0;
  uint32_t Writer = NoThread;
  /// Two distinct readers suffice: a writer differs from at least one.
  /// (Where mbarriers order threads, a third reader replaces the second:
  /// the check then sees the first and the latest.)
  uint32_t Reader1 = NoThread, Reader2 = NoThread;
  /// Each access's clock in its thread (mbarrier order; 0 without).
  uint32_t WriterClock = 0, Reader1Clock = 0, Reader2Clock = 0;
};

/// One mbarrier (ir/IR.h MbarrierNode): the arrivals and copy bytes its
/// current phase still waits for, the tensor copies that land when it
/// completes, and what its arrivals released: per thread of the block, the
/// clock up to which that thread's accesses are ordered before a waiter.
struct MbarrierState {
  bool Init = false;
  uint32_t InitEpoch = 0, InitThread = 0;
  int64_t Count = 0, Arrivals = 0, Bytes = 0;
  uint64_t Phase = 0; ///< phases completed
  std::vector<uint32_t> Copies;
  std::vector<uint32_t> Released, Done; ///< this phase's; the last completed phase's
};

struct BufferState {
  std::string Name;
  DType Type = DType::F32;
  MemScope Scope = MemScope::Global;
  bool PerLane = false; ///< register and fragment: one instance per thread
  bool Tracked = false; ///< shared and global, when checking races
  bool AsyncDst = false;
  bool IsMbarrier = false; ///< named by mbarrier statements: Mbar holds its state
  std::vector<MbarrierState> Mbar;
  Swizzle Swz; ///< invisible to loads and stores; multi-element accesses stay in a chunk
  std::vector<CExpr *> ShapeExprs; ///< parameters
  bool Param = false;              ///< a tensor passed in (see ParamByteOffset)
  unsigned Rank = 0;
  std::vector<int64_t> Shape;
  int64_t NumElems = 0;
  uint32_t Lanes = 1;
  /// An element is initialized iff InitGen[Pos] == Gen; a new allocation
  /// bumps Gen, so nothing needs clearing.
  uint32_t Gen = 0;
  bool Live = false;
  std::vector<Value> Data; ///< PerLane: element-major, [Off * Lanes + Lane]
  std::vector<uint32_t> InitGen;
  std::vector<AccessRecord> Access; ///< Tracked: one per element
  std::vector<uint32_t> Pending;    ///< AsyncDst: copies in flight per element
  /// Shared and tracked: its bytes in the block's shared memory (where
  /// ir::launchShape lays it out) and the SharedEpoch of its latest
  /// access. Where its bytes were another tile's, accessed in the epoch it
  /// was allocated in, any access before a barrier is a race (ReuseOf).
  int64_t SharedBytes = 0, SharedStart = 0;
  uint32_t LastEpoch = 0, ReuseEpoch = 0;
  std::string ReuseOf;
};

/// A shared tile whose scope has ended in the running block: its bytes and
/// the epoch of its latest access.
struct DeadTile {
  int64_t Start, End;
  uint32_t LastEpoch;
  unsigned Slot;
};

struct PendingCopy {
  unsigned Buf;
  uint32_t Gen;
  int64_t Off, Pos;
  Value V;
  uint32_t Lane;
  bool Done;
  uint32_t Clock = 0; ///< a tensor copy's: its thread's clock at the issue
};

/// cp.async groups are per thread: copies since the last commit, then the
/// committed groups oldest first.
struct LaneAsync {
  std::vector<uint32_t> Open;
  std::deque<std::vector<uint32_t>> Committed;
};

/// Whether the host walks into S: host structure with a launch inside.
bool containsLaunch(const Stmt &S) {
  bool Found = false;
  forEachHostStmt(S, [&](const Stmt &C) { Found |= C->Kind == StmtKind::Launch; });
  return Found;
}

std::string tuple3(uint64_t X, uint64_t Y, uint64_t Z) {
  return "(" + std::to_string(X) + ", " + std::to_string(Y) + ", " + std::to_string(Z) + ")";
}

//===----------------------------------------------------------------------===//
// The interpreter
//===----------------------------------------------------------------------===//

class Interpreter {
public:
  Interpreter(const Func &F, const InterpOptions &Opts) : F(F), Opts(Opts) {}
  InterpResult run(const std::map<std::string, int64_t> &Sizes,
                   std::map<std::string, TensorData> &Args);
  std::optional<std::vector<int64_t>> shapeOf(const Buffer &B,
                                              const std::map<std::string, int64_t> &Sizes);

private:
  // Compilation.
  CExpr *newExpr(CExprKind K, DType T);
  CExpr *compileExpr(const Expr &E);
  CExpr *finishOps(CExpr *C, DType OperandType);
  CStmt *compileStmt(const Stmt &S, bool Host);
  unsigned bindVar(const std::string &Name, bool HostBound);
  unsigned addBuffer(const Buffer &B);
  /// Joined: Rank subscripts or fewer (a tensor_copy source).
  std::optional<unsigned> lookupBuffer(const std::string &Name, size_t Rank, const char *What,
                                       bool Joined = false);
  void compileAccess(const std::string &Name, const std::vector<Expr> &Indices, const char *What,
                     unsigned &Slot, std::vector<CExpr *> &Idx, std::vector<const Value *> &Vals,
                     bool Joined = false);

  // Execution.
  const Value *eval(CExpr &E, const LaneList &Act) {
    // Variables and constants are most operands: no call for them.
    if (E.Kind == CExprKind::Var)
      return Vars[E.Slot].Lanes.data();
    if (E.Kind == CExprKind::Const)
      return E.Out.data();
    return evalNode(E, Act);
  }
  const Value *evalNode(CExpr &E, const LaneList &Act);
  const Value *evalLoad(CExpr &E, const LaneList &Act);
  const Value *evalLogical(CExpr &E, const LaneList &Act);
  const Value *evalSelect(CExpr &E, const LaneList &Act);
  const Value *evalCall(CExpr &E, const LaneList &Act);
  const Value *evalShuffle(CExpr &E, const LaneList &Act);
  bool evalIndices(const std::vector<CExpr *> &Exprs, std::vector<const Value *> &Vals,
                   const LaneList &Act);
  bool execHost(CStmt &S);
  bool launch(CStmt &S);
  bool exec(CStmt &S, const LaneList &Act);
  bool execStmt(CStmt &S, const LaneList &Act);
  bool execFor(CStmt &S, const LaneList &Act);
  bool execStore(CStmt &S, const LaneList &Act);
  bool execAsyncCopy(CStmt &S, const LaneList &Act);
  bool execMma(CStmt &S, const LaneList &Act);
  bool execLdMatrix(CStmt &S, const LaneList &Act);
  bool execMbarrier(CStmt &S, const LaneList &Act);
  bool execTensorCopy(CStmt &S, const LaneList &Act);
  /// Lane L's arrival on M (Bytes more to land first); completes the
  /// phase when nothing is left.
  bool arrive(BufferState &B, int64_t Index, uint32_t L, int64_t Bytes);
  bool completePhase(BufferState &B, int64_t Index);
  /// The mbarrier B[Index] for lane L (an error outside B).
  MbarrierState *mbarrierAt(BufferState &B, const Value *Index, uint32_t L,
                            const std::string &What);
  /// The same, initialized and visible to L.
  MbarrierState *mbarrier(BufferState &B, const Value *Index, uint32_t L, const std::string &What);
  /// Whether lane L's thread is ordered after thread Other's access at
  /// Clock by the mbarriers it waited on.
  bool ordered(uint32_t L, uint32_t Other, uint32_t Clock) const;
  uint32_t clockOf(uint32_t L) const { return UsesMbarriers ? Clock[L] : 0; }
  bool wholeWarps(const LaneList &Act, const char *What);
  bool fragmentRange(BufferState &B, const std::vector<const Value *> &Idx, uint32_t L,
                     unsigned N, const char *What, int64_t &Off);
  bool inOneChunk(const BufferState &B, int64_t Off, int64_t N, uint32_t L, const char *What);
  bool retire(const std::vector<uint32_t> &Group);
  bool allocate(CStmt &S, const LaneList &Act);
  /// The end of an allocation's scope: a shared tile's bytes become free.
  void release(unsigned Slot);
  /// Records an access of tracked shared tile B; an error where B reuses
  /// bytes another tile used since the last barrier.
  bool checkReuse(BufferState &B, uint32_t L);
  void dropPendingCopies();
  bool step();

  bool linearIndex(const BufferState &B, const std::vector<const Value *> &Idx, uint32_t L,
                   int64_t Shift, int64_t &Off) const;
  int64_t position(const BufferState &B, int64_t Off, uint32_t L) const {
    return B.PerLane ? Off * B.Lanes + L : Off;
  }
  bool checkRead(BufferState &B, int64_t Off, int64_t Pos, uint32_t L);
  bool checkWide(const BufferState &B, int64_t Off, uint32_t L);
  bool checkWrite(BufferState &B, int64_t Off, int64_t Pos, uint32_t L);
  uint32_t epochOf(const BufferState &B) const {
    return B.Scope == MemScope::Shared ? SharedEpoch : LaunchEpoch;
  }
  uint32_t threadId(uint32_t L) const { return static_cast<uint32_t>(BlockLinear * W + L); }

  void setHostState();
  void ensureCapacity(uint32_t N);

  // Messages.
  bool fail(const std::string &Msg);
  std::string threadStr(uint32_t L) const;
  std::string blockStr() const { return tuple3(BlockIdx[0], BlockIdx[1], BlockIdx[2]); }
  std::string whereStr(uint32_t L) const {
    return "in block " + blockStr() + " thread " + threadStr(L);
  }
  std::string globalThreadStr(uint32_t Id) const;
  std::string elementStr(const BufferState &B, int64_t Off) const;
  std::string accessStr(const BufferState &B, const std::vector<const Value *> &Idx, uint32_t L,
                        int64_t Shift) const;
  bool raceError(const BufferState &B, int64_t Off, uint32_t First, const char *FirstDid,
                 uint32_t Second, const char *SecondDid);
  bool outOfBounds(const char *What, const BufferState &B, const std::vector<const Value *> &Idx,
                   uint32_t L, int64_t Shift = 0);

  const Func &F;
  const InterpOptions &Opts;

  std::deque<CExpr> Exprs;
  std::deque<CStmt> Stmts;
  std::vector<VarSlot> Vars;
  std::vector<BufferState> Buffers;
  llvm::StringMap<llvm::SmallVector<unsigned, 2>> VarScope, BufScope;
  bool InLaunch = false; ///< compiling the body of a launch
  std::vector<unsigned> SizeSlots;
  std::vector<unsigned> HostSlots; ///< variables a launch broadcasts to all lanes

  std::string Error;
  unsigned ErrorLine = 0, CurLine = 0;
  uint64_t Steps = 0;
  unsigned Launches = 0;
  /// The width of the vectorized loop whose first iteration runs now: the
  /// backend makes its global accesses one wide access, which the address
  /// of that first element must be aligned for (0: none).
  int64_t VecWidth = 0;

  // The launch running now (the host runs as one thread of one block).
  uint32_t W = 1;   ///< threads per block
  uint32_t Cap = 0; ///< lanes every per-lane array holds
  uint32_t Grid[3] = {1, 1, 1}, BlockIdx[3] = {0, 0, 0};
  uint64_t BlockLinear = 0;
  std::vector<uint32_t> Tid[3];
  LaneList AllLanes, HostLanes{0};
  uint32_t LaunchEpoch = 1, SharedEpoch = 1;
  /// mbarrier order (set when the function has mbarrier statements): per
  /// lane of the running block, its clock (bumped at each arrival) and the
  /// clock of each other lane up to which it knows that lane's accesses.
  bool UsesMbarriers = false;
  std::vector<uint32_t> Clock;
  std::vector<std::vector<uint32_t>> Known;

  /// The shape of the launch being compiled (its tiles' offsets), and the
  /// shared tiles of the running block whose scope ended with an access
  /// since the last barrier.
  const LaunchShape *CurShape = nullptr;
  std::vector<DeadTile> Dead;

  std::vector<PendingCopy> Copies;
  std::vector<LaneAsync> Async;
  bool AnyAsync = false;
};

bool Interpreter::fail(const std::string &Msg) {
  if (Error.empty()) {
    Error = Msg;
    ErrorLine = CurLine;
  }
  return false;
}

std::string Interpreter::threadStr(uint32_t L) const {
  return tuple3(Tid[0][L], Tid[1][L], Tid[2][L]);
}

std::string Interpreter::globalThreadStr(uint32_t Id) const {
  uint32_t L = Id % W;
  uint64_t BL = Id / W;
  uint64_t BX = BL % Grid[0], BY = BL / Grid[0] % Grid[1], BZ = BL / Grid[0] / Grid[1];
  return "thread " + threadStr(L) + " of block " + tuple3(BX, BY, BZ);
}

std::string Interpreter::elementStr(const BufferState &B, int64_t Off) const {
  std::vector<int64_t> Idx(B.Shape.size());
  for (size_t D = B.Shape.size(); D-- > 0;) {
    Idx[D] = B.Shape[D] ? Off % B.Shape[D] : 0;
    Off = B.Shape[D] ? Off / B.Shape[D] : 0;
  }
  std::string S = B.Name + "[";
  for (size_t D = 0; D < Idx.size(); ++D)
    S += (D ? ", " : "") + std::to_string(Idx[D]);
  return S + "]";
}

std::string Interpreter::accessStr(const BufferState &B, const std::vector<const Value *> &Idx,
                                   uint32_t L, int64_t Shift) const {
  std::string S = B.Name + "[";
  for (size_t D = 0; D < Idx.size(); ++D) {
    int64_t I = Idx[D][L].I + (D + 1 == Idx.size() ? Shift : 0);
    S += (D ? ", " : "") + std::to_string(I);
  }
  S += "] (shape [";
  for (size_t D = 0; D < B.Shape.size(); ++D)
    S += (D ? ", " : "") + std::to_string(B.Shape[D]);
  return S + "])";
}

bool Interpreter::outOfBounds(const char *What, const BufferState &B,
                              const std::vector<const Value *> &Idx, uint32_t L, int64_t Shift) {
  return fail(std::string("out-of-bounds ") + What + " " + accessStr(B, Idx, L, Shift) + " " +
              whereStr(L));
}

bool Interpreter::raceError(const BufferState &B, int64_t Off, uint32_t First, const char *FirstDid,
                            uint32_t Second, const char *SecondDid) {
  std::string Elem = elementStr(B, Off);
  if (B.Scope == MemScope::Shared)
    return fail("shared-memory race on " + Elem + ": " + FirstDid + " by thread " +
                threadStr(First % W) + " and " + SecondDid + " by thread " + threadStr(Second % W) +
                " of block " + blockStr() + " with no barrier between" +
                (UsesMbarriers ? " and no mbarrier ordering them" : ""));
  if (std::string(FirstDid) == "written" && std::string(SecondDid) == "written")
    return fail("conflicting writes to " + Elem + " by " + globalThreadStr(First) + " and " +
                globalThreadStr(Second) + " in one launch");
  return fail("global-memory race on " + Elem + ": " + FirstDid + " by " + globalThreadStr(First) +
              " and " + SecondDid + " by " + globalThreadStr(Second) + " in one launch");
}

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

CExpr *Interpreter::newExpr(CExprKind K, DType T) {
  CExpr &E = Exprs.emplace_back();
  E.Kind = K;
  E.Type = T;
  return &E;
}

unsigned Interpreter::bindVar(const std::string &Name, bool HostBound) {
  unsigned Slot = static_cast<unsigned>(Vars.size());
  VarSlot &V = Vars.emplace_back();
  V.Name = Name;
  V.HostBound = HostBound;
  VarScope[Name].push_back(Slot);
  return Slot;
}

unsigned Interpreter::addBuffer(const Buffer &B) {
  unsigned Slot = static_cast<unsigned>(Buffers.size());
  BufferState &S = Buffers.emplace_back();
  S.Name = B.Name;
  S.Type = B.Type;
  S.Scope = B.Scope;
  S.PerLane = B.Scope == MemScope::Register || B.Scope == MemScope::Fragment;
  S.Tracked = Opts.CheckRaces && !S.PerLane;
  S.Rank = B.rank();
  S.Swz = B.Swz;
  BufScope[B.Name].push_back(Slot);
  return Slot;
}

/// The buffer and compiled indices of one buffer operand of a statement.
void Interpreter::compileAccess(const std::string &Name, const std::vector<Expr> &Indices,
                                const char *What, unsigned &Slot, std::vector<CExpr *> &Idx,
                                std::vector<const Value *> &Vals, bool Joined) {
  if (auto Found = lookupBuffer(Name, Indices.size(), What, Joined))
    Slot = *Found;
  for (const Expr &I : Indices)
    Idx.push_back(compileExpr(I));
  Vals.resize(Idx.size());
}

std::optional<unsigned> Interpreter::lookupBuffer(const std::string &Name, size_t Rank,
                                                  const char *What, bool Joined) {
  auto It = BufScope.find(Name);
  if (It == BufScope.end() || It->second.empty()) {
    fail(std::string(What) + " unknown buffer '" + Name + "'");
    return std::nullopt;
  }
  unsigned Slot = It->second.back();
  if (Joined ? Rank == 0 || Buffers[Slot].Rank < Rank : Buffers[Slot].Rank != Rank) {
    fail(std::string(What) + " '" + Name + "' with " + std::to_string(Rank) +
         " indices, but it has rank " + std::to_string(Buffers[Slot].Rank));
    return std::nullopt;
  }
  return Slot;
}

CExpr *Interpreter::compileExpr(const Expr &E) {
  if (!E) {
    fail("null expression in the IR");
    return newExpr(CExprKind::Const, DType::I64);
  }
  switch (E->Kind) {
  case ExprKind::IntImm: {
    CExpr *C = newExpr(CExprKind::Const, E->Type);
    int64_t V = static_cast<const IntImmNode &>(*E).Value;
    if (holdsInt(E->Type))
      C->Imm.I = wrapInt(static_cast<uint64_t>(V), E->Type);
    else
      C->Imm.F = convertValue(static_cast<double>(V), DType::I64, E->Type);
    return C;
  }
  case ExprKind::FloatImm: {
    CExpr *C = newExpr(CExprKind::Const, E->Type);
    C->Imm = fromDouble(static_cast<const FloatImmNode &>(*E).Value, E->Type);
    return C;
  }
  case ExprKind::Var: {
    const std::string &Name = static_cast<const VarNode &>(*E).Name;
    CExpr *C = newExpr(CExprKind::Var, E->Type);
    auto It = VarScope.find(Name);
    if (It == VarScope.end() || It->second.empty()) {
      fail("use of undefined variable '" + Name + "'");
      return C;
    }
    C->Slot = It->second.back();
    C->Uniform = Vars[C->Slot].HostBound;
    return C;
  }
  case ExprKind::Load: {
    const auto &N = static_cast<const LoadNode &>(*E);
    CExpr *C = newExpr(CExprKind::Load, E->Type);
    C->Uniform = false;
    if (auto Slot = lookupBuffer(N.Buffer, N.Indices.size(), "load from"))
      C->Slot = *Slot;
    for (const Expr &I : N.Indices)
      C->Ops.push_back(compileExpr(I));
    C->OpVals.resize(C->Ops.size());
    return C;
  }
  case ExprKind::Unary: {
    const auto &N = static_cast<const UnaryNode &>(*E);
    CExpr *C = newExpr(CExprKind::Unary, E->Type);
    C->UOp = N.Op;
    C->Ops = {compileExpr(N.A)};
    return finishOps(C, N.A->Type);
  }
  case ExprKind::Binary: {
    const auto &N = static_cast<const BinaryNode &>(*E);
    CExpr *C = newExpr(CExprKind::Binary, E->Type);
    C->BOp = N.Op;
    C->IsComparison = isComparison(N.Op);
    C->Ops = {compileExpr(N.A), compileExpr(N.B)};
    if (N.A->Type != N.B->Type)
      fail("operands of '" + binaryOpSpelling(N.Op).str() + "' have types " +
           dtypeName(N.A->Type).str() + " and " + dtypeName(N.B->Type).str());
    return finishOps(C, N.A->Type);
  }
  case ExprKind::Select: {
    const auto &N = static_cast<const SelectNode &>(*E);
    CExpr *C = newExpr(CExprKind::Select, E->Type);
    C->Ops = {compileExpr(N.Cond), compileExpr(N.TrueValue), compileExpr(N.FalseValue)};
    return finishOps(C, N.Cond->Type);
  }
  case ExprKind::Cast: {
    const Expr &A = static_cast<const CastNode &>(*E).A;
    CExpr *C = newExpr(CExprKind::Cast, E->Type);
    C->Ops = {compileExpr(A)};
    return finishOps(C, A->Type);
  }
  case ExprKind::Call: {
    const auto &N = static_cast<const CallNode &>(*E);
    if (N.Fn == Intrinsic::Aligned && N.Args.size() == 2) {
      // A fact of the run, not of a lane: the tensors' base addresses.
      CExpr *C = newExpr(CExprKind::Const, E->Type);
      std::optional<int64_t> Bytes = asConstInt(N.Args[1]);
      const auto *L = N.Args[0]->Kind == ExprKind::Load
                          ? static_cast<const LoadNode *>(N.Args[0].get())
                          : nullptr;
      bool Param = L && F.findParam(L->Buffer);
      C->Imm.I = Bytes && *Bytes > 0 && (Param ? Opts.ParamByteOffset : 0) % *Bytes == 0;
      return C;
    }
    CExpr *C = newExpr(CExprKind::Call, E->Type);
    C->Fn = N.Fn;
    if (N.Args.size() != intrinsicArity(N.Fn) || N.Args.empty()) {
      fail("intrinsic '" + intrinsicName(N.Fn).str() + "' takes " +
           std::to_string(intrinsicArity(N.Fn)) + " arguments, not " +
           std::to_string(N.Args.size()));
      return C;
    }
    for (const Expr &A : N.Args)
      C->Ops.push_back(compileExpr(A));
    return finishOps(C, N.Args[0]->Type);
  }
  }
  return newExpr(CExprKind::Const, E->Type);
}

CExpr *Interpreter::finishOps(CExpr *C, DType OperandType) {
  C->OperandType = OperandType;
  for (const CExpr *Op : C->Ops)
    C->Uniform &= Op->Uniform;
  C->OpVals.resize(C->Ops.size());
  return C;
}

CStmt *Interpreter::compileStmt(const Stmt &S, bool Host) {
  CStmt &C = Stmts.emplace_back();
  if (!S) {
    fail("null statement in the IR");
    return &C; // an empty block
  }
  C.Kind = S->Kind;
  C.Line = S->SrcLine;
  C.Node = S.get();
  C.Host = Host && isHostStructure(S) && containsLaunch(S);
  switch (S->Kind) {
  case StmtKind::Block:
    for (const Stmt &Child : static_cast<const BlockNode &>(*S).Stmts)
      C.Body.push_back(compileStmt(Child, C.Host));
    break;
  case StmtKind::For: {
    const auto &N = static_cast<const ForNode &>(*S);
    C.Loop = N.Loop;
    C.A = compileExpr(N.Min);
    C.B = compileExpr(N.Extent);
    if (isBlockLoop(N.Loop) || isThreadLoop(N.Loop)) {
      if (!InLaunch)
        fail(forKindName(N.Loop).str() + " loop '" + N.Var + "' outside a launch");
      else if (!C.B->Uniform)
        fail("the extent of " + forKindName(N.Loop).str() + " loop '" + N.Var +
             "' must depend only on sizes and variables bound outside the kernel");
    }
    C.Slot = bindVar(N.Var, C.Host);
    C.Body.push_back(compileStmt(N.Body, C.Host));
    VarScope[N.Var].pop_back();
    break;
  }
  case StmtKind::If: {
    const auto &N = static_cast<const IfNode &>(*S);
    C.A = compileExpr(N.Cond);
    C.Body.push_back(compileStmt(N.Then, C.Host));
    C.Body.push_back(N.Else ? compileStmt(N.Else, C.Host) : nullptr);
    break;
  }
  case StmtKind::Let: {
    const auto &N = static_cast<const LetNode &>(*S);
    C.A = compileExpr(N.Value);
    C.Slot = bindVar(N.Var, C.Host);
    C.Body.push_back(compileStmt(N.Body, C.Host));
    VarScope[N.Var].pop_back();
    break;
  }
  case StmtKind::Store: {
    const auto &N = static_cast<const StoreNode &>(*S);
    compileAccess(N.Buffer, N.Indices, "store to", C.Slot, C.Idx, C.IdxVals);
    C.A = compileExpr(N.Value);
    break;
  }
  case StmtKind::Allocate: {
    const auto &N = static_cast<const AllocateNode &>(*S);
    for (const Expr &E : N.Buf.Shape)
      C.Idx.push_back(compileExpr(E));
    C.Slot = addBuffer(N.Buf);
    BufferState &B = Buffers[C.Slot];
    if (B.Tracked && B.Scope == MemScope::Shared && CurShape &&
        llvm::is_contained(CurShape->SharedAllocs, &N)) {
      B.SharedStart = CurShape->sharedOffset(&N);
      B.SharedBytes = *sharedAllocBytes(N.Buf);
    }
    C.Body.push_back(compileStmt(N.Body, C.Host));
    BufScope[N.Buf.Name].pop_back();
    break;
  }
  case StmtKind::AsyncCopy: {
    const auto &N = static_cast<const AsyncCopyNode &>(*S);
    if (N.DstIndices.empty() || N.SrcIndices.empty()) {
      fail("async_copy needs indexed buffers (it copies along the innermost dimension)");
      break;
    }
    compileAccess(N.Dst, N.DstIndices, "async_copy to", C.Slot, C.Idx, C.IdxVals);
    compileAccess(N.Src, N.SrcIndices, "async_copy from", C.SrcSlot, C.SrcIdx, C.SrcIdxVals);
    C.Count = N.Elems;
    if (N.Valid)
      C.Cond = compileExpr(N.Valid);
    Buffers[C.Slot].AsyncDst = true;
    break;
  }
  case StmtKind::Mma: {
    const auto &N = static_cast<const MmaNode &>(*S);
    compileAccess(N.C, N.CIndices, "mma on", C.Slot, C.Idx, C.IdxVals);
    compileAccess(N.A, N.AIndices, "mma on", C.SrcSlot, C.SrcIdx, C.SrcIdxVals);
    compileAccess(N.B, N.BIndices, "mma on", C.Slot3, C.Idx3, C.Idx3Vals);
    break;
  }
  case StmtKind::LdMatrix: {
    const auto &N = static_cast<const LdMatrixNode &>(*S);
    if (N.SrcIndices.empty()) {
      fail("ldmatrix needs an indexed source (its rows run along the innermost dimension)");
      break;
    }
    compileAccess(N.Dst, N.DstIndices, "ldmatrix to", C.Slot, C.Idx, C.IdxVals);
    compileAccess(N.Src, N.SrcIndices, "ldmatrix from", C.SrcSlot, C.SrcIdx, C.SrcIdxVals);
    C.Count = N.Count;
    break;
  }
  case StmtKind::AsyncWait: C.Count = static_cast<const AsyncWaitNode &>(*S).Pending; break;
  case StmtKind::Mbarrier: {
    const auto &N = static_cast<const MbarrierNode &>(*S);
    compileAccess(N.Buffer, {N.Index}, "mbarrier", C.Slot, C.Idx, C.IdxVals);
    if (N.Value)
      C.A = compileExpr(N.Value);
    C.Count = static_cast<unsigned>(N.Op);
    Buffers[C.Slot].IsMbarrier = true;
    UsesMbarriers = true;
    break;
  }
  case StmtKind::TensorCopy: {
    const auto &N = static_cast<const TensorCopyNode &>(*S);
    compileAccess(N.Dst, N.DstIndices, "tensor_copy to", C.Slot, C.Idx, C.IdxVals);
    compileAccess(N.Src, N.SrcIndices, "tensor_copy from", C.SrcSlot, C.SrcIdx, C.SrcIdxVals,
                  /*Joined=*/true);
    compileAccess(N.Bar, {N.BarIndex}, "tensor_copy on", C.Slot3, C.Idx3, C.Idx3Vals);
    Buffers[C.Slot].AsyncDst = true;
    Buffers[C.Slot3].IsMbarrier = true;
    UsesMbarriers = true;
    break;
  }
  case StmtKind::Launch: {
    const auto &N = static_cast<const LaunchNode &>(*S);
    if (InLaunch) {
      fail("launch '" + N.Name + "' inside a launch");
      break;
    }
    LaunchShape Shape = launchShape(N);
    if (!Shape.GridProblems.empty())
      fail("launch '" + N.Name + "' " + Shape.GridProblems.front());
    for (const ForNode *L : Shape.NonConstantThreads)
      fail("the extent of " + forKindName(L->Loop).str() + " loop '" + L->Var +
           "' must be a positive constant");
    InLaunch = true;
    CurShape = &Shape;
    C.Body.push_back(compileStmt(N.Body, false));
    CurShape = nullptr;
    InLaunch = false;
    // The grid is evaluated on the host before any thread runs; a block
    // loop's extent that is not uniform has failed above.
    for (unsigned D = 0; D < 3; ++D) {
      C.Grid[D] = compileExpr(Shape.Grid[D]);
      C.BlockDim[D] = Shape.Block[D];
    }
    break;
  }
  case StmtKind::Barrier:
  case StmtKind::AsyncCommit:
  case StmtKind::Note: break;
  }
  return &C;
}

//===----------------------------------------------------------------------===//
// Launch state
//===----------------------------------------------------------------------===//

void Interpreter::ensureCapacity(uint32_t N) {
  if (N <= Cap)
    return;
  Cap = N;
  for (CExpr &E : Exprs) {
    E.Out.resize(N);
    if (E.Kind == CExprKind::Const)
      std::fill(E.Out.begin(), E.Out.end(), E.Imm);
    if (E.Kind == CExprKind::Call && isWarpShuffle(E.Fn))
      E.ActiveMap.resize(N, 0);
  }
  for (VarSlot &V : Vars)
    V.Lanes.resize(N);
  for (auto &T : Tid)
    T.resize(N, 0);
  Async.resize(N);
}

void Interpreter::setHostState() {
  W = 1;
  for (unsigned D = 0; D < 3; ++D) {
    Grid[D] = 1;
    BlockIdx[D] = 0;
    Tid[D][0] = 0;
  }
  BlockLinear = 0;
}

bool Interpreter::step() {
  ++Steps;
  if (Opts.MaxSteps && Steps > Opts.MaxSteps)
    return fail("stopped after " + std::to_string(Opts.MaxSteps) +
                " steps (InterpOptions::MaxSteps); the program may not terminate");
  return true;
}

void Interpreter::dropPendingCopies() {
  // Copies never waited for die with the block (their shared destination
  // does too); the elements they target must not stay marked in flight.
  for (PendingCopy &C : Copies) {
    BufferState &B = Buffers[C.Buf];
    if (!C.Done && B.Live && B.Gen == C.Gen)
      --B.Pending[C.Pos];
  }
  Copies.clear();
  for (uint32_t L = 0; L < W; ++L) {
    Async[L].Open.clear();
    Async[L].Committed.clear();
  }
  AnyAsync = false;
}

bool Interpreter::launch(CStmt &S) {
  // The grid (evaluated before any thread runs) and the block come from
  // the launch's shape (ir/Launch.h); any other statement at the host
  // level runs as one thread of one block.
  setHostState();
  uint64_t G[3] = {1, 1, 1}, D[3] = {1, 1, 1};
  if (S.Kind == StmtKind::Launch) {
    for (unsigned Dir = 0; Dir < 3; ++Dir) {
      const Value *Ext = eval(*S.Grid[Dir], HostLanes);
      if (!Ext)
        return false;
      G[Dir] = static_cast<uint64_t>(std::max<int64_t>(Ext[0].I, 0));
      D[Dir] = static_cast<uint64_t>(S.BlockDim[Dir]);
    }
  }
  // Thread ids (block * threads per block + thread) must fit 32 bits.
  uint64_t Threads = 1, Total = 1;
  for (uint64_t X : {D[0], D[1], D[2], G[0], G[1], G[2]}) {
    if (X >= NoThread || (X && Total > (NoThread - 1) / X))
      return fail("a launch of " + tuple3(G[0], G[1], G[2]) + " blocks of " +
                  tuple3(D[0], D[1], D[2]) + " threads is too large to interpret");
    Total *= X;
  }
  Threads = D[0] * D[1] * D[2];
  if (Opts.MaxThreadsPerBlock && Threads > Opts.MaxThreadsPerBlock)
    return fail("a block of " + tuple3(D[0], D[1], D[2]) + " threads exceeds the limit of " +
                std::to_string(Opts.MaxThreadsPerBlock) + " threads per block");
  if (Threads > (1u << 20))
    return fail("a block of " + tuple3(D[0], D[1], D[2]) + " threads is too large to interpret");

  ensureCapacity(static_cast<uint32_t>(Threads));
  for (unsigned Slot : HostSlots) {
    std::vector<Value> &Lanes = Vars[Slot].Lanes;
    std::fill(Lanes.begin() + 1, Lanes.begin() + Threads, Lanes[0]);
  }
  W = static_cast<uint32_t>(Threads);
  AllLanes.resize(W);
  for (uint32_t L = 0; L < W; ++L) {
    AllLanes[L] = L;
    Tid[0][L] = static_cast<uint32_t>(L % D[0]);
    Tid[1][L] = static_cast<uint32_t>(L / D[0] % D[1]);
    Tid[2][L] = static_cast<uint32_t>(L / D[0] / D[1]);
  }
  for (unsigned Dir = 0; Dir < 3; ++Dir)
    Grid[Dir] = static_cast<uint32_t>(G[Dir]);
  ++Launches;
  ++LaunchEpoch; // accesses of earlier launches never race with this one
  for (uint32_t BZ = 0; BZ < Grid[2]; ++BZ)
    for (uint32_t BY = 0; BY < Grid[1]; ++BY)
      for (uint32_t BX = 0; BX < Grid[0]; ++BX) {
        BlockIdx[0] = BX;
        BlockIdx[1] = BY;
        BlockIdx[2] = BZ;
        BlockLinear = BX + uint64_t(Grid[0]) * (BY + uint64_t(Grid[1]) * BZ);
        ++SharedEpoch;
        Dead.clear();
        if (UsesMbarriers) {
          Clock.assign(W, 1);
          Known.resize(W);
          for (std::vector<uint32_t> &K : Known)
            K.assign(W, 0);
        }
        if (!exec(S, AllLanes))
          return false;
        if (AnyAsync)
          dropPendingCopies();
      }
  ++LaunchEpoch;
  setHostState();
  return true;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

bool Interpreter::execHost(CStmt &S) {
  if (!S.Host)
    return launch(S);
  if (!step())
    return false;
  setHostState();
  switch (S.Kind) {
  case StmtKind::Block:
    for (CStmt *Child : S.Body)
      if (!execHost(*Child))
        return false;
    return true;
  case StmtKind::Let: {
    const Value *V = eval(*S.A, HostLanes);
    if (!V)
      return false;
    Vars[S.Slot].Lanes[0] = V[0];
    return execHost(*S.Body[0]);
  }
  case StmtKind::Allocate: {
    if (!allocate(S, HostLanes))
      return false;
    bool Ok = execHost(*S.Body[0]);
    Buffers[S.Slot].Live = false;
    return Ok;
  }
  default: return launch(S);
  }
}

bool Interpreter::exec(CStmt &S, const LaneList &Act) {
  // Errors name the line of the innermost statement that has one.
  unsigned Outer = CurLine;
  if (S.Line)
    CurLine = S.Line;
  bool Ok = step() && execStmt(S, Act);
  CurLine = Outer;
  return Ok;
}

bool Interpreter::execStmt(CStmt &S, const LaneList &Act) {
  switch (S.Kind) {
  case StmtKind::Block:
    for (CStmt *Child : S.Body)
      if (!exec(*Child, Act))
        return false;
    return true;
  case StmtKind::For: return execFor(S, Act);
  case StmtKind::If: {
    const Value *C = eval(*S.A, Act);
    if (!C)
      return false;
    S.Lanes.clear();
    S.Lanes2.clear();
    for (uint32_t L : Act)
      (truthy(C[L], S.A->Type) ? S.Lanes : S.Lanes2).push_back(L);
    if (!S.Lanes.empty() && !exec(*S.Body[0], S.Lanes))
      return false;
    return S.Lanes2.empty() || !S.Body[1] || exec(*S.Body[1], S.Lanes2);
  }
  case StmtKind::Let: {
    const Value *V = eval(*S.A, Act);
    if (!V)
      return false;
    Value *Dst = Vars[S.Slot].Lanes.data();
    for (uint32_t L : Act)
      Dst[L] = V[L];
    return exec(*S.Body[0], Act);
  }
  case StmtKind::Store: return execStore(S, Act);
  case StmtKind::Allocate: {
    if (!allocate(S, Act))
      return false;
    bool Ok = exec(*S.Body[0], Act);
    release(S.Slot);
    return Ok;
  }
  case StmtKind::Barrier:
    if (Act.size() != W)
      return fail("barrier in divergent control flow: reached by " + std::to_string(Act.size()) +
                  " of the " + std::to_string(W) + " threads of block " + blockStr() +
                  " (first missing: thread " + threadStr([&] {
                    uint32_t Missing = 0;
                    while (Missing < Act.size() && Act[Missing] == Missing)
                      ++Missing;
                    return Missing;
                  }()) +
                  ")");
    ++SharedEpoch;
    return true;
  case StmtKind::AsyncCopy: return execAsyncCopy(S, Act);
  case StmtKind::AsyncCommit:
    for (uint32_t L : Act) {
      Async[L].Committed.push_back(std::move(Async[L].Open));
      Async[L].Open.clear();
    }
    return true;
  case StmtKind::AsyncWait:
    for (uint32_t L : Act) {
      auto &Groups = Async[L].Committed;
      while (Groups.size() > S.Count) {
        if (!retire(Groups.front()))
          return false;
        Groups.pop_front();
      }
    }
    return true;
  case StmtKind::Launch: return exec(*S.Body[0], Act);
  case StmtKind::Mbarrier: return execMbarrier(S, Act);
  case StmtKind::TensorCopy: return execTensorCopy(S, Act);
  case StmtKind::Mma: return execMma(S, Act);
  case StmtKind::LdMatrix: return execLdMatrix(S, Act);
  case StmtKind::Note: return true;
  }
  return true;
}

bool Interpreter::execFor(CStmt &S, const LaneList &Act) {
  const Value *Min = eval(*S.A, Act);
  const Value *Ext = Min ? eval(*S.B, Act) : nullptr;
  if (!Ext)
    return false;
  Value *V = Vars[S.Slot].Lanes.data();
  CStmt &Body = *S.Body[0];

  // A GPU-bound loop keeps the lanes whose block or thread index is below
  // its extent and binds the variable to that index.
  auto RunBound = [&](auto IndexOf) {
    S.Lanes.clear();
    for (uint32_t L : Act) {
      int64_t Index = IndexOf(L);
      if (Index < Ext[L].I) {
        S.Lanes.push_back(L);
        V[L].I = Min[L].I + Index;
      }
    }
    return S.Lanes.empty() || exec(Body, S.Lanes);
  };
  switch (S.Loop) {
  case ForKind::BlockX: return RunBound([&](uint32_t) { return int64_t(BlockIdx[0]); });
  case ForKind::BlockY: return RunBound([&](uint32_t) { return int64_t(BlockIdx[1]); });
  case ForKind::BlockZ: return RunBound([&](uint32_t) { return int64_t(BlockIdx[2]); });
  case ForKind::ThreadX: return RunBound([&](uint32_t L) { return int64_t(Tid[0][L]); });
  case ForKind::ThreadY: return RunBound([&](uint32_t L) { return int64_t(Tid[1][L]); });
  case ForKind::ThreadZ: return RunBound([&](uint32_t L) { return int64_t(Tid[2][L]); });
  case ForKind::Warp: return RunBound([&](uint32_t L) { return int64_t(Tid[0][L] / WarpSize); });
  case ForKind::Lane: return RunBound([&](uint32_t L) { return int64_t(Tid[0][L] % WarpSize); });
  default: break;
  }

  // Serial (unrolled and vectorized loops too): bounds may differ per lane,
  // so iteration I runs the lanes whose extent exceeds I.
  int64_t MaxExt = std::numeric_limits<int64_t>::min();
  bool SameExtent = true;
  for (uint32_t L : Act) {
    SameExtent &= MaxExt == std::numeric_limits<int64_t>::min() || Ext[L].I == MaxExt;
    MaxExt = std::max(MaxExt, Ext[L].I);
  }
  for (int64_t I = 0; I < MaxExt; ++I) {
    VecWidth = S.Loop == ForKind::Vectorized && I == 0 && SameExtent ? MaxExt : 0;
    const LaneList *Cur = &Act;
    if (!SameExtent) {
      S.Lanes.clear();
      for (uint32_t L : Act)
        if (I < Ext[L].I)
          S.Lanes.push_back(L);
      Cur = &S.Lanes;
    }
    for (uint32_t L : *Cur)
      V[L].I = static_cast<int64_t>(static_cast<uint64_t>(Min[L].I) + static_cast<uint64_t>(I));
    if (!step() || !exec(Body, *Cur))
      return false;
  }
  VecWidth = 0;
  return true;
}

bool Interpreter::checkWide(const BufferState &B, int64_t Off, uint32_t L) {
  if (VecWidth < 2 || B.Scope != MemScope::Global)
    return true;
  int64_t Bytes = dtypeBytes(B.Type), Start = (B.Param ? Opts.ParamByteOffset : 0) + Off * Bytes;
  if (Start % (VecWidth * Bytes) == 0)
    return true;
  return fail("vectorized access of " + std::to_string(VecWidth) + " elements at " +
              elementStr(B, Off) + " is not " + std::to_string(VecWidth * Bytes) +
              "-byte aligned " + whereStr(L));
}

bool Interpreter::allocate(CStmt &S, const LaneList &Act) {
  BufferState &B = Buffers[S.Slot];
  uint32_t First = Act.front();
  B.Shape.resize(S.Idx.size());
  B.NumElems = 1;
  for (size_t D = 0; D < S.Idx.size(); ++D) {
    const Value *E = eval(*S.Idx[D], Act);
    if (!E)
      return false;
    B.Shape[D] = E[First].I;
    if (B.Shape[D] < 0)
      return fail("allocation of " + B.Name + " with negative extent " +
                  std::to_string(B.Shape[D]));
    if (B.Shape[D] && B.NumElems > MaxBufferElements / B.Shape[D])
      return fail("allocation of " + B.Name + " is too large to interpret");
    B.NumElems *= B.Shape[D];
  }
  B.Lanes = B.PerLane ? W : 1;
  size_t Total = static_cast<size_t>(B.NumElems) * B.Lanes;
  if (Total > static_cast<size_t>(MaxBufferElements))
    return fail("allocation of " + B.Name + " is too large to interpret");
  if (B.Data.size() < Total) {
    B.Data.resize(Total);
    B.InitGen.resize(Total, 0);
  }
  if (B.Tracked && B.Access.size() < static_cast<size_t>(B.NumElems))
    B.Access.resize(static_cast<size_t>(B.NumElems));
  if (B.AsyncDst)
    B.Pending.assign(Total, 0);
  if (B.IsMbarrier)
    B.Mbar.assign(static_cast<size_t>(B.NumElems), MbarrierState{});
  if (++B.Gen == 0) { // wrapped: old generations would alias
    std::fill(B.InitGen.begin(), B.InitGen.end(), 0);
    B.Gen = 1;
  }
  B.Live = true;
  if (B.SharedBytes) {
    B.ReuseEpoch = 0;
    for (const DeadTile &D : Dead)
      if (D.LastEpoch == SharedEpoch && D.Start < B.SharedStart + B.SharedBytes &&
          B.SharedStart < D.End) {
        B.ReuseEpoch = SharedEpoch;
        B.ReuseOf = Buffers[D.Slot].Name;
      }
  }
  return true;
}

void Interpreter::release(unsigned Slot) {
  BufferState &B = Buffers[Slot];
  B.Live = false;
  if (!B.SharedBytes)
    return;
  // Tiles last touched before a barrier can race with nothing: dropped.
  llvm::erase_if(Dead, [&](const DeadTile &D) { return D.LastEpoch != SharedEpoch; });
  Dead.push_back({B.SharedStart, B.SharedStart + B.SharedBytes, B.LastEpoch, Slot});
}

bool Interpreter::checkReuse(BufferState &B, uint32_t L) {
  B.LastEpoch = SharedEpoch;
  if (B.ReuseEpoch != SharedEpoch)
    return true;
  return fail("shared-memory race: " + B.Name + " reuses the bytes of " + B.ReuseOf +
              ", accessed with no barrier since, " + whereStr(L));
}

bool Interpreter::linearIndex(const BufferState &B, const std::vector<const Value *> &Idx,
                              uint32_t L, int64_t Shift, int64_t &Off) const {
  Off = 0;
  size_t Rank = Idx.size();
  for (size_t D = 0; D < Rank; ++D) {
    int64_t I = Idx[D][L].I + (D + 1 == Rank ? Shift : 0);
    if (I < 0 || I >= B.Shape[D])
      return false;
    Off = Off * B.Shape[D] + I;
  }
  return true;
}

bool Interpreter::checkRead(BufferState &B, int64_t Off, int64_t Pos, uint32_t L) {
  if (!B.Pending.empty() && B.Pending[Pos])
    return fail("async copy not yet waited for: " + elementStr(B, Off) + " read " + whereStr(L));
  if (Opts.CheckUninitialized && B.InitGen[Pos] != B.Gen)
    return fail("read of uninitialized " + elementStr(B, Off) + " " + whereStr(L));
  if (!B.Tracked)
    return true;
  if (B.SharedBytes && !checkReuse(B, L))
    return false;
  AccessRecord &R = B.Access[Off];
  uint32_t Epoch = epochOf(B), T = threadId(L), Now = clockOf(L);
  if (R.Epoch != Epoch) {
    R = {Epoch, NoThread, T, NoThread, 0, Now, 0};
    return true;
  }
  if (R.Writer != NoThread && R.Writer != T && !ordered(L, R.Writer, R.WriterClock))
    return raceError(B, Off, R.Writer, "written", T, "read");
  if (R.Reader1 == NoThread || R.Reader1 == T) {
    R.Reader1 = T;
    R.Reader1Clock = Now;
  } else if (R.Reader2 == NoThread || R.Reader2 == T || UsesMbarriers) {
    R.Reader2 = T;
    R.Reader2Clock = Now;
  }
  return true;
}

bool Interpreter::checkWrite(BufferState &B, int64_t Off, int64_t Pos, uint32_t L) {
  if (!B.Pending.empty() && B.Pending[Pos])
    return fail("async copy not yet waited for: " + elementStr(B, Off) + " written " + whereStr(L));
  if (!B.Tracked)
    return true;
  if (B.SharedBytes && !checkReuse(B, L))
    return false;
  AccessRecord &R = B.Access[Off];
  uint32_t Epoch = epochOf(B), T = threadId(L), Now = clockOf(L);
  if (R.Epoch != Epoch) {
    R = {Epoch, T, NoThread, NoThread, Now, 0, 0};
    return true;
  }
  if (R.Writer != NoThread && R.Writer != T && !ordered(L, R.Writer, R.WriterClock))
    return raceError(B, Off, R.Writer, "written", T, "written");
  for (auto [Reader, At] : {std::pair{R.Reader1, R.Reader1Clock}, {R.Reader2, R.Reader2Clock}})
    if (Reader != NoThread && Reader != T && !ordered(L, Reader, At))
      return raceError(B, Off, Reader, "read", T, "written");
  // Every earlier access is ordered before this write, and whatever is
  // ordered after it is after them too.
  R = {Epoch, T, NoThread, NoThread, Now, 0, 0};
  return true;
}

bool Interpreter::evalIndices(const std::vector<CExpr *> &Exprs, std::vector<const Value *> &Vals,
                              const LaneList &Act) {
  for (size_t D = 0; D < Exprs.size(); ++D)
    if (!(Vals[D] = eval(*Exprs[D], Act)))
      return false;
  return true;
}

bool Interpreter::execStore(CStmt &S, const LaneList &Act) {
  BufferState &B = Buffers[S.Slot];
  if (!B.Live)
    return fail("store to " + B.Name + " outside its allocation");
  // Every lane computes its value before any lane writes (lockstep).
  const Value *V = eval(*S.A, Act);
  if (!V || !evalIndices(S.Idx, S.IdxVals, Act))
    return false;
  DType From = S.A->Type;
  for (uint32_t L : Act) {
    int64_t Off;
    if (!linearIndex(B, S.IdxVals, L, 0, Off))
      return outOfBounds("store to", B, S.IdxVals, L);
    int64_t Pos = position(B, Off, L);
    if (!checkWrite(B, Off, Pos, L) || !checkWide(B, Off, L))
      return false;
    B.Data[Pos] = From == B.Type ? V[L] : castValue(V[L], From, B.Type);
    B.InitGen[Pos] = B.Gen;
  }
  return true;
}

bool Interpreter::execAsyncCopy(CStmt &S, const LaneList &Act) {
  BufferState &Dst = Buffers[S.Slot], &Src = Buffers[S.SrcSlot];
  if (!Dst.Live || !Src.Live)
    return fail("async_copy between " + Dst.Name + " and " + Src.Name +
                " outside their allocations");
  const Value *Valid = S.Cond ? eval(*S.Cond, Act) : nullptr;
  if ((S.Cond && !Valid) || !evalIndices(S.Idx, S.IdxVals, Act) ||
      !evalIndices(S.SrcIdx, S.SrcIdxVals, Act))
    return false;
  // The source is read now; the destination changes at the async_wait that
  // retires the group (until then accessing it is an error). A lane whose
  // condition is false reads nothing and fills with zeros.
  for (uint32_t L : Act) {
    bool Reads = !Valid || truthy(Valid[L], S.Cond->Type);
    for (int64_t K = 0; K < S.Count; ++K) {
      int64_t SrcOff = 0, DstOff;
      if (Reads && !linearIndex(Src, S.SrcIdxVals, L, K, SrcOff))
        return outOfBounds("async_copy source", Src, S.SrcIdxVals, L, K);
      if (!linearIndex(Dst, S.IdxVals, L, K, DstOff))
        return outOfBounds("async_copy destination", Dst, S.IdxVals, L, K);
      if (K == 0 && !inOneChunk(Dst, DstOff, S.Count, L, "async_copy"))
        return false;
      int64_t DstPos = position(Dst, DstOff, L);
      Value V{};
      if (Reads) {
        int64_t SrcPos = position(Src, SrcOff, L);
        if (!checkRead(Src, SrcOff, SrcPos, L))
          return false;
        V = Src.Data[SrcPos];
        if (Src.Type != Dst.Type)
          V = castValue(V, Src.Type, Dst.Type);
      } else {
        V = fromDouble(0.0, Dst.Type);
      }
      // The copy may land any time until the wait: it races with accesses
      // by other threads both now and at the wait.
      if (!checkWrite(Dst, DstOff, DstPos, L))
        return false;
      Async[L].Open.push_back(static_cast<uint32_t>(Copies.size()));
      Copies.push_back({S.Slot, Dst.Gen, DstOff, DstPos, V, L, false});
      ++Dst.Pending[DstPos];
      AnyAsync = true;
    }
  }
  return true;
}

/// A swizzle keeps chunks of 2^Base elements together: an access of N
/// consecutive elements (a 16-byte copy, an ldmatrix row) must not cross
/// one, or the hardware would read other elements than the IR names.
bool Interpreter::inOneChunk(const BufferState &B, int64_t Off, int64_t N, uint32_t L,
                             const char *What) {
  if (!B.Swz || N < 2 || (Off >> B.Swz.Base) == ((Off + N - 1) >> B.Swz.Base))
    return true;
  return fail(std::string(What) + " of " + std::to_string(N) + " elements from " +
              elementStr(B, Off) + " " + whereStr(L) + " crosses a chunk of " +
              std::to_string(int64_t(1) << B.Swz.Base) + " elements of its swizzle");
}

/// mma and ldmatrix are executed by whole warps: each lane supplies part of
/// the operands of all.
bool Interpreter::wholeWarps(const LaneList &Act, const char *What) {
  if (W % WarpSize)
    return fail(std::string(What) + " in a block of " + std::to_string(W) +
                " threads, not whole warps");
  for (size_t I = 0; I < Act.size(); I += WarpSize) {
    uint32_t Base = Act[I] - Act[I] % WarpSize;
    for (uint32_t K = 0; K < WarpSize; ++K)
      if (I + K >= Act.size() || Act[I + K] != Base + K)
        return fail(std::string(What) + " in divergent control flow: lane " +
                    std::to_string(K) + " of the warp of thread " + threadStr(Base) +
                    " of block " + blockStr() + " does not execute it");
  }
  return true;
}

/// The flat offset of N consecutive per-lane elements of B from Idx on.
bool Interpreter::fragmentRange(BufferState &B, const std::vector<const Value *> &Idx, uint32_t L,
                                unsigned N, const char *What, int64_t &Off) {
  if (!B.Live)
    return fail(std::string(What) + " " + B.Name + " outside its allocation");
  if (!linearIndex(B, Idx, L, 0, Off))
    return outOfBounds(What, B, Idx, L);
  if (Off + N > B.NumElems)
    return fail(std::string("out-of-bounds ") + What + " " + accessStr(B, Idx, L, 0) + ": it " +
                "takes " + std::to_string(N) + " elements from there, the buffer has " +
                std::to_string(B.NumElems - Off) + " left, " + whereStr(L));
  return true;
}

bool Interpreter::execMma(CStmt &S, const LaneList &Act) {
  const auto &N = static_cast<const MmaNode &>(*S.Node);
  if (!wholeWarps(Act, "mma"))
    return false;
  BufferState &C = Buffers[S.Slot], &A = Buffers[S.SrcSlot], &B = Buffers[S.Slot3];
  if (!evalIndices(S.Idx, S.IdxVals, Act) || !evalIndices(S.SrcIdx, S.SrcIdxVals, Act) ||
      !evalIndices(S.Idx3, S.Idx3Vals, Act))
    return false;
  MmaFragmentSizes Sz = mmaFragmentSizes(N.Shape);
  int64_t K = mmaShapeK(N.Shape);
  bool IntAcc = holdsInt(C.Type);
  for (size_t W0 = 0; W0 < Act.size(); W0 += WarpSize) {
    // Gather the warp's operands as whole matrices, then write D = A B + C.
    std::vector<double> MA(16 * K), MB(K * 8), MC(16 * 8);
    int64_t COff[WarpSize];
    for (uint32_t Lane = 0; Lane < WarpSize; ++Lane) {
      uint32_t L = Act[W0 + Lane];
      int64_t AOff, BOff;
      if (!fragmentRange(A, S.SrcIdxVals, L, Sz.A, "mma operand", AOff) ||
          !fragmentRange(B, S.Idx3Vals, L, Sz.B, "mma operand", BOff) ||
          !fragmentRange(C, S.IdxVals, L, Sz.C, "mma accumulator", COff[Lane]))
        return false;
      auto Read = [&](BufferState &Buf, int64_t Off, MmaOperand Op, unsigned I,
                      std::vector<double> &M, int64_t Cols) {
        int64_t Pos = position(Buf, Off + I, L);
        if (!checkRead(Buf, Off + I, Pos, L))
          return false;
        FragmentPos P = fragmentPos(N.Shape, Op, Lane, I);
        M[P.Row * Cols + P.Col] = toDouble(Buf.Data[Pos], Buf.Type);
        return true;
      };
      for (unsigned I = 0; I < Sz.A; ++I)
        if (!Read(A, AOff, MmaOperand::A, I, MA, K))
          return false;
      for (unsigned I = 0; I < Sz.B; ++I)
        if (!Read(B, BOff, MmaOperand::B, I, MB, 8))
          return false;
      for (unsigned I = 0; I < Sz.C; ++I)
        if (!Read(C, COff[Lane], MmaOperand::C, I, MC, 8))
          return false;
    }
    // Products of f16, bf16 and tf32 values are exact in double, and so are
    // their sums here; the one rounding to f32 makes sums of small integers
    // exact, as on the GPU (whose order of additions is unspecified).
    for (uint32_t Lane = 0; Lane < WarpSize; ++Lane) {
      uint32_t L = Act[W0 + Lane];
      for (unsigned I = 0; I < Sz.C; ++I) {
        FragmentPos P = fragmentPos(N.Shape, MmaOperand::C, Lane, I);
        int64_t Pos = position(C, COff[Lane] + I, L);
        Value V;
        if (IntAcc) {
          int64_t Sum = static_cast<int64_t>(MC[P.Row * 8 + P.Col]);
          for (int64_t Kk = 0; Kk < K; ++Kk)
            Sum += static_cast<int64_t>(MA[P.Row * K + Kk]) *
                   static_cast<int64_t>(MB[Kk * 8 + P.Col]);
          V.I = wrapInt(static_cast<uint64_t>(Sum), C.Type);
        } else {
          double Sum = MC[P.Row * 8 + P.Col];
          for (int64_t Kk = 0; Kk < K; ++Kk)
            Sum += MA[P.Row * K + Kk] * MB[Kk * 8 + P.Col];
          V = fromDouble(Sum, C.Type);
        }
        C.Data[Pos] = V;
        C.InitGen[Pos] = C.Gen;
      }
    }
  }
  return true;
}

bool Interpreter::execLdMatrix(CStmt &S, const LaneList &Act) {
  const auto &N = static_cast<const LdMatrixNode &>(*S.Node);
  if (!wholeWarps(Act, "ldmatrix"))
    return false;
  BufferState &D = Buffers[S.Slot], &Src = Buffers[S.SrcSlot];
  if (!Src.Live)
    return fail("ldmatrix from " + Src.Name + " outside its allocation");
  if (!evalIndices(S.Idx, S.IdxVals, Act) || !evalIndices(S.SrcIdx, S.SrcIdxVals, Act))
    return false;
  int64_t Bytes = dtypeBytes(Src.Type), PerRow = 16 / Bytes, PerLane = 4 / Bytes;
  for (size_t W0 = 0; W0 < Act.size(); W0 += WarpSize) {
    // Rows[M][R]: the 16 bytes of row R of matrix M, from the lane that
    // gave its address.
    std::vector<Value> Rows(size_t(S.Count) * 8 * PerRow);
    for (uint32_t Lane = 0; Lane < S.Count * 8; ++Lane) {
      uint32_t L = Act[W0 + Lane];
      int64_t Off;
      for (int64_t E = 0; E < PerRow; ++E) {
        if (!linearIndex(Src, S.SrcIdxVals, L, E, Off))
          return outOfBounds("ldmatrix row", Src, S.SrcIdxVals, L, E);
        if (E == 0 && !inOneChunk(Src, Off, PerRow, L, "ldmatrix row"))
          return false;
        int64_t Pos = position(Src, Off, L);
        if (!checkRead(Src, Off, Pos, L))
          return false;
        Rows[Lane * PerRow + E] = Src.Data[Pos];
      }
    }
    for (uint32_t Lane = 0; Lane < WarpSize; ++Lane) {
      uint32_t L = Act[W0 + Lane];
      int64_t Off;
      if (!fragmentRange(D, S.IdxVals, L, S.Count * PerLane, "ldmatrix destination", Off))
        return false;
      for (unsigned M = 0; M < S.Count; ++M)
        for (int64_t E = 0; E < PerLane; ++E) {
          // Without trans: row Lane / 4, the lane's 4 bytes of it. With
          // trans (16-bit elements): column Lane / 4, rows 2 (Lane % 4) + E.
          // With trans on bytes (pairs): column 2 (Lane / 4) + Q, then rows
          // 2 (Lane % 4) + H of each matrix in turn, Q outermost.
          int64_t Row = N.Trans ? 2 * (Lane % 4) + E : Lane / 4;
          int64_t Col = N.Trans ? Lane / 4 : (Lane % 4) * PerLane + E;
          int64_t To = M * PerLane + E;
          if (N.Trans && Bytes == 1) {
            int64_t Q = E / 2, H = E % 2;
            Row = 2 * (Lane % 4) + H;
            Col = 2 * (Lane / 4) + Q;
            To = Q * 2 * S.Count + M * 2 + H;
          }
          int64_t Pos = position(D, Off + To, L);
          if (!checkWrite(D, Off + To, Pos, L))
            return false;
          const Value &V = Rows[(M * 8 + Row) * PerRow + Col];
          D.Data[Pos] = D.Type == Src.Type ? V : castValue(V, Src.Type, D.Type);
          D.InitGen[Pos] = D.Gen;
        }
    }
  }
  return true;
}

bool Interpreter::retire(const std::vector<uint32_t> &Group) {
  for (uint32_t Id : Group) {
    PendingCopy &C = Copies[Id];
    C.Done = true;
    BufferState &B = Buffers[C.Buf];
    if (!B.Live || B.Gen != C.Gen)
      continue; // its allocation ended; the data has nowhere to go
    --B.Pending[C.Pos];
    if (!checkWrite(B, C.Off, C.Pos, C.Lane))
      return false;
    B.Data[C.Pos] = C.V;
    B.InitGen[C.Pos] = B.Gen;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// mbarriers and the tensor copy engine
//
// The block's threads run in lockstep, so a wait finds its phase complete
// exactly when the arrivals and copies it needs come earlier in the
// program; one that does not would wait forever on the GPU, and is an
// error here. A tensor copy's data lands when its phase completes and is
// in flight (an error to touch) until then. Order between threads beyond
// the block barriers: each thread's accesses carry its clock, an arrival
// releases them (and what its thread knew) into the phase, and a wait
// acquires what the phase released and the copies that completed it.
//===----------------------------------------------------------------------===//

/// Into[t] = max(Into[t], From[t]): what one thread (or phase) knows of
/// each thread's clock, joined with another's.
static void joinClocks(std::vector<uint32_t> &Into, const std::vector<uint32_t> &From) {
  for (size_t T = 0; T < Into.size(); ++T)
    Into[T] = std::max(Into[T], From[T]);
}

bool Interpreter::ordered(uint32_t L, uint32_t Other, uint32_t At) const {
  if (!UsesMbarriers)
    return false;
  uint64_t First = BlockLinear * W;
  if (Other < First || Other >= First + W)
    return false; // another block: only barriers and launches order those
  return Known[L][Other - First] >= At;
}

MbarrierState *Interpreter::mbarrierAt(BufferState &B, const Value *Index, uint32_t L,
                                       const std::string &What) {
  int64_t I = Index[L].I;
  if (I < 0 || I >= B.NumElems) {
    fail("out-of-bounds " + What + " on " + B.Name + "[" + std::to_string(I) + "] " + whereStr(L));
    return nullptr;
  }
  return &B.Mbar[static_cast<size_t>(I)];
}

MbarrierState *Interpreter::mbarrier(BufferState &B, const Value *Index, uint32_t L,
                                     const std::string &What) {
  MbarrierState *Found = mbarrierAt(B, Index, L, What);
  if (!Found)
    return nullptr;
  MbarrierState &M = *Found;
  int64_t I = Index[L].I;
  if (!M.Init) {
    fail(What + " on " + elementStr(B, I) + " before its init " + whereStr(L));
    return nullptr;
  }
  if (M.InitEpoch == SharedEpoch && M.InitThread != threadId(L)) {
    fail(What + " on " + elementStr(B, I) + " by another thread than its init's (" +
         globalThreadStr(M.InitThread) + ") with no barrier after the init " + whereStr(L));
    return nullptr;
  }
  return &M;
}

bool Interpreter::completePhase(BufferState &B, int64_t Index) {
  MbarrierState &M = B.Mbar[static_cast<size_t>(Index)];
  if (M.Arrivals || M.Bytes)
    return true;
  for (uint32_t Id : M.Copies) {
    PendingCopy &C = Copies[Id];
    C.Done = true;
    M.Released[C.Lane] = std::max(M.Released[C.Lane], C.Clock);
    BufferState &D = Buffers[C.Buf];
    if (!D.Live || D.Gen != C.Gen)
      continue; // its allocation ended; the data has nowhere to go
    --D.Pending[C.Pos];
    D.Data[C.Pos] = C.V;
    D.InitGen[C.Pos] = D.Gen;
    if (D.Tracked)
      D.Access[C.Off] = {epochOf(D), threadId(C.Lane), NoThread, NoThread, C.Clock, 0, 0};
  }
  M.Copies.clear();
  M.Done = std::move(M.Released);
  M.Released.assign(W, 0);
  M.Arrivals = M.Count;
  ++M.Phase;
  return true;
}

bool Interpreter::arrive(BufferState &B, int64_t Index, uint32_t L, int64_t Bytes) {
  MbarrierState &M = B.Mbar[static_cast<size_t>(Index)];
  if (M.Arrivals == 0)
    return fail("more arrivals on " + elementStr(B, Index) + " than its count (" +
                std::to_string(M.Count) + ") in phase " + std::to_string(M.Phase) + " " +
                whereStr(L));
  M.Bytes += Bytes;
  --M.Arrivals;
  joinClocks(M.Released, Known[L]);
  M.Released[L] = std::max(M.Released[L], Clock[L]);
  ++Clock[L];
  return completePhase(B, Index);
}

bool Interpreter::execMbarrier(CStmt &S, const LaneList &Act) {
  BufferState &B = Buffers[S.Slot];
  const auto Op = static_cast<MbarrierOp>(S.Count);
  const Value *Index = eval(*S.Idx[0], Act);
  const Value *V = Index && S.A ? eval(*S.A, Act) : nullptr;
  if (!Index || (S.A && !V))
    return false;
  const std::string What = "mbarrier " + mbarrierOpName(Op).str();
  if (Op == MbarrierOp::Init) {
    for (uint32_t L : Act) {
      MbarrierState *Found = mbarrierAt(B, Index, L, What);
      if (!Found)
        return false;
      MbarrierState &M = *Found;
      int64_t I = Index[L].I;
      if (M.Init && M.InitEpoch == SharedEpoch)
        return fail("mbarrier init of " + elementStr(B, I) + " twice with no barrier between " +
                    whereStr(L));
      if (!M.Copies.empty())
        return fail("mbarrier init of " + elementStr(B, I) + " with tensor copies in flight " +
                    whereStr(L));
      if (V[L].I < 1)
        return fail("mbarrier init of " + elementStr(B, I) + " with count " +
                    std::to_string(V[L].I) + " " + whereStr(L));
      M = MbarrierState{};
      M.Init = true;
      M.InitEpoch = SharedEpoch;
      M.InitThread = threadId(L);
      M.Count = M.Arrivals = V[L].I;
      M.Released.assign(W, 0);
      M.Done.assign(W, 0);
    }
    return true;
  }
  if (Op == MbarrierOp::ArriveWarp) {
    // Lane 0 arrives for its warp after __syncwarp(), which orders the
    // other lanes' accesses before it: they are released too.
    if (!wholeWarps(Act, What.c_str()))
      return false;
    for (size_t First = 0; First < Act.size(); First += WarpSize) {
      uint32_t L0 = Act[First];
      MbarrierState *M = mbarrier(B, Index, L0, What);
      if (!M)
        return false;
      for (uint32_t K = 1; K < WarpSize; ++K) {
        uint32_t L = Act[First + K];
        if (Index[L].I != Index[L0].I)
          return fail(What + " on " + B.Name + "[" + std::to_string(Index[L].I) + "] and " +
                      B.Name + "[" + std::to_string(Index[L0].I) +
                      "] by one warp (one barrier a warp) " + whereStr(L));
        joinClocks(Known[L0], Known[L]);
        Known[L0][L] = std::max(Known[L0][L], Clock[L]);
        ++Clock[L];
      }
      if (!arrive(B, Index[L0].I, L0, 0))
        return false;
    }
    return true;
  }
  for (uint32_t L : Act) {
    MbarrierState *M = mbarrier(B, Index, L, What);
    if (!M)
      return false;
    int64_t I = Index[L].I;
    switch (Op) {
    case MbarrierOp::Arrive:
      if (!arrive(B, I, L, 0))
        return false;
      break;
    case MbarrierOp::ExpectTx:
      if (V[L].I < 0)
        return fail("mbarrier expect_tx of " + std::to_string(V[L].I) + " bytes " + whereStr(L));
      if (!arrive(B, I, L, V[L].I))
        return false;
      break;
    case MbarrierOp::Wait: {
      int64_t Parity = V[L].I;
      if (Parity != 0 && Parity != 1)
        return fail("mbarrier wait for parity " + std::to_string(Parity) + " (0 or 1) " +
                    whereStr(L));
      // The phase of that parity has completed when the current one's
      // parity differs (PTX try_wait.parity).
      if (int64_t(M->Phase & 1) == Parity)
        return fail("mbarrier wait on " + elementStr(B, I) + " for its phase " +
                    std::to_string(M->Phase) + ", still short of " + std::to_string(M->Arrivals) +
                    " arrivals and " + std::to_string(M->Bytes) +
                    " bytes of tensor copies: on the GPU the threads would wait forever (here "
                    "they run in lockstep, so only what comes earlier in the program counts) " +
                    whereStr(L));
      joinClocks(Known[L], M->Done);
      break;
    }
    case MbarrierOp::Init:
    case MbarrierOp::ArriveWarp: break;
    }
  }
  return true;
}

bool Interpreter::execTensorCopy(CStmt &S, const LaneList &Act) {
  const auto &N = static_cast<const TensorCopyNode &>(*S.Node);
  BufferState &Dst = Buffers[S.Slot], &Src = Buffers[S.SrcSlot], &Bar = Buffers[S.Slot3];
  if (!Dst.Live || !Src.Live)
    return fail("tensor_copy between " + Dst.Name + " and " + Src.Name +
                " outside their allocations");
  if (!evalIndices(S.Idx, S.IdxVals, Act) || !evalIndices(S.SrcIdx, S.SrcIdxVals, Act) ||
      !evalIndices(S.Idx3, S.Idx3Vals, Act))
    return false;
  const size_t Rank = N.Box.size(), Skip = Dst.Shape.size() - Rank;
  // Src as the copy reads it: with fewer subscripts than its rank, its
  // leading dimensions are one of their product (it is dense, row-major).
  std::vector<int64_t> View(Src.Shape.end() - Rank, Src.Shape.end());
  for (auto It = Src.Shape.begin(); It != Src.Shape.end() - Rank; ++It)
    View[0] *= *It;
  int64_t Elems = 1;
  for (int64_t E : N.Box)
    Elems *= E;
  const int64_t Bytes = Elems * dtypeBytes(Dst.Type);
  std::vector<int64_t> At(Rank, 0);
  for (uint32_t L : Act) {
    MbarrierState *M = mbarrier(Bar, S.Idx3Vals[0], L, "tensor_copy");
    if (!M)
      return false;
    const int64_t BarIndex = S.Idx3Vals[0][L].I;
    for (int64_t E = 0; E < Elems; ++E) {
      // The box element E, row-major, is At; it reads Src there and lands
      // in Dst's last Rank dimensions there.
      for (size_t D = Rank, Rest = E; D-- > 0; Rest /= N.Box[D])
        At[D] = static_cast<int64_t>(Rest) % N.Box[D];
      int64_t SrcOff = 0, DstOff = 0;
      bool Inside = true;
      for (size_t D = 0; D < Rank; ++D) {
        int64_t I = S.SrcIdxVals[D][L].I + At[D];
        Inside &= I >= 0 && I < View[D];
        SrcOff = SrcOff * View[D] + I;
      }
      for (size_t D = 0; D < Dst.Shape.size(); ++D) {
        int64_t I = S.IdxVals[D][L].I + (D >= Skip ? At[D - Skip] : 0);
        if (I < 0 || I >= Dst.Shape[D])
          return fail("out-of-bounds tensor_copy destination: box element " + std::to_string(E) +
                      " of " + N.Dst + " lands outside it " + whereStr(L));
        DstOff = DstOff * Dst.Shape[D] + I;
      }
      Value V = fromDouble(0.0, Dst.Type);
      if (Inside) {
        int64_t SrcPos = position(Src, SrcOff, L);
        if (!checkRead(Src, SrcOff, SrcPos, L))
          return false;
        V = Src.Data[SrcPos];
      }
      int64_t DstPos = position(Dst, DstOff, L);
      // It may land any time until its phase completes: it races with
      // earlier accesses its thread is not ordered after, and any access
      // before the landing is an error (in flight).
      if (!checkWrite(Dst, DstOff, DstPos, L))
        return false;
      M->Copies.push_back(static_cast<uint32_t>(Copies.size()));
      Copies.push_back({S.Slot, Dst.Gen, DstOff, DstPos, V, L, false, clockOf(L)});
      ++Dst.Pending[DstPos];
    }
    AnyAsync = true;
    M->Bytes -= Bytes;
    if (!completePhase(Bar, BarIndex))
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

const Value *Interpreter::evalNode(CExpr &E, const LaneList &Act) {
  switch (E.Kind) {
  case CExprKind::Const:
  case CExprKind::Var: return eval(E, Act);
  case CExprKind::Load: return evalLoad(E, Act);
  case CExprKind::Select: return evalSelect(E, Act);
  case CExprKind::Call: return evalCall(E, Act);
  case CExprKind::Unary: {
    const Value *A = eval(*E.Ops[0], Act);
    if (!A)
      return nullptr;
    Value *Out = E.Out.data();
    DType T = E.OperandType;
    if (E.UOp == UnaryOp::Not) {
      for (uint32_t L : Act)
        Out[L].I = !truthy(A[L], T);
    } else if (holdsInt(T)) {
      for (uint32_t L : Act)
        Out[L].I = wrapInt(0 - static_cast<uint64_t>(A[L].I), T);
    } else {
      for (uint32_t L : Act)
        Out[L].F = -A[L].F; // exact in every float format
    }
    return Out;
  }
  case CExprKind::Cast: {
    const Value *A = eval(*E.Ops[0], Act);
    if (!A)
      return nullptr;
    Value *Out = E.Out.data();
    for (uint32_t L : Act)
      Out[L] = castValue(A[L], E.OperandType, E.Type);
    return Out;
  }
  case CExprKind::Binary: break;
  }

  if (E.BOp == BinaryOp::And || E.BOp == BinaryOp::Or)
    return evalLogical(E, Act);
  const Value *A = eval(*E.Ops[0], Act);
  const Value *B = A ? eval(*E.Ops[1], Act) : nullptr;
  if (!B)
    return nullptr;
  Value *Out = E.Out.data();
  BinaryOp Op = E.BOp;
  DType T = E.OperandType;
  if (E.IsComparison) {
    // f32 values compare exactly as doubles.
    if (holdsInt(T))
      for (uint32_t L : Act)
        Out[L].I = compare(Op, A[L].I, B[L].I);
    else
      for (uint32_t L : Act)
        Out[L].I = compare(Op, A[L].F, B[L].F);
  } else if (T == DType::F32) {
    for (uint32_t L : Act)
      Out[L].F = floatArith<float>(Op, static_cast<float>(A[L].F), static_cast<float>(B[L].F));
  } else if (T == DType::F64) {
    for (uint32_t L : Act)
      Out[L].F = floatArith<double>(Op, A[L].F, B[L].F);
  } else if (isFloat(T)) {
    // f16, bf16, tf32: the IR converts to f32 first; should it not, the
    // result is f32 arithmetic rounded back, as CUDA's __half operators.
    for (uint32_t L : Act)
      Out[L].F = convertValue(
          floatArith<float>(Op, static_cast<float>(A[L].F), static_cast<float>(B[L].F)), DType::F32,
          T);
  } else {
    for (uint32_t L : Act)
      Out[L].I = intArith(Op, T, A[L].I, B[L].I);
  }
  return Out;
}

const Value *Interpreter::evalLogical(CExpr &E, const LaneList &Act) {
  // && and || short-circuit per lane, as in CUDA C++: the right operand
  // (say, a guarded load) runs only on the lanes that need it.
  const Value *A = eval(*E.Ops[0], Act);
  if (!A)
    return nullptr;
  bool IsAnd = E.BOp == BinaryOp::And;
  Value *Out = E.Out.data();
  E.LanesA.clear();
  for (uint32_t L : Act) {
    bool X = truthy(A[L], E.OperandType);
    Out[L].I = X;
    if (X == IsAnd)
      E.LanesA.push_back(L);
  }
  if (E.LanesA.empty())
    return Out;
  const Value *B = eval(*E.Ops[1], E.LanesA);
  if (!B)
    return nullptr;
  DType BT = E.Ops[1]->Type;
  for (uint32_t L : E.LanesA)
    Out[L].I = truthy(B[L], BT);
  return Out;
}

const Value *Interpreter::evalSelect(CExpr &E, const LaneList &Act) {
  // Only the chosen operand is evaluated on each lane, as with ?: in CUDA.
  const Value *C = eval(*E.Ops[0], Act);
  if (!C)
    return nullptr;
  LaneList &TrueLanes = E.LanesA, &FalseLanes = E.LanesB;
  TrueLanes.clear();
  FalseLanes.clear();
  for (uint32_t L : Act)
    (truthy(C[L], E.OperandType) ? TrueLanes : FalseLanes).push_back(L);
  if (FalseLanes.empty())
    return eval(*E.Ops[1], Act);
  if (TrueLanes.empty())
    return eval(*E.Ops[2], Act);
  Value *Out = E.Out.data();
  const Value *TV = eval(*E.Ops[1], TrueLanes);
  if (!TV)
    return nullptr;
  for (uint32_t L : TrueLanes)
    Out[L] = TV[L];
  const Value *FV = eval(*E.Ops[2], FalseLanes);
  if (!FV)
    return nullptr;
  for (uint32_t L : FalseLanes)
    Out[L] = FV[L];
  return Out;
}

const Value *Interpreter::evalLoad(CExpr &E, const LaneList &Act) {
  BufferState &B = Buffers[E.Slot];
  if (!B.Live) {
    fail("load from " + B.Name + " outside its allocation");
    return nullptr;
  }
  if (!evalIndices(E.Ops, E.OpVals, Act))
    return nullptr;
  Value *Out = E.Out.data();
  bool Convert = B.Type != E.Type;
  for (uint32_t L : Act) {
    int64_t Off;
    if (!linearIndex(B, E.OpVals, L, 0, Off)) {
      outOfBounds("load from", B, E.OpVals, L);
      return nullptr;
    }
    int64_t Pos = position(B, Off, L);
    if (!checkRead(B, Off, Pos, L) || !checkWide(B, Off, L))
      return nullptr;
    Out[L] = Convert ? castValue(B.Data[Pos], B.Type, E.Type) : B.Data[Pos];
  }
  return Out;
}

const Value *Interpreter::evalCall(CExpr &E, const LaneList &Act) {
  if (isWarpShuffle(E.Fn))
    return evalShuffle(E, Act);
  const Value *X = eval(*E.Ops[0], Act);
  const Value *Y = X && E.Ops.size() > 1 ? eval(*E.Ops[1], Act) : X;
  if (!Y)
    return nullptr;
  Value *Out = E.Out.data();
  DType T = E.OperandType;
  if (T == DType::F64) {
    for (uint32_t L : Act)
      Out[L].F = floatMath<double>(E.Fn, X[L].F, Y[L].F);
  } else if (isFloat(T)) {
    for (uint32_t L : Act) {
      float R = floatMath<float>(E.Fn, static_cast<float>(X[L].F), static_cast<float>(Y[L].F));
      Out[L].F = T == DType::F32 ? R : convertValue(R, DType::F32, T);
    }
  } else {
    for (uint32_t L : Act)
      Out[L].I = intMath(E.Fn, T, X[L].I, Y[L].I);
  }
  if (E.Type != T)
    for (uint32_t L : Act)
      Out[L] = castValue(Out[L], T, E.Type);
  return Out;
}

const Value *Interpreter::evalShuffle(CExpr &E, const LaneList &Act) {
  const Value *X = eval(*E.Ops[0], Act);
  const Value *K = X ? eval(*E.Ops[1], Act) : nullptr;
  if (!K)
    return nullptr;
  Value *Out = E.Out.data();
  std::vector<uint8_t> &Active = E.ActiveMap;
  for (uint32_t L : Act)
    Active[L] = 1;
  const Value *Result = Out;
  for (uint32_t L : Act) {
    int64_t Lane = L % WarpSize, Arg = K[L].I, Src;
    switch (E.Fn) {
    case Intrinsic::ShflXor: Src = Lane ^ Arg; break;
    case Intrinsic::ShflDown: Src = Lane + Arg; break;
    case Intrinsic::ShflUp: Src = Lane - Arg; break;
    default: Src = Arg; break;
    }
    if (Src < 0 || Src >= int64_t(WarpSize)) { // outside the warp: reads itself
      Out[L] = X[L];
      continue;
    }
    uint32_t From = L - static_cast<uint32_t>(Lane) + static_cast<uint32_t>(Src);
    if (From >= W || !Active[From]) {
      fail(intrinsicName(E.Fn).str() + " by thread " + threadStr(L) + " of block " + blockStr() +
           " reads lane " + std::to_string(Src) +
           " of its warp, which is not executing the shuffle (divergent, or outside the "
           "block)");
      Result = nullptr;
      break;
    }
    Out[L] = X[From];
  }
  for (uint32_t L : Act)
    Active[L] = 0;
  return Result;
}

//===----------------------------------------------------------------------===//
// Setup
//===----------------------------------------------------------------------===//

InterpResult Interpreter::run(const std::map<std::string, int64_t> &Sizes,
                              std::map<std::string, TensorData> &Args) {
  for (const std::string &S : F.Sizes)
    SizeSlots.push_back(bindVar(S, /*HostBound=*/true));
  std::vector<unsigned> ParamSlots;
  for (const Buffer &P : F.Params) {
    unsigned Slot = addBuffer(P);
    ParamSlots.push_back(Slot);
    Buffers[Slot].Param = true;
    for (const Expr &E : P.Shape)
      Buffers[Slot].ShapeExprs.push_back(compileExpr(E));
  }
  CStmt *Body = F.Body ? compileStmt(F.Body, /*Host=*/true) : nullptr;
  for (unsigned Slot = 0; Slot < Vars.size(); ++Slot)
    if (Vars[Slot].HostBound)
      HostSlots.push_back(Slot);

  ensureCapacity(1);
  setHostState();
  for (size_t I = 0; I < F.Sizes.size() && Error.empty(); ++I) {
    auto It = Sizes.find(F.Sizes[I]);
    if (It == Sizes.end())
      fail("size '" + F.Sizes[I] + "' is not given");
    else
      Vars[SizeSlots[I]].Lanes[0].I = It->second;
  }
  for (size_t P = 0; P < F.Params.size() && Error.empty(); ++P) {
    const Buffer &Param = F.Params[P];
    BufferState &B = Buffers[ParamSlots[P]];
    B.Shape.clear();
    B.NumElems = 1;
    for (CExpr *E : B.ShapeExprs) {
      const Value *V = eval(*E, HostLanes);
      if (!V)
        break;
      B.Shape.push_back(V[0].I);
      B.NumElems *= std::max<int64_t>(V[0].I, 0);
    }
    auto It = Args.find(Param.Name);
    if (!Error.empty())
      break;
    if (It == Args.end()) {
      fail("no data for parameter '" + Param.Name + "'");
      break;
    }
    const TensorData &D = It->second;
    auto ShapeStr = [](const std::vector<int64_t> &S) {
      std::string R = "[";
      for (size_t I = 0; I < S.size(); ++I)
        R += (I ? ", " : "") + std::to_string(S[I]);
      return R + "]";
    };
    if (D.Type != Param.Type)
      fail("data for '" + Param.Name + "' is " + dtypeName(D.Type).str() +
           " but the parameter is " + dtypeName(Param.Type).str());
    else if (D.Shape != B.Shape)
      fail("data for '" + Param.Name + "' has shape " + ShapeStr(D.Shape) +
           " but the parameter has shape " + ShapeStr(B.Shape));
    else if (static_cast<int64_t>(D.Values.size()) != B.NumElems)
      fail("data for '" + Param.Name + "' has " + std::to_string(D.Values.size()) + " values for " +
           std::to_string(B.NumElems) + " elements");
    if (!Error.empty())
      break;
    bool Initialized = Param.Role == BufferRole::Input;
    B.Gen = 1;
    B.Lanes = 1;
    B.Data.resize(D.Values.size());
    for (size_t I = 0; I < D.Values.size(); ++I)
      B.Data[I] = fromDouble(D.Values[I], B.Type);
    B.InitGen.assign(D.Values.size(), Initialized ? B.Gen : 0);
    if (B.Tracked)
      B.Access.assign(D.Values.size(), AccessRecord());
    if (B.AsyncDst)
      B.Pending.assign(D.Values.size(), 0);
    B.Live = true;
  }

  if (Error.empty() && Body)
    execHost(*Body);

  // Outputs are written back even after an error: what was stored so far
  // helps to debug it.
  for (size_t P = 0; P < F.Params.size(); ++P) {
    BufferState &B = Buffers[ParamSlots[P]];
    if (F.Params[P].Role == BufferRole::Input || !B.Live)
      continue;
    std::vector<double> &Values = Args[F.Params[P].Name].Values;
    for (size_t I = 0; I < Values.size() && I < B.Data.size(); ++I)
      Values[I] = toDouble(B.Data[I], B.Type);
  }

  InterpResult R;
  R.Ok = Error.empty();
  R.Error = Error;
  R.Line = ErrorLine;
  R.Steps = Steps;
  R.Launches = Launches;
  return R;
}

std::optional<std::vector<int64_t>>
Interpreter::shapeOf(const Buffer &B, const std::map<std::string, int64_t> &Sizes) {
  std::vector<unsigned> Slots;
  for (const auto &[Name, Value] : Sizes)
    Slots.push_back(bindVar(Name, /*HostBound=*/true));
  std::vector<CExpr *> Extents;
  for (const Expr &E : B.Shape)
    Extents.push_back(compileExpr(E));
  if (!Error.empty())
    return std::nullopt;
  ensureCapacity(1);
  setHostState();
  size_t K = 0;
  for (const auto &[Name, Value] : Sizes)
    Vars[Slots[K++]].Lanes[0].I = Value;
  std::vector<int64_t> Shape;
  for (CExpr *E : Extents) {
    const Value *V = eval(*E, HostLanes);
    if (!V)
      return std::nullopt;
    Shape.push_back(V[0].I);
  }
  return Shape;
}

} // namespace

std::optional<std::vector<int64_t>> evaluateShape(const Buffer &B,
                                                  const std::map<std::string, int64_t> &Sizes) {
  Func Empty;
  InterpOptions Opts;
  Interpreter I(Empty, Opts);
  return I.shapeOf(B, Sizes);
}

InterpResult interpret(const Func &F, const std::map<std::string, int64_t> &Sizes,
                       std::map<std::string, TensorData> &Args, const InterpOptions &Opts) {
  Interpreter I(F, Opts);
  return I.run(Sizes, Args);
}

} // namespace tdsl::ir
