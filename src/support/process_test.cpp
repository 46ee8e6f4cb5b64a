#include "argus/support/process.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace argus {
namespace {

namespace fs = std::filesystem;

// A program that is still open for writing in another process cannot be run (ETXTBSY). Here a
// child started while the file was open inherits the descriptor and keeps it for 0.3 s; running
// the file waits for that instead of failing.
TEST(RunProcess, WaitsForAnExecutableStillOpenForWritingElsewhere) {
  const fs::path dir =
      fs::temp_directory_path() / ("argus-process-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path script = dir / "hello.sh";
  const int fd = ::open(script.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0755);  // no O_CLOEXEC
  ASSERT_GE(fd, 0);
  const std::string text = "#!/bin/sh\necho hello\n";
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ProcessOptions background;
  background.timeout = std::chrono::seconds(5);
  std::thread holder([&] { (void)runProcess({"sleep", "0.3"}, background); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the child holds fd now
  ::close(fd);
  auto ran = runProcess({script.string()});
  holder.join();
  ASSERT_TRUE(ran.has_value()) << ran.error().message;
  EXPECT_EQ(ran->out, "hello\n");
  fs::remove_all(dir);
}

// writeFile's descriptor is not inherited: an executable it wrote runs at once.
TEST(RunProcess, ProgramsWrittenByWriteFileRun) {
  const fs::path dir =
      fs::temp_directory_path() / ("argus-process-test2-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path script = dir / "hi.sh";
  ASSERT_TRUE(writeFile(script, "#!/bin/sh\necho hi\n"));
  fs::permissions(script, fs::perms::owner_all);
  auto ran = runProcess({script.string()});
  ASSERT_TRUE(ran.has_value()) << ran.error().message;
  EXPECT_EQ(ran->out, "hi\n");
  auto bad = writeFile(dir / "missing" / "x", "text");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("cannot write"), std::string::npos);
  fs::remove_all(dir);
}

// A variable requested twice (Argus's default, then a program spec's run.env) reaches the child
// once, with the later value; the others are inherited or set as asked. `env` itself prints the
// environment it was given (a shell would fold duplicates on its own).
TEST(RunProcess, ALaterSettingOfAVariableReplacesAnEarlierOne) {
  ProcessOptions options;
  options.environment = {
      {"ARGUS_TEST_A", "first"}, {"ARGUS_TEST_B", "b"}, {"ARGUS_TEST_A", "last"}};
  auto ran = runProcess({"env"}, options);
  ASSERT_TRUE(ran.has_value()) << ran.error().message;
  std::vector<std::string> ours;
  std::istringstream lines(ran->out);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("ARGUS_TEST_")) ours.push_back(line);
  EXPECT_EQ(ours, (std::vector<std::string>{"ARGUS_TEST_B=b", "ARGUS_TEST_A=last"}));
}

}  // namespace
}  // namespace argus
