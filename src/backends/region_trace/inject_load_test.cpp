// Loads libargus_inject.so as the CUDA driver would and calls InitializeInjection on a machine that
// may have no driver and no GPU: it must never crash, always return 1, and report what it could
// not do (errors.txt and stderr) instead of failing the host program.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#ifndef ARGUS_INJECT_LIBRARY
#error "ARGUS_INJECT_LIBRARY must name libargus_inject.so"
#endif

namespace {

using InitFn = int (*)();

TEST(InjectLibrary, InitializesWithoutTraceDirOrDriverAndNeverFails) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("argus_inject_load_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("ARGUS_TRACE_DIR", dir.c_str(), 1);
  void* handle = dlopen(ARGUS_INJECT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto init = reinterpret_cast<InitFn>(dlsym(handle, "InitializeInjection"));
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init(), 1);
  EXPECT_EQ(init(), 1);  // idempotent
  // The output folder and its files exist; without a driver (CI) the reason is in errors.txt.
  EXPECT_TRUE(std::filesystem::exists(dir / "launches.jsonl"));
  std::ifstream errors(dir / "errors.txt");
  std::stringstream text;
  text << errors.rdbuf();
  if (!text.str().empty()) {
    EXPECT_EQ(text.str().rfind("argus-inject: ", 0), 0u) << text.str();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
