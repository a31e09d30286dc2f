//===- Diagnostics.cpp - Located user diagnostics -------------------------===//
#include "ir/Diagnostics.h"

#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

#include <cstdlib>

namespace tdsl {

/// Prints one diagnostic like SourceMgr does, but the quoted source line is
/// made safe first: bytes that are not printable ASCII become '?' (a binary
/// file must not send control sequences to the terminal), and a long line
/// is cut to a window around the caret (a 10 MB line must not be echoed
/// with every error).
static void printDiagnostic(const llvm::SMDiagnostic &D, void *) {
  llvm::raw_ostream &OS = llvm::errs();
  if (!D.getFilename().empty()) {
    OS << D.getFilename();
    if (D.getLineNo() != -1) {
      OS << ':' << D.getLineNo();
      if (D.getColumnNo() != -1)
        OS << ':' << (D.getColumnNo() + 1);
    }
    OS << ": ";
  }
  switch (D.getKind()) {
  case llvm::SourceMgr::DK_Error: llvm::WithColor::error(OS); break;
  case llvm::SourceMgr::DK_Warning: llvm::WithColor::warning(OS); break;
  case llvm::SourceMgr::DK_Remark: llvm::WithColor::remark(OS); break;
  case llvm::SourceMgr::DK_Note: llvm::WithColor::note(OS); break;
  }
  OS << D.getMessage() << '\n';
  if (D.getLineNo() == -1 || D.getColumnNo() == -1)
    return;

  constexpr size_t Window = 160;
  llvm::StringRef Line = D.getLineContents();
  size_t Col = std::min<size_t>(D.getColumnNo(), Line.size());
  size_t Begin = 0, End = Line.size();
  if (Line.size() > Window) {
    Begin = Col > Window / 2 ? Col - Window / 2 : 0;
    End = std::min(Line.size(), Begin + Window);
  }
  std::string Shown = Begin > 0 ? "..." : "";
  std::string Caret(Shown.size(), ' ');
  for (size_t I = Begin; I < End; ++I) {
    char C = Line[I];
    bool Printable = C == '\t' || (C >= 0x20 && C < 0x7f);
    Shown += Printable ? C : '?';
    if (I < Col)
      Caret += C == '\t' ? '\t' : ' ';
  }
  if (End < Line.size())
    Shown += "...";
  OS << Shown << '\n' << Caret;
  llvm::WithColor(OS, llvm::HighlightColor::String) << '^';
  OS << '\n';
}

void installDiagnosticPrinter(llvm::SourceMgr &SM) { SM.setDiagHandler(printDiagnostic); }


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
