//===- MapGroup.cpp - Maps over one domain that read one tensor, one launch ===//
#include "graph/MapGroup.h"

#include "llvm/ADT/STLExtras.h"

#include <set>

namespace tdsl::graph {

namespace {

/// Whether N is a map that may stand beside others: it assigns, element
/// by element, over one index or more.
bool groupable(const Node &N) {
  return N.Class == NodeClass::Map && N.S->Op == ast::AssignOp::Assign && !N.Domain.empty();
}

/// The tensors N reads (through inlined maps), each with its subscripts
/// written over N's index positions ("X[#0, #1]"), so that two maps over
/// the same domain under other index names compare. Strided is set where
/// a read uses the innermost index in a subscript but its last (a
/// transposed read, which tile-transpose stages alone).
std::set<std::string> readsByPosition(const KernelGraph &G, const Node &N,
                                      const std::vector<bool> &Inlined, bool &Strided) {
  IndexSub Positions;
  for (size_t D = 0; D < N.Domain.size(); ++D)
    Positions[N.Domain[D]] = ast::Affine::symbol("#" + std::to_string(D));
  const std::string Inner = "#" + std::to_string(N.Domain.size() - 1);
  std::vector<FlatRead> Reads;
  flatReads(G, N, Inlined, Positions, Reads);
  std::set<std::string> Out;
  Strided = false;
  for (const FlatRead &F : Reads) {
    for (size_t D = 0; D + 1 < F.Map.size(); ++D)
      Strided |= F.Map[D].Coeffs.count(Inner) > 0;
    Read R = *F.R;
    R.Map = F.Map;
    Out.insert(readText(R));
  }
  return Out;
}

/// The tensors N reads (through inlined maps), by name.
std::set<std::string> tensorsRead(const KernelGraph &G, const Node &N,
                                  const std::vector<bool> &Inlined) {
  std::vector<FlatRead> Reads;
  flatReads(G, N, Inlined, {}, Reads);
  std::set<std::string> Out;
  for (const FlatRead &F : Reads)
    Out.insert(F.R->Tensor);
  return Out;
}

bool sameDomain(const Node &A, const Node &B) {
  if (A.Domain.size() != B.Domain.size())
    return false;
  for (size_t D = 0; D < A.Domain.size(); ++D)
    if (A.S->Ranges.at(A.Domain[D]) != B.S->Ranges.at(B.Domain[D]))
      return false;
  return true;
}

} // namespace

std::vector<std::vector<unsigned>> findMapGroups(const KernelGraph &G,
                                                 const std::vector<unsigned> &Roots,
                                                 const std::vector<bool> &Inlined,
                                                 std::vector<std::string> &Why,
                                                 std::vector<bool> &Refused) {
  std::vector<std::vector<unsigned>> Groups;
  std::vector<unsigned> Cur;
  std::set<std::string> Written, Shared;
  auto Close = [&] {
    if (Cur.size() >= 2)
      Groups.push_back(Cur);
    Cur.clear();
    Written.clear();
    Shared.clear();
  };
  for (unsigned Id : Roots) {
    const Node &N = G.Nodes[Id];
    if (!groupable(N)) {
      Close();
      continue;
    }
    bool Strided = false;
    std::set<std::string> Reads = readsByPosition(G, N, Inlined, Strided);
    if (Strided) {
      Close();
      continue;
    }
    bool Alike = !Cur.empty() && sameDomain(G.Nodes[Cur.front()], N) &&
                 llvm::any_of(Reads, [&](const std::string &R) { return Shared.count(R) > 0; });
    std::set<std::string> Tensors = tensorsRead(G, N, Inlined);
    auto Reread = llvm::find_if(Tensors, [&](const std::string &T) { return Written.count(T); });
    if (Alike && Reread != Tensors.end()) {
      Refused[Id] = true;
      Why[Id] = (Why[Id].empty() ? "" : Why[Id] + "; ") + "stays apart from '" +
                G.Nodes[Cur.front()].target() + "': it reads '" + *Reread +
                "', which that launch writes (every load of a launch of maps runs before its " +
                "first store)";
    }
    bool Joins = Alike && Reread == Tensors.end();
    if (!Joins) {
      Close();
      Cur.push_back(Id);
      Written.insert(N.target());
      Shared = std::move(Reads);
      continue;
    }
    Cur.push_back(Id);
    Written.insert(N.target());
    Shared.insert(Reads.begin(), Reads.end());
  }
  Close();
  for (const std::vector<unsigned> &Gr : Groups) {
    std::string Names;
    for (unsigned M : Gr)
      Names += (Names.empty() ? "" : ", ") + G.Nodes[M].target();
    const Node &First = G.Nodes[Gr.front()];
    Why[First.Id] = (Why[First.Id].empty() ? "" : Why[First.Id] + "; ") + "runs " + Names +
                    " in one launch over its domain, each tensor they share read once";
    for (size_t I = 1; I < Gr.size(); ++I)
      Why[Gr[I]] = (Why[Gr[I]].empty() ? "" : Why[Gr[I]] + "; ") + "is computed beside '" +
                   First.target() + "', in its launch";
  }
  return Groups;
}

} // namespace tdsl::graph
