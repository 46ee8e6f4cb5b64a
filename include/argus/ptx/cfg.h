// Control-flow graph of one PTX function body.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "argus/ptx/ir.h"
#include "argus/support/status.h"

namespace argus::ptx {

/// A maximal straight-line run of statements [begin, end) of Function::body.
struct BasicBlock {
  size_t begin = 0;
  size_t end = 0;
  std::vector<uint32_t> successors;    ///< Block indices, without duplicates.
  std::vector<uint32_t> predecessors;  ///< Block indices, without duplicates.
};

/// Blocks of one function; blocks[0] is the entry. Labels start blocks; `bra`, `brx.idx`,
/// `ret`, `exit` and `trap` end them. A guarded branch or exit also falls through.
struct ControlFlowGraph {
  std::vector<BasicBlock> blocks;
  std::vector<uint32_t> blockOf;  ///< Block index of every statement of the body.
};

/// Builds the CFG. Branch targets are resolved like PTX labels: innermost enclosing `{ }` scope
/// first. Fails (with the branch's line) when a target label does not exist. [thread-safe]
/// Whether control never falls through an unguarded instruction of this base opcode (`bra`,
/// `brx`, `ret`, `exit`, `trap`): the opcodes that end a basic block's straight line.
[[nodiscard]] bool endsFlow(std::string_view baseOpcode);

[[nodiscard]] Result<ControlFlowGraph> buildControlFlowGraph(const Function& function,
                                                             std::string_view fileName);

/// The dominator tree of a CFG: block a dominates block b when every path from the entry to b
/// passes through a. Unreachable blocks dominate nothing and are dominated by nothing.
class DominatorTree {
 public:
  /// Cooper, Harvey and Kennedy's iterative algorithm, without recursion. [thread-safe]
  explicit DominatorTree(const ControlFlowGraph& cfg);
  /// Whether `a` dominates `b` (every reachable block dominates itself); O(1).
  [[nodiscard]] bool dominates(uint32_t a, uint32_t b) const;

 private:
  std::vector<uint32_t> enter_, exit_;  // dominator-tree DFS times; 0 = unreachable
};

/// Prints the CFG as Graphviz DOT, one node per block labelled with its first label and lines.
[[nodiscard]] std::string cfgToDot(const Function& function, const ControlFlowGraph& cfg);

}  // namespace argus::ptx
