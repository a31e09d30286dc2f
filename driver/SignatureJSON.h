//===- SignatureJSON.h - tdslc --emit=signature: kernels' interfaces as JSON =//
//
// What a binding needs to call the launchers of a module without parsing
// the .tdsl or the C header again (python/tdsl reads it): per kernel, the
// launcher's symbol, the size symbols in the order the launcher takes them,
// and each parameter in launcher order with its role, dtype and dims, each
// dim as written and as an affine form over the size symbols, so that the
// sizes can be solved from the shapes of the tensors a caller passes.
//
//   {"tdslc_version": "0.1.0", "kernels": [{"name": "softmax",
//     "launcher": "tdsl_softmax", "sizes": ["R", "C"], "params": [
//       {"name": "X", "role": "in", "dtype": "f16", "element_bytes": 2,
//        "dims": [{"text": "R", "constant": 0, "coeffs": {"R": 1}}, ...]},
//       ...]}]}
//
// Tests: test/driver/emit-signature.test
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_DRIVER_SIGNATUREJSON_H
#define TDSL_DRIVER_SIGNATUREJSON_H

#include "frontend/AST.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace tdsl {

/// Writes the JSON above for the checked module M; Version is tdslc's, and
/// SymbolPrefix starts every launcher name (--symbol-prefix).
void printSignatureJSON(const ast::Module &M, llvm::StringRef Version,
                        llvm::StringRef SymbolPrefix, llvm::raw_ostream &OS);

/// Writes the attribute "params" of K's launcher: its inputs then its
/// outputs, in declaration order (the launcher's order), each an object
/// of "name", "role" ("in" or "out") and "dtype", then what Rest writes.
/// --emit=signature and --dump-io's meta.json (driver/Check.cpp) both
/// describe a launcher's parameters through it.
void writeLauncherParams(llvm::json::OStream &J, const ast::Kernel &K,
                         llvm::function_ref<void(const ast::Tensor &)> Rest);

} // namespace tdsl

#endif // TDSL_DRIVER_SIGNATUREJSON_H
