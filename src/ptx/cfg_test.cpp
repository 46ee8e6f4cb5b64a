#include "argus/ptx/cfg.h"

#include <gtest/gtest.h>

#include "ptx_test_util.h"

namespace argus::ptx {
namespace {

using testing::kernelPtx;
using testing::parseOrDie;

const Function& kernel(const Module& m) {
  return *m.functions().front();
}

TEST(Cfg, LoopWithGuardedBackEdge) {
  Module m =
      parseOrDie(kernelPtx("\tmov.u32 \t%r1, 0;\n"
                           "$L__BB0_1:\n"
                           "\tadd.s32 \t%r1, %r1, 1;\n"
                           "\tsetp.lt.s32 \t%p1, %r1, 8;\n"
                           "\t@%p1 bra \t$L__BB0_1;\n"
                           "\tret;\n"));
  auto cfg = buildControlFlowGraph(kernel(m), "test.ptx");
  ASSERT_TRUE(cfg) << cfg.error().text();
  // entry (decls + mov) | loop (label .. bra) | ret
  ASSERT_EQ(cfg->blocks.size(), 3u);
  EXPECT_EQ(cfg->blocks[0].successors, (std::vector<uint32_t>{1}));
  EXPECT_EQ(cfg->blocks[1].successors, (std::vector<uint32_t>{1, 2}));
  EXPECT_TRUE(cfg->blocks[2].successors.empty());
  EXPECT_EQ(cfg->blocks[1].predecessors, (std::vector<uint32_t>{0, 1}));
}

TEST(Cfg, DominatorsOfADiamondInALoop) {
  // 0 entry -> 1 loop head -> {2 then, 3 else} -> 4 join -> 1 (back edge) | 5 ret; 6 dead.
  Module m =
      parseOrDie(kernelPtx("\tmov.u32 \t%r1, 0;\n"
                           "$L__head:\n"
                           "\t@%p1 bra \t$L__else;\n"
                           "\tadd.s32 \t%r1, %r1, 1;\n"
                           "\tbra.uni \t$L__join;\n"
                           "$L__else:\n"
                           "\tadd.s32 \t%r1, %r1, 2;\n"
                           "$L__join:\n"
                           "\t@%p2 bra \t$L__head;\n"
                           "\tret;\n"
                           "$L__dead:\n"
                           "\tret;\n"));
  auto cfg = buildControlFlowGraph(kernel(m), "test.ptx");
  ASSERT_TRUE(cfg) << cfg.error().text();
  ASSERT_EQ(cfg->blocks.size(), 7u);
  DominatorTree dom(*cfg);
  for (uint32_t b = 0; b < 6; ++b) {
    EXPECT_TRUE(dom.dominates(0, b)) << b;
    EXPECT_TRUE(dom.dominates(b, b)) << b;
  }
  EXPECT_TRUE(dom.dominates(1, 4));
  EXPECT_TRUE(dom.dominates(4, 5));
  EXPECT_FALSE(dom.dominates(2, 4));
  EXPECT_FALSE(dom.dominates(3, 4));
  EXPECT_FALSE(dom.dominates(2, 3));
  EXPECT_FALSE(dom.dominates(4, 1));  // the back edge does not make the join dominate the head
  EXPECT_FALSE(dom.dominates(0, 6));
  EXPECT_FALSE(dom.dominates(6, 6));
}

TEST(Cfg, UnconditionalBranchDoesNotFallThrough) {
  Module m =
      parseOrDie(kernelPtx("\tbra.uni \t$L__BB0_2;\n"
                           "\tmov.u32 \t%r1, 1;\n"
                           "$L__BB0_2:\n"
                           "\tret;\n"));
  auto cfg = buildControlFlowGraph(kernel(m), "test.ptx");
  ASSERT_TRUE(cfg) << cfg.error().text();
  ASSERT_EQ(cfg->blocks.size(), 3u);
  EXPECT_EQ(cfg->blocks[0].successors, (std::vector<uint32_t>{2}));
  EXPECT_TRUE(cfg->blocks[1].predecessors.empty());  // dead code
  EXPECT_EQ(cfg->blocks[1].successors, (std::vector<uint32_t>{2}));
}

TEST(Cfg, GuardedExitFallsThrough) {
  Module m =
      parseOrDie(kernelPtx("\tsetp.eq.s32 \t%p1, %r1, 0;\n"
                           "\t@%p1 exit;\n"
                           "\tmov.u32 \t%r1, 1;\n"
                           "\tret;\n"));
  auto cfg = buildControlFlowGraph(kernel(m), "test.ptx");
  ASSERT_TRUE(cfg) << cfg.error().text();
  ASSERT_EQ(cfg->blocks.size(), 2u);
  EXPECT_EQ(cfg->blocks[0].successors, (std::vector<uint32_t>{1}));
}

TEST(Cfg, LabelsResolveInTheInnermostScope) {
  // Two inline-asm scopes each declare label `done`; each branch must stay in its own scope.
  Module m =
      parseOrDie(kernelPtx("\t{\n\t@%p1 bra \tdone;\n\tmov.u32 \t%r1, 1;\ndone:\n\t}\n"
                           "\t{\n\t@%p2 bra \tdone;\n\tmov.u32 \t%r2, 2;\ndone:\n\t}\n"
                           "\tret;\n"));
  const Function& f = kernel(m);
  auto cfg = buildControlFlowGraph(f, "test.ptx");
  ASSERT_TRUE(cfg) << cfg.error().text();
  std::vector<size_t> labels, branches;
  for (size_t i = 0; i < f.body.size(); ++i) {
    if (f.body[i].kind == Statement::Kind::Label) labels.push_back(i);
    if (f.body[i].kind == Statement::Kind::Instruction && f.body[i].instruction.opcode == "bra")
      branches.push_back(i);
  }
  ASSERT_EQ(labels.size(), 2u);
  ASSERT_EQ(branches.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const auto& succ = cfg->blocks[cfg->blockOf[branches[k]]].successors;
    EXPECT_NE(std::find(succ.begin(), succ.end(), cfg->blockOf[labels[k]]), succ.end()) << k;
    EXPECT_EQ(std::find(succ.begin(), succ.end(), cfg->blockOf[labels[1 - k]]), succ.end()) << k;
  }
}

TEST(Cfg, UnknownLabelIsAnErrorWithItsLine) {
  Module m = parseOrDie(kernelPtx("\tbra.uni \t$L__nowhere;\n\tret;\n"));
  auto cfg = buildControlFlowGraph(kernel(m), "test.ptx");
  ASSERT_FALSE(cfg);
  EXPECT_NE(cfg.error().message.find("test.ptx:"), std::string::npos) << cfg.error().message;
  EXPECT_NE(cfg.error().message.find("$L__nowhere"), std::string::npos) << cfg.error().message;
}

TEST(Cfg, DotNamesEveryEdge) {
  Module m = parseOrDie(kernelPtx("$L__BB0_1:\n\t@%p1 bra \t$L__BB0_1;\n\tret;\n"));
  auto cfg = buildControlFlowGraph(kernel(m), "test.ptx");
  ASSERT_TRUE(cfg);
  std::string dot = cfgToDot(kernel(m), *cfg);
  EXPECT_NE(dot.find("B1 -> B1;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("B1 -> B2;"), std::string::npos) << dot;
}

}  // namespace
}  // namespace argus::ptx
