//===- SignatureJSON.cpp - tdslc --emit=signature -------------------------===//
#include "driver/SignatureJSON.h"

#include "llvm/Support/JSON.h"

namespace tdsl {

void writeLauncherParams(llvm::json::OStream &J, const ast::Kernel &K,
                         llvm::function_ref<void(const ast::Tensor &)> Rest) {
  J.attributeArray("params", [&] {
    for (const auto *List : {&K.Inputs, &K.Outputs})
      for (const auto &T : *List)
        J.object([&] {
          J.attribute("name", T->Name);
          J.attribute("role", T->Role == ast::TensorRole::Input ? "in" : "out");
          J.attribute("dtype", dtypeName(T->Type));
          Rest(*T);
        });
  });
}

void printSignatureJSON(const ast::Module &M, llvm::StringRef Version,
                        llvm::StringRef SymbolPrefix, llvm::raw_ostream &OS) {
  llvm::json::OStream J(OS, 2);
  J.objectBegin();
  J.attribute("tdslc_version", Version);
  J.attributeArray("kernels", [&] {
    for (const auto &K : M.Kernels)
      J.object([&] {
        J.attribute("name", K->Name);
        J.attribute("launcher", SymbolPrefix.str() + K->Name);
        J.attributeArray("sizes", [&] {
          for (const std::string &S : K->SizeSymbols)
            J.value(S);
        });
        writeLauncherParams(J, *K, [&](const ast::Tensor &T) {
          J.attribute("element_bytes", static_cast<int64_t>(dtypeBytes(T.Type)));
          J.attributeArray("dims", [&] {
            for (const ast::Affine &D : T.Shape)
              J.object([&] {
                J.attribute("text", D.str());
                J.attribute("constant", D.Constant);
                J.attributeObject("coeffs", [&] {
                  for (const auto &[Symbol, Coeff] : D.Coeffs)
                    J.attribute(Symbol, Coeff);
                });
              });
          });
        });
      });
  });
  J.objectEnd();
  OS << "\n";
}

} // namespace tdsl
