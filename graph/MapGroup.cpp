//===- MapGroup.cpp - Maps over one domain that read one tensor, one launch ===//
#include "graph/MapGroup.h"

#include "llvm/ADT/STLExtras.h"

#include <map>
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

bool sameDomain(const Node &A, const Node &B) {
  if (A.Domain.size() != B.Domain.size())
    return false;
  for (size_t D = 0; D < A.Domain.size(); ++D)
    if (A.S->Ranges.at(A.Domain[D]) != B.S->Ranges.at(B.Domain[D]))
      return false;
  return true;
}

} // namespace

std::vector<MapGroupNodes> findMapGroups(const KernelGraph &G, const std::vector<unsigned> &Roots,
                                         const std::vector<bool> &Inlined,
                                         std::vector<std::string> &Why,
                                         std::vector<bool> &Refused) {
  std::vector<MapGroupNodes> Groups;
  MapGroupNodes Cur;
  // What each member that joined a group computes again.
  std::map<unsigned, std::vector<std::string>> AgainOf;
  std::set<std::string> Written, Shared;
  auto Close = [&] {
    if (Cur.Members.size() >= 2)
      Groups.push_back(Cur);
    Cur = {};
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
    // What earlier members write, read at this map's own element (computed
    // again) or elsewhere (through memory: the map stays apart).
    std::string Own;
    for (size_t D = 0; D < N.Domain.size(); ++D)
      Own += (D ? ", #" : "#") + std::to_string(D);
    std::vector<std::string> Again;
    std::string Elsewhere;
    for (const std::string &R : Reads) {
      std::string T = R.substr(0, R.find('['));
      if (!Written.count(T))
        continue;
      if (R == T + "[" + Own + "]")
        Again.push_back(T);
      else if (Elsewhere.empty())
        Elsewhere = R;
    }
    bool Alike = !Cur.Members.empty() && sameDomain(G.Nodes[Cur.Members.front()], N) &&
                 (!Again.empty() ||
                  llvm::any_of(Reads, [&](const std::string &R) { return Shared.count(R) > 0; }));
    if (Alike && !Elsewhere.empty()) {
      Refused[Id] = true;
      Why[Id] = (Why[Id].empty() ? "" : Why[Id] + "; ") + "stays apart from '" +
                G.Nodes[Cur.Members.front()].target() + "': it reads " +
                Elsewhere.substr(0, Elsewhere.find('[')) +
                ", which that launch writes, at another element";
    }
    if (!Alike || !Elsewhere.empty()) {
      Close();
      Cur.Members.push_back(Id);
      Written.insert(N.target());
      Shared = std::move(Reads);
      continue;
    }
    Cur.Members.push_back(Id);
    AgainOf[Id] = Again;
    for (const std::string &T : Again)
      if (!llvm::is_contained(Cur.Recomputed, T))
        Cur.Recomputed.push_back(T);
    Written.insert(N.target());
    Shared.insert(Reads.begin(), Reads.end());
  }
  Close();
  for (const MapGroupNodes &Gr : Groups) {
    std::string Names;
    for (unsigned M : Gr.Members)
      Names += (Names.empty() ? "" : ", ") + G.Nodes[M].target();
    const Node &First = G.Nodes[Gr.Members.front()];
    Why[First.Id] = (Why[First.Id].empty() ? "" : Why[First.Id] + "; ") + "runs " + Names +
                    " in one launch over its domain, each tensor they share read once";
    for (size_t I = 1; I < Gr.Members.size(); ++I) {
      const Node &M = G.Nodes[Gr.Members[I]];
      std::string Again;
      for (const std::string &T : AgainOf[M.Id])
        Again += (Again.empty() ? "" : ", ") + T;
      Why[M.Id] = (Why[M.Id].empty() ? "" : Why[M.Id] + "; ") + "is computed beside '" +
                  First.target() + "', in its launch" +
                  (Again.empty() ? "" : ", computing " + Again + " again where it reads it");
    }
  }
  return Groups;
}

} // namespace tdsl::graph
