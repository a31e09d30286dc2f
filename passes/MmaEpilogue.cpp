//===- MmaEpilogue.cpp - A tensor-core block's outputs through shared memory //
#include "passes/MmaEpilogue.h"
#include "passes/MmaStaging.h"

#include "llvm/ADT/STLExtras.h"

namespace tdsl {

using namespace ir;

namespace {

Expr c(int64_t V) { return intImm(V); }

/// The stores and the loaded buffers of an epilogue.
class EpilogueScan : public IRVisitor {
public:
  std::vector<const StoreNode *> Stores;
  std::vector<std::string> Loaded;
  bool Other = false; ///< an if, allocation, copy or barrier: left alone

protected:
  void visitStore(const StoreNode &N) override {
    Stores.push_back(&N);
    IRVisitor::visitStore(N);
  }
  void visitLoad(const LoadNode &N) override {
    Loaded.push_back(N.Buffer);
    IRVisitor::visitLoad(N);
  }
  // A store under an if may leave its element alone, which the copy of
  // the whole tile would not.
  void visitIf(const IfNode &) override { Other = true; }
  void visitAllocate(const AllocateNode &) override { Other = true; }
  void visitBarrier(const BarrierNode &) override { Other = true; }
  void visitAsyncCopy(const AsyncCopyNode &) override { Other = true; }
};

/// Stores to the staged tensors go to their tiles at (R, C).
class ToTiles : public IRMutator {
public:
  ToTiles(const llvm::StringMap<std::string> &Tiles, Expr R, Expr C)
      : Tiles(Tiles), R(std::move(R)), C(std::move(C)) {}

protected:
  Stmt visitStore(const StoreNode &N, const Stmt &S) override {
    auto It = Tiles.find(N.Buffer);
    if (It == Tiles.end())
      return IRMutator::visitStore(N, S);
    return store(It->second, {R, C}, mutate(N.Value), N.SrcLine);
  }

private:
  const llvm::StringMap<std::string> &Tiles;
  Expr R, C;
};

} // namespace

bool MmaEpilogue::plan(NameTable &Names, int64_t TileBytes, int64_t Resident) {
  if (S.StageEpilogue == false) {
    Why = "stage_epilogue = off";
    return false;
  }
  EpilogueScan Scan;
  for (const Stmt &St : N.Epilogue)
    Scan.visit(St);
  std::vector<Output> Found;
  if (Scan.Other || Scan.Stores.empty()) {
    Why = "the epilogue is not unconditional elementwise stores";
    return false;
  }
  // The index a staged store must use: the batch loops', then m, then n.
  std::vector<std::string> Want;
  for (const ForNode *B : N.Batch)
    Want.push_back(B->Var);
  Want.push_back(N.Row->Var);
  Want.push_back(N.Col->Var);
  for (const StoreNode *St : Scan.Stores) {
    const Buffer *T = findTensor(F, St->Buffer);
    bool AtOutput = T && St->Indices.size() == Want.size();
    for (size_t D = 0; AtOutput && D < Want.size(); ++D) {
      const Expr &I = St->Indices[D];
      AtOutput = I->Kind == ExprKind::Var && static_cast<const VarNode &>(*I).Name == Want[D];
    }
    if (!AtOutput) {
      Why = "'" + St->Buffer + "' is not stored at the contraction's own index";
      return false;
    }
    if (llvm::any_of(Found, [&](const Output &O) { return O.Tensor == St->Buffer; }) ||
        llvm::is_contained(Scan.Loaded, St->Buffer)) {
      Why = "'" + St->Buffer + "' is stored twice or read back";
      return false;
    }
    Found.push_back({St->Buffer, "", T->Type, St->Indices, St->SrcLine});
  }
  int64_t Need = 0;
  for (const Output &O : Found)
    Need += S.BlockM * (S.BlockN + pad(O.Type)) * dtypeBytes(O.Type);
  int64_t Allowed = std::max(TileBytes, F.MaxSharedBytes / Resident);
  if (Need > Allowed) {
    Why = "the output tiles would need " + std::to_string(Need) + " bytes of shared memory (" +
          std::to_string(Allowed) + " allowed)";
    return false;
  }
  Outs = std::move(Found);
  for (Output &O : Outs)
    O.Tile = Names.fresh(O.Tensor + "_out");
  return true;
}

Stmt MmaEpilogue::toTiles(const Stmt &Epi, const Expr &R, const Expr &C) const {
  llvm::StringMap<std::string> Tiles;
  for (const Output &O : Outs)
    Tiles[O.Tensor] = O.Tile;
  return ToTiles(Tiles, R, C).mutate(Epi);
}

/// The block's threads copy tile O.Tile to its tensor: in 16-byte runs of
/// a row where the run-time test proves them aligned, else an element a
/// thread. Work item q of Total: row q / PerRow, run or element q % PerRow.
Stmt MmaEpilogue::copyOut(NameTable &Names, const Output &O, const std::string &TX,
                          const Expr &BlockRow, const Expr &BlockCol) const {
  const int64_t Threads = S.threads();
  const unsigned Line = O.Line;
  auto Copy = [&](int64_t Per) {
    std::string Cc = Names.fresh("c"), Q = Names.fresh("q"), R = Names.fresh("r"),
                Col = Names.fresh("col"), V = Names.fresh("v");
    int64_t PerRow = S.BlockN / Per, Total = S.BlockM * PerRow;
    Expr At = Per > 1 ? add(var(Col), var(V)) : var(Col);
    std::vector<Expr> Idx = O.Indices;
    Expr GM = add(BlockRow, var(R)), GN = add(BlockCol, var(Col));
    Idx[Idx.size() - 2] = fromMin(N.Row->Min, GM);
    Idx.back() = fromMin(N.Col->Min, Per > 1 ? add(GN, var(V)) : GN);
    Stmt Move = store(O.Tensor, Idx, load(O.Type, O.Tile, {var(R), At}), Line);
    if (Per > 1)
      Move = forLoop(V, c(0), c(Per), ForKind::Serial, Move, Line);
    Stmt Body = ifThen(land(lt(GM, N.Row->Extent), lt(GN, N.Col->Extent)), Move, nullptr, Line);
    Body = letStmt(R, idiv(var(Q), c(PerRow)),
                   letStmt(Col,
                           Per > 1 ? mul(imod(var(Q), c(PerRow)), c(Per)) : imod(var(Q), c(PerRow)),
                           Body, Line),
                   Line);
    if (Total % Threads)
      Body = ifThen(lt(var(Q), c(Total)), Body, nullptr, Line);
    Body = letStmt(Q, add(var(TX), mul(var(Cc), c(Threads))), Body, Line);
    return unrolled(Cc, (Total + Threads - 1) / Threads, Body, Line);
  };
  const int64_t Run = 16 / dtypeBytes(O.Type);
  std::optional<Expr> Test = Run > 1 && S.BlockN % Run == 0 ? runTest(F, N.Col->Extent, {O.Tensor},
                                                                      Run, [](DType) { return 16; })
                                                            : std::nullopt;
  if (!Test)
    return Copy(1);
  // Both forms build fresh names: in this order, so that they are fixed.
  Stmt Wide = Copy(Run);
  return ifThen(*Test, Wide, Copy(1), Line);
}

Stmt MmaEpilogue::build(NameTable &Names, Stmt PerElement, const std::string &TX,
                        const Expr &BlockRow, const Expr &BlockCol, unsigned Line) const {
  // The second barrier opens the copies: it carries their line.
  std::vector<Stmt> Body = {ir::note(note(), Line), barrier(Line), std::move(PerElement),
                            barrier(Outs.front().Line)};
  for (const Output &O : Outs)
    Body.push_back(copyOut(Names, O, TX, BlockRow, BlockCol));
  Stmt Out = block(std::move(Body));
  for (auto It = Outs.rbegin(); It != Outs.rend(); ++It) {
    Buffer T = tempBuffer(It->Tile, It->Type, {c(S.BlockM), c(S.BlockN)}, MemScope::Shared);
    T.Padding = {0, pad(It->Type)};
    T.ExtentNames = {"block_m", "block_n"};
    Out = allocate(T, Out, Line);
  }
  return Out;
}

std::string MmaEpilogue::note() const {
  std::string Names;
  for (const Output &O : Outs)
    Names += (Names.empty() ? "" : ", ") + O.Tensor;
  return "[tile-mma] the outputs (" + Names + ") go through shared tiles of " +
         std::to_string(S.BlockM) + "x" + std::to_string(S.BlockN) +
         " (rows padded by 16 bytes), over the operand tiles' bytes, then to memory a row at a "
         "time: 16 bytes a thread where the tensor and its rows are 16-byte aligned, else an "
         "element a thread";
}

} // namespace tdsl
