//===- Diagnostics.h - Located user diagnostics over llvm::SourceMgr ------===//
//
// User errors go through here ("file:line:col: error: ...", the source line,
// a caret); compiler bugs are asserts (TDSL_UNREACHABLE), never diagnostics.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_IR_DIAGNOSTICS_H
#define TDSL_IR_DIAGNOSTICS_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"

namespace tdsl {

class DiagEngine {
public:
  explicit DiagEngine(llvm::SourceMgr &SM) : SM(SM) {}

  void error(llvm::SMLoc Loc, const llvm::Twine &Msg);
  void warning(llvm::SMLoc Loc, const llvm::Twine &Msg);
  void note(llvm::SMLoc Loc, const llvm::Twine &Msg);
  /// An optimization remark (a pass that declined, and why).
  void remark(llvm::SMLoc Loc, const llvm::Twine &Msg);

  unsigned errorCount() const { return NumErrors; }
  bool hasErrors() const { return NumErrors != 0; }
  llvm::SourceMgr &sourceMgr() { return SM; }
  /// Line (1-based) of Loc, 0 if Loc is invalid.
  unsigned lineOf(llvm::SMLoc Loc) const;

  /// After this many errors further ones are dropped (a runaway input must
  /// not flood the terminal); one final line says so.
  static constexpr unsigned MaxErrors = 20;

private:
  llvm::SourceMgr &SM;
  unsigned NumErrors = 0;
};

/// Makes SM print diagnostics as SourceMgr does, but with the quoted source
/// line made safe: non-printable bytes shown as '?' (binary input must not
/// reach the terminal) and long lines cut to a window around the caret.
void installDiagnosticPrinter(llvm::SourceMgr &SM);

[[noreturn]] void internalError(const char *File, int Line, const llvm::Twine &Msg);

} // namespace tdsl

/// A compiler bug: prints and aborts.
#define TDSL_UNREACHABLE(Msg) ::tdsl::internalError(__FILE__, __LINE__, Msg)

#endif // TDSL_IR_DIAGNOSTICS_H
