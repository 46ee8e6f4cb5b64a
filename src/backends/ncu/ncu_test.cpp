#include "argus/backends/ncu.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace argus::backends::ncu {
namespace {

bool contains(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

TEST(NcuCommands, ProfileKeepsClocksAndWritesAReport) {
  NcuProfileOptions o;
  o.report = "/tmp/r";
  o.kernels = {"nested_regions"};
  o.launchCount = 1;
  const auto argv = profileCommand(o, {"./prog", "64", "128"});
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[0], "ncu");
  EXPECT_EQ(argv[1], "--clock-control");
  EXPECT_EQ(argv[2], "none");
  EXPECT_TRUE(contains(argv, "SourceCounters"));
  EXPECT_TRUE(contains(argv, "smsp__inst_executed.sum,smsp__thread_inst_executed.sum"));
  EXPECT_TRUE(contains(argv, "nested_regions"));
  EXPECT_TRUE(contains(argv, "/tmp/r"));
  EXPECT_EQ(std::vector<std::string>(argv.end() - 3, argv.end()),
            (std::vector<std::string>{"./prog", "64", "128"}));

  o.kernels = {"a", "b"};
  EXPECT_TRUE(contains(profileCommand(o, {"p"}), "regex:^(a|b)$"));

  const auto source = sourceExportCommand("ncu", "/tmp/r.ncu-rep");
  EXPECT_TRUE(contains(source, "source"));
  EXPECT_TRUE(contains(source, "sass"));
  EXPECT_TRUE(contains(source, "--csv"));
  EXPECT_TRUE(contains(rawExportCommand("ncu", "/tmp/r.ncu-rep"), "raw"));
}

}  // namespace
}  // namespace argus::backends::ncu
