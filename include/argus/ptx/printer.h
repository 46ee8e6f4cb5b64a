// IR -> PTX text.
#pragma once

#include <cstddef>
#include <string>

#include "argus/ptx/ir.h"

namespace argus::ptx {

/// Function bodies are indented one tab per `{ }` level up to this many tabs, so that deeply
/// nested scopes print in space linear in their statements (docs/limits.md).
inline constexpr std::size_t kMaxIndentDepth = 32;

/// Prints a module as PTX. ptxas compiles the printed text of a parsed module to the same
/// machine code as the original text; parse(print(m)) == m up to locations. [thread-safe]
[[nodiscard]] std::string printModule(const Module& module);

/// Prints one operand / instruction / statement (no trailing newline), for messages and passes.
[[nodiscard]] std::string printOperand(const Operand& operand);
[[nodiscard]] std::string printInstruction(const Instruction& instruction);
[[nodiscard]] std::string printStatement(const Statement& statement);

}  // namespace argus::ptx
