//===- PadShared.cpp - Pad shared tiles' rows off bank conflicts ----------===//
#include "passes/PadShared.h"
#include "ir/Launch.h"
#include "ir/Printer.h"
#include "passes/PassUtils.h"
#include "passes/Schedule.h"
#include "ir/Simplify.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tdsl {

using namespace ir;

namespace {

const char *const PassName = "pad-shared";
constexpr unsigned WarpSize = 32;
constexpr int64_t Banks = 32, BankBytes = 4;
/// What one phase of a shared access serves: one word from each bank.
constexpr int64_t PhaseBytes = Banks * BankBytes;
/// The largest padding tried: the schedules leave room for it
/// (contractionSchedule) and a few elements always reach every bank.
constexpr int64_t MaxPad = 8;

using Value = std::optional<int64_t>;
using LaneMask = std::array<bool, WarpSize>;

/// One warp-wide access of a shared buffer: the elements each active lane
/// of warp 0 touches (Width consecutive ones for a wide access).
struct Access {
  std::string What; ///< "read tile[tx, ty + 8 * r]"
  std::vector<std::pair<unsigned, std::vector<int64_t>>> Elems;
  int64_t Width = 1;
};

/// Everything the model learned about one shared buffer.
struct BufferUse {
  std::vector<Access> Accesses;
  unsigned Unevaluable = 0; ///< accesses left out
  /// The padding must be a multiple of this: the widest access, also
  /// counting those left out (their rows must stay aligned all the same).
  int64_t Align = 1;
};

int64_t floorDiv(int64_t A, int64_t B) { return A / B - (A % B != 0 && (A < 0) != (B < 0)); }

/// 2. Wavefronts of one access with rows padded by Pad: the worst phase's
/// most distinct 4-byte words in one bank. A phase is what the banks serve
/// at once, a warp's 128 bytes (all 32 lanes of 4-byte accesses, 8 lanes
/// of 16-byte ones); lanes reading one word are a broadcast; 1 is
/// conflict-free.
int64_t wavefronts(const Access &A, const Buffer &B, int64_t Pad) {
  std::vector<int64_t> Stride(B.rank(), 1);
  for (unsigned D = B.rank() - 1; D-- > 0;)
    Stride[D] =
        Stride[D + 1] * (*asConstInt(simplifyExpr(B.Shape[D + 1])) + (D + 2 == B.rank() ? Pad : 0));
  int64_t Bytes = dtypeBytes(B.Type), AccessBytes = Bytes * A.Width;
  int64_t LanesPerPhase =
      AccessBytes <= BankBytes ? WarpSize : std::max<int64_t>(1, PhaseBytes / AccessBytes);
  std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> Words; // (phase, bank) -> words
  for (const auto &[Lane, Idx] : A.Elems) {
    int64_t Off = std::inner_product(Idx.begin(), Idx.end(), Stride.begin(), int64_t(0));
    for (int64_t W = floorDiv(Off * Bytes, BankBytes);
         W <= floorDiv(Off * Bytes + Bytes - 1, BankBytes); ++W)
      Words[{Lane / LanesPerPhase, (W % Banks + Banks) % Banks}].insert(W);
  }
  int64_t Worst = 0;
  for (const auto &Entry : Words)
    Worst = std::max<int64_t>(Worst, Entry.second.size());
  return Worst;
}

/// 1. Walks one launch as warp 0 would, recording each load, store and
/// async copy of a shared buffer: thread, warp and lane variables from the
/// lane id and the block shape, lets followed, every other loop variable at
/// its min, block variables at 0. An access whose address does not
/// evaluate is left out (but still constrains the padding's alignment).
class AccessCollector {
public:
  std::map<const AllocateNode *, BufferUse> Uses;
  std::vector<const AllocateNode *> Order; ///< shared allocs, first seen first

  explicit AccessCollector(const LaunchNode &Launch) {
    LaunchShape Shape = launchShape(Launch);
    std::copy(std::begin(Shape.Block), std::end(Shape.Block), Block);
    for (unsigned L = 0; L < WarpSize; ++L)
      Active[L] = L < Block[0] * Block[1] * Block[2];
  }

  void walk(const Stmt &S) {
    switch (S->Kind) {
    case StmtKind::Block:
      for (const Stmt &C : static_cast<const BlockNode &>(*S).Stmts)
        walk(C);
      return;
    case StmtKind::For: return walkFor(static_cast<const ForNode &>(*S));
    case StmtKind::If: {
      const auto &N = static_cast<const IfNode &>(*S);
      scan(N.Cond);
      LaneMask Saved = Active, Then = Active, Else = Active;
      for (unsigned L = 0; L < WarpSize; ++L)
        if (Value C = eval(N.Cond, L, 0)) // unknown: both branches may run
          (*C ? Else : Then)[L] = false;
      Active = Then;
      walk(N.Then);
      Active = Else;
      if (N.Else)
        walk(N.Else);
      Active = Saved;
      return;
    }
    case StmtKind::Let: {
      const auto &N = static_cast<const LetNode &>(*S);
      scan(N.Value);
      bind(N.Var, [&](unsigned L, unsigned K) { return eval(N.Value, L, K); });
      walk(N.Body);
      Env.erase(N.Var);
      return;
    }
    case StmtKind::Store: {
      const auto &N = static_cast<const StoreNode &>(*S);
      for (const Expr &I : N.Indices)
        scan(I);
      scan(N.Value);
      record(N.Buffer, "write", N.Indices, 1);
      return;
    }
    case StmtKind::Allocate: {
      const auto &N = static_cast<const AllocateNode &>(*S);
      if (N.Buf.Scope == MemScope::Shared) {
        Tracked[N.Buf.Name] = &N;
        Uses[&N];
        Order.push_back(&N);
      }
      walk(N.Body);
      Tracked.erase(N.Buf.Name);
      return;
    }
    case StmtKind::AsyncCopy: {
      const auto &N = static_cast<const AsyncCopyNode &>(*S);
      for (const Expr &I : N.DstIndices)
        scan(I);
      for (const Expr &I : N.SrcIndices)
        scan(I);
      record(N.Dst, "async copy to", N.DstIndices, N.Elems);
      record(N.Src, "async copy from", N.SrcIndices, N.Elems);
      return;
    }
    case StmtKind::LdMatrix: {
      // Each lane reads one 16-byte row, a quarter of the warp per phase:
      // the banks see it as a 16-byte load by every lane.
      const auto &N = static_cast<const LdMatrixNode &>(*S);
      for (const Expr &I : N.SrcIndices)
        scan(I);
      auto It = Tracked.find(N.Src);
      if (It != Tracked.end())
        record(N.Src, "ldmatrix from", N.SrcIndices, 16 / dtypeBytes(It->second->Buf.Type));
      return;
    }
    default: return;
    }
  }

private:
  /// A variable's value per lane and, inside a vectorized loop, per
  /// element of the vector (K of them).
  struct Binding {
    std::vector<Value> Vals;
    unsigned K = 1;
  };
  llvm::StringMap<Binding> Env;
  llvm::StringMap<const AllocateNode *> Tracked;
  int64_t Block[3] = {1, 1, 1};
  LaneMask Active;
  unsigned VecWidth = 1; ///< elements of the enclosing vectorized loop

  /// The index a thread loop of kind K binds in lane L of warp 0.
  int64_t threadIndex(ForKind K, unsigned L) const {
    int64_t X = L % Block[0], Y = L / Block[0] % Block[1], Z = L / (Block[0] * Block[1]);
    switch (K) {
    case ForKind::ThreadY: return Y;
    case ForKind::ThreadZ: return Z;
    case ForKind::Warp: return X / WarpSize;
    case ForKind::Lane: return X % WarpSize;
    default: return X;
    }
  }

  template <typename Fn> void bind(const std::string &Name, Fn ValueOf) {
    Binding B;
    B.K = VecWidth;
    for (unsigned L = 0; L < WarpSize; ++L)
      for (unsigned K = 0; K < B.K; ++K)
        B.Vals.push_back(ValueOf(L, K));
    Env[Name] = std::move(B);
  }

  void walkFor(const ForNode &N) {
    scan(N.Min);
    scan(N.Extent);
    LaneMask Saved = Active;
    unsigned SavedVec = VecWidth;
    std::optional<int64_t> Ext = asConstInt(N.Extent);
    auto AtMin = [&](unsigned L, unsigned K) { return eval(N.Min, L, K); };
    if (isThreadLoop(N.Loop)) {
      for (unsigned L = 0; L < WarpSize; ++L)
        Active[L] = Active[L] && threadIndex(N.Loop, L) < Ext.value_or(0);
      bind(N.Var, [&](unsigned L, unsigned K) -> Value {
        Value Min = eval(N.Min, L, K);
        return Min ? Value(*Min + threadIndex(N.Loop, L)) : std::nullopt;
      });
    } else if (isBlockLoop(N.Loop)) {
      bind(N.Var, [](unsigned, unsigned) { return Value(0); });
    } else if (N.Loop == ForKind::Vectorized && VecWidth == 1 && Ext && *Ext > 1 && *Ext <= 16) {
      VecWidth = unsigned(*Ext);
      bind(N.Var, [&](unsigned L, unsigned K) -> Value {
        Value Min = eval(N.Min, L, 0);
        return Min ? Value(*Min + K) : std::nullopt;
      });
    } else {
      bind(N.Var, AtMin);
    }
    walk(N.Body);
    Env.erase(N.Var);
    Active = Saved;
    VecWidth = SavedVec;
  }

  template <typename Fn> void forEachTrackedLoad(const Expr &E, Fn F) {
    struct Finder : IRVisitor {
      AccessCollector &C;
      Fn &F;
      Finder(AccessCollector &C, Fn &F) : C(C), F(F) {}
      void visitLoad(const LoadNode &N) override {
        if (C.Tracked.count(N.Buffer))
          F(N);
        IRVisitor::visitLoad(N);
      }
    } V(*this, F);
    V.visit(E);
  }

  void scan(const Expr &E) {
    forEachTrackedLoad(E, [&](const LoadNode &N) { record(N.Buffer, "read", N.Indices, 1); });
  }

  /// Records the access of warp 0 to Name[Indices] (+ 0..Elems-1 along
  /// the innermost dimension), if Name is a shared buffer.
  void record(const std::string &Name, const char *Kind, const std::vector<Expr> &Indices,
              unsigned Elems) {
    auto It = Tracked.find(Name);
    if (It == Tracked.end())
      return;
    const Buffer &B = It->second->Buf;
    BufferUse &U = Uses[It->second];
    Access A;
    A.What = std::string(Kind) + " " + toString(load(B.Type, Name, Indices));
    for (unsigned L = 0; L < WarpSize; ++L) {
      if (!Active[L])
        continue;
      std::set<std::vector<int64_t>> Touched;
      for (unsigned K = 0; K < VecWidth; ++K)
        for (unsigned E = 0; E < Elems; ++E) {
          std::vector<int64_t> Idx;
          for (const Expr &I : Indices) {
            Value V = eval(I, L, K);
            if (!V) {
              ++U.Unevaluable;
              U.Align = std::lcm<int64_t>(U.Align, VecWidth * Elems);
              return;
            }
            Idx.push_back(*V);
          }
          if (!Idx.empty())
            Idx.back() += E;
          Touched.insert(Idx);
        }
      A.Width = std::max<int64_t>(A.Width, Touched.size());
      for (const std::vector<int64_t> &Idx : Touched)
        A.Elems.push_back({L, Idx});
    }
    U.Align = std::lcm(U.Align, A.Width);
    if (!A.Elems.empty())
      U.Accesses.push_back(std::move(A));
  }

  /// E's value in lane L (vector element K): the bound variables made
  /// constants and the rest folded by simplify; nothing when it depends on
  /// sizes or loads.
  Value eval(const Expr &E, unsigned L, unsigned K) const {
    struct Binder : IRMutator {
      const AccessCollector &C;
      unsigned L, K;
      Binder(const AccessCollector &C, unsigned L, unsigned K) : C(C), L(L), K(K) {}
      Expr visitVar(const VarNode &N, const Expr &E) override {
        auto It = C.Env.find(N.Name);
        if (It == C.Env.end())
          return E;
        const Binding &B = It->second;
        Value V = B.Vals[L * B.K + (B.K == 1 ? 0 : K)];
        return V ? intImm(*V, N.Type) : E;
      }
    } Bind(*this, L, K);
    return asConstInt(simplifyExpr(Bind.mutate(E)));
  }
};

/// The padding chosen for one buffer and the note that says why.
struct Choice {
  int64_t Pad = 0;
  std::string Note;
};

/// 3. Chooses B's padding from its uses (and the pinned knob), or nothing:
/// the smallest p with the fewest wavefronts over all accesses, trying only
/// multiples of the widest access so that wide rows stay aligned.
std::optional<Choice> choosePadding(const AllocateNode &N, const BufferUse &U, const Knob *Pinned) {
  const Buffer &B = N.Buf;
  unsigned Line = N.SrcLine;
  const std::string &Name = B.Name;
  if (!B.Padding.empty() || B.Swz || B.rank() < 2)
    return std::nullopt; // decided already, or no rows to move
  for (const Expr &D : B.Shape)
    if (!asConstInt(simplifyExpr(D))) {
      remark(PassName, Line, Name + ": non-constant shape; left unpadded");
      return std::nullopt;
    }
  auto Total = [&](int64_t Pad) {
    int64_t Sum = 0;
    for (const Access &A : U.Accesses)
      Sum += wavefronts(A, B, Pad);
    return Sum;
  };
  int64_t Before = Total(0);
  std::string Summary =
      std::to_string(U.Accesses.size()) + " access" + (U.Accesses.size() == 1 ? "" : "es");

  if (Pinned && !Pinned->Ints.empty()) {
    int64_t Pad = Pinned->Ints.front();
    if (Pad <= 0)
      return std::nullopt;
    if (Pad % U.Align) {
      remark(PassName, Line,
             Name + ": padding = " + llvm::Twine(Pad) + " would misalign its " +
                 llvm::Twine(U.Align) + "-element accesses; left unpadded");
      return std::nullopt;
    }
    std::string Note = "[pad-shared] " + Name + ": pad " + std::to_string(Pad) +
                       ": pinned by the schedule (padding = " + std::to_string(Pad) + ")";
    if (!U.Accesses.empty())
      Note += "; the model counts " + std::to_string(Before) + " -> " + std::to_string(Total(Pad)) +
              " wavefronts over its " + Summary;
    return Choice{Pad, Note};
  }
  if (U.Accesses.empty()) {
    remark(PassName, Line,
           Name + ": no access of warp 0 has an address the model evaluates (" +
               llvm::Twine(U.Unevaluable) + " left out); left unpadded");
    return std::nullopt;
  }

  int64_t Best = 0, BestTotal = Before;
  for (int64_t Pad = U.Align; Pad <= MaxPad; Pad += U.Align)
    if (int64_t T = Total(Pad); T < BestTotal) {
      Best = Pad;
      BestTotal = T;
    }
  if (!Best) {
    if (Before == int64_t(U.Accesses.size()))
      remark(PassName, Line,
             Name + ": conflict-free unpadded (" + Summary + ", 1 wavefront each); no padding");
    else
      remark(PassName, Line,
             Name + ": " + llvm::Twine(Before) + " wavefronts over its " + Summary +
                 " and no padding up to " + llvm::Twine(MaxPad) + " removes any; left unpadded");
    return std::nullopt;
  }
  // Name the access that gains most: the reason a reader can check.
  const Access *Key = &U.Accesses.front();
  int64_t KeyGain = -1;
  for (const Access &A : U.Accesses)
    if (int64_t Gain = wavefronts(A, B, 0) - wavefronts(A, B, Best); Gain > KeyGain) {
      Key = &A;
      KeyGain = Gain;
    }
  int64_t KeyBefore = wavefronts(*Key, B, 0), KeyAfter = wavefronts(*Key, B, Best);
  std::string Note = "[pad-shared] " + Name + ": pad " + std::to_string(Best) + ": the " +
                     Key->What + " by one warp hits a bank with " + std::to_string(KeyBefore) +
                     " different words without it (" + std::to_string(KeyBefore) +
                     " wavefronts); with it " + std::to_string(KeyAfter) + " wavefront" +
                     (KeyAfter == 1 ? "" : "s");
  if (U.Accesses.size() > 1)
    Note += " (" + std::to_string(Before) + " -> " + std::to_string(BestTotal) +
            " wavefronts over its " + Summary + ")";
  return Choice{Best, Note};
}

/// 4. Applies the choices: the padding, and the note inside the alloc.
class Padder : public IRMutator {
public:
  std::map<const AllocateNode *, Choice> Choices;

protected:
  Stmt visitAllocate(const AllocateNode &N, const Stmt &S) override {
    Stmt Out = IRMutator::visitAllocate(N, S);
    auto It = Choices.find(&N);
    if (It == Choices.end())
      return Out;
    const auto &A = static_cast<const AllocateNode &>(*Out);
    Buffer B = A.Buf;
    B.Padding.assign(B.rank(), 0);
    B.Padding.back() = It->second.Pad;
    return allocate(B, block({note(It->second.Note, A.SrcLine), A.Body}, A.SrcLine), A.SrcLine);
  }
};

Stmt padLaunch(const Stmt &S, const Knob *Pinned) {
  if (S->Kind != StmtKind::Launch)
    return S;
  AccessCollector C(static_cast<const LaunchNode &>(*S));
  C.walk(static_cast<const LaunchNode &>(*S).Body);
  Padder P;
  for (const AllocateNode *A : C.Order)
    if (std::optional<Choice> Ch = choosePadding(*A, C.Uses[A], Pinned))
      P.Choices[A] = *Ch;
  return P.Choices.empty() ? S : P.mutate(S);
}

} // namespace

void padShared(Func &F) {
  const Knob *Pinned = findKnob(F, "padding");
  if (Pinned && Pinned->Word == "off")
    return;
  rewriteNests(F, [&](const Stmt &S) { return padLaunch(S, Pinned); });
}

} // namespace tdsl
