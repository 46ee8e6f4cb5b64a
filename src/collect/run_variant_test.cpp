#include "argus/collect/run_variant.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace argus::collect {
namespace {

TEST(UserSetting, SpecThenEnvironmentThenNone) {
  const char* name = "ARGUS_TEST_USER_SETTING";
  ::unsetenv(name);
  program::ProgramSpec spec;
  EXPECT_EQ(userSetting(spec, name), std::nullopt);
  ::setenv(name, "from-env", 1);
  EXPECT_EQ(userSetting(spec, name), "from-env");
  spec.run.environment[name] = "from-spec";
  EXPECT_EQ(userSetting(spec, name), "from-spec");
  ::unsetenv(name);
  EXPECT_EQ(userSetting(spec, name), "from-spec");
}

}  // namespace
}  // namespace argus::collect
