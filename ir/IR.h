//===- IR.h - The loop IR: kernels of buffers, loops and statements -------===//
//
// One IR, progressively lowered, in the spirit of Halide's and TVM's TIR:
// a Func holds buffers (dtype, shape, memory scope, padding or swizzle) and a
// statement tree of loops (serial, unrolled, vectorized, bound to GPU
// blocks, warps, lanes or threads), loads, stores, predicates, barriers,
// async copies and intrinsics.
//
// Nodes are immutable and shared: a pass that changes nothing returns the
// very same pointers, so "unchanged" is a pointer comparison.
//
// GPU semantics (what the interpreter executes and the backend emits):
// a `launch` node is one kernel launch; GPU-bound loops exist only inside
// one. Inside a block every statement is executed by every thread of the block;
// a loop bound to thread.x (y, z) restricts execution to the threads whose
// threadIdx.x is below its extent and binds its variable to threadIdx.x
// (plus its min). warp binds threadIdx.x / 32 and lane threadIdx.x % 32.
// The block size along each dimension is the largest extent of the loops
// bound to it (warp extents count 32 threads each); those extents must be
// constants.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_IR_H
#define TDSL_IR_IR_H

#include "ir/DType.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tdsl::ir {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

enum class ExprKind { IntImm, FloatImm, Var, Load, Unary, Binary, Select, Cast, Call };

struct ExprNode {
  const ExprKind Kind;
  const DType Type;
  ExprNode(ExprKind K, DType T) : Kind(K), Type(T) {}
  virtual ~ExprNode() = default;
};
using Expr = std::shared_ptr<const ExprNode>;

struct IntImmNode : ExprNode {
  const int64_t Value;
  IntImmNode(DType T, int64_t V) : ExprNode(ExprKind::IntImm, T), Value(V) {}
};

struct FloatImmNode : ExprNode {
  const double Value; ///< already rounded to Type
  FloatImmNode(DType T, double V) : ExprNode(ExprKind::FloatImm, T), Value(V) {}
};

/// A loop variable, a let-bound value or a size symbol (all by name).
struct VarNode : ExprNode {
  const std::string Name;
  VarNode(DType T, std::string N) : ExprNode(ExprKind::Var, T), Name(std::move(N)) {}
};

/// Buffer[i, j, ...]; a rank-0 buffer (a scalar parameter) has no indices.
struct LoadNode : ExprNode {
  const std::string Buffer;
  const std::vector<Expr> Indices;
  LoadNode(DType T, std::string B, std::vector<Expr> I)
      : ExprNode(ExprKind::Load, T), Buffer(std::move(B)), Indices(std::move(I)) {}
};

enum class UnaryOp { Neg, Not };

struct UnaryNode : ExprNode {
  const UnaryOp Op;
  const Expr A;
  UnaryNode(DType T, UnaryOp O, Expr X) : ExprNode(ExprKind::Unary, T), Op(O), A(std::move(X)) {}
};

/// Both operands have the same type; comparisons and And/Or yield bool.
/// Div and Mod on integers truncate toward zero, as in C.
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Min, Max, Lt, Le, Gt, Ge, Eq, Ne, And, Or };

struct BinaryNode : ExprNode {
  const BinaryOp Op;
  const Expr A, B;
  BinaryNode(DType T, BinaryOp O, Expr X, Expr Y)
      : ExprNode(ExprKind::Binary, T), Op(O), A(std::move(X)), B(std::move(Y)) {}
};

struct SelectNode : ExprNode {
  const Expr Cond, TrueValue, FalseValue;
  SelectNode(DType T, Expr C, Expr X, Expr Y)
      : ExprNode(ExprKind::Select, T), Cond(std::move(C)), TrueValue(std::move(X)),
        FalseValue(std::move(Y)) {}
};

/// Conversion to Type with the rounding rules of convertValue().
struct CastNode : ExprNode {
  const Expr A;
  CastNode(DType T, Expr X) : ExprNode(ExprKind::Cast, T), A(std::move(X)) {}
};

/// Pure functions: math on one float type, and warp shuffles, which read
/// Args[0] as evaluated by another lane of the same warp (Args[1] is the
/// lane mask, delta or source lane; a lane outside the warp reads itself).
/// aligned(X[0, ...], N) is a bool: whether the address of that element of
/// the global buffer X is a multiple of N bytes (the element is not read),
/// the runtime fact that a wide global access rests on.
enum class Intrinsic {
  Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Erf, Gelu, Relu, Abs, Pow,
  ShflXor, ShflDown, ShflUp, ShflIdx,
  Aligned,
};
llvm::StringRef intrinsicName(Intrinsic I);
std::optional<Intrinsic> parseIntrinsic(llvm::StringRef Name);
unsigned intrinsicArity(Intrinsic I);
bool isWarpShuffle(Intrinsic I);

struct CallNode : ExprNode {
  const Intrinsic Fn;
  const std::vector<Expr> Args;
  CallNode(DType T, Intrinsic F, std::vector<Expr> A)
      : ExprNode(ExprKind::Call, T), Fn(F), Args(std::move(A)) {}
};

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

enum class MemScope { Global, Shared, Register, Fragment };
llvm::StringRef memScopeName(MemScope S);
std::optional<MemScope> parseMemScope(llvm::StringRef Name);

enum class BufferRole { Input, Output, Temp };

/// An XOR swizzle of a shared buffer's storage (CuTe's Swizzle<B, M, S>):
/// the element at row-major offset o is stored at
///   o ^ (((o >> (Base + Shift)) & (2^Bits - 1)) << Base),
/// so bits [Base, Base + Bits) of the offset (which 2^Base-element chunk of
/// a row) are XORed with bits [Base + Shift, ...) (which row). With f16
/// elements, Base 3 moves whole 16-byte chunks, so a 16-byte copy or an
/// ldmatrix row stays contiguous. It never changes which elements exist.
struct Swizzle {
  unsigned Bits = 0, Base = 0, Shift = 0;
  explicit operator bool() const { return Bits != 0; }
  int64_t apply(int64_t Off) const {
    return Off ^ (((Off >> (Base + Shift)) & ((int64_t(1) << Bits) - 1)) << Base);
  }
  bool operator==(const Swizzle &O) const {
    return Bits == O.Bits && Base == O.Base && Shift == O.Shift;
  }
};

/// Row-major storage. The storage extent of dim d is Shape[d] + Padding[d]
/// (padding exists to move rows to other shared-memory banks); a swizzle
/// (shared buffers only, no padding) permutes elements within the storage.
struct Buffer {
  std::string Name;
  DType Type = DType::F32;
  std::vector<Expr> Shape; ///< i64 expressions of size symbols and constants
  MemScope Scope = MemScope::Global;
  BufferRole Role = BufferRole::Temp;
  std::vector<int64_t> Padding; ///< empty, or one entry per dim
  /// Empty, or one word per dim saying what its extent is (`stages`,
  /// `block_k`): the emitted CUDA names the extents after them
  /// (`constexpr int kBlockK = 32`) and declares the buffer with them.
  std::vector<std::string> ExtentNames;
  Swizzle Swz;
  unsigned rank() const { return static_cast<unsigned>(Shape.size()); }
};

//===----------------------------------------------------------------------===//
// Schedule knobs
//===----------------------------------------------------------------------===//

/// One pinned schedule knob: `key = 64`, `key = [128, 128, 8]` or
/// `key = off`, from the .tdsl `schedule` block or the command line. The
/// passes that own a key read it (passes/Schedule.h); Line is the .tdsl
/// line of the entry (0: the command line).
struct Knob {
  std::string Key;
  std::vector<int64_t> Ints; ///< one value, or a list
  bool IsList = false;       ///< written with brackets
  std::string Word;          ///< a word value (Ints empty)
  unsigned Line = 0;
  /// The pass that chose this value where the user pinned none (printed
  /// `by "tile-contraction"`); empty for a pinned knob.
  std::string SetBy;
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

enum class StmtKind {
  Block, For, If, Let, Store, Allocate, Barrier, AsyncCopy, AsyncCommit,
  AsyncWait, Mbarrier, TensorCopy, Mma, LdMatrix, Note, Launch,
};

struct StmtNode {
  const StmtKind Kind;
  /// The .tdsl line this statement comes from (0: none). Printed as "@LINE".
  const unsigned SrcLine;
  StmtNode(StmtKind K, unsigned L) : Kind(K), SrcLine(L) {}
  virtual ~StmtNode() = default;
};
using Stmt = std::shared_ptr<const StmtNode>;

struct BlockNode : StmtNode {
  const std::vector<Stmt> Stmts;
  BlockNode(std::vector<Stmt> S, unsigned L = 0)
      : StmtNode(StmtKind::Block, L), Stmts(std::move(S)) {}
};

enum class ForKind {
  Serial, Unrolled, Vectorized,
  BlockX, BlockY, BlockZ,
  ThreadX, ThreadY, ThreadZ,
  Warp, Lane,
};
llvm::StringRef forKindName(ForKind K); // "serial", "unroll", "block.x", ...
std::optional<ForKind> parseForKind(llvm::StringRef Name);
bool isBlockLoop(ForKind K);
bool isThreadLoop(ForKind K); // thread.*, warp and lane

/// for Var in [Min, Min + Extent). Unroll > 1 on a serial loop asks for
/// partial unrolling by that factor; Unroll == 1 keeps it rolled (the
/// unroll pass leaves it, the backend writes `#pragma unroll 1`).
struct ForNode : StmtNode {
  const std::string Var;
  const Expr Min, Extent;
  const ForKind Loop;
  const unsigned Unroll;
  const Stmt Body;
  ForNode(std::string V, Expr Mn, Expr Ext, ForKind K, unsigned U, Stmt B, unsigned L = 0)
      : StmtNode(StmtKind::For, L), Var(std::move(V)), Min(std::move(Mn)),
        Extent(std::move(Ext)), Loop(K), Unroll(U), Body(std::move(B)) {}
};

struct IfNode : StmtNode {
  const Expr Cond;
  const Stmt Then, Else; ///< Else may be null
  IfNode(Expr C, Stmt T, Stmt E, unsigned L = 0)
      : StmtNode(StmtKind::If, L), Cond(std::move(C)), Then(std::move(T)), Else(std::move(E)) {}
};

/// let Var = Value in Body (hoisted index math, shared subexpressions).
struct LetNode : StmtNode {
  const std::string Var;
  const Expr Value;
  const Stmt Body;
  LetNode(std::string V, Expr X, Stmt B, unsigned L = 0)
      : StmtNode(StmtKind::Let, L), Var(std::move(V)), Value(std::move(X)), Body(std::move(B)) {}
};

/// Buffer[i, ...] = Value (Value has the buffer's dtype).
struct StoreNode : StmtNode {
  const std::string Buffer;
  const std::vector<Expr> Indices;
  const Expr Value;
  StoreNode(std::string B, std::vector<Expr> I, Expr V, unsigned L = 0)
      : StmtNode(StmtKind::Store, L), Buffer(std::move(B)), Indices(std::move(I)),
        Value(std::move(V)) {}
};

/// A buffer that lives for the duration of Body: a global intermediate, a
/// shared-memory tile (one per block), or registers (one per thread).
struct AllocateNode : StmtNode {
  const ir::Buffer Buf;
  const Stmt Body;
  AllocateNode(ir::Buffer B, Stmt Body, unsigned L = 0)
      : StmtNode(StmtKind::Allocate, L), Buf(std::move(B)), Body(std::move(Body)) {}
};

/// __syncthreads(): every thread of the block waits here.
struct BarrierNode : StmtNode {
  explicit BarrierNode(unsigned L = 0) : StmtNode(StmtKind::Barrier, L) {}
};

/// Copies Elems consecutive elements from Src[SrcIndices...] to
/// Dst[DstIndices...] (along the innermost dimension) asynchronously
/// (cp.async). The data is visible only after an AsyncWait that retires
/// the group it was committed in. Where Valid (null: always) is false for a
/// thread, its copy reads nothing and fills the destination with zeros (the
/// guarded copy of a tile's edge).
struct AsyncCopyNode : StmtNode {
  const std::string Dst;
  const std::vector<Expr> DstIndices;
  const std::string Src;
  const std::vector<Expr> SrcIndices;
  const unsigned Elems;
  const Expr Valid;
  AsyncCopyNode(std::string D, std::vector<Expr> DI, std::string S, std::vector<Expr> SI,
                unsigned N, unsigned L = 0, Expr V = nullptr)
      : StmtNode(StmtKind::AsyncCopy, L), Dst(std::move(D)), DstIndices(std::move(DI)),
        Src(std::move(S)), SrcIndices(std::move(SI)), Elems(N), Valid(std::move(V)) {}
};

/// Closes the current group of async copies (cp.async.commit_group).
struct AsyncCommitNode : StmtNode {
  explicit AsyncCommitNode(unsigned L = 0) : StmtNode(StmtKind::AsyncCommit, L) {}
};

/// Waits until at most Pending committed groups are still in flight.
struct AsyncWaitNode : StmtNode {
  const unsigned Pending;
  explicit AsyncWaitNode(unsigned P, unsigned L = 0)
      : StmtNode(StmtKind::AsyncWait, L), Pending(P) {}
};

/// What an mbarrier statement does (PTX mbarrier.*, sm_90 for the
/// transaction bytes). An mbarrier counts, per phase, the arrivals it
/// expects and the bytes of tensor copies still to land; the phase completes
/// when both reach zero, and the next begins.
enum class MbarrierOp {
  Init,     ///< the expected arrivals per phase (Value); one thread, first
  Arrive,     ///< this thread's arrival on the current phase
  ArriveWarp, ///< one arrival for each whole warp, after the warp converges
  ExpectTx,   ///< Value more bytes for the current phase, then this thread's arrival
  Wait,       ///< until the phase of parity Value (0 or 1) has completed
};
// "init", "arrive", "arrive_warp", "expect_tx", "wait"
llvm::StringRef mbarrierOpName(MbarrierOp Op);
std::optional<MbarrierOp> parseMbarrierOp(llvm::StringRef Name);

/// One mbarrier operation on Buffer[Index], an element of a rank-1 shared
/// i64 buffer that only mbarrier and tensor_copy statements name. An arrival
/// releases what its thread did before it, and a wait acquires what the
/// arrivals of the awaited phase released and the tensor copies that
/// completed it: the order the k loop of passes/MmaKLoop.h builds on.
struct MbarrierNode : StmtNode {
  const MbarrierOp Op;
  const std::string Buffer;
  const Expr Index;
  const Expr Value; ///< count, bytes or parity; null for the arrivals
  MbarrierNode(MbarrierOp O, std::string B, Expr I, Expr V, unsigned L = 0)
      : StmtNode(StmtKind::Mbarrier, L), Op(O), Buffer(std::move(B)), Index(std::move(I)),
        Value(std::move(V)) {}
};

/// The bulk tensor copy engine (sm_90, cp.async.bulk.tensor): the box of
/// Box[d] elements of global tensor Src from Src[SrcIndices...] on lands in
/// shared buffer Dst, its last Box.size() dimensions, from
/// Dst[DstIndices...] on; elements outside Src read as zero (a box may
/// start at any index, even past the end). One thread issues it; its bytes
/// count on mbarrier Bar[BarIndex], and the data is visible to the threads
/// that wait for the phase they complete (and to no one before).
struct TensorCopyNode : StmtNode {
  const std::string Dst;
  const std::vector<Expr> DstIndices;
  const std::string Src;
  const std::vector<Expr> SrcIndices;
  const std::vector<int64_t> Box;
  const std::string Bar;
  const Expr BarIndex;
  TensorCopyNode(std::string D, std::vector<Expr> DI, std::string S, std::vector<Expr> SI,
                 std::vector<int64_t> Bx, std::string B, Expr BI, unsigned L = 0)
      : StmtNode(StmtKind::TensorCopy, L), Dst(std::move(D)), DstIndices(std::move(DI)),
        Src(std::move(S)), SrcIndices(std::move(SI)), Box(std::move(Bx)), Bar(std::move(B)),
        BarIndex(std::move(BI)) {}
};

/// The warp-level tensor-core shapes (PTX mma.sync.aligned.mMnNkK).
/// Operand types: m16n8k16 f16 or bf16 in, f32 accumulators; m16n8k8 f32
/// operands already rounded to tf32 (cvt.rna), f32 accumulators; m16n8k32
/// i8 in, i32 accumulators.
enum class MmaShape { M16N8K16, M16N8K8, M16N8K32 };
llvm::StringRef mmaShapeName(MmaShape S); // "m16n8k16"
std::optional<MmaShape> parseMmaShape(llvm::StringRef Name);
/// The K of a shape (16, 8 or 32); M is 16 and N is 8 for all three.
int64_t mmaShapeK(MmaShape S);
/// Elements each lane holds of the A, B and C fragments of S with operands
/// of type T (ir/IR.md gives which element is which row and column).
struct MmaFragmentSizes {
  unsigned A, B, C;
};
MmaFragmentSizes mmaFragmentSizes(MmaShape S);

/// C += A * B for one 16 x 8 tile, computed by the 32 lanes of a warp
/// together (mma.sync). Each lane holds its part of each operand as
/// consecutive elements of a fragment buffer from the given index on
/// (row-major, so a fragment may span the innermost dimension); every lane
/// of the warp must execute it.
struct MmaNode : StmtNode {
  const MmaShape Shape;
  const std::string C, A, B;
  const std::vector<Expr> CIndices, AIndices, BIndices;
  MmaNode(MmaShape Sh, std::string C, std::vector<Expr> CI, std::string A,
          std::vector<Expr> AI, std::string B, std::vector<Expr> BI, unsigned L = 0)
      : StmtNode(StmtKind::Mma, L), Shape(Sh), C(std::move(C)), A(std::move(A)),
        B(std::move(B)), CIndices(std::move(CI)), AIndices(std::move(AI)),
        BIndices(std::move(BI)) {}
};

/// Loads Count (1, 2 or 4) 8 x 16-byte matrices from shared memory into
/// the fragments of a warp (ldmatrix.sync.aligned). Lane l gives, in
/// SrcIndices, the address of row l % 8 of matrix l / 8 (the 16 bytes from
/// there along the innermost dimension); each lane receives 4 bytes of each
/// matrix, matrix after matrix, as consecutive elements of Dst from
/// DstIndices on: row l / 4, bytes 4 * (l % 4)... Trans (16-bit elements
/// only) gives instead the two elements of column l / 4 in rows
/// 2 * (l % 4) and 2 * (l % 4) + 1. Every lane of the warp must execute it.
struct LdMatrixNode : StmtNode {
  const unsigned Count;
  const bool Trans;
  const std::string Dst;
  const std::vector<Expr> DstIndices;
  const std::string Src;
  const std::vector<Expr> SrcIndices;
  LdMatrixNode(unsigned N, bool T, std::string D, std::vector<Expr> DI, std::string S,
               std::vector<Expr> SI, unsigned L = 0)
      : StmtNode(StmtKind::LdMatrix, L), Count(N), Trans(T), Dst(std::move(D)),
        DstIndices(std::move(DI)), Src(std::move(S)), SrcIndices(std::move(SI)) {}
};

/// A pass's account of what it did and why ("[tile-contraction] block tile
/// 128x128 ..."). It executes as nothing; the backend writes it as a
/// comment, so the reader of the CUDA sees each decision where it applies.
struct NoteNode : StmtNode {
  const std::string Text; ///< printable ASCII, no newline
  explicit NoteNode(std::string T, unsigned L = 0)
      : StmtNode(StmtKind::Note, L), Text(std::move(T)) {}
};

/// The class of work a launch does: which kernel-class pass built it, and
/// so which shape of code to expect inside.
enum class LaunchClass { Generic, Elementwise, Contraction, RowReduction, Transpose };
llvm::StringRef launchClassName(LaunchClass C); // "generic", "row_reduction", ...
std::optional<LaunchClass> parseLaunchClass(llvm::StringRef Name);

/// One kernel launch: a grid of blocks runs Body, every thread of a block
/// executing each statement (block and thread loops inside bind the
/// indices; ir/Launch.h derives the grid, the block and the shared memory
/// from them). Name says what it computes (the tensor it writes) and is
/// unique in its Func; the kernel is called <func>_<Name>. Knobs are the
/// schedule choices that apply to this launch only (a pass's choice for
/// the backend, Knob::SetBy); the Func's pinned knobs apply to all.
/// Launches sit at the host level of a Func: in blocks, lets and global
/// allocations, never inside a loop, an if or another launch.
struct LaunchNode : StmtNode {
  const std::string Name;
  const LaunchClass Class;
  const std::vector<Knob> Knobs;
  const Stmt Body;
  LaunchNode(std::string N, LaunchClass C, std::vector<Knob> K, Stmt B, unsigned L = 0)
      : StmtNode(StmtKind::Launch, L), Name(std::move(N)), Class(C), Knobs(std::move(K)),
        Body(std::move(B)) {}
};

//===----------------------------------------------------------------------===//
// Functions and modules
//===----------------------------------------------------------------------===//

/// One .tdsl kernel: its size symbols (the launcher's size arguments, in
/// order), its parameters (global buffers, rank 0 for scalars; inputs then
/// outputs) and its body.
struct Func {
  std::string Name;
  std::vector<std::string> Sizes;
  std::vector<Buffer> Params;
  std::vector<Knob> Schedule; ///< pinned knobs, in order; later entries win
  /// The oldest GPU generation the kernels must run on, as sm_XY is XY
  /// (tdslc --arch; the lowest of a list): what the passes may use, such as
  /// tensor cores from 80 on. A property of the compilation, not printed.
  unsigned MinSM = 90;
  /// The least shared memory a block may opt into on those GPUs (bytes;
  /// sm_90's unless tdslc --arch names others): what a pass that sizes
  /// shared tiles itself must stay within. Not printed either.
  int64_t MaxSharedBytes = 227 * 1024;
  Stmt Body;
  const Buffer *findParam(llvm::StringRef Name) const;
};

struct Module {
  std::vector<Func> Funcs;
};

//===----------------------------------------------------------------------===//
// Builders. They compute result types; operand types must already agree.
//===----------------------------------------------------------------------===//

Expr intImm(int64_t V, DType T = DType::I64);
Expr floatImm(double V, DType T = DType::F32); // rounds V to T
Expr var(const std::string &Name, DType T = DType::I64);
Expr load(DType T, const std::string &Buffer, std::vector<Expr> Indices);
Expr unary(UnaryOp Op, Expr A);
Expr binary(BinaryOp Op, Expr A, Expr B);
Expr select(Expr Cond, Expr T, Expr F);
Expr cast(DType T, Expr A); // returns A itself when it already has type T
Expr call(Intrinsic Fn, std::vector<Expr> Args);
Expr add(Expr A, Expr B);
Expr sub(Expr A, Expr B);
Expr mul(Expr A, Expr B);
Expr lt(Expr A, Expr B);

Stmt block(std::vector<Stmt> Stmts, unsigned Line = 0);
Stmt forLoop(const std::string &Var, Expr Min, Expr Extent, ForKind K, Stmt Body,
             unsigned Line = 0, unsigned Unroll = 0);
Stmt ifThen(Expr Cond, Stmt Then, Stmt Else = nullptr, unsigned Line = 0);
Stmt letStmt(const std::string &Var, Expr Value, Stmt Body, unsigned Line = 0);
Stmt store(const std::string &Buffer, std::vector<Expr> Indices, Expr Value,
           unsigned Line = 0);
Stmt allocate(Buffer B, Stmt Body, unsigned Line = 0);
Stmt barrier(unsigned Line = 0);
Stmt note(std::string Text, unsigned Line = 0);
Stmt launch(std::string Name, LaunchClass Class, Stmt Body, std::vector<Knob> Knobs = {},
            unsigned Line = 0);

bool isComparison(BinaryOp Op);
llvm::StringRef binaryOpSpelling(BinaryOp Op); // "+", "<", "min", ...
/// The value of E if it is an integer constant.
std::optional<int64_t> asConstInt(const Expr &E);
/// True if A and B are the same tree: same kinds, types, names, operators
/// and constants (floats compared bit for bit, so -0.0 != 0.0 and a NaN
/// equals itself). Null equals only null.
bool structurallyEqual(const Expr &A, const Expr &B);

//===----------------------------------------------------------------------===//
// Traversal. Both recurse by default; override only the nodes you touch.
//===----------------------------------------------------------------------===//

class IRVisitor {
public:
  virtual ~IRVisitor() = default;
  virtual void visit(const Expr &E);
  virtual void visit(const Stmt &S);

protected:
  virtual void visitIntImm(const IntImmNode &) {}
  virtual void visitFloatImm(const FloatImmNode &) {}
  virtual void visitVar(const VarNode &) {}
  virtual void visitLoad(const LoadNode &N);
  virtual void visitUnary(const UnaryNode &N);
  virtual void visitBinary(const BinaryNode &N);
  virtual void visitSelect(const SelectNode &N);
  virtual void visitCast(const CastNode &N);
  virtual void visitCall(const CallNode &N);

  virtual void visitBlock(const BlockNode &N);
  virtual void visitFor(const ForNode &N);
  virtual void visitIf(const IfNode &N);
  virtual void visitLet(const LetNode &N);
  virtual void visitStore(const StoreNode &N);
  virtual void visitAllocate(const AllocateNode &N);
  virtual void visitBarrier(const BarrierNode &) {}
  virtual void visitAsyncCopy(const AsyncCopyNode &N);
  virtual void visitAsyncCommit(const AsyncCommitNode &) {}
  virtual void visitAsyncWait(const AsyncWaitNode &) {}
  virtual void visitMbarrier(const MbarrierNode &N);
  virtual void visitTensorCopy(const TensorCopyNode &N);
  virtual void visitMma(const MmaNode &N);
  virtual void visitLdMatrix(const LdMatrixNode &N);
  virtual void visitNote(const NoteNode &) {}
  virtual void visitLaunch(const LaunchNode &N);
};

/// Rebuilds the tree bottom-up. Each visitX receives the node and the
/// shared pointer holding it, and returns that same pointer when nothing
/// below changed.
class IRMutator {
public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr &E);
  virtual Stmt mutate(const Stmt &S);

protected:
  virtual Expr visitIntImm(const IntImmNode &, const Expr &E) { return E; }
  virtual Expr visitFloatImm(const FloatImmNode &, const Expr &E) { return E; }
  virtual Expr visitVar(const VarNode &, const Expr &E) { return E; }
  virtual Expr visitLoad(const LoadNode &N, const Expr &E);
  virtual Expr visitUnary(const UnaryNode &N, const Expr &E);
  virtual Expr visitBinary(const BinaryNode &N, const Expr &E);
  virtual Expr visitSelect(const SelectNode &N, const Expr &E);
  virtual Expr visitCast(const CastNode &N, const Expr &E);
  virtual Expr visitCall(const CallNode &N, const Expr &E);

  virtual Stmt visitBlock(const BlockNode &N, const Stmt &S);
  virtual Stmt visitFor(const ForNode &N, const Stmt &S);
  virtual Stmt visitIf(const IfNode &N, const Stmt &S);
  virtual Stmt visitLet(const LetNode &N, const Stmt &S);
  virtual Stmt visitStore(const StoreNode &N, const Stmt &S);
  virtual Stmt visitAllocate(const AllocateNode &N, const Stmt &S);
  virtual Stmt visitBarrier(const BarrierNode &, const Stmt &S) { return S; }
  virtual Stmt visitAsyncCopy(const AsyncCopyNode &N, const Stmt &S);
  virtual Stmt visitAsyncCommit(const AsyncCommitNode &, const Stmt &S) { return S; }
  virtual Stmt visitAsyncWait(const AsyncWaitNode &, const Stmt &S) { return S; }
  virtual Stmt visitMbarrier(const MbarrierNode &N, const Stmt &S);
  virtual Stmt visitTensorCopy(const TensorCopyNode &N, const Stmt &S);
  virtual Stmt visitMma(const MmaNode &N, const Stmt &S);
  virtual Stmt visitLdMatrix(const LdMatrixNode &N, const Stmt &S);
  virtual Stmt visitNote(const NoteNode &, const Stmt &S) { return S; }
  virtual Stmt visitLaunch(const LaunchNode &N, const Stmt &S);

public:
  /// Mutates each element into Out; true if any changed.
  bool mutateAll(const std::vector<Expr> &In, std::vector<Expr> &Out);
};

/// Applies M to every parameter shape and to the body of every function.
void mutateModule(Module &M, IRMutator &Mut);

/// S (or E) with the variable Name replaced by Value wherever it is free (a
/// loop or let rebinding Name hides it in its body). Unchanged subtrees keep
/// their pointers.
Stmt substitute(const Stmt &S, const std::string &Name, const Expr &Value);
Expr substitute(const Expr &E, const std::string &Name, const Expr &Value);

} // namespace tdsl::ir

#endif // TDSL_IR_IR_H
