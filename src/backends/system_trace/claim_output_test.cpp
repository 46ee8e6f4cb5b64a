// Which file each traced process of one run writes (claim_output.h).
#include "claim_output.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "argus/support/process.h"

namespace argus::backends {
namespace {

TEST(SystemTraceOutput, EachProcessClaimsItsOwnFile) {
  auto dir = makeTempDir("argus-claim");
  ASSERT_TRUE(dir);
  const std::string path = (*dir / "system_trace.jsonl").string();
  EXPECT_EQ(inject::claimTraceOutput(path), path);
  EXPECT_TRUE(std::filesystem::exists(path));
  // A sibling of this run created it just now: this process writes its own file.
  EXPECT_EQ(inject::claimTraceOutput(path), path + "." + std::to_string(::getpid()));
  // A file from before this process started is a previous run's: replaced.
  const auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  std::filesystem::last_write_time(path, old);
  EXPECT_EQ(inject::claimTraceOutput(path), path);
  EXPECT_GT(std::filesystem::last_write_time(path), old);
  std::filesystem::remove_all(*dir);
}

}  // namespace
}  // namespace argus::backends
