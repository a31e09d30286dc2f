//===- Signature.h - C names and launcher prototypes, shared by the emitters =//
//
// The .cu and the .h must agree on every launcher's prototype; both take
// it from here.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_BACKEND_SIGNATURE_H
#define TDSL_BACKEND_SIGNATURE_H

#include "backend/CudaEmitter.h"
#include "ir/IR.h"

#include <string>

namespace tdsl::backend {

/// The C++ identifier for an IR name: the name itself, or with a trailing
/// '_' when it is a C/C++/CUDA keyword or a name the emitted code uses.
std::string cName(llvm::StringRef Name);

/// Element types as the launcher's callers see them (tdsl_f16, float, ...).
std::string hostElementType(DType T);
/// Element types inside kernels (__half, __nv_bfloat16, float, ...).
std::string deviceElementType(DType T);

/// "tdsl_status tdsl_gemm(const tdsl_f16 *A, ..., cudaStream_t stream)"
/// (Prefix "tdsl_").
std::string launcherPrototype(const ir::Func &F, llvm::StringRef Prefix);
/// "tdsl_status tdsl_gemm_launch_info(int64_t M, ..., int *num_launches)".
std::string launchInfoPrototype(const ir::Func &F, llvm::StringRef Prefix);
/// The launcher on a caller's workspace: "tdsl_status
/// tdsl_gemm_with_workspace(const tdsl_f16 *A, ..., void *workspace,
/// size_t workspace_bytes, cudaStream_t stream)".
std::string workspaceLauncherPrototype(const ir::Func &F, llvm::StringRef Prefix);
/// "tdsl_status tdsl_gemm_workspace_size(int64_t M, ..., size_t *bytes)".
std::string workspaceSizePrototype(const ir::Func &F, llvm::StringRef Prefix);
/// "const tdsl_f16 *A, ..., int64_t M, ..." (tensors, then sizes).
std::string launcherParams(const ir::Func &F);
/// "A, ..., M, ..." (the arguments matching launcherParams).
std::string launcherArgs(const ir::Func &F);
/// "int64_t M, int64_t N" (the size parameters, in Func::Sizes order).
std::string sizeParams(const ir::Func &F);
/// "M, N" (the size arguments).
std::string sizeArgs(const ir::Func &F);
/// The kernel as .tdsl spells it: "kernel gemm(A: f16[M, K]) -> (C: f32[M, N])".
std::string tdslSignature(const ir::Func &F);
/// The first line of every generated file (no timestamp, no path).
std::string bannerText(const CudaEmitOptions &Opts);

} // namespace tdsl::backend

#endif // TDSL_BACKEND_SIGNATURE_H
