//===- Epilogue.cpp - The maps a contraction's launch computes at its end -===//
#include "graph/Epilogue.h"

#include "llvm/ADT/STLExtras.h"

namespace tdsl::graph {

namespace {

/// The tensors E's value reads, with those inlined nodes read (through
/// any depth) in their place.
void readsThrough(const KernelGraph &G, const Node &E, const std::vector<bool> &Inlined,
                  std::vector<const Read *> &Out) {
  for (const Read &R : E.Reads) {
    if (R.Producer >= 0 && Inlined[R.Producer])
      readsThrough(G, G.Nodes[R.Producer], Inlined, Out);
    else
      Out.push_back(&R);
  }
}

} // namespace

/// The nodes that read any of Members, in order.
std::vector<unsigned> consumersOf(const KernelGraph &G, const std::vector<unsigned> &Members) {
  std::vector<unsigned> Out;
  for (unsigned M : Members)
    for (unsigned C : G.Nodes[M].Consumers)
      if (!llvm::is_contained(Out, C))
        Out.push_back(C);
  llvm::sort(Out);
  return Out;
}

/// Why the maps reading the intermediates of contraction P and its
/// siblings (Members, P first) cannot run on their accumulators, or ""
/// when they all can: each must be a map of its own launch that reads them
/// only at P's indices (plain, in any order, over the same ranges), every
/// member at the same element, and read nothing else written after P.
std::string epilogueRefusal(const KernelGraph &G, const std::vector<unsigned> &Members,
                            const std::vector<bool> &Inlined) {
  const Node &P = G.Nodes[Members.front()];
  auto IsMember = [&](int Id) { return Id >= 0 && llvm::is_contained(Members, unsigned(Id)); };
  for (unsigned CId : consumersOf(G, Members)) {
    const Node &C = G.Nodes[CId];
    std::string Who = "'" + C.target() + "' (line " + std::to_string(C.Line) + ")";
    if (C.Class != NodeClass::Map || C.S->Op != ast::AssignOp::Assign)
      return Who + " is a " + std::string(nodeClassName(C.Class)) +
             (C.Class == NodeClass::Map ? " that accumulates" : "") + ", not an elementwise map";
    if (Inlined[CId])
      return Who + " is computed where it is read";
    // One accumulator value per point: every read at the same element.
    const Read *First = nullptr;
    for (const Read &R : C.Reads) {
      if (!IsMember(R.Producer))
        continue;
      if (First && First->Map != R.Map)
        return Who + " reads " + readText(*First) + " and " + readText(R) +
               ", two elements of the result at one point";
      First = &R;
      std::vector<std::string> Seen;
      for (size_t D = 0; D < R.Map.size(); ++D) {
        const ast::Affine &A = R.Map[D];
        if (A.Constant != 0 || A.Coeffs.size() != 1 || A.Coeffs.begin()->second != 1)
          return Who + " reads " + readText(R) + ", not at the contraction's indices";
        const std::string &I = A.Coeffs.begin()->first;
        if (llvm::is_contained(Seen, I) || !C.S->Ranges.count(I) ||
            C.S->Ranges.at(I) != P.S->Ranges.at(P.Domain[D]))
          return Who + " reads " + readText(R) + ", not at the contraction's indices";
        Seen.push_back(I);
      }
      if (Seen.size() != C.Domain.size())
        return Who + " reads " + readText(R) + " at fewer indices than it writes";
    }
    std::vector<const Read *> Reads;
    readsThrough(G, C, Inlined, Reads);
    for (const Read *R : Reads)
      if (R->Producer > static_cast<int>(P.Id) && !IsMember(R->Producer))
        return Who + " also reads '" + R->Tensor + "', written after the contraction";
  }
  return "";
}

} // namespace tdsl::graph
