#include "argus/ptx/divergence.h"

#include <gtest/gtest.h>

#include "ptx_test_util.h"

namespace argus::ptx {
namespace {

using testing::parseOrDie;

/// A kernel `k(.param .u64 k_param_0, .param .u32 k_param_1)` with `directives` (e.g.
/// `.maxntid 128, 1, 1`) and `body`. Sentinels `add.s32 %r9, %r9, N;` mark the places asked
/// about.
std::string kernelText(const std::string& directives, const std::string& body) {
  return ".version 8.8\n.target sm_90a\n.address_size 64\n\n"
         ".visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1\n)\n" +
         directives + "\n{\n\t.reg .pred \t%p<4>;\n\t.reg .b32 \t%r<10>;\n\t.reg .b64 \t%rd<4>;\n" +
         body + "}\n";
}

/// Whether the block holding sentinel `n` may run without lane 0.
class Divergence : public ::testing::Test {
 protected:
  void analyze(const std::string& directives, const std::string& body,
               const std::optional<std::array<uint32_t, 3>>& block = std::nullopt) {
    module_ = parseOrDie(kernelText(directives, body));
    const Function& k = *module_.functions().front();
    auto cfg = buildControlFlowGraph(k, "test.ptx");
    ASSERT_TRUE(cfg) << cfg.error().text();
    cfg_ = *cfg;
    unsafe_ = blocksWithoutLaneZero(k, cfg_, block);
    ASSERT_EQ(unsafe_.size(), cfg_.blocks.size());
  }
  bool withoutLaneZero(int sentinel) const {
    const Function& k = *module_.functions().front();
    for (size_t i = 0; i < k.body.size(); ++i) {
      const auto& s = k.body[i];
      if (s.kind == Statement::Kind::Instruction && s.instruction.opcode == "add.s32" &&
          s.instruction.operands.size() == 3 && s.instruction.operands[0].text == "%r9" &&
          s.instruction.operands[2].text == std::to_string(sentinel))
        return unsafe_[cfg_.blockOf[i]];
    }
    ADD_FAILURE() << "no sentinel " << sentinel;
    return false;
  }

  Module module_;
  ControlFlowGraph cfg_;
  std::vector<bool> unsafe_;
};

// if (param < 1) { A } B: a parameter decides for the whole warp.
TEST_F(Divergence, BranchOnAParameterKeepsTheWarpTogether) {
  analyze("",
          "\tld.param.u32 \t%r1, [k_param_1];\n\tsetp.lt.s32 \t%p1, %r1, 1;\n"
          "\t@%p1 bra \t$L1;\n\tadd.s32 \t%r9, %r9, 1;\n$L1:\n\tadd.s32 \t%r9, %r9, 2;\n"
          "\tret;\n");
  EXPECT_FALSE(withoutLaneZero(1));
  EXPECT_FALSE(withoutLaneZero(2));
}

// if (threadIdx.x < 16) { A } B: A may run without lane 0, B runs after the lanes rejoin.
TEST_F(Divergence, BranchOnTheThreadIndexSplitsUntilTheJoin) {
  analyze("",
          "\tmov.u32 \t%r1, %tid.x;\n\tsetp.lt.u32 \t%p1, %r1, 16;\n"
          "\t@%p1 bra \t$L1;\n\tadd.s32 \t%r9, %r9, 1;\n\tbra.uni \t$L2;\n"
          "$L1:\n\tadd.s32 \t%r9, %r9, 2;\n$L2:\n\tadd.s32 \t%r9, %r9, 3;\n\tret;\n");
  EXPECT_TRUE(withoutLaneZero(1));
  EXPECT_TRUE(withoutLaneZero(2));
  EXPECT_FALSE(withoutLaneZero(3));
}

// warp = threadIdx.x / 32 in a one-dimensional block: one value per warp; / 16 is not.
TEST_F(Divergence, WarpIndexOfAOneDimensionalBlockIsUniform) {
  const std::string body =
      "\tmov.u32 \t%r1, %tid.x;\n\tshr.u32 \t%r2, %r1, SHIFT;\n"
      "\tsetp.eq.s32 \t%p1, %r2, 0;\n\t@%p1 bra \t$L1;\n"
      "\tadd.s32 \t%r9, %r9, 1;\n$L1:\n\tret;\n";
  auto with = [&](const char* shift) {
    std::string b = body;
    b.replace(b.find("SHIFT"), 5, shift);
    return b;
  };
  analyze(".reqntid 128, 1, 1", with("5"));
  EXPECT_FALSE(withoutLaneZero(1));
  analyze(".reqntid 128, 1, 1", with("4"));
  EXPECT_TRUE(withoutLaneZero(1));
  // Without a one-dimensional block a warp may span two rows of %tid.x; .maxntid bounds only the
  // thread count (128 threads may run as 48 x 2).
  analyze("", with("5"));
  EXPECT_TRUE(withoutLaneZero(1));
  analyze(".maxntid 128, 1, 1", with("5"));
  EXPECT_TRUE(withoutLaneZero(1));
  analyze(".reqntid 64, 2, 1", with("5"));
  EXPECT_FALSE(withoutLaneZero(1));  // rows of 64: still whole warps
  // The block shape the program spec gives (kernels[].block) says what .maxntid does not.
  analyze(".maxntid 128, 1, 1", with("5"), std::array<uint32_t, 3>{128, 1, 1});
  EXPECT_FALSE(withoutLaneZero(1));
  analyze(".maxntid 128, 1, 1", with("4"), std::array<uint32_t, 3>{128, 1, 1});
  EXPECT_TRUE(withoutLaneZero(1));
  analyze("", with("5"), std::array<uint32_t, 3>{48, 2, 1});
  EXPECT_TRUE(withoutLaneZero(1));  // rows of 48: a warp spans two
}

// Comparisons of %tid.x + k with a constant: the same for a warp when the boundary falls on a
// multiple of 32. nvcc writes `warp != 0` as (%tid.x + 31) > 62.
TEST_F(Divergence, ThreadIndexComparisonsOnWarpBoundaries) {
  const auto body = [](const std::string& compute) {
    return "\tmov.u32 \t%r1, %tid.x;\n" + compute +
           "\t@%p1 bra \t$L1;\n\tadd.s32 \t%r9, %r9, 1;\n$L1:\n\tret;\n";
  };
  const std::string oneD = ".reqntid 128, 1, 1";
  analyze(oneD, body("\tadd.s32 \t%r2, %r1, 31;\n\tsetp.gt.u32 \t%p1, %r2, 62;\n"));
  EXPECT_FALSE(withoutLaneZero(1));
  analyze(oneD, body("\tadd.s32 \t%r2, %r1, 31;\n\tsetp.lt.u32 \t%p1, %r2, 63;\n"));
  EXPECT_FALSE(withoutLaneZero(1));
  analyze(oneD, body("\tadd.s32 \t%r2, %r1, 1;\n\tsetp.lt.s32 \t%p1, %r2, 16;\n"));
  EXPECT_TRUE(withoutLaneZero(1));
  // Unsigned, %tid.x - 16 wraps below lane 16: lanes 0-15 and 16-31 compare differently.
  analyze(oneD, body("\tadd.s32 \t%r2, %r1, -16;\n\tsetp.lt.u32 \t%p1, %r2, 16;\n"));
  EXPECT_TRUE(withoutLaneZero(1));
  analyze(oneD, body("\tsetp.eq.s32 \t%p1, %r1, 0;\n"));
  EXPECT_TRUE(withoutLaneZero(1));  // only lane 0 of warp 0: not provably with lane 0 for all
}

// for (j = threadIdx.x - 32; j < 128; j += 96): each step moves whole warps, so every lane of a
// warp leaves the loop in the same trip.
TEST_F(Divergence, LoopIndexSteppingByWholeWarps) {
  const std::string loop =
      "\tmov.u32 \t%r1, %tid.x;\n\tadd.s32 \t%r2, %r1, -32;\n$L1:\n"
      "\tadd.s32 \t%r9, %r9, 1;\n\tadd.s32 \t%r2, %r2, STEP;\n"
      "\tsetp.lt.s32 \t%p1, %r2, 128;\n\t@%p1 bra \t$L1;\n\tret;\n";
  auto with = [&](const char* step) {
    std::string b = loop;
    b.replace(b.find("STEP"), 4, step);
    return b;
  };
  analyze(".reqntid 128, 1, 1", with("96"));
  EXPECT_FALSE(withoutLaneZero(1));
  analyze(".reqntid 128, 1, 1", with("48"));
  EXPECT_TRUE(withoutLaneZero(1));
}

// A loop's trip count from %tid.x differs between lanes: its body may lack lane 0, what follows
// does not. From a parameter, the counter stays uniform and so does the body.
TEST_F(Divergence, LoopTripCountDecidesTheBody) {
  const auto loop = [](const std::string& count) {
    return count +
           "\tmov.u32 \t%r2, 0;\n$L1:\n\tadd.s32 \t%r9, %r9, 1;\n"
           "\tadd.s32 \t%r2, %r2, 1;\n\tsetp.lt.u32 \t%p1, %r2, %r1;\n"
           "\t@%p1 bra \t$L1;\n\tadd.s32 \t%r9, %r9, 2;\n\tret;\n";
  };
  analyze("", loop("\tmov.u32 \t%r1, %tid.x;\n"));
  EXPECT_TRUE(withoutLaneZero(1));
  EXPECT_FALSE(withoutLaneZero(2));
  analyze("", loop("\tld.param.u32 \t%r1, [k_param_1];\n"));
  EXPECT_FALSE(withoutLaneZero(1));
  EXPECT_FALSE(withoutLaneZero(2));
}

// if (threadIdx.x >= n) return; — lane 0 may be the one that left.
TEST_F(Divergence, GuardedExitOfSomeLanes) {
  analyze("",
          "\tmov.u32 \t%r1, %tid.x;\n\tsetp.ge.u32 \t%p1, %r1, 7;\n"
          "\tadd.s32 \t%r9, %r9, 1;\n\t@%p1 ret;\n\tadd.s32 \t%r9, %r9, 2;\n\tret;\n");
  EXPECT_FALSE(withoutLaneZero(1));
  EXPECT_TRUE(withoutLaneZero(2));
}

// A value set on one arm of a diverged branch differs between lanes after the join.
TEST_F(Divergence, ValueFromADivergedArmIsDivergent) {
  analyze("",
          "\tmov.u32 \t%r1, %tid.x;\n\tmov.u32 \t%r3, 0;\n\tsetp.lt.u32 \t%p1, %r1, 16;\n"
          "\t@%p1 bra \t$L1;\n\tmov.u32 \t%r3, 1;\n$L1:\n"
          "\tsetp.eq.s32 \t%p2, %r3, 0;\n\t@%p2 bra \t$L2;\n\tadd.s32 \t%r9, %r9, 1;\n"
          "$L2:\n\tret;\n");
  EXPECT_TRUE(withoutLaneZero(1));
}

// Loads: one warp-uniform address reads one value; a per-lane address does not.
TEST_F(Divergence, LoadsFollowTheirAddress) {
  const std::string uniform =
      "\tld.param.u64 \t%rd1, [k_param_0];\n"
      "\tld.global.u32 \t%r2, [%rd1];\n";
  const std::string perLane =
      "\tld.param.u64 \t%rd1, [k_param_0];\n\tmov.u32 \t%r1, %tid.x;\n"
      "\tmul.wide.u32 \t%rd2, %r1, 4;\n\tadd.s64 \t%rd3, %rd1, %rd2;\n"
      "\tld.global.u32 \t%r2, [%rd3];\n";
  const std::string branch =
      "\tsetp.eq.s32 \t%p1, %r2, 0;\n\t@%p1 bra \t$L1;\n"
      "\tadd.s32 \t%r9, %r9, 1;\n$L1:\n\tret;\n";
  analyze("", uniform + branch);
  EXPECT_FALSE(withoutLaneZero(1));
  analyze("", perLane + branch);
  EXPECT_TRUE(withoutLaneZero(1));
}

// bra.uni promises a warp-uniform branch: taken at its word.
TEST_F(Divergence, BraUniIsTakenAtItsWord) {
  analyze("",
          "\tmov.u32 \t%r1, %laneid;\n\tsetp.lt.u32 \t%p1, %r1, 16;\n"
          "\t@%p1 bra.uni \t$L1;\n\tadd.s32 \t%r9, %r9, 1;\n$L1:\n\tret;\n");
  EXPECT_FALSE(withoutLaneZero(1));
}

// A branch inside a diverged region splits what only some lanes run even when its own condition
// is uniform.
TEST_F(Divergence, UniformBranchInsideADivergedRegion) {
  analyze("",
          "\tmov.u32 \t%r1, %tid.x;\n\tld.param.u32 \t%r2, [k_param_1];\n"
          "\tsetp.lt.u32 \t%p1, %r1, 16;\n\t@%p1 bra \t$L3;\n"
          "\tsetp.eq.s32 \t%p2, %r2, 0;\n\t@%p2 bra \t$L2;\n\tadd.s32 \t%r9, %r9, 1;\n"
          "$L2:\n\tadd.s32 \t%r9, %r9, 2;\n$L3:\n\tadd.s32 \t%r9, %r9, 3;\n\tret;\n");
  EXPECT_TRUE(withoutLaneZero(1));
  EXPECT_TRUE(withoutLaneZero(2));
  EXPECT_FALSE(withoutLaneZero(3));
}

// After a lane-dependent ret lane 0 may be gone from everything the ret's path reaches, also
// past blocks found unsafe for another reason first (here a diverged if/else that the CFG lists
// before the ret).
TEST_F(Divergence, GuardedExitReachesPastDivergedArms) {
  analyze("",
          "\tbra.uni \t$LA;\n"
          "$LB:\n\tmov.u32 \t%r4, %laneid;\n\tsetp.lt.u32 \t%p2, %r4, 16;\n"
          "\t@%p2 bra \t$L2;\n\tadd.s32 \t%r9, %r9, 2;\n\tbra.uni \t$L3;\n"
          "$L2:\n\tadd.s32 \t%r9, %r9, 3;\n"
          "$L3:\n\tadd.s32 \t%r9, %r9, 4;\n\tret;\n"
          "$LA:\n\tmov.u32 \t%r1, %laneid;\n\tsetp.lt.u32 \t%p1, %r1, 7;\n"
          "\tadd.s32 \t%r9, %r9, 1;\n\t@%p1 ret;\n\tbra.uni \t$LB;\n");
  EXPECT_FALSE(withoutLaneZero(1));
  EXPECT_TRUE(withoutLaneZero(2));
  EXPECT_TRUE(withoutLaneZero(4));
}

// A loop left only through guarded rets still has post-dominators: a diverged arm inside it and
// the join after the arm are told apart.
TEST_F(Divergence, LoopLeftOnlyThroughGuardedReturns) {
  analyze("",
          "\tld.param.u32 \t%r3, [k_param_1];\n\tmov.u32 \t%r1, %laneid;\n$L1:\n"
          "\tsetp.eq.s32 \t%p2, %r3, 0;\n\t@%p2 ret;\n\tsetp.lt.u32 \t%p1, %r1, 16;\n"
          "\t@%p1 bra \t$L2;\n\tadd.s32 \t%r9, %r9, 1;\n\tadd.s32 \t%r9, %r9, 2;\n"
          "$L2:\n\tadd.s32 \t%r9, %r9, 3;\n\tadd.s32 \t%r3, %r3, -1;\n\tbra.uni \t$L1;\n");
  EXPECT_TRUE(withoutLaneZero(1));
  EXPECT_FALSE(withoutLaneZero(3));
}

// Values each lane holds its own of, whatever the operands: a load through a generic address
// (a local variable in a debug build), a matrix fragment, a call's return value.
TEST_F(Divergence, PerLaneValuesFromUniformOperands) {
  const std::string branch =
      "\tsetp.eq.s32 \t%p1, %r2, 0;\n\t@%p1 bra \t$L1;\n\tadd.s32 \t%r9, %r9, 1;\n$L1:\n\tret;\n";
  analyze("", "\tld.param.u64 \t%rd1, [k_param_0];\n\tld.u32 \t%r2, [%rd1];\n" + branch);
  EXPECT_TRUE(withoutLaneZero(1));
  analyze("",
          "\tld.param.u32 \t%r1, [k_param_1];\n"
          "\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r2}, [%r1];\n" +
              branch);
  EXPECT_TRUE(withoutLaneZero(1));
  analyze("", "\tcall.uni (%r2), f, (%r1);\n" + branch);
  EXPECT_TRUE(withoutLaneZero(1));
}

// %tid.x + k where the lanes' values straddle zero: signed division truncates towards zero, and
// a 32-bit immediate that reads as a large number is a negative offset.
TEST_F(Divergence, ThreadIndexAcrossZero) {
  const auto body = [](const std::string& compute) {
    return "\tmov.u32 \t%r1, %tid.x;\n" + compute +
           "\tsetp.eq.s32 \t%p1, %r3, 0;\n\t@%p1 bra \t$L1;\n\tadd.s32 \t%r9, %r9, 1;\n"
           "$L1:\n\tret;\n";
  };
  const std::string oneD = ".reqntid 128, 1, 1";
  analyze(oneD, body("\tadd.s32 \t%r2, %r1, -32;\n\tdiv.s32 \t%r3, %r2, 32;\n"));
  EXPECT_TRUE(withoutLaneZero(1));
  analyze(oneD, body("\tadd.s32 \t%r2, %r1, 32;\n\tdiv.s32 \t%r3, %r2, 32;\n"));
  EXPECT_FALSE(withoutLaneZero(1));
  analyze(oneD, body("\tadd.s32 \t%r2, %r1, -32;\n\tshr.s32 \t%r3, %r2, 5;\n"));
  EXPECT_FALSE(withoutLaneZero(1));  // a shift rounds down: -32..-1 all give -1
  analyze(oneD, body("\tadd.s32 \t%r2, %r1, 0xFFFFFFF0;\n\tsetp.lt.u32 \t%p3, %r2, 16;\n"
                     "\tselp.u32 \t%r3, 1, 0, %p3;\n"));
  EXPECT_TRUE(withoutLaneZero(1));
  analyze(oneD, body("\tadd.s32 \t%r2, %r1, 040;\n\tshr.u32 \t%r3, %r2, 5;\n"));
  EXPECT_FALSE(withoutLaneZero(1));  // octal 040 = 32: aligned
}

// Branches only lane 0 takes: a block every path to which takes one runs with lane 0 whenever
// it runs (one thread issuing TMA loads). %laneid always; %tid.x where it numbers the warp's
// lanes (.reqntid, or the spec's block), through the masks, `rem` and the signed-modulo
// sequence nvcc emits for `threadIdx.x % 128 == 0`.
TEST_F(Divergence, BranchesOnlyLaneZeroTakes) {
  const auto body = [](const std::string& compute, const std::string& test) {
    return "\tmov.u32 \t%r1, %tid.x;\n\tmov.u32 \t%r4, %laneid;\n" + compute + test +
           "\t@%p1 bra \t$L1;\n\tadd.s32 \t%r9, %r9, 1;\n\tbra.uni \t$L2;\n"
           "$L1:\n\tadd.s32 \t%r9, %r9, 2;\n$L2:\n\tadd.s32 \t%r9, %r9, 3;\n\tret;\n";
  };
  const std::string oneD = ".reqntid 384, 1, 1";
  const std::string ne = "\tsetp.ne.s32 \t%p1, %r3, 0;\n";
  // threadIdx.x == 0 skips $L1: the fall-through is lane 0's only, $L1 is the other lanes', and
  // the join $L2 the whole warp's again.
  analyze(oneD, body("\tmov.u32 \t%r3, %r1;\n", ne));
  EXPECT_FALSE(withoutLaneZero(1));
  EXPECT_TRUE(withoutLaneZero(2));
  EXPECT_FALSE(withoutLaneZero(3));
  // Under .maxntid %tid.x == 0 is thread 0 of some row, not lane 0; %laneid needs no shape.
  analyze(".maxntid 384, 1, 1", body("\tmov.u32 \t%r3, %r1;\n", ne));
  EXPECT_TRUE(withoutLaneZero(1));
  analyze(".maxntid 384, 1, 1", body("\tmov.u32 \t%r3, %r4;\n", ne));
  EXPECT_FALSE(withoutLaneZero(1));
  analyze(".maxntid 384, 1, 1", body("\tmov.u32 \t%r3, %r1;\n", ne),
          std::array<uint32_t, 3>{384, 1, 1});
  EXPECT_FALSE(withoutLaneZero(1));
  // nvcc's threadIdx.x % 128 (signed int): x - ((x + (x >> 31 >>> 25)) & -128).
  const std::string modulo =
      "\tshr.s32 \t%r5, %r1, 31;\n\tshr.u32 \t%r6, %r5, 25;\n\tadd.s32 \t%r7, %r1, %r6;\n"
      "\tand.b32 \t%r8, %r7, -128;\n\tsub.s32 \t%r3, %r1, %r8;\n";
  analyze(oneD, body(modulo, ne));
  EXPECT_FALSE(withoutLaneZero(1));
  // ... or'ed with a uniform test (the loop's trip count), as nvcc writes `if (t == 0) for ...`.
  analyze(oneD, body(modulo,
                     "\tsetp.lt.s32 \t%p2, %r2, 64;\n\tsetp.ne.s32 \t%p3, %r3, 0;\n"
                     "\tor.pred \t%p1, %p3, %p2;\n"));
  EXPECT_FALSE(withoutLaneZero(1));
  // and.pred says nothing of a false result.
  analyze(oneD, body(modulo,
                     "\tsetp.lt.s32 \t%p2, %r2, 64;\n\tsetp.ne.s32 \t%p3, %r3, 0;\n"
                     "\tand.pred \t%p1, %p3, %p2;\n"));
  EXPECT_TRUE(withoutLaneZero(1));
  // x % 16 == 0 and x & 15 == 0 hold in lanes 0 and 16.
  analyze(oneD, body("\trem.u32 \t%r3, %r1, 16;\n", ne));
  EXPECT_TRUE(withoutLaneZero(1));
  analyze(oneD, body("\tand.b32 \t%r3, %r1, 15;\n", ne));
  EXPECT_TRUE(withoutLaneZero(1));
  analyze(oneD, body("\trem.u32 \t%r3, %r1, 64;\n", ne));
  EXPECT_FALSE(withoutLaneZero(1));
  // The equality the other way round: @%p1 (lane 0) branches to $L1.
  analyze(oneD, body("\tmov.u32 \t%r3, %r4;\n", "\tsetp.eq.s32 \t%p1, %r3, 0;\n"));
  EXPECT_TRUE(withoutLaneZero(1));
  EXPECT_FALSE(withoutLaneZero(2));
  // A register whose definitions disagree is not followed.
  analyze(oneD, body("\tmov.u32 \t%r3, %r4;\n\tmov.u32 \t%r3, %r2;\n", ne));
  EXPECT_TRUE(withoutLaneZero(1));
  // A block also reached by another path is not lane 0's only.
  analyze(oneD,
          "\tmov.u32 \t%r1, %tid.x;\n\tsetp.ne.s32 \t%p1, %r1, 0;\n\t@%p1 bra \t$L1;\n"
          "$L2:\n\tadd.s32 \t%r9, %r9, 1;\n\tret;\n"
          "$L1:\n\tsetp.lt.u32 \t%p2, %r1, 5;\n\t@%p2 bra \t$L2;\n\tret;\n");
  EXPECT_TRUE(withoutLaneZero(1));
}

// A spec block shape no launch can have: another shape than .reqntid's, or more threads than
// .maxntid allows.
TEST(BlockShapeConflict, ReqntidAndMaxntid) {
  const auto kernelWith = [](const std::string& directive) {
    return parseOrDie(kernelText(directive, "\tret;\n"));
  };
  Module req = kernelWith(".reqntid 128, 1, 1");
  const Function& r = *req.functions().front();
  EXPECT_FALSE(blockShapeConflict(r, {128, 1, 1}));
  EXPECT_EQ(blockShapeConflict(r, {64, 2, 1}).value_or(""),
            ".reqntid 128, 1, 1 makes every launch use that shape");
  Module max = kernelWith(".maxntid 384, 1, 1");
  const Function& m = *max.functions().front();
  EXPECT_FALSE(blockShapeConflict(m, {384, 1, 1}));
  EXPECT_FALSE(blockShapeConflict(m, {128, 3, 1}));
  EXPECT_EQ(blockShapeConflict(m, {512, 1, 1}).value_or(""),
            ".maxntid 384, 1, 1 (__launch_bounds__) allows at most 384 threads, not 512");
  Module none = kernelWith("");
  EXPECT_FALSE(blockShapeConflict(*none.functions().front(), {1024, 1, 1}));
}

}  // namespace
}  // namespace argus::ptx
