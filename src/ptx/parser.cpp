// Recursive-descent PTX parser over the token stream of lexer.h.
//
// Representation choices (see also ir.h):
// - Operand::Kind::Vector covers three groupings, told apart by `text`:
//     ""  for `{a, b}` (vector operands, also inside addresses `[%rd1, {%r1, %r2}]`),
//     "(" for the parenthesized lists of call sequences `call (retval0), fn, (param0, param1);`,
//     "|" for the destination pairs `%r1|%p1` of elect.sync, setp and friends (two elements).
// - An identifier operand is a Register when it starts with `%` or was declared with `.reg` in
//   the enclosing function (inline asm declares `.reg .pred p;`); otherwise it is a Symbol.
// - `.section` directives keep their whole body verbatim in Directive::text (debug sections
//   are data; Argus never edits them).
// - Directive, performance-directive and initializer texts have comments removed and runs of
//   whitespace collapsed to one space; comments found inside any statement are kept as Comment
//   statements placed after it.
// - An Address whose source spelled a zero offset (`[%SP+0]`) has `text` = "+0" so that it prints
//   back the same way: ptxas without optimization (debug PTX, nvcc -G) compiles `[%r+0]` to an
//   extra add, so dropping the `+0` would change the machine code.
// - A declaration of several names (`.reg .pred p, q;`) becomes one VariableDecl per name.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>

#include "argus/ptx/parser.h"
#include "lexer.h"

namespace argus::ptx {
namespace {

using detail::Lexer;
using detail::Token;
using detail::TokenKind;

constexpr int kMaxOperandDepth = 8;

bool isStateSpace(std::string_view word) {
  return word == ".reg" || word == ".param" || word == ".shared" || word == ".global" ||
         word == ".const" || word == ".local" || word == ".tex" || word == ".sreg";
}

bool isLinkage(std::string_view word) {
  return word == ".visible" || word == ".extern" || word == ".weak" || word == ".common";
}

/// Directives that end at the end of their line instead of at a `;`.
bool endsAtNewline(std::string_view word) {
  return word == ".version" || word == ".target" || word == ".address_size" || word == ".file" ||
         word == ".loc";
}

/// Fundamental types: `.b32`, `.f16x2`, `.e4m3`, `.pred`, ...; `.v4` and `.align` are not.
bool isType(std::string_view word) {
  if (word == ".pred" || word == ".texref" || word == ".samplerref" || word == ".surfref") {
    return true;
  }
  if (word.size() < 3 || word[0] != '.' || word[1] == 'v') return false;
  bool digit = false;
  for (char c : word.substr(1)) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (!(c >= 'a' && c <= 'z')) {
      return false;
    }
  }
  return digit;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

/// Removes comments and collapses whitespace runs outside string literals to one space.
std::string normalize(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  bool pendingSpace = false;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '"') {
      if (pendingSpace && !out.empty()) out += ' ';
      pendingSpace = false;
      std::size_t j = i + 1;
      while (j < raw.size() && raw[j] != '"') j += (raw[j] == '\\' && j + 1 < raw.size()) ? 2 : 1;
      j = std::min(j + 1, raw.size());
      out.append(raw.substr(i, j - i));
      i = j - 1;
    } else if (c == '/' && i + 1 < raw.size() && raw[i + 1] == '/') {
      while (i + 1 < raw.size() && raw[i + 1] != '\n') ++i;
      pendingSpace = true;
    } else if (c == '/' && i + 1 < raw.size() && raw[i + 1] == '*') {
      std::size_t end = raw.find("*/", i + 2);
      i = end == std::string_view::npos ? raw.size() : end + 1;
      pendingSpace = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      pendingSpace = true;
    } else {
      if (pendingSpace && !out.empty()) out += ' ';
      pendingSpace = false;
      out += c;
    }
  }
  return out;
}

std::string commentBody(const Token& token) {
  std::string_view body = token.text;
  if (token.kind == TokenKind::LineComment) {
    body.remove_prefix(2);
  } else {
    body = body.substr(2, body.size() - 4);
  }
  return std::string(trim(body));
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view file) : lexer(text), fileName(file) {}

  Result<Module> run() {
    Module module;
    module.fileName = std::string(fileName);
    advance();
    while (!failed) {
      flushComments(module.items);
      if (tok.kind == TokenKind::End) break;
      parseTopLevel(module);
    }
    if (failed) return std::unexpected(std::move(error));
    return module;
  }

 private:
  // ---- token handling ----

  /// Moves to the next non-comment token; comments are queued for the enclosing statement list.
  void advance() {
    bool newline = false;
    while (true) {
      tok = lexer.next();
      if (tok.kind != TokenKind::LineComment && tok.kind != TokenKind::BlockComment) break;
      newline = newline || tok.newlineBefore || tok.kind == TokenKind::LineComment ||
                tok.text.find('\n') != std::string_view::npos;
      pending.push_back(tok);
    }
    tok.newlineBefore = tok.newlineBefore || newline;
  }

  /// The token after the current one, skipping comments.
  Token peekNext() const {
    Lexer copy = lexer;
    Token t = copy.next();
    while (t.kind == TokenKind::LineComment || t.kind == TokenKind::BlockComment) t = copy.next();
    return t;
  }

  bool fail(std::string_view expected, const Token& at) {
    if (!failed) {
      failed = true;
      error = Error{"ptx", fmt::format("{}:{}:{}: expected {} but found {}", fileName, at.line,
                                       at.column, expected, detail::describeToken(at))};
    }
    return false;
  }
  bool fail(std::string_view expected) { return fail(expected, tok); }

  /// A well-formed construct that PTX forbids at `loc` (ptxas would reject it).
  bool failAt(Location loc, std::string_view message) {
    if (!failed) {
      failed = true;
      error = Error{"ptx", fmt::format("{}:{}:{}: {}", fileName, loc.line, loc.column, message)};
    }
    return false;
  }

  bool expectPunct(char c, std::string_view what) {
    if (!tok.is(c)) return fail(what);
    advance();
    return true;
  }

  template <class List>
  void flushComments(List& list) {
    for (const Token& c : pending) {
      auto& item = list.emplace_back();
      item.kind = std::remove_reference_t<decltype(item)>::Kind::Comment;
      item.text = commentBody(c);
      item.blockComment = c.kind == TokenKind::BlockComment;
      if constexpr (std::is_same_v<List, std::vector<Statement>>) item.loc = locOf(c);
    }
    pending.clear();
  }

  static Location locOf(const Token& t) { return Location{t.line, t.column}; }

  std::string_view slice(std::size_t begin, std::size_t end) const {
    return end > begin ? lexer.source().substr(begin, end - begin) : std::string_view{};
  }

  // ---- top level ----

  void parseTopLevel(Module& module) {
    if (tok.kind != TokenKind::Directive) {
      fail("a directive, variable or function");
      return;
    }
    std::string_view word = tok.text;
    Location loc = locOf(tok);
    std::string linkage;
    if (isLinkage(word)) {
      linkage = std::string(word);
      advance();
      if (tok.kind != TokenKind::Directive) {
        fail("'.entry', '.func' or a state space after " + linkage);
        return;
      }
      word = tok.text;
    }
    if (word == ".entry" || word == ".func") {
      TopLevel item;
      item.kind = TopLevel::Kind::Function;
      item.function.loc = loc;
      item.function.linkage = std::move(linkage);
      if (!parseFunction(item.function) || !checkNewFunction(item.function)) return;
      module.items.push_back(std::move(item));
      return;
    }
    if (isStateSpace(word)) {
      std::vector<VariableDecl> decls;
      if (!parseVariables(linkage, loc, decls, /*allowMultiple=*/true, /*semicolon=*/true)) return;
      for (auto& d : decls) {
        TopLevel& item = module.items.emplace_back();
        item.kind = TopLevel::Kind::Variable;
        item.variable = std::move(d);
      }
      return;
    }
    if (!linkage.empty()) {
      fail("'.entry', '.func' or a state space after " + linkage);
      return;
    }
    TopLevel item;
    item.kind = TopLevel::Kind::Directive;
    bool ok = word == ".section" ? parseSection(item.directive) : parseDirective(item.directive);
    if (ok) module.items.push_back(std::move(item));
  }

  /// `.section NAME { verbatim }`
  bool parseSection(Directive& directive) {
    directive.name = ".section";
    advance();
    if (tok.kind != TokenKind::Directive && tok.kind != TokenKind::Identifier) {
      return fail("a section name after .section");
    }
    const std::size_t begin = tok.offset;
    advance();
    if (!tok.is('{')) return fail("'{' opening the section body");
    int depth = 0;
    while (true) {
      if (tok.kind == TokenKind::End) return fail("'}' closing the .section body");
      if (tok.kind == TokenKind::Error) return fail("section contents");
      if (tok.is('{')) ++depth;
      if (tok.is('}') && --depth == 0) break;
      advance();
    }
    const std::size_t end = tok.offset + 1;
    directive.text = std::string(trim(slice(begin, end)));
    // Comments inside the body stay in the verbatim text.
    std::erase_if(pending, [&](const Token& c) { return c.offset >= begin && c.offset < end; });
    advance();
    return true;
  }

  /// A generic directive: `.loc ...` (to end of line) or `.pragma "x";` (to `;`).
  bool parseDirective(Directive& directive) {
    directive.name = std::string(tok.text);
    const bool lineEnded = endsAtNewline(tok.text);
    advance();
    const std::size_t begin = tok.offset;
    std::size_t end = begin;
    while (true) {
      if (tok.kind == TokenKind::End) {
        if (lineEnded) break;
        return fail(fmt::format("';' ending {}", directive.name));
      }
      if (lineEnded && tok.newlineBefore) break;
      if (tok.is(';')) {
        directive.semicolon = true;
        advance();
        break;
      }
      if (tok.kind == TokenKind::Error || (!lineEnded && (tok.is('{') || tok.is('}')))) {
        return fail(fmt::format("';' ending {}", directive.name));
      }
      end = tok.offset + tok.text.size();
      advance();
    }
    directive.text = normalize(slice(begin, end));
    return true;
  }

  // ---- declarations ----

  /// `[.align N] [modifiers] .type name[<n>][dims] [= init] {, name ...}` after the state space.
  bool parseVariables(const std::string& linkage, Location loc, std::vector<VariableDecl>& out,
                      bool allowMultiple, bool semicolon) {
    VariableDecl base;
    base.linkage = linkage;
    base.loc = loc;
    if (tok.kind != TokenKind::Directive || !isStateSpace(tok.text)) {
      return fail("a state space (.reg, .param, .shared, .global, .const, .local)");
    }
    base.stateSpace = std::string(tok.text);
    advance();
    while (tok.kind == TokenKind::Directive) {
      std::string_view word = tok.text;
      if (word == ".align") {
        advance();
        auto value = tok.kind == TokenKind::Number ? parseUnsigned(tok.text) : std::nullopt;
        if (!value) return fail("an alignment after .align");
        base.align = *value;
        advance();
      } else if (isType(word) && base.type.empty()) {
        base.type = std::string(word);
        advance();
      } else if (!base.type.empty() && !word.starts_with(".ptr")) {
        // Only `.ptr...` follows the type (the printer puts every other modifier before it).
        return fail("a variable name after the type " + base.type);
      } else if (isStateSpace(word) || word.starts_with(".ptr") != !base.type.empty()) {
        return fail(base.type.empty() ? "a modifier (.v2, .v4, .attribute(...)) or the type"
                                      : "a variable name after the type " + base.type);
      } else {
        std::string modifier(word);
        advance();
        if (word.starts_with(".ptr")) {
          // `.ptr.global.align 16` or `.ptr .global .align 16`: one modifier, kept as written.
          while (true) {
            if (word.ends_with(".align")) {
              if (tok.kind != TokenKind::Number) return fail("an alignment after " + modifier);
              modifier += ' ';
              modifier += tok.text;
              advance();
            }
            if (tok.kind != TokenKind::Directive || (isType(tok.text) && base.type.empty())) break;
            word = tok.text;
            modifier += ' ';
            modifier += word;
            advance();
          }
        } else if (tok.is('(') && !tok.newlineBefore) {  // `.attribute(.managed)`
          const std::size_t begin = tok.offset;
          int depth = 0;
          while (true) {
            if (tok.kind == TokenKind::End || tok.kind == TokenKind::Error || tok.is(';')) {
              return fail("')' closing " + modifier);
            }
            if (tok.is('(')) ++depth;
            if (tok.is(')') && --depth == 0) break;
            advance();
          }
          modifier += normalize(slice(begin, tok.offset + 1));
          advance();
        }
        base.modifiers.push_back(std::move(modifier));
      }
    }
    if (base.type.empty()) return fail("a type (.b32, .f32, .pred, ...) in the declaration");
    while (true) {
      VariableDecl decl = base;
      if (tok.kind != TokenKind::Identifier) return fail("a variable name");
      decl.name = std::string(tok.text);
      advance();
      if (tok.is('<')) {
        advance();
        auto count = tok.kind == TokenKind::Number ? parseUnsigned(tok.text) : std::nullopt;
        if (!count || *count > UINT32_MAX) return fail("a register count");
        decl.registerCount = static_cast<uint32_t>(*count);
        advance();
        if (!expectPunct('>', "'>' closing the register count")) return false;
      }
      while (tok.is('[')) {
        advance();
        if (tok.is(']')) {
          decl.dims.emplace_back(std::nullopt);
        } else {
          auto dim = tok.kind == TokenKind::Number ? parseUnsigned(tok.text) : std::nullopt;
          if (!dim) return fail("an array size");
          decl.dims.emplace_back(*dim);
          advance();
        }
        if (!expectPunct(']', "']' closing the array size")) return false;
      }
      if (tok.is('=')) {
        advance();
        const std::size_t begin = tok.offset;
        std::size_t end = begin;
        int depth = 0;
        while (true) {
          if (tok.kind == TokenKind::End || tok.kind == TokenKind::Error) {
            return fail("';' ending the initializer");
          }
          if (depth == 0 && (tok.is(';') || tok.is(','))) break;
          if (tok.is('{') || tok.is('(')) ++depth;
          if (tok.is('}') || tok.is(')')) {
            if (--depth < 0) return fail("';' ending the initializer");
          }
          end = tok.offset + tok.text.size();
          advance();
        }
        decl.initializer = normalize(slice(begin, end));
        if (decl.initializer.empty()) return fail("an initializer after '='");
      }
      out.push_back(std::move(decl));
      if (allowMultiple && tok.is(',')) {
        advance();
        continue;
      }
      break;
    }
    if (semicolon) return expectPunct(';', "';' ending the declaration");
    return true;
  }

  bool parseParamList(std::vector<VariableDecl>& out) {
    advance();  // (
    if (tok.is(')')) {
      advance();
      return true;
    }
    while (true) {
      if (!parseVariables("", locOf(tok), out, false, false)) return false;
      if (tok.is(')')) {
        advance();
        return true;
      }
      if (!expectPunct(',', "',' or ')' in the parameter list")) return false;
    }
  }

  // ---- functions ----

  bool parseFunction(Function& function) {
    function.isEntry = tok.text == ".entry";
    advance();
    if (tok.is('(') && !parseParamList(function.returns)) return false;
    if (tok.kind != TokenKind::Identifier || tok.text.starts_with('%')) {
      return fail("a function name");
    }
    function.name = std::string(tok.text);
    advance();
    if (tok.is('(') && !parseParamList(function.params)) return false;
    while (tok.kind == TokenKind::Directive) {
      Directive& directive = function.performanceDirectives.emplace_back();
      directive.name = std::string(tok.text);
      advance();
      const std::size_t begin = tok.offset;
      std::size_t end = begin;
      while (tok.kind != TokenKind::End && tok.kind != TokenKind::Directive && !tok.newlineBefore &&
             !tok.is('{') && !tok.is(';')) {
        if (tok.kind == TokenKind::Error) return fail("'{' or ';' after the function header");
        end = tok.offset + tok.text.size();
        advance();
      }
      directive.text = normalize(slice(begin, end));
    }
    if (tok.is(';')) {
      advance();
      return true;
    }
    if (!tok.is('{')) return fail(fmt::format("'{{' or ';' after the header of {}", function.name));
    function.hasBody = true;
    return parseBody(function);
  }

  /// A function of a name already taken is an error unless both are `.func` and at most one
  /// has a body (a prototype and its definition).
  bool checkNewFunction(const Function& function) {
    const FunctionSeen seen{function.loc, function.isEntry, function.hasBody};
    auto [it, fresh] = functionsSeen.try_emplace(function.name, seen);
    if (fresh) return true;
    const FunctionSeen first = it->second;
    auto kind = [](bool isEntry) { return isEntry ? ".entry" : ".func"; };
    const std::string firstAt = fmt::format("{}:{}:{}", fileName, first.loc.line, first.loc.column);
    if (first.isEntry != function.isEntry || function.isEntry)
      return failAt(
          function.loc,
          fmt::format("`{} {}` has the name of the `{}` at {}; a module's kernels and "
                      "functions need distinct names (ptxas rejects the module)",
                      kind(function.isEntry), function.name, kind(first.isEntry), firstAt));
    if (first.hasBody && function.hasBody)
      return failAt(function.loc,
                    fmt::format("`.func {}` is defined twice (first at {}); remove or rename one "
                                "(ptxas rejects the module)",
                                function.name, firstAt));
    if (function.hasBody) it->second = seen;
    return true;
  }

  bool parseBody(Function& function) {
    const Token open = tok;
    advance();
    int depth = 0;
    registers.clear();
    // Labels of each open `{ }` scope (the body is the first): PTX scopes labels by block, so a
    // name may repeat in sibling or nested blocks but not within one.
    std::vector<std::map<std::string, Location, std::less<>>> labels(1);
    auto& body = function.body;
    while (true) {
      flushComments(body);
      if (tok.kind == TokenKind::End) {
        return fail(fmt::format("'}}' closing the body of {} (opened at {}:{})", function.name,
                                open.line, open.column));
      }
      if (tok.is('}')) {
        if (depth == 0) {
          advance();
          return true;
        }
        --depth;
        labels.pop_back();
        Statement& s = body.emplace_back();
        s.kind = Statement::Kind::ScopeEnd;
        s.loc = locOf(tok);
        advance();
        continue;
      }
      if (tok.is('{')) {
        ++depth;
        labels.emplace_back();
        Statement& s = body.emplace_back();
        s.kind = Statement::Kind::ScopeBegin;
        s.loc = locOf(tok);
        advance();
        continue;
      }
      if (tok.kind == TokenKind::Identifier && peekNext().is(':')) {
        auto [it, fresh] = labels.back().try_emplace(std::string(tok.text), locOf(tok));
        if (!fresh)
          return failAt(locOf(tok), fmt::format("label `{}` is defined twice in one scope of `{}` "
                                                "(first at {}:{}:{}); rename one (ptxas rejects "
                                                "duplicate labels)",
                                                tok.text, function.name, fileName, it->second.line,
                                                it->second.column));
        Statement& s = body.emplace_back();
        s.kind = Statement::Kind::Label;
        s.loc = locOf(tok);
        s.text = std::string(tok.text);
        advance();
        advance();
        continue;
      }
      if (tok.kind == TokenKind::Directive) {
        Location loc = locOf(tok);
        if (isStateSpace(tok.text)) {
          std::vector<VariableDecl> decls;
          if (!parseVariables("", loc, decls, true, true)) return false;
          for (auto& d : decls) {
            if (d.stateSpace == ".reg" && !d.name.starts_with('%') && !d.registerCount &&
                std::find(registers.begin(), registers.end(), d.name) == registers.end()) {
              registers.push_back(d.name);
            }
            Statement& s = body.emplace_back();
            s.kind = Statement::Kind::Variable;
            s.loc = loc;
            s.variable = std::move(d);
          }
          continue;
        }
        Statement s;
        s.kind = Statement::Kind::Directive;
        s.loc = loc;
        if (!parseDirective(s.directive)) return false;
        body.push_back(std::move(s));
        continue;
      }
      if (tok.kind == TokenKind::Identifier || tok.is('@')) {
        Statement s;
        s.kind = Statement::Kind::Instruction;
        s.loc = locOf(tok);
        if (!parseInstruction(s.instruction)) return false;
        body.push_back(std::move(s));
        continue;
      }
      return fail("an instruction, label, declaration or '}'");
    }
  }

  // ---- instructions ----

  bool parseInstruction(Instruction& inst) {
    if (tok.is('@')) {
      advance();
      Guard guard;
      if (tok.is('!')) {
        guard.negated = true;
        advance();
      }
      if (tok.kind != TokenKind::Identifier) return fail("a predicate after '@'");
      guard.predicate = std::string(tok.text);
      inst.guard = std::move(guard);
      advance();
    }
    if (tok.kind != TokenKind::Identifier || tok.text.starts_with('%') || tok.text == "_") {
      return fail("an instruction opcode");
    }
    inst.opcode = std::string(tok.text);
    const Token opcodeToken = tok;
    advance();
    if (tok.is(';')) {
      advance();
      return true;
    }
    while (true) {
      Operand& operand = inst.operands.emplace_back();
      if (!parsePairOperand(operand, 0)) return false;
      if (tok.is(',')) {
        advance();
        continue;
      }
      if (tok.is(';')) {
        advance();
        return true;
      }
      return fail(fmt::format("',' or ';' after operand {} of {} (line {})", inst.operands.size(),
                              inst.opcode, opcodeToken.line));
    }
  }

  /// An operand, or an `a|b` pair stored as a Vector with text "|".
  bool parsePairOperand(Operand& operand, int depth) {
    if (!parseOperand(operand, depth, true)) return false;
    if (!tok.is('|')) return true;
    advance();
    Operand pair;
    pair.kind = Operand::Kind::Vector;
    pair.text = "|";
    pair.elements.push_back(std::move(operand));
    if (!parseOperand(pair.elements.emplace_back(), depth + 1, true)) return false;
    operand = std::move(pair);
    return true;
  }

  bool isRegisterName(std::string_view name) const {
    if (name.starts_with('%')) return true;
    return std::find(registers.begin(), registers.end(), name) != registers.end();
  }

  /// Parses `+N`, `-N` or `+-N` into `offset` if present.
  bool parseOffset(int64_t& offset) {
    if (!tok.is('+') && !tok.is('-')) return true;
    bool negative = tok.is('-');
    advance();
    if (tok.is('-')) {
      negative = !negative;
      advance();
    }
    auto value = tok.kind == TokenKind::Number ? parseUnsigned(tok.text) : std::nullopt;
    if (!value || *value > static_cast<uint64_t>(INT64_MAX)) return fail("an integer offset");
    offset = negative ? -static_cast<int64_t>(*value) : static_cast<int64_t>(*value);
    advance();
    return true;
  }

  bool parseOperand(Operand& operand, int depth, bool allowSymbolOffset) {
    if (depth > kMaxOperandDepth) return fail("a simpler operand (nesting too deep)");
    if (tok.kind == TokenKind::Number) {
      operand.kind = Operand::Kind::Immediate;
      operand.text = std::string(tok.text);
      advance();
      return true;
    }
    if (tok.is('-')) {
      advance();
      if (tok.kind != TokenKind::Number) return fail("a number after '-'");
      operand.kind = Operand::Kind::Immediate;
      operand.text = fmt::format("-{}", tok.text);
      advance();
      return true;
    }
    if (tok.is('!')) {
      advance();
      if (tok.kind != TokenKind::Identifier) return fail("a predicate register after '!'");
      operand.kind = Operand::Kind::Register;
      operand.negated = true;
      operand.text = std::string(tok.text);
      advance();
      return true;
    }
    if (tok.kind == TokenKind::Identifier) {
      operand.text = std::string(tok.text);
      if (tok.text == "_") {
        operand.kind = Operand::Kind::Sink;
        advance();
        return true;
      }
      operand.kind = isRegisterName(tok.text) ? Operand::Kind::Register : Operand::Kind::Symbol;
      advance();
      if (operand.kind == Operand::Kind::Symbol && allowSymbolOffset) {
        return parseOffset(operand.offset);
      }
      return true;
    }
    if (tok.is('{') || tok.is('(')) {
      const char close = tok.is('{') ? '}' : ')';
      operand.kind = Operand::Kind::Vector;
      if (close == ')') operand.text = "(";
      advance();
      if (tok.is(close) && close == ')') {
        advance();
        return true;
      }
      while (true) {
        if (!parsePairOperand(operand.elements.emplace_back(), depth + 1)) return false;
        if (tok.is(',')) {
          advance();
          continue;
        }
        if (tok.is(close)) {
          advance();
          return true;
        }
        return fail(close == '}' ? "',' or '}' in the vector operand"
                                 : "',' or ')' in the parenthesized operand list");
      }
    }
    if (tok.is('[')) {
      operand.kind = Operand::Kind::Address;
      advance();
      if (!parseOperand(operand.elements.emplace_back(), depth + 1, false)) return false;
      const bool hasOffset = tok.is('+') || tok.is('-');
      if (!parseOffset(operand.offset)) return false;
      if (hasOffset && operand.offset == 0) operand.text = "+0";
      while (tok.is(',')) {
        advance();
        if (!parseOperand(operand.elements.emplace_back(), depth + 1, true)) return false;
      }
      return expectPunct(']', "']' closing the address");
    }
    return fail("an operand");
  }

  Lexer lexer;
  std::string_view fileName;
  Token tok;
  std::vector<Token> pending;
  std::vector<std::string> registers;  // `.reg` names without `%` declared in this function
  struct FunctionSeen {
    Location loc;  // of its definition where it has one, else of its first declaration
    bool isEntry = false;
    bool hasBody = false;
  };
  std::map<std::string, FunctionSeen, std::less<>> functionsSeen;
  bool failed = false;
  Error error;
};

}  // namespace

Result<Module> parseModule(std::string_view text, std::string_view fileName) {
  Parser parser(text, fileName);
  return parser.run();
}

std::optional<uint64_t> parseUnsigned(std::string_view text) {
  if (!text.empty() && (text.back() == 'U' || text.back() == 'u')) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    base = 2;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;
    text.remove_prefix(1);
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<int64_t> parseSigned(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) text.remove_prefix(1);
  const auto value = parseUnsigned(text);
  if (!value) return std::nullopt;
  const auto v = static_cast<int64_t>(*value);
  return negative ? -v : v;
}

}  // namespace argus::ptx
