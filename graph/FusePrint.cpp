//===- FusePrint.cpp - The kernel graph and its groups as text ------------===//
//
// What `tdslc --emit=graph` prints (graph/Fuse.h, printGraph).
//
//===----------------------------------------------------------------------===//
#include "graph/Fuse.h"

namespace tdsl::graph {

void printGraph(const KernelGraph &G, const FusionPlan &P, llvm::raw_ostream &OS) {
  auto List = [](const std::vector<std::string> &V) {
    std::string S;
    for (const std::string &X : V)
      S += (S.empty() ? "" : ", ") + X;
    return S;
  };
  OS << "graph " << G.K->Name << "\n";
  for (const Node &N : G.Nodes) {
    OS << "  node " << N.Id << " " << N.target() << " (line " << N.Line
       << "): " << nodeClassName(N.Class) << " over (" << List(N.Domain) << ")";
    if (!N.Reduced.empty())
      OS << ", reducing (" << List(N.Reduced) << ")";
    OS << "\n    reads";
    if (N.Reads.empty())
      OS << " nothing";
    for (size_t I = 0; I < N.Reads.size(); ++I) {
      const Read &R = N.Reads[I];
      OS << (I ? ", " : " ") << readText(R);
      if (R.Producer >= 0)
        OS << " <- node " << R.Producer;
    }
    OS << "\n";
  }
  OS << "  groups (one launch each)\n";
  for (size_t I = 0; I < P.Groups.size(); ++I) {
    const Group &Gr = P.Groups[I];
    const Node &R = G.Nodes[Gr.Root];
    OS << "    group " << I << ": node " << Gr.Root << " " << R.target() << " ("
       << nodeClassName(R.Class) << ")";
    auto Nodes = [&](const char *What, const std::vector<unsigned> &Ids) {
      if (Ids.empty())
        return;
      OS << ", " << What;
      for (unsigned Id : Ids)
        OS << " node " << Id << " " << G.Nodes[Id].target();
    };
    Nodes("its siblings", Gr.Siblings);
    Nodes("its epilogue", Gr.Epilogue);
    Nodes("its row chain", Gr.Chain);
    Nodes("beside it", Gr.Beside);
    Nodes("computing inside it", Gr.Inlined);
    for (const std::string &Reads : Gr.Prologue)
      OS << ", after its prologue over " << Reads << " (a launch of its own)";
    OS << "\n";
  }
  bool Any = false;
  for (const Node &N : G.Nodes)
    if (!P.Why[N.Id].empty()) {
      if (!Any)
        OS << "  decisions\n";
      Any = true;
      OS << "    node " << N.Id << " " << N.target() << ": " << P.Why[N.Id] << "\n";
    }
}

} // namespace tdsl::graph
