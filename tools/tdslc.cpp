//===- tdslc.cpp - The tdslc driver: a .tdsl file in, one stage's text out ===//
#include "frontend/Frontend.h"
#include "ir/Diagnostics.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace llvm;
using namespace tdsl;

namespace {

// Linking LLVM registers hundreds of options; --help shows only these.
cl::OptionCategory TdslcCategory("tdslc options");

cl::opt<std::string> InputFilename(cl::Positional, cl::Required,
                                   cl::desc("<input .tdsl file, or - for stdin>"),
                                   cl::cat(TdslcCategory));

cl::opt<std::string> OutputFilename("o", cl::desc("Output file (default: stdout)"),
                                    cl::value_desc("file"), cl::init("-"),
                                    cl::cat(TdslcCategory));

/// The stage whose text tdslc writes. Each later stage gets a value here
/// and a case in main's switch.
enum class EmitKind { AST, IR };

cl::opt<EmitKind> Emit(
    "emit", cl::desc("What to write"), cl::init(EmitKind::AST),
    cl::values(clEnumValN(EmitKind::AST, "ast", "The checked syntax tree"),
               clEnumValN(EmitKind::IR, "ir", "The loop IR (not available yet)")),
    cl::cat(TdslcCategory));

constexpr const char *Version = "0.1.0";

/// Prints one diagnostic like SourceMgr does, but the quoted source line is
/// made safe first: bytes that are not printable ASCII become '?' (a binary
/// file must not send control sequences to the terminal), and a long line
/// is cut to a window around the caret (a 10 MB line must not be echoed
/// with every error).
void printDiagnostic(const SMDiagnostic &D, void *) {
  raw_ostream &OS = errs();
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
  case SourceMgr::DK_Error: WithColor::error(OS); break;
  case SourceMgr::DK_Warning: WithColor::warning(OS); break;
  case SourceMgr::DK_Remark: WithColor::remark(OS); break;
  case SourceMgr::DK_Note: WithColor::note(OS); break;
  }
  OS << D.getMessage() << '\n';
  if (D.getLineNo() == -1 || D.getColumnNo() == -1)
    return;

  constexpr size_t Window = 160;
  StringRef Line = D.getLineContents();
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
  WithColor(OS, HighlightColor::String) << '^';
  OS << '\n';
}

/// Writes through Print to -o (stdout by default); the file is kept only if
/// the whole output was produced.
int writeOutput(const std::function<void(raw_ostream &)> &Print) {
  std::error_code EC;
  ToolOutputFile Out(OutputFilename, EC, sys::fs::OF_Text);
  if (EC) {
    errs() << "tdslc: error: cannot open '" << OutputFilename
           << "' for writing: " << EC.message() << "\n";
    return 1;
  }
  Print(Out.os());
  Out.os().flush();
  if (Out.os().has_error()) {
    errs() << "tdslc: error: cannot write '" << OutputFilename
           << "': " << Out.os().error().message() << "\n";
    Out.os().clear_error();
    return 1;
  }
  Out.keep();
  return 0;
}

} // namespace

int main(int Argc, char **Argv) {
  cl::HideUnrelatedOptions(TdslcCategory);
  cl::SetVersionPrinter([](raw_ostream &OS) { OS << "tdslc version " << Version << "\n"; });
  cl::ParseCommandLineOptions(Argc, Argv,
                              "tdslc: compiles .tdsl tensor kernels to CUDA C++\n");

  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer =
      MemoryBuffer::getFileOrSTDIN(InputFilename, /*IsText=*/true);
  if (std::error_code EC = Buffer.getError()) {
    errs() << "tdslc: error: cannot open '" << InputFilename << "': " << EC.message()
           << "\n";
    return 1;
  }

  SourceMgr SM;
  SM.setDiagHandler(printDiagnostic);
  unsigned BufferID = SM.AddNewSourceBuffer(std::move(*Buffer), SMLoc());
  DiagEngine Diags(SM);
  std::unique_ptr<ast::Module> M = parseAndCheck(SM, BufferID, Diags);
  if (!M)
    return 1;

  switch (Emit) {
  case EmitKind::AST:
    return writeOutput([&](raw_ostream &OS) { printAST(*M, OS); });
  case EmitKind::IR:
    errs() << "tdslc: error: --emit=ir is not available yet\n";
    return 1;
  }
  return 1;
}
