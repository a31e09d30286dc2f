//===- Parser.h - Recursive-descent parser for .tdsl files ----------------===//
//
// Builds an unchecked ast::Module; sema (Sema.h) resolves and checks it. The
// parser reports syntax errors, recovers at the next statement, and bounds
// expression nesting so no input can exhaust the stack.
//
//===----------------------------------------------------------------------===//
#ifndef TDSL_FRONTEND_PARSER_H
#define TDSL_FRONTEND_PARSER_H

#include "frontend/AST.h"
#include "frontend/Lexer.h"

#include <memory>

namespace tdsl {

class Parser {
public:
  Parser(llvm::SourceMgr &SM, unsigned BufferID, DiagEngine &Diags);

  /// Parses the whole buffer. The module is returned even after syntax
  /// errors (with the pieces that parsed); callers check Diags.
  std::unique_ptr<ast::Module> parseModule();

  /// Deeper expressions are rejected: every later stage recurses over the
  /// tree, so its depth must stay far below what a stack can hold.
  static constexpr unsigned MaxExprNesting = 256;

private:
  // Grammar rules, one function each (the rule is above each definition).
  std::unique_ptr<ast::Kernel> parseKernel();
  bool parseParams(std::vector<std::unique_ptr<ast::Tensor>> &Out,
                   ast::TensorRole Role);
  std::unique_ptr<ast::Tensor> parseParam(ast::TensorRole Role);
  bool parseDims(ast::Tensor &T);
  bool parseDType(DType &Out);
  std::unique_ptr<ast::Stmt> parseStmt();
  bool parseAssignOp(ast::AssignOp &Op);
  std::unique_ptr<ast::Schedule> parseSchedule();
  bool parseScheduleEntry(ast::Schedule &S);
  bool parseScheduleValue(ast::ScheduleEntry &E);
  ast::ExprPtr parseExpr();
  ast::ExprPtr parseTernary();
  ast::ExprPtr parseBinary(unsigned MinPrec);
  ast::ExprPtr parseUnary();
  ast::ExprPtr parsePrimary();
  bool parseExprList(TokKind Close, std::vector<ast::ExprPtr> &Out,
                     const char *ExpectedClose, llvm::SMLoc OpenLoc);

  // Token handling.
  void consume();
  bool consumeIf(TokKind K);
  /// Consumes a K or reports "expected What, found ...".
  bool expect(TokKind K, const char *What);
  /// Reports "expected What, found ..." unless the token is already an
  /// error; returns whether it reported.
  bool errorExpected(const char *What);
  void skipNewlines();
  /// Opening and closing () or []: inside them newlines are insignificant.
  llvm::SMLoc openBracket();
  bool closeBracket(TokKind Close, const char *What, llvm::SMLoc OpenLoc);
  /// Closes an empty bracket pair "()" if Tok is the closing one.
  bool consumeIfClosing(TokKind Close);
  /// Error recovery: skips to the end of the current statement (a newline
  /// or ';' outside brackets), or to a '}' / keyword / end of file.
  void recoverToStatementEnd();
  /// Error recovery for a broken kernel or schedule header: skips to the
  /// next 'kernel' or 'schedule' keyword.
  void recoverToTopLevel();
  bool tooManyErrors() const;

  /// Checks the nesting level the caller has just entered (Nesting); false
  /// past MaxExprNesting, reporting that once per statement.
  bool enterNesting();

  llvm::SourceMgr &SM;
  unsigned BufferID;
  DiagEngine &Diags;
  Lexer Lex;
  Token Tok;
  unsigned BracketDepth = 0;
  unsigned Nesting = 0;
  /// Set once "nested too deeply" was reported for the current statement,
  /// so unwinding the recursion does not add "expected ..." errors.
  bool NestingExceeded = false;
};

} // namespace tdsl

#endif // TDSL_FRONTEND_PARSER_H
