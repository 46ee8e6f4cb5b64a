// The PTX intermediate representation that every Argus pass reads and rewrites.
//
// The IR is deliberately close to the text: a module is a list of top-level items, a function
// body is a *flat* list of statements (nested `{ }` scopes appear as ScopeBegin/ScopeEnd
// statements), and comments are kept because Argus region markers are PTX comments
// (`// @argus begin NAME`). Passes insert or remove statements by index; the printer turns
// the IR back into PTX that ptxas compiles to the same machine code as the original.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace argus::ptx {

/// 1-based line and column in the PTX text the IR was parsed from (0 = synthesized by a pass).
struct Location {
  uint32_t line = 0;
  uint32_t column = 0;
};

/// One instruction operand.
struct Operand {
  enum class Kind : uint8_t {
    Register,    ///< `%r1`, `%tid.x`, or a name declared with `.reg` in the function (inline
                 ///< asm uses plain names like `p`); `negated` for `!%p1`.
    Immediate,   ///< `0`, `-1`, `0f3F800000`, `0d3FF0000000000000`, `0x10`.
    Symbol,      ///< A variable, function or label name (`$L__BB0_3`), `offset` for `sym+8`.
    Address,     ///< `[base+offset]`: elements[0] is the base, `offset` the constant byte offset,
                 ///< elements[1..] are further comma-separated parts (`[%rd1, {%r1, %r2}]`).
                 ///< `text` is "+0" when an explicit zero offset was written: ptxas -O0
                 ///< compiles `[%SP+0]` and `[%SP]` differently.
    Vector,      ///< A grouping; `text` says which: "" for `{a, b}`, "(" for a call's
                 ///< `(retval0)` / `(param0, param1)` lists, "|" for `%r1|%p1` pairs.
    Sink,        ///< `_`
    Expression,  ///< Anything else, kept verbatim in `text` (constant expressions).
  };
  Kind kind = Kind::Expression;
  std::string text;               ///< Register/symbol name, immediate or verbatim expression.
  int64_t offset = 0;             ///< Symbol and Address: constant offset added to the base.
  bool negated = false;           ///< Register: written `!%p`.
  std::vector<Operand> elements;  ///< Address and Vector parts.
};

/// `@%p` / `@!%p` guard of a predicated instruction.
struct Guard {
  std::string predicate;  ///< `%p1`
  bool negated = false;
};

/// One PTX instruction: `[@guard] opcode.mod.mod operand, operand, ...;`
struct Instruction {
  std::optional<Guard> guard;
  std::string opcode;  ///< Full dotted opcode, e.g. `cp.async.bulk.tensor.2d.shared::cluster...`
  std::vector<Operand> operands;

  /// The opcode up to its first '.', e.g. `mbarrier` for
  /// `mbarrier.try_wait.parity.shared::cta.b64`.
  [[nodiscard]] std::string baseOpcode() const { return opcode.substr(0, opcode.find('.')); }
};

/// A directive kept mostly verbatim: `.loc 1 42 7`, `.pragma "nounroll";`, `.file 1 "a.cu"`,
/// `.version 8.8`, `.maxntid 128, 1, 1`. `text` is what follows the name, trimmed, without `;`.
struct Directive {
  std::string name;  ///< Including the dot: `.loc`.
  std::string text;
  bool semicolon = false;  ///< Whether the original ended with `;` (`.pragma` does, `.loc` not).
};

/// A variable or parameter declaration in any state space:
/// `[linkage] .space [.align N] [modifiers] .type name[<count>][dims] [= initializer];`
struct VariableDecl {
  std::string linkage;            ///< `.visible`, `.extern`, `.weak`, `.common` or empty.
  std::string stateSpace;         ///< `.reg`, `.param`, `.shared`, `.global`, `.const`, `.local`.
  std::optional<uint64_t> align;  ///< `.align N`
  std::vector<std::string> modifiers;  ///< `.v4`, `.ptr`, `.global`, `.attribute(.managed)`, ...
  std::string type;                    ///< `.b32`, `.f16x2`, `.pred`, `.texref`, ...
  std::string name;
  std::optional<uint32_t> registerCount;      ///< `%r<12>` declares 12 registers.
  std::vector<std::optional<uint64_t>> dims;  ///< `[128]` = 128; `[]` = nullopt.
  std::string initializer;                    ///< Verbatim text after `=`, empty if none.
  Location loc;
};

/// One element of a function body.
struct Statement {
  enum class Kind : uint8_t {
    Instruction,
    Label,       ///< `$L__BB0_1:`; the name is in `text`.
    Variable,    ///< `.reg`, `.local`, `.shared`, `.param` declaration inside a body.
    Directive,   ///< `.loc`, `.pragma`, ...
    Comment,     ///< `// text` or `/* text */`; `text` holds the comment body without delimiters.
    ScopeBegin,  ///< `{` opening a nested scope (nvcc wraps inline asm and calls in one).
    ScopeEnd,    ///< `}`
  };
  Kind kind = Kind::Instruction;
  Location loc;
  Instruction instruction;    ///< Kind::Instruction
  VariableDecl variable;      ///< Kind::Variable
  Directive directive;        ///< Kind::Directive
  std::string text;           ///< Kind::Label name, Kind::Comment body
  bool blockComment = false;  ///< Kind::Comment written as `/* */`.
};

/// An `.entry` (kernel) or `.func` (device function), with or without a body.
struct Function {
  std::string linkage;  ///< `.visible`, `.extern`, `.weak` or empty.
  bool isEntry = false;
  std::string name;
  std::vector<VariableDecl> returns;  ///< `.func (.param .b32 retval0) name(...)`
  std::vector<VariableDecl> params;
  std::vector<Directive> performanceDirectives;  ///< `.maxntid`, `.reqntid`, `.minnctapersm`,
                                                 ///< `.maxnreg`, `.noreturn`, cluster dims...
  bool hasBody = false;                          ///< False for prototypes ending in `;`.
  std::vector<Statement> body;
  Location loc;
};

/// One top-level element of a module.
struct TopLevel {
  enum class Kind : uint8_t { Directive, Variable, Function, Comment };
  Kind kind = Kind::Directive;
  Directive directive;
  VariableDecl variable;
  Function function;
  std::string text;  ///< Kind::Comment body
  bool blockComment = false;
};

/// A whole PTX file.
struct Module {
  std::string fileName;  ///< For messages only.
  std::vector<TopLevel> items;

  /// Value of the `.target` directive (e.g. `sm_90a`), empty if absent.
  [[nodiscard]] std::string target() const;
  /// Text of the `.version` directive (e.g. `8.8`), empty if absent.
  [[nodiscard]] std::string version() const;
  /// Pointers to every function (with or without body), in file order.
  [[nodiscard]] std::vector<const Function*> functions() const;
  [[nodiscard]] std::vector<Function*> functions();
  /// The function with this name, or nullptr.
  [[nodiscard]] const Function* findFunction(std::string_view name) const;
};

}  // namespace argus::ptx
