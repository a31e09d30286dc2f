//===- Diagnostics.cpp - Located user diagnostics -------------------------===//
#include "ir/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace tdsl {

void DiagEngine::error(llvm::SMLoc Loc, const llvm::Twine &Msg) {
  ++NumErrors;
  if (NumErrors > MaxErrors)
    return;
  SM.PrintMessage(Loc, llvm::SourceMgr::DK_Error, Msg);
  if (NumErrors == MaxErrors)
    llvm::errs() << "error: too many errors emitted, stopping now\n";
}

void DiagEngine::warning(llvm::SMLoc Loc, const llvm::Twine &Msg) {
  SM.PrintMessage(Loc, llvm::SourceMgr::DK_Warning, Msg);
}

void DiagEngine::note(llvm::SMLoc Loc, const llvm::Twine &Msg) {
  if (NumErrors > MaxErrors)
    return;
  SM.PrintMessage(Loc, llvm::SourceMgr::DK_Note, Msg);
}

void DiagEngine::remark(llvm::SMLoc Loc, const llvm::Twine &Msg) {
  SM.PrintMessage(Loc, llvm::SourceMgr::DK_Remark, Msg);
}

unsigned DiagEngine::lineOf(llvm::SMLoc Loc) const {
  if (!Loc.isValid())
    return 0;
  unsigned Buf = SM.FindBufferContainingLoc(Loc);
  if (!Buf)
    return 0;
  return SM.getLineAndColumn(Loc, Buf).first;
}

void internalError(const char *File, int Line, const llvm::Twine &Msg) {
  llvm::errs() << "tdslc: internal compiler error at " << File << ":" << Line << ": "
               << Msg << "\nPlease report this with the input that caused it.\n";
  std::abort();
}

} // namespace tdsl
