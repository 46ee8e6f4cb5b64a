// A ground-truth helper for the attribution tests: replays one warp through a kernel's SASS
// (`nvdisasm -c` text) and counts how often each PC executes, for kernels built so that this is
// decidable statically (examples/shared_callee): no divergence, every loop a do-while with a
// known, warp-uniform trip count, and forward conditional branches never taken (loop guards of
// loops that run at least once). The rules:
//   - a conditional branch backwards is a loop's back edge: taken trips-1 times per loop entry,
//     trips coming from the caller's callback (the back edge's PC and the stack of CALL PCs);
//   - a conditional branch forwards, or a guarded EXIT, is not taken;
//   - BRA without guard jumps; CALL jumps to its body and RET returns; EXIT ends the warp.
// Executed-instruction counts (smsp__sass_inst_executed) count a warp instruction whether its
// guard is true or not, so predication needs no rule. A GPU run of the same cubin must give these
// counts times the number of warps; that is the falsifiable part of the ground truth.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "argus/support/status.h"

namespace argus::synthesis::testing {

struct SassInstruction {
  uint64_t pc = 0;
  std::string text;  ///< Without `;`, e.g. "@P1 BRA `(.L_x_0)"
  bool guarded = false;
  std::string opcode;  ///< First word after the guard.
  std::string target;  ///< Label inside `(...)`, for branches, calls and returns.
};

/// Per SASS function: instructions in PC order and label -> instruction index.
struct SassFunction {
  std::vector<SassInstruction> instructions;
  std::map<std::string, size_t> labels;
};

inline std::map<std::string, SassFunction> parseSass(std::string_view nvdisasm) {
  std::map<std::string, SassFunction> out;
  SassFunction* current = nullptr;
  std::istringstream in{std::string(nvdisasm)};
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    std::string_view text = std::string_view(line).substr(first);
    if (text.starts_with(".text.") && text.ends_with(':')) {
      current = &out[std::string(text.substr(6, text.size() - 7))];
      continue;
    }
    if (current == nullptr) continue;
    if (text.ends_with(':') && (text.starts_with(".L") || text.starts_with('$'))) {
      current->labels[std::string(text.substr(0, text.size() - 1))] = current->instructions.size();
      continue;
    }
    if (!text.starts_with("/*")) continue;
    const size_t close = text.find("*/");
    const size_t semi = text.find(';');
    if (close == std::string_view::npos || semi == std::string_view::npos) continue;
    SassInstruction inst;
    inst.pc = std::stoull(std::string(text.substr(2, close - 2)), nullptr, 16);
    std::string body(text.substr(close + 2, semi - close - 2));
    body.erase(0, body.find_first_not_of(" {"));
    inst.text = body;
    std::istringstream words(body);
    words >> inst.opcode;
    if (inst.opcode.starts_with('@')) {
      inst.guarded = true;
      words >> inst.opcode;
    }
    if (auto open = body.find("`("); open != std::string::npos) {
      inst.target = body.substr(open + 2, body.find(')', open) - open - 2);
    }
    current->instructions.push_back(std::move(inst));
  }
  return out;
}

/// Trips of the loop whose back edge is at `backEdgePc`, given the CALL PCs on the stack.
using TripCounts = std::function<uint64_t(uint64_t backEdgePc, const std::vector<uint64_t>& calls)>;

/// `ReplayCounts::byCallSite` key for PCs executed outside every call.
inline constexpr uint64_t kNoCall = ~uint64_t{0};

/// What one warp executes: per PC, and per (PC, the kernel's CALL the PC ran under) so that a
/// shared callee's executions can be told apart by calling site without any clone.
struct ReplayCounts {
  std::map<uint64_t, uint64_t> perPc;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> byCallSite;
};

/// Executions of one warp from the function's first instruction to EXIT.
inline Result<ReplayCounts> replayWarp(const SassFunction& f, const TripCounts& trips) {
  ReplayCounts counts;
  struct Frame {
    size_t returnTo = 0;
    uint64_t callPc = 0;
    std::map<size_t, uint64_t> remaining;  ///< back edge -> takes left in the current entry
  };
  std::vector<Frame> frames(1);
  std::vector<uint64_t> callPcs;
  size_t at = 0;
  for (uint64_t steps = 0; steps < 100'000'000; ++steps) {
    if (at >= f.instructions.size()) return fail("test", "replay ran off the end of the function");
    const SassInstruction& inst = f.instructions[at];
    ++counts.perPc[inst.pc];
    ++counts.byCallSite[{inst.pc, callPcs.empty() ? kNoCall : callPcs.front()}];
    auto jump = [&](const std::string& label) -> Result<size_t> {
      auto found = f.labels.find(label);
      if (found == f.labels.end()) return fail("test", "replay: unknown label " + label);
      return found->second;
    };
    const std::string base = inst.opcode.substr(0, inst.opcode.find('.'));
    if (base == "EXIT" && !inst.guarded) return counts;
    if (base == "BRA") {
      auto target = jump(inst.target);
      if (!target) return std::unexpected(target.error());
      if (!inst.guarded) {
        at = *target;
        continue;
      }
      if (*target <= at) {  // back edge
        auto& remaining = frames.back().remaining;
        auto it = remaining.find(at);
        if (it == remaining.end()) it = remaining.emplace(at, trips(inst.pc, callPcs) - 1).first;
        if (it->second > 0) {
          --it->second;
          at = *target;
          continue;
        }
        remaining.erase(it);
      }
      ++at;
      continue;
    }
    if (base == "CALL") {
      auto target = jump(inst.target);
      if (!target) return std::unexpected(target.error());
      frames.push_back(Frame{at + 1, inst.pc, {}});
      callPcs.push_back(inst.pc);
      at = *target;
      continue;
    }
    if (base == "RET") {
      if (frames.size() < 2) return fail("test", "replay: RET without CALL");
      at = frames.back().returnTo;
      frames.pop_back();
      callPcs.pop_back();
      continue;
    }
    ++at;
  }
  return fail("test", "replay: no EXIT after 1e8 steps");
}

}  // namespace argus::synthesis::testing
