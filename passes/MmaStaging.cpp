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
/// take padded rows instead: MmaOperandStage::padFor.)
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
void MmaOperandStage::layout(const Func &F, const MmaSchedule &S, bool Engine, bool Pairs) {
  MmaOperandStage &O = *this;
  O.BX = IsA ? S.BlockM : S.BlockN;
  O.WX = IsA ? S.WarpM : S.WarpN;
  O.Rows = O.Op->KFastest ? O.BX : S.TileK;
  O.Cols = O.Op->KFastest ? S.TileK : O.BX;
  O.Panel = 0;
  const auto &L = static_cast<const LoadNode &>(*O.Op->Load);
  const Buffer *T = findTensor(F, L.Buffer);
  const ForNode *Fast = O.Op->KFastest ? Red : O.XLoop;
  std::optional<int64_t> Min = asConstInt(Fast->Min);
  int64_t E = chunk();
  bool Contiguous = contiguousIn(L.Indices, Fast->Var) || (FlatK && O.Op->KFastest);
  if (T && Contiguous && Min && *Min % E == 0) {
    std::vector<Expr> First(T->rank(), c(0));
    O.Aligned = call(Intrinsic::Aligned, {load(T->Type, T->Name, First), c(16)});
    if (T->rank() > 1)
      O.Aligned = land(binary(BinaryOp::Eq, imod(T->Shape.back(), c(E)), c(0)), O.Aligned);
  }
  int64_t Chunks = O.Cols / E;
  O.BytePairs = Pairs && !IsA && !O.Op->KFastest && E == 16 && S.LdMatrix && !Engine &&
                O.WX % 16 == 0 && S.TileK % 32 == 0;
  O.Swz = Swizzle();
  O.SwzNote.clear();
  O.Pad = Engine ? 0 : padFor(S);
  if (Engine) {
    // The engine writes each box's rows densely in its own swizzle: rows
    // of 128 bytes (or the whole row, if shorter) XOR their 16-byte
    // chunks with the row's low 3 bits, as the bank model's 128-byte
    // swizzle does, so an ldmatrix phase's 8 rows fall in 8 bank groups.
    int64_t RowBytes = std::min<int64_t>(128, O.Cols * dtypeBytes(O.Op->Type));
    O.Panel = RowBytes / dtypeBytes(O.Op->Type);
    unsigned Bits = llvm::Log2_64(RowBytes / 16);
    O.Swz = Swizzle{Bits, unsigned(llvm::Log2_64(E)), 3};
    O.SwzNote = "[tile-mma] " + O.Tile + " in " + std::to_string(O.Cols / O.Panel) +
                " panel(s) of " + std::to_string(O.Rows) + " rows of " +
                std::to_string(RowBytes) + " bytes, the copy engine's box, in its " +
                std::to_string(RowBytes) +
                "-byte swizzle: an ldmatrix phase reads 8 rows at one column in 8 bank groups";
    return;
  }
  if (O.Pad) {
    O.SwzNote = "[tile-mma] " + O.Tile + " rows padded by " + std::to_string(O.Pad) +
                " elements, not swizzled: its fragments are loaded an element at a time, 4 k "
                "rows at 8 columns a warp, in 32 banks at a pitch of " +
                std::to_string(O.Cols + O.Pad) + ", at the lane's address plus a constant";
    return;
  }
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
  if (O.BytePairs)
    O.SwzNote += "; k rows staged with bits 1 and 3 swapped, so that those of a phase of the "
                 "byte-pair ldmatrix are 8 consecutive ones (the guarded copies keep them in "
                 "order: two rows a bank group)";
}

Expr MmaOperandStage::stagedRow(const Expr &R, bool Wide) const {
  if (!BytePairs || !Wide)
    return R;
  // Bits 1 and 3 swapped: R + 6 (bit 1 - bit 3).
  return add(R, mul(c(6), sub(imod(idiv(R, c(2)), c(2)), imod(idiv(R, c(8)), c(2)))));
}

Expr MmaOperandStage::tileColumn(const Expr &Tile, const Expr &Col) const {
  if (!BytePairs)
    return add(mul(Tile, c(8)), Col);
  // Tile 2p's column c is the warp's 16 p + 2 c, tile 2p + 1's the next.
  return add(add(mul(idiv(Tile, c(2)), c(16)), mul(Col, c(2))), imod(Tile, c(2)));
}

std::vector<Expr> MmaOperandStage::at(const Expr &Stage, const Expr &Row, const Expr &Col) const {
  if (!Panel)
    return {Stage, Row, Col};
  if (Panel == Cols)
    return {Stage, c(0), Row, Col};
  return {Stage, idiv(Col, c(Panel)), Row, imod(Col, c(Panel))};
}

int64_t MmaOperandStage::padFor(const MmaSchedule &S) const {
  if (!S.Swizzle || Op->KFastest || dtypeBytes(Op->Type) != 4)
    return 0;
  int64_t Cols = IsA ? S.BlockM : S.BlockN;
  return ((8 - Cols) % 32 + 32) % 32;
}

Buffer MmaOperandStage::tileBuffer(int64_t Stages) const {
  std::string X = IsA ? "block_m" : "block_n";
  std::string R = Op->KFastest ? X : "tile_k", C = Op->KFastest ? "tile_k" : X;
  Buffer T = Panel ? tempBuffer(Tile, Op->Type, {c(Stages), c(Cols / Panel), c(Rows), c(Panel)},
                                MemScope::Shared)
                   : tempBuffer(Tile, Op->Type, {c(Stages), c(Rows), c(Cols)}, MemScope::Shared);
  T.Swz = Swz;
  if (Pad)
    T.Padding = {0, 0, Pad};
  T.ExtentNames = Panel ? std::vector<std::string>{"stages", C + "_panels", R, "panel"}
                        : std::vector<std::string>{"stages", R, C};
  return T;
}

const std::string &MmaOperandStage::tensor() const {
  return static_cast<const LoadNode &>(*Op->Load).Buffer;
}

std::string MmaOperandStage::engineRefusal(const Func &F, const MmaSchedule &S) const {
  const auto &L = static_cast<const LoadNode &>(*Op->Load);
  const Buffer *T = F.findParam(L.Buffer);
  if (!T || T->Scope != MemScope::Global)
    return "'" + L.Buffer + "' is no parameter (the launcher makes tensor maps of those)";
  size_t Rank = T->rank();
  const ForNode *Fast = Op->KFastest ? Red : XLoop, *Slow = Op->KFastest ? XLoop : Red;
  if (Joined) {
    // Its rows are the tensor's leading dimensions as one (engineCopy).
    if (!isVarNamed(L.Indices[Rank - 1], Red->Var) ||
        !std::all_of(L.Indices.begin(), L.Indices.end() - 1,
                     [&](const Expr &I) { return usesAnyVar(I, {XLoop->Var}); }))
      return "'" + L.Buffer + "' is not read as [" + XLoop->Var + "'s indices, " + Red->Var + "]";
  } else {
    if (Rank < 2 || Rank > 3)
      return "'" + L.Buffer + "' has rank " + std::to_string(Rank) +
             " (the engine's boxes here: 2 or 3)";
    if (!isVarNamed(L.Indices[Rank - 1], Fast->Var) ||
        !isVarNamed(L.Indices[Rank - 2], Slow->Var) ||
        (Rank == 3 && usesAnyVar(L.Indices[0], {Fast->Var, Slow->Var})))
      return "'" + L.Buffer + "' is not read as [..., " + Slow->Var + ", " + Fast->Var + "]";
  }
  // Past k's end the engine reads zeros only where the tensor ends there.
  std::optional<int64_t> KMin = asConstInt(Red->Min);
  size_t KDim = Op->KFastest ? Rank - 1 : Rank - 2;
  if (!KMin || *KMin != 0 || !structurallyEqual(Red->Extent, T->Shape[KDim]))
    return "its k loop does not cover all of '" + L.Buffer + "''s dimension " +
           std::to_string(KDim) + " (the engine's zeros past k's end are the tensor's end)";
  int64_t EB = dtypeBytes(Op->Type);
  int64_t BX = IsA ? S.BlockM : S.BlockN;
  int64_t Rw = Op->KFastest ? BX : S.TileK, Cl = Op->KFastest ? S.TileK : BX;
  int64_t RowBytes = std::min<int64_t>(128, Cl * EB);
  if ((RowBytes != 32 && RowBytes != 64 && RowBytes != 128) || (Cl * EB) % RowBytes)
    return "its tile's rows of " + std::to_string(Cl * EB) +
           " bytes are no multiple of the engine's 32-, 64- or 128-byte swizzle rows";
  if (Rw % 8 || Rw > 256)
    return "its tile's " + std::to_string(Rw) +
           " rows are no multiple of 8 up to 256 (a box, its swizzle from a 1024-byte boundary)";
  return "";
}

Stmt MmaOperandStage::engineCopy(const MmaSchedule &S, const Expr &KTile, const Expr &Stage,
                                 const std::string &Bar, unsigned Line) const {
  const auto &L = static_cast<const LoadNode &>(*Op->Load);
  // Joined: a box of the tensor's leading dimensions as one row index,
  // which is the merged loop's (its quotients fold: readAsOneIndex).
  size_t Rank = Joined ? 2 : L.Indices.size();
  std::vector<int64_t> Box(Rank, 1);
  Box[Rank - 2] = Rows;
  Box[Rank - 1] = Panel;
  std::vector<Stmt> Out;
  for (int64_t P = 0; P < Cols / Panel; ++P) {
    Expr X = add(BlockOffset, c(Op->KFastest ? 0 : P * Panel));
    Expr K = add(mul(KTile, c(S.TileK)), c(Op->KFastest ? P * Panel : 0));
    Expr Src = substitute(Op->Load, XLoop->Var, fromMin(XLoop->Min, X));
    Src = substitute(Src, Red->Var, fromMin(Red->Min, K));
    std::vector<Expr> At = Joined ? std::vector<Expr>{fromMin(XLoop->Min, X), K}
                                  : static_cast<const LoadNode &>(*Src).Indices;
    Out.push_back(std::make_shared<TensorCopyNode>(Tile, std::vector<Expr>{Stage, c(P), c(0), c(0)},
                                                   L.Buffer, At, Box, Bar, Stage, Line));
  }
  return block(std::move(Out));
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
  // The tensor element at tile row R, column Col + E (row R + E where
  // KRun), and whether it exists.
  bool Bytes = !Wide && dtypeBytes(O.Op->Type) == 1;
  bool KRun = !Wide && !Bytes && !KF && Merged && O.Rows % chunk() == 0;
  auto Element = [&](Expr E) {
    Expr At = E && !KRun ? add(var(Col), E) : var(Col);
    Expr Row = E && KRun ? add(var(R), E) : var(R);
    Expr X = add(BlockOffset, KF ? Row : At);
    Expr K = add(mul(KTile, c(S.TileK)), KF ? At : Row);
    Expr Src = substitute(O.Op->Load, O.XLoop->Var, fromMin(O.XLoop->Min, X));
    Src = substitute(Src, Red->Var, fromMin(Red->Min, K));
    return std::make_tuple(Src, land(lt(X, O.XLoop->Extent), lt(K, Red->Extent)),
                           O.at(Stage, O.stagedRow(Row, Wide), At));
  };
  // Work item Q of the thread's copies: a 16-byte chunk, or an element;
  // where KRun, one column's run of Per k rows, consecutive items taking
  // consecutive columns.
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
  if (KRun)
    Body = letStmt(R, mul(idiv(var(Q), c(O.Cols)), c(Per)),
                   letStmt(Col, imod(var(Q), c(O.Cols)), Body, Line), Line);
  else
    Body = letStmt(R, idiv(var(Q), c(PerRow)),
                   letStmt(Col,
                           Per > 1 ? mul(imod(var(Q), c(PerRow)), c(Per)) : imod(var(Q), c(PerRow)),
                           Body, Line),
                   Line);
  int64_t Rounds = (Total + Threads - 1) / Threads;
  // Byte tiles take 64 elements a thread, and the guarded copies of the
  // copy engine's k tiles of 128-byte rows 64 a thread: unrolled, their
  // addresses and conditions outgrow the registers left beside the
  // accumulators (ptxas spills); rolled, each load waits for the one
  // before. So a rolled loop goes over unrolled runs of 4.
  int64_t Run = (Bytes || !Wide) && Rounds > 4 ? 4 : Rounds;
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
/// k; over byte pairs for B's bytes, BytePairs), or one shared load per
/// element by the ISA's layout where ldmatrix is off or cannot transpose
/// (32-bit elements, A's bytes). An f32 tile feeding
/// tf32 fragments is rounded on the way (ldmatrix into tf32 rounds too).
Stmt MmaOperandStage::loadFragments(NameTable &Names, const MmaSchedule &S, const std::string &Lane,
                                    const Expr &Buf, const Expr &Stage, const Expr &KK, bool Wide,
                                    unsigned Line) const {
  const MmaOperandStage &O = *this;
  bool KF = O.Op->KFastest;
  int64_t Tiles = IsA ? O.WX / 16 : O.WX / 8; // A: m16 tiles; B: n8 tiles
  Expr L = var(Lane), K0 = mul(KK, c(mmaShapeK(Shape)));
  auto At = [&](const Expr &X, const Expr &K) { return KF ? O.at(Stage, X, K) : O.at(Stage, K, X); };
  if (BytePairs) {
    // ldmatrix x4 .trans over byte pairs per two n8 tiles (16 columns):
    // matrix q's row r is k 16 (q / 2) + 2 (q % 2) + 4 (r / 2) + r % 2, so
    // a lane's 4 bytes of a column are k rows 4 (l % 4) to 4 (l % 4) + 3 of
    // the k step's first 16 (matrices 0, 1) and its second (2, 3); staged
    // (stagedRow), that row is 8 q + r with r's bits 1 and 2 swapped. The
    // guarded version's rows stay in order (two rows a bank group).
    std::string T = Names.fresh("j");
    Expr Q = idiv(L, c(8)), R = imod(L, c(8));
    Expr Bit0 = imod(R, c(2)), Bit1 = imod(idiv(R, c(2)), c(2)), Bit2 = idiv(R, c(4));
    Expr Row = Wide ? add(add(K0, mul(Q, c(8))), add(Bit0, add(mul(Bit2, c(2)), mul(Bit1, c(4)))))
                    : add(add(K0, add(mul(idiv(Q, c(2)), c(16)), mul(imod(Q, c(2)), c(2)))),
                          add(mul(idiv(R, c(2)), c(4)), Bit0));
    Expr X = add(WarpOffset, mul(var(T), c(16)));
    Stmt Ld = std::make_shared<LdMatrixNode>(
        4, true, O.Frag, std::vector<Expr>{Buf, mul(var(T), c(2)), c(0)}, O.Tile, At(X, Row), Line);
    return unrolled(T, Tiles / 2, Ld, Line);
  }
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
  // Each index is a multiple of 16 (the warp's 16-row tile, the k step)
  // plus the lane's part, under 16.
  Expr XBase = add(WarpOffset, mul(var(T), c(16))), KBase = K0;
  Expr XLane = mul(XBlock, c(8)), KLane = mul(KBlock, c(chunk()));
  Expr X = add(XBase, XLane), K = add(KBase, KLane);
  // The lane's row runs along the tile's row dimension: X when k is
  // contiguous, else k (and .trans transposes each matrix back).
  if (KF) {
    X = add(X, R8);
    XLane = add(XLane, R8);
  } else {
    K = add(K, R8);
    KLane = add(KLane, R8);
  }
  std::vector<Expr> Src = At(X, K);
  // In panels of a multiple of 16 columns the lane's part stays in the
  // panel of the index's multiple of 16: the panel, and the column in it,
  // come from that multiple alone (from the warp's index for X, when the
  // warp spans whole panels), not from a division of the lane's index.
  if (Panel && Panel % 16 == 0 && (KF || O.WX % Panel == 0)) {
    Expr PanelAt = KF ? idiv(KBase, c(Panel))
                      : add(mul(WarpIndex, c(O.WX / Panel)), idiv(mul(var(T), c(16)), c(Panel)));
    Expr ColAt = KF ? add(imod(KBase, c(Panel)), KLane)
                    : add(imod(mul(var(T), c(16)), c(Panel)), XLane);
    Src = {Stage, PanelAt, KF ? X : K, ColAt};
  }
  Stmt Ld = std::make_shared<LdMatrixNode>(
      4, !KF, O.Frag, std::vector<Expr>{Buf, IsA ? var(T) : mul(var(T), c(2)), c(0)}, O.Tile,
      std::move(Src), Line);
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
