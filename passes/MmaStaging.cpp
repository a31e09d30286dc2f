//===- MmaStaging.cpp - One operand of a tensor-core contraction, staged -===//
#include "passes/MmaStaging.h"
#include "ir/Fragment.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace tdsl {

using namespace ir;

namespace {

Expr c(int64_t V) { return intImm(V); }

/// 1. Bank model: wavefronts of the worst phase of 8 lanes that each move
/// 16 bytes (an ldmatrix phase reads 8 rows at one column; a copy phase
/// writes 8 consecutive chunks), in a tile of Rows x Cols elements, E of
/// them per 16 bytes, stored under Swz. One wavefront serves 8 distinct
/// 16-byte bank groups of a 128-byte line. (A warp's 4-byte loads of
/// fragments that ldmatrix cannot give, 4 rows at 8 consecutive columns,
/// are free of conflicts when those column phases are.)
int64_t worstPhase(int64_t Rows, int64_t Cols, int64_t E, const Swizzle &Swz, bool Column) {
  int64_t Chunks = Cols / E, Worst = 1;
  for (int64_t First = 0; First + 8 <= Rows * Chunks; First += 8) {
    int64_t Count[8] = {};
    for (int64_t L = 0; L < 8; ++L) {
      // Column phases: rows First/Chunks*8.. at chunk First % Chunks.
      int64_t Q = Column ? ((First / Chunks) / 8 * 8 + L) * Chunks + First % Chunks : First + L;
      if (Q / Chunks >= Rows)
        continue;
      int64_t Off = Swz ? Swz.apply(Q * E) : Q * E;
      Worst = std::max(Worst, ++Count[(Off / E) % 8]);
    }
  }
  return Worst;
}

} // namespace

/// 2. The tile keeps its contiguous index last, so a 16-byte
/// copy moves consecutive elements (8 of 16 bits); the swizzle (from the bank model)
/// XORs the 16-byte chunk with the row so that the 8 rows of an ldmatrix
/// phase fall in 8 bank groups, which keeps the copies' phases free too.
void MmaOperandStage::layout(const Func &F, const MmaSchedule &S) {
  MmaOperandStage &O = *this;
  O.BX = IsA ? S.BlockM : S.BlockN;
  O.WX = IsA ? S.WarpM : S.WarpN;
  O.Rows = O.Op->KFastest ? O.BX : S.TileK;
  O.Cols = O.Op->KFastest ? S.TileK : O.BX;
  const auto &L = static_cast<const LoadNode &>(*O.Op->Load);
  const Buffer *T = findTensor(F, L.Buffer);
  const ForNode *Fast = O.Op->KFastest ? Red : O.XLoop;
  std::optional<int64_t> Min = asConstInt(Fast->Min);
  int64_t E = chunk();
  if (T && contiguousIn(L.Indices, Fast->Var) && Min && *Min % E == 0) {
    std::vector<Expr> First(T->rank(), c(0));
    O.Aligned = call(Intrinsic::Aligned, {load(T->Type, T->Name, First), c(16)});
    if (T->rank() > 1)
      O.Aligned = land(binary(BinaryOp::Eq, imod(T->Shape.back(), c(E)), c(0)), O.Aligned);
  }
  int64_t Chunks = O.Cols / E;
  O.Swz = Swizzle();
  O.SwzNote.clear();
  if (!S.Swizzle || !llvm::isPowerOf2_64(Chunks))
    return;
  if (!usesLdMatrix(S) && E == 16) {
    // Sixteen byte loads per fragment register: each would need its own
    // swizzled address, live across the k loop (ptxas spills them).
    O.SwzNote = "[tile-mma] " + O.Tile +
                " unswizzled: its fragments are loaded a byte at a time, and a swizzled "
                "address per byte costs more registers than the bank conflicts cost time";
    return;
  }
  // The chunk's bits XOR with as many row bits as there are chunks in a
  // 128-byte line's worth of rows (at most 8 bank groups).
  unsigned LogQ = llvm::Log2_64(Chunks), LogE = llvm::Log2_64(E);
  Swizzle Cand{std::min(3u, LogQ), LogE, std::max(3u, LogQ)};
  int64_t ReadBefore = worstPhase(O.Rows, O.Cols, E, Swizzle(), true),
          ReadAfter = worstPhase(O.Rows, O.Cols, E, Cand, true),
          CopyBefore = worstPhase(O.Rows, O.Cols, E, Swizzle(), false),
          CopyAfter = worstPhase(O.Rows, O.Cols, E, Cand, false);
  if (ReadAfter >= ReadBefore || CopyAfter > CopyBefore)
    return;
  O.Swz = Cand;
  O.SwzNote = "[tile-mma] " + O.Tile + " swizzle(" + std::to_string(Cand.Bits) + ", " +
              std::to_string(LogE) + ", " + std::to_string(Cand.Shift) +
              "): " + (usesLdMatrix(S) ? "an ldmatrix phase" : "a phase of the fragment loads") +
              " reads 8 rows of " + std::to_string(O.Cols * dtypeBytes(O.Op->Type)) +
              " bytes at one column, " + std::to_string(ReadBefore) +
              " wavefronts unswizzled and " + std::to_string(ReadAfter) +
              " swizzled; the 16-byte copies take " + std::to_string(CopyAfter) + " (" +
              std::to_string(CopyBefore) + " unswizzled)";
}

/// 3. The copy of a k tile into a stage by all threads: cp.async of 16
/// bytes a thread, reading zeros outside the tensor (Wide, for aligned
/// operands), else guarded elements: the 16 bytes' elements one by one, or
/// for byte tiles one element a thread, consecutive threads on consecutive
/// bytes (with a chunk each, a warp's byte loads would touch 8 rows'
/// sectors and its stores hit each bank 4 times).
Stmt MmaOperandStage::copy(NameTable &Names, const MmaSchedule &S, const std::string &TX,
                           const Expr &KTile, const Expr &Stage, bool Wide, unsigned Line) const {
  const MmaOperandStage &O = *this;
  int64_t Threads = S.threads();
  bool KF = O.Op->KFastest;
  std::string Cc = Names.fresh("c"), Q = Names.fresh("q"), R = Names.fresh("r"),
              Col = Names.fresh("col");
  // The tensor element at tile row R, column Col + E, and whether it
  // exists.
  auto Element = [&](Expr E) {
    Expr At = E ? add(var(Col), E) : var(Col);
    Expr X = add(BlockOffset, KF ? var(R) : At);
    Expr K = add(mul(KTile, c(S.TileK)), KF ? At : var(R));
    Expr Src = substitute(O.Op->Load, O.XLoop->Var, fromMin(O.XLoop->Min, X));
    Src = substitute(Src, Red->Var, fromMin(Red->Min, K));
    return std::make_tuple(Src, land(lt(X, O.XLoop->Extent), lt(K, Red->Extent)),
                           std::vector<Expr>{Stage, var(R), At});
  };
  // Work item Q of the thread's copies: a 16-byte chunk, or an element.
  bool Bytes = !Wide && dtypeBytes(O.Op->Type) == 1;
  int64_t Per = Bytes ? 1 : chunk(), PerRow = O.Cols / Per, Total = O.Rows * PerRow;
  Stmt Body;
  if (Wide) {
    auto [Src, Valid, Dst] = Element(nullptr);
    const auto &L = static_cast<const LoadNode &>(*Src);
    Body = std::make_shared<AsyncCopyNode>(O.Tile, Dst, L.Buffer, L.Indices, unsigned(Per),
                                           Line, Valid);
  } else {
    std::string Ev = Names.fresh("e");
    auto [Src, Valid, Dst] = Element(Per > 1 ? var(Ev) : nullptr);
    Body = ifThen(Valid, store(O.Tile, Dst, Src, Line),
                  store(O.Tile, Dst, zeroOf(O.Op->Type), Line), Line);
    if (Per > 1)
      Body = unrolled(Ev, Per, Body, Line);
  }
  Body = letStmt(R, idiv(var(Q), c(PerRow)),
                 letStmt(Col, Per > 1 ? mul(imod(var(Q), c(PerRow)), c(Per))
                                      : imod(var(Q), c(PerRow)),
                         Body, Line),
                 Line);
  int64_t Rounds = (Total + Threads - 1) / Threads;
  // Byte tiles take 64 elements a thread: unrolled, their addresses and
  // conditions outgrow the registers left beside the accumulators (ptxas
  // spills); rolled, each load waits for the one before. So a rolled loop
  // goes over unrolled runs of 4.
  int64_t Run = Bytes && Rounds > 4 ? 4 : Rounds;
  int64_t Outer = (Rounds + Run - 1) / Run;
  if (Total % Threads || Outer * Run != Rounds)
    Body = ifThen(lt(var(Q), c(Total)), Body, nullptr, Line);
  if (Outer == 1) {
    Body = letStmt(Q, add(var(TX), mul(var(Cc), c(Threads))), Body, Line);
    return unrolled(Cc, Rounds, Body, Line);
  }
  std::string Co = Names.fresh("co");
  Body = letStmt(Q, add(var(TX), mul(add(mul(var(Co), c(Run)), var(Cc)), c(Threads))), Body,
                 Line);
  return std::make_shared<ForNode>(Co, c(0), c(Outer), ForKind::Serial, 1,
                                   unrolled(Cc, Run, Body, Line), Line);
}

/// 4. The warp's fragments for k step KK of the staged tile: ldmatrix x4
/// per 16 rows of 32 bytes (with .trans when the contiguous index is not
/// k), or one shared load per element by the ISA's layout where ldmatrix is
/// off or cannot transpose (32- and 8-bit elements). An f32 tile feeding
/// tf32 fragments is rounded on the way (ldmatrix into tf32 rounds too).
Stmt MmaOperandStage::loadFragments(NameTable &Names, const MmaSchedule &S, const std::string &Lane,
                                    const Expr &Buf, const Expr &Stage, const Expr &KK,
                                    unsigned Line) const {
  const MmaOperandStage &O = *this;
  bool KF = O.Op->KFastest;
  int64_t Tiles = IsA ? O.WX / 16 : O.WX / 8; // A: m16 tiles; B: n8 tiles
  Expr L = var(Lane), K0 = mul(KK, c(mmaShapeK(Shape)));
  auto At = [&](const Expr &X, const Expr &K) {
    return KF ? std::vector<Expr>{Stage, X, K} : std::vector<Expr>{Stage, K, X};
  };
  if (!usesLdMatrix(S)) {
    std::string T = Names.fresh(IsA ? "i" : "j"), E = Names.fresh("e");
    Expr Ev = var(E);
    // Element e of the lane's part: A (m, k) or B (k, n), by the ISA's table.
    auto [Row, Col] = fragmentPosExpr(Shape, IsA ? MmaOperand::A : MmaOperand::B, L, Ev);
    Expr X = add(mul(var(T), c(IsA ? 16 : 8)), IsA ? Row : Col), K = IsA ? Col : Row;
    Expr V = load(O.Op->Type, O.Tile, At(add(WarpOffset, X), add(K0, K)));
    Stmt Ld = store(O.Frag, {Buf, var(T), Ev}, cast(FragType, V), Line);
    MmaFragmentSizes Sz = mmaFragmentSizes(Shape);
    return unrolled(T, Tiles, unrolled(E, IsA ? Sz.A : Sz.B, Ld, Line), Line);
  }
  // Lane l addresses row l % 8 of matrix l / 8, each matrix 8 rows of 16
  // bytes (E elements). A's four matrices are (m 0-7, k 0..), (m 8-15,
  // k 0..), (m 0-7, k E..), (m 8-15, k E..); B's (n 0-7, k 0..), (n 0-7,
  // k E..), (n 8-15, k 0..), (n 8-15, k E..): two n8 tiles per ldmatrix.
  // .trans (16-bit only, E = 8) holds 8 k rows of 8 m or n columns instead.
  std::string T = Names.fresh(IsA ? "i" : "j");
  Expr J = idiv(L, c(8)), R8 = imod(L, c(8));
  Expr XBlock = IsA ? imod(J, c(2)) : idiv(J, c(2)), KBlock = IsA ? idiv(J, c(2)) : imod(J, c(2));
  Expr X0 = add(WarpOffset, mul(var(T), c(16)));
  Expr X = add(X0, mul(XBlock, c(8))), K = add(K0, mul(KBlock, c(chunk())));
  // The lane's row runs along the tile's row dimension: X when k is
  // contiguous, else k (and .trans transposes each matrix back).
  if (KF)
    X = add(X, R8);
  else
    K = add(K, R8);
  Stmt Ld = std::make_shared<LdMatrixNode>(
      4, !KF, O.Frag, std::vector<Expr>{Buf, IsA ? var(T) : mul(var(T), c(2)), c(0)}, O.Tile,
      At(X, K), Line);
  return unrolled(T, IsA ? Tiles : Tiles / 2, Ld, Line);
}

Stmt bindTileOrder(NameTable &Names, bool Grouped, const Expr &RowsT, const Expr &ColsT,
                   const std::string &PID, const std::string &TM, const std::string &TN,
                   Stmt Inner, unsigned Line) {
  if (!Grouped)
    return letStmt(TM, idiv(var(PID), ColsT), letStmt(TN, imod(var(PID), ColsT), Inner, Line),
                   Line);
  std::string Grp = Names.fresh("group"), First = Names.fresh("first"), Size = Names.fresh("size");
  Expr PerGroup = mul(cInt(8), ColsT);
  return letStmt(
      Grp, idiv(var(PID), PerGroup),
      letStmt(First, mul(var(Grp), cInt(8)),
              letStmt(Size, binary(BinaryOp::Min, sub(RowsT, var(First)), cInt(8)),
                      letStmt(TM, add(var(First), imod(var(PID), var(Size))),
                              letStmt(TN, idiv(imod(var(PID), PerGroup), var(Size)), Inner, Line),
                              Line),
                      Line),
              Line),
      Line);
}

} // namespace tdsl
