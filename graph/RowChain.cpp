//===- RowChain.cpp - Row reductions and the maps over their rows ---------===//
#include "graph/RowChain.h"

#include "llvm/ADT/STLExtras.h"

#include <map>
#include <optional>

namespace tdsl::graph {

namespace {

enum class Role { Reduction, RowMap, ElementMap };

/// The shape of a chain: the ranges of its rows and of its columns.
struct Shape {
  std::vector<ast::Affine> Rows;
  ast::Affine Cols;
};

bool sameRows(const Node &N, const Shape &Sh, size_t Count) {
  if (N.Domain.size() != Count)
    return false;
  for (size_t D = 0; D < Sh.Rows.size(); ++D)
    if (N.S->Ranges.at(N.Domain[D]) != Sh.Rows[D])
      return false;
  return true;
}

/// N's role in a chain of shape Sh, or none with Why.
std::optional<Role> roleOf(const Node &N, const Shape &Sh, std::string &Why) {
  size_t R = Sh.Rows.size();
  ast::AssignOp Op = N.S->Op;
  if (N.Class == NodeClass::Reduction) {
    if (Op == ast::AssignOp::Assign) {
      Why = "is not a reduction with +=, *=, max= or min=";
      return std::nullopt;
    }
    if (!sameRows(N, Sh, R) || N.Reduced.size() != 1 ||
        N.S->Ranges.at(N.Reduced[0]) != Sh.Cols) {
      Why = "reduces other rows or columns";
      return std::nullopt;
    }
    return Role::Reduction;
  }
  if (N.Class != NodeClass::Map || Op != ast::AssignOp::Assign) {
    Why = "is a " + std::string(nodeClassName(N.Class)) + ", not a reduction or a map";
    return std::nullopt;
  }
  if (sameRows(N, Sh, R))
    return Role::RowMap;
  if (sameRows(N, Sh, R + 1) && N.S->Ranges.at(N.Domain[R]) == Sh.Cols)
    return Role::ElementMap;
  Why = "runs over other rows or columns";
  return std::nullopt;
}

/// Why N cannot read what the chain Members computed, or "".
std::string readRefusal(const KernelGraph &G, const Node &N, const std::vector<unsigned> &Members,
                        const std::vector<bool> &Inlined, size_t Rows,
                        std::vector<std::string> &HeldOutputs,
                        std::vector<std::string> &Recomputed) {
  std::vector<FlatRead> Reads;
  flatReads(G, N, Inlined, {}, Reads);
  for (const FlatRead &F : Reads) {
    if (F.R->Producer < 0 || !llvm::is_contained(Members, F.R->Producer))
      continue;
    // A value per row, held (an output per row is also stored); the
    // chain's elements go to memory, where another thread may not have
    // written them yet.
    const Node &P = G.Nodes[F.R->Producer];
    if (P.Domain.size() != Rows) {
      // An element the chain writes, read at its own row and column, is
      // computed again there (add + norm's sum H, stored and normalized).
      const std::string &Col = N.Reduced.empty() ? N.Domain.back() : N.Reduced[0];
      bool Same = F.Map.size() == Rows + 1 && F.Map[Rows] == ast::Affine::symbol(Col);
      for (size_t D = 0; Same && D < Rows; ++D)
        Same = F.Map[D] == ast::Affine::symbol(N.Domain[D]);
      if (!Same)
        return "reads '" + P.target() + "', which the chain writes to memory, at another element";
      if (!llvm::is_contained(Recomputed, P.target()))
        Recomputed.push_back(P.target());
      continue;
    }
    bool Plain = F.Map.size() == Rows;
    for (size_t D = 0; Plain && D < Rows; ++D)
      Plain = F.Map[D] == ast::Affine::symbol(N.Domain[D]);
    if (!Plain) {
      std::string Text = P.target() + "[";
      for (size_t D = 0; D < F.Map.size(); ++D)
        Text += (D ? ", " : "") + F.Map[D].str();
      return "reads " + Text + "], not the value of its own row";
    }
    if (!P.writesIntermediate() && !llvm::is_contained(HeldOutputs, P.target()))
      HeldOutputs.push_back(P.target());
  }
  return "";
}

/// Why reduction N would read a row of the chain with a stride, or "": a
/// read (through inlined maps) that runs along N's reduced index but not
/// in its last subscript (s[c] += X[r, c], a column sum). Alone, reduce-
/// rows splits such a sum into chunks that consecutive threads read
/// coalesced; the lanes of a chain's row would each take another line.
std::string stridedAlongRow(const KernelGraph &G, const Node &N, const std::vector<bool> &Inlined) {
  const std::string &Col = N.Reduced[0];
  std::vector<FlatRead> Reads;
  flatReads(G, N, Inlined, {}, Reads);
  for (const FlatRead &F : Reads) {
    bool Uses = llvm::any_of(F.Map, [&](const ast::Affine &A) { return A.Coeffs.count(Col); });
    if (!Uses || F.Map.back().Coeffs.count(Col))
      continue;
    std::string Text = F.R->Tensor + "[";
    for (size_t D = 0; D < F.Map.size(); ++D)
      Text += (D ? ", " : "") + F.Map[D].str();
    return "reads " + Text + "] along '" + Col +
           "', not its last index: the lanes of a row would read it with a stride";
  }
  return "";
}

/// The launch roots that read node P's target (through inlined maps).
void readersOf(const KernelGraph &G, unsigned P, const std::vector<bool> &Inlined,
               std::vector<unsigned> &Out) {
  for (unsigned C : G.Nodes[P].Consumers) {
    if (Inlined[C])
      readersOf(G, C, Inlined, Out);
    else if (!llvm::is_contained(Out, C))
      Out.push_back(C);
  }
}

std::string names(const KernelGraph &G, const std::vector<unsigned> &Ids) {
  std::string S;
  for (unsigned I : Ids)
    S += (S.empty() ? "" : ", ") + G.Nodes[I].target();
  return S;
}

} // namespace

std::vector<RowChainNodes> findRowChains(const KernelGraph &G, const std::vector<unsigned> &Roots,
                                         const std::vector<bool> &Inlined,
                                         std::vector<std::string> &Why,
                                         std::vector<bool> &Refused) {
  std::vector<RowChainNodes> Chains;
  auto Say = [&](unsigned Id, const std::string &Text, bool Refusal) {
    Why[Id] = (Why[Id].empty() ? "" : Why[Id] + "; ") + Text;
    Refused[Id] = Refused[Id] || Refusal;
  };
  for (size_t I = 0; I < Roots.size();) {
    const Node &Start = G.Nodes[Roots[I]];
    // A chain starts at a reduction along one index, or at a map per
    // element whose rows the reductions after it take (add + norm).
    bool Reduces = Start.Class == NodeClass::Reduction && Start.S->Op != ast::AssignOp::Assign &&
                   !Start.Domain.empty() && Start.Reduced.size() == 1;
    bool Maps = Start.Class == NodeClass::Map && Start.S->Op == ast::AssignOp::Assign &&
                Start.Domain.size() >= 2;
    bool Head = Reduces || Maps;
    if (Reduces)
      if (std::string Across = stridedAlongRow(G, Start, Inlined); !Across.empty()) {
        // Said where a launch after it reads what it computes.
        std::vector<unsigned> Readers;
        readersOf(G, Start.Id, Inlined, Readers);
        if (!Readers.empty())
          Say(Start.Id, "heads no row chain: it " + Across, true);
        Head = false;
      }
    if (!Head) {
      ++I;
      continue;
    }
    Shape Sh;
    size_t Rows = Reduces ? Start.Domain.size() : Start.Domain.size() - 1;
    for (size_t D = 0; D < Rows; ++D)
      Sh.Rows.push_back(Start.S->Ranges.at(Start.Domain[D]));
    Sh.Cols = Start.S->Ranges.at(Reduces ? Start.Reduced[0] : Start.Domain.back());
    std::vector<unsigned> Members = {Start.Id};
    std::vector<std::string> HeldOutputs, Recomputed;
    // 1. Take the following launches while they fit.
    size_t J = I + 1;
    for (; J < Roots.size(); ++J) {
      const Node &N = G.Nodes[Roots[J]];
      std::string No;
      std::optional<Role> R = roleOf(N, Sh, No);
      std::vector<std::string> Held = HeldOutputs, Again = Recomputed;
      if (R == Role::Reduction)
        No = stridedAlongRow(G, N, Inlined);
      if (R && No.empty())
        No = readRefusal(G, N, Members, Inlined, Sh.Rows.size(), Held, Again);
      if (!No.empty()) {
        // Worth a remark only where it reads what the chain computed.
        std::vector<FlatRead> Reads;
        flatReads(G, N, Inlined, {}, Reads);
        if (llvm::any_of(Reads, [&](const FlatRead &F) {
              return F.R->Producer >= 0 && llvm::is_contained(Members, F.R->Producer);
            }))
          Say(N.Id,
              (Members.size() > 1 ? "stays out of the row chain of '"
                                  : "forms no row chain with '") +
                  Start.target() + "': it " + No,
              true);
        break;
      }
      Members.push_back(N.Id);
      HeldOutputs = std::move(Held);
      Recomputed = std::move(Again);
    }
    // 2. A value per row that a launch after the chain reads is stored by
    //    the chain (a few bytes a row) and held for its later members
    //    like an output per row.
    std::vector<std::string> Stored;
    std::vector<std::pair<unsigned, std::string>> StoredWhy;
    for (size_t M = 0; M < Members.size(); ++M) {
      const Node &N = G.Nodes[Members[M]];
      if (!N.writesIntermediate() || N.Domain.size() != Rows)
        continue; // an output, or stored per element
      std::vector<unsigned> Readers;
      readersOf(G, N.Id, Inlined, Readers);
      auto Outside = llvm::find_if(
          Readers, [&](unsigned R) { return !llvm::is_contained(Members, R); });
      if (Outside == Readers.end())
        continue;
      Stored.push_back(N.target());
      StoredWhy.push_back({N.Id, "is stored by the row chain of '" + Start.target() + "': '" +
                                     G.Nodes[*Outside].target() + "' (line " +
                                     std::to_string(G.Nodes[*Outside].Line) +
                                     ") reads it after the chain"});
      if (llvm::any_of(Readers, [&](unsigned R) { return llvm::is_contained(Members, R); }))
        HeldOutputs.push_back(N.target());
    }
    bool AnyReduction = llvm::any_of(
        Members, [&](unsigned M) { return G.Nodes[M].Class == NodeClass::Reduction; });
    if (Members.size() < 2 || !AnyReduction) {
      ++I;
      continue;
    }
    RowChainNodes C;
    C.Members = Members;
    C.Rows = Rows;
    for (const std::string &T : Recomputed)
      if (llvm::any_of(Members, [&](unsigned M) { return G.Nodes[M].target() == T; }))
        C.Recomputed.push_back(T);
    C.HeldOutputs = HeldOutputs;
    for (unsigned M : Members)
      if (G.Nodes[M].writesIntermediate() && G.Nodes[M].Domain.size() == Rows &&
          !llvm::is_contained(Stored, G.Nodes[M].target()))
        C.RowLocal.push_back(G.Nodes[M].target());
    std::string Held;
    for (const std::string &L : C.RowLocal)
      Held += (Held.empty() ? "" : ", ") + L;
    Say(Start.Id,
        "heads a row chain: " + names(G, Members) + " in one launch over its rows" +
            (Held.empty() ? "" : ", holding " + Held + " per row, never stored"),
        false);
    for (size_t M = 1; M < Members.size(); ++M) {
      // Held per row, a value is computed once per row, not staged.
      if (llvm::is_contained(C.RowLocal, G.Nodes[Members[M]].target())) {
        Why[Members[M]].clear();
        Refused[Members[M]] = false;
      }
      Say(Members[M], "is computed in the row chain of '" + Start.target() + "'", false);
    }
    for (const auto &[Id, Text] : StoredWhy)
      Say(Id, Text, false);
    Chains.push_back(std::move(C));
    I += Members.size();
  }
  return Chains;
}

} // namespace tdsl::graph
