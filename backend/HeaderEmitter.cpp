//===- HeaderEmitter.cpp - The C header declaring a module's launchers ----===//
//
// Valid C11 and C++: the launchers have C linkage and take only C types
// (tdsl_f16 and tdsl_bf16 for 16-bit floats, int64_t sizes).
//
//===----------------------------------------------------------------------===//
#include "backend/CudaEmitter.h"
#include "backend/Signature.h"

#include <cctype>

namespace tdsl {

using namespace ir;

void emitHeader(const Module &M, const CudaEmitOptions &Opts, llvm::raw_ostream &OS) {
  std::string Stem = Opts.GuardName.empty() ? Opts.InputName : Opts.GuardName;
  // The symbol prefix is in the guard: two libraries' softmax.h, included
  // into one file, must not hide each other.
  std::string Guard;
  for (char C : Opts.SymbolPrefix + "GENERATED_" + Stem)
    Guard += std::isalnum(static_cast<unsigned char>(C))
                 ? static_cast<char>(std::toupper(static_cast<unsigned char>(C)))
                 : '_';
  Guard += "_H";
  OS << "/* " << backend::bannerText(Opts) << " */\n"
     << "#ifndef " << Guard << "\n#define " << Guard << "\n\n"
     << "#include <tdsl/runtime.h>\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n";
  for (const Func &F : M.Funcs) {
    OS << "\n/* " << backend::tdslSignature(F) << "\n"
       << " *\n"
       << " * Enqueues the kernel on `stream` (never synchronizes). Sizes must be >= 1;\n"
       << " * tensors are dense, row-major, aligned to their element type, and the\n"
       << " * outputs overlap neither the inputs nor each other. The launcher allocates\n"
       << " * the temporaries it needs on `stream` (cudaMallocAsync, freed the same\n"
       << " * way); _with_workspace takes them from `workspace` instead and allocates\n"
       << " * nothing, for CUDA graphs and caching allocators: at least the bytes\n"
       << " * _workspace_size reports (0: `workspace` may be NULL), aligned to 256\n"
       << " * bytes as cudaMalloc returns, untouched by anything else until the\n"
       << " * launches finish on `stream`. The _launch_info query reports the\n"
       << " * launches' shapes for given sizes without launching. */\n";
    OS << backend::launcherPrototype(F, Opts.SymbolPrefix) << ";\n";
    OS << backend::workspaceLauncherPrototype(F, Opts.SymbolPrefix) << ";\n";
    OS << backend::launchInfoPrototype(F, Opts.SymbolPrefix) << ";\n";
    OS << backend::workspaceSizePrototype(F, Opts.SymbolPrefix) << ";\n";
  }
  OS << "\n#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n#endif /* " << Guard << " */\n";
}

} // namespace tdsl
