// IR -> PTX text in nvcc's layout: directives and declarations at column 0, function bodies
// indented by one tab per `{ }` level (at most kMaxIndentDepth), labels at column 0 after a blank
// line.
#include "argus/ptx/printer.h"

#include <algorithm>

#include <fmt/format.h>

namespace argus::ptx {
namespace {

void appendOperand(std::string& out, const Operand& operand);

void appendOffset(std::string& out, int64_t offset) {
  if (offset != 0) fmt::format_to(std::back_inserter(out), "+{}", offset);
}

void appendList(std::string& out, const std::vector<Operand>& elements, std::string_view sep) {
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (i != 0) out += sep;
    appendOperand(out, elements[i]);
  }
}

void appendOperand(std::string& out, const Operand& operand) {
  switch (operand.kind) {
    case Operand::Kind::Register:
      if (operand.negated) out += '!';
      out += operand.text;
      break;
    case Operand::Kind::Symbol:
      out += operand.text;
      appendOffset(out, operand.offset);
      break;
    case Operand::Kind::Address:
      out += '[';
      if (!operand.elements.empty()) appendOperand(out, operand.elements.front());
      appendOffset(out, operand.offset);
      if (operand.offset == 0 && operand.text == "+0") out += "+0";
      for (std::size_t i = 1; i < operand.elements.size(); ++i) {
        out += ", ";
        appendOperand(out, operand.elements[i]);
      }
      out += ']';
      break;
    case Operand::Kind::Vector:
      if (operand.text == "|") {
        appendList(out, operand.elements, "|");
      } else if (operand.text == "(") {
        out += '(';
        appendList(out, operand.elements, ", ");
        out += ')';
      } else {
        out += '{';
        appendList(out, operand.elements, ", ");
        out += '}';
      }
      break;
    case Operand::Kind::Sink:
      out += '_';
      break;
    case Operand::Kind::Immediate:
    case Operand::Kind::Expression:
      out += operand.text;
      break;
  }
}

void appendInstruction(std::string& out, const Instruction& inst) {
  if (inst.guard) {
    out += inst.guard->negated ? "@!" : "@";
    out += inst.guard->predicate;
    out += ' ';
  }
  out += inst.opcode;
  if (!inst.operands.empty()) {
    out += ' ';
    appendList(out, inst.operands, ", ");
  }
  out += ';';
}

void appendDirective(std::string& out, const Directive& directive) {
  out += directive.name;
  if (!directive.text.empty()) {
    out += ' ';
    out += directive.text;
  }
  if (directive.semicolon) out += ';';
}

/// Declaration without the trailing `;` (parameters are separated by commas instead).
void appendVariable(std::string& out, const VariableDecl& decl) {
  if (!decl.linkage.empty()) {
    out += decl.linkage;
    out += ' ';
  }
  out += decl.stateSpace;
  if (decl.align) fmt::format_to(std::back_inserter(out), " .align {}", *decl.align);
  // `.ptr...` qualifies the pointee and follows the type; `.v4`, `.attribute(...)` precede it.
  for (const std::string& modifier : decl.modifiers) {
    if (!modifier.starts_with(".ptr")) {
      out += ' ';
      out += modifier;
    }
  }
  out += ' ';
  out += decl.type;
  for (const std::string& modifier : decl.modifiers) {
    if (modifier.starts_with(".ptr")) {
      out += ' ';
      out += modifier;
    }
  }
  out += ' ';
  out += decl.name;
  if (decl.registerCount) fmt::format_to(std::back_inserter(out), "<{}>", *decl.registerCount);
  for (const auto& dim : decl.dims) {
    if (dim) {
      fmt::format_to(std::back_inserter(out), "[{}]", *dim);
    } else {
      out += "[]";
    }
  }
  if (!decl.initializer.empty()) {
    out += " = ";
    out += decl.initializer;
  }
}

void appendComment(std::string& out, const std::string& text, bool block) {
  if (block) {
    out += "/* ";
    out += text;
    out += " */";
  } else {
    out += "//";
    if (!text.empty()) {
      out += ' ';
      out += text;
    }
  }
}

void appendStatement(std::string& out, const Statement& statement) {
  switch (statement.kind) {
    case Statement::Kind::Instruction:
      appendInstruction(out, statement.instruction);
      break;
    case Statement::Kind::Label:
      out += statement.text;
      out += ':';
      break;
    case Statement::Kind::Variable:
      appendVariable(out, statement.variable);
      out += ';';
      break;
    case Statement::Kind::Directive:
      appendDirective(out, statement.directive);
      break;
    case Statement::Kind::Comment:
      appendComment(out, statement.text, statement.blockComment);
      break;
    case Statement::Kind::ScopeBegin:
      out += '{';
      break;
    case Statement::Kind::ScopeEnd:
      out += '}';
      break;
  }
}

void appendParams(std::string& out, const std::vector<VariableDecl>& params, bool multiline) {
  out += '(';
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (i != 0) out += ',';
    if (multiline) {
      out += "\n\t";
    } else if (i != 0) {
      out += ' ';
    }
    appendVariable(out, params[i]);
  }
  if (multiline && !params.empty()) out += '\n';
  out += ')';
}

void appendFunction(std::string& out, const Function& function) {
  if (!function.linkage.empty()) {
    out += function.linkage;
    out += ' ';
  }
  out += function.isEntry ? ".entry " : ".func ";
  if (!function.returns.empty()) {
    appendParams(out, function.returns, false);
    out += ' ';
  }
  out += function.name;
  appendParams(out, function.params, true);
  out += '\n';
  for (const Directive& directive : function.performanceDirectives) {
    appendDirective(out, directive);
    out += '\n';
  }
  if (!function.hasBody) {
    out += ";\n";
    return;
  }
  out += "{\n";
  int depth = 1;
  bool first = true;
  for (const Statement& statement : function.body) {
    if (statement.kind == Statement::Kind::ScopeEnd && depth > 1) --depth;
    if (statement.kind == Statement::Kind::Label) {
      if (!first) out += '\n';
    } else {
      out.append(std::min(static_cast<std::size_t>(depth), kMaxIndentDepth), '\t');
    }
    appendStatement(out, statement);
    out += '\n';
    if (statement.kind == Statement::Kind::ScopeBegin) ++depth;
    first = false;
  }
  out += "}\n";
}

}  // namespace

std::string printOperand(const Operand& operand) {
  std::string out;
  appendOperand(out, operand);
  return out;
}

std::string printInstruction(const Instruction& instruction) {
  std::string out;
  appendInstruction(out, instruction);
  return out;
}

std::string printStatement(const Statement& statement) {
  std::string out;
  appendStatement(out, statement);
  return out;
}

std::string printModule(const Module& module) {
  std::string out;
  out.reserve(module.items.size() * 64);
  std::optional<TopLevel::Kind> previous;
  for (const TopLevel& item : module.items) {
    // A blank line around functions and between groups of directives and variables.
    if (previous && item.kind != TopLevel::Kind::Comment &&
        (item.kind == TopLevel::Kind::Function || *previous == TopLevel::Kind::Function ||
         (*previous != item.kind && *previous != TopLevel::Kind::Comment))) {
      out += '\n';
    } else if (previous == TopLevel::Kind::Function) {
      out += '\n';
    }
    switch (item.kind) {
      case TopLevel::Kind::Directive:
        appendDirective(out, item.directive);
        out += '\n';
        break;
      case TopLevel::Kind::Variable:
        appendVariable(out, item.variable);
        out += ";\n";
        break;
      case TopLevel::Kind::Function:
        appendFunction(out, item.function);
        break;
      case TopLevel::Kind::Comment:
        appendComment(out, item.text, item.blockComment);
        out += '\n';
        break;
    }
    previous = item.kind;
  }
  return out;
}

}  // namespace argus::ptx
