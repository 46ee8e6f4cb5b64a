#include "gpu_turn.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace argus::inject {
namespace {

namespace fs = std::filesystem;

/// A turn file of this test process's own in the temporary directory.
fs::path turnFile(const std::string& tag) {
  return fs::temp_directory_path() /
         ("argus-gpu-turn-" + tag + "-" + std::to_string(::getpid()) + ".turn");
}

// flock(2) locks belong to the open file, so two GpuTurns in one process exclude each other as
// two processes do.
TEST(GpuTurn, OneHolderAtATimeAndReleasedWithTheHolder) {
  const fs::path file = turnFile("test");
  {
    GpuTurn first;
    ASSERT_EQ(first.acquire(file), "");
    EXPECT_TRUE(first.held());
    EXPECT_EQ(first.acquire(file), "");  // taking it again is a no-op
    GpuTurn second;
    const std::string busy = second.acquire(file, /*wait=*/false);
    EXPECT_NE(busy.find("cannot take the turn"), std::string::npos) << busy;
    EXPECT_FALSE(second.held());
  }
  GpuTurn later;
  EXPECT_EQ(later.acquire(file, /*wait=*/false), "");
  later.release();
  EXPECT_FALSE(later.held());
  GpuTurn next;
  EXPECT_EQ(next.acquire(file, /*wait=*/false), "");  // released before its holder is gone
  GpuTurn nowhere;
  EXPECT_NE(nowhere.acquire("/nonexistent-dir/x.turn").find("cannot open the turn file"),
            std::string::npos);
  fs::remove(file);
}

// The quiet-time slots: a process sees the latest event of each kind of another (here a child),
// never its own, and the hold's descriptor sits above the ones opened after it.
TEST(GpuTurn, EventsOfOtherProcessesAndADescriptorThatClosesLast) {
  using Event = GpuTurn::Event;
  const fs::path file = turnFile("events");
  fs::remove(file);
  GpuTurn mine;
  ASSERT_EQ(mine.share(file), "");
  const int later = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(later, 0);
  EXPECT_GT(mine.descriptor(), later) << "closes after the descriptors opened after it";
  ::close(later);
  EXPECT_EQ(mine.lastOtherEvent(Event::SetUpEnded), std::nullopt);
  ASSERT_TRUE(mine.noteEvent(Event::SetUpEnded));
  EXPECT_EQ(mine.lastOtherEvent(Event::SetUpEnded), std::nullopt) << "its own event";
  const std::uint64_t before = GpuTurn::nowNs();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    GpuTurn other;
    ::_exit(other.share(file).empty() && other.noteEvent(Event::SetUpEnded) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto seen = mine.lastOtherEvent(Event::SetUpEnded);
  ASSERT_TRUE(seen.has_value());
  EXPECT_GE(*seen, before);
  EXPECT_LE(*seen, GpuTurn::nowNs());
  EXPECT_EQ(mine.lastOtherEvent(Event::TurnGivenUp), std::nullopt) << "another kind";
  mine.release();
  fs::remove(file);
}

// The file's layout (31-byte records "%10d %19llu\n", two per process slot) written by hand: a
// live process in this process's first slot keeps its record, a time after now (a turn file that
// outlived a reboot) is left out rather than waited for, and text that is no record is skipped.
TEST(GpuTurn, SlotsOfLiveProcessesAreKeptAndFutureTimesIgnored) {
  using Event = GpuTurn::Event;
  const fs::path file = turnFile("slots");
  fs::remove(file);
  const auto record = [](long pid, unsigned long long ns) {
    char text[64];
    std::snprintf(text, sizeof text, "%10ld %19llu\n", pid, ns);
    return std::string(text, 31);
  };
  const std::size_t first = static_cast<std::size_t>(::getpid()) % 1024;
  const long neighbour = ::getpid() + 1024;  // another process with the same first slot
  const std::uint64_t now = GpuTurn::nowNs();
  std::string table(1024 * 2 * 31, '\0');
  table.replace(first * 62, 31, record(neighbour, now - 1000));
  const std::size_t elsewhere = (first + 500) % 1024;
  table.replace(elsewhere * 62 + 31, 31, record(neighbour + 1, now + 3'600'000'000'000ull));
  // Text that is no record (another tool's file, a torn write) is skipped, not parsed across.
  table.replace(((first + 7) % 1024) * 62, 62, std::string(62, 'x'));
  {
    std::FILE* out = std::fopen(file.c_str(), "wb");
    ASSERT_NE(out, nullptr);
    std::fwrite(table.data(), 1, table.size(), out);
    std::fclose(out);
  }
  GpuTurn mine;
  ASSERT_EQ(mine.share(file), "");
  ASSERT_TRUE(mine.noteEvent(Event::SetUpEnded));
  EXPECT_EQ(mine.lastOtherEvent(Event::SetUpEnded), now - 1000) << "the neighbour's, kept";
  EXPECT_EQ(mine.lastOtherEvent(Event::TurnGivenUp), std::nullopt) << "a future time, left out";
  // The neighbour's set-up ended 1 us before `now`: a 1 s quiet time leaves almost all of it to
  // wait, one for set-ups only as much, none when set-ups are not waited for.
  const std::uint64_t second = 1'000'000'000;
  const std::uint64_t wait = mine.quietWait(second, second);
  EXPECT_GT(wait, second - 1'000'000'000 / 10);
  EXPECT_LE(wait, second);
  EXPECT_GT(mine.quietWait(second, 0), 0u);
  EXPECT_EQ(mine.quietWait(0, second), 0u) << "no other exit recorded";
  EXPECT_EQ(mine.quietWait(1000, 0), 0u) << "already over";
  EXPECT_EQ(mine.quietWait(0, 0), 0u) << "no quiet time (the default)";
  mine.release();
  fs::remove(file);
}

// Set-up holds are shared among processes; the turn excludes them all, and converting back to
// shared lets the others in again.
TEST(GpuTurn, SharedHoldsExcludeTheTurnButNotEachOther) {
  const fs::path file = turnFile("shared");
  GpuTurn a;
  GpuTurn b;
  ASSERT_EQ(a.share(file), "");
  ASSERT_EQ(b.share(file, /*wait=*/false), "");
  EXPECT_EQ(a.hold(), GpuTurn::Hold::Shared);
  EXPECT_FALSE(a.held());
  EXPECT_NE(a.acquire(file, /*wait=*/false), "") << "the turn while another is setting up";
  EXPECT_EQ(a.hold(), GpuTurn::Hold::None);  // a failed conversion gives up the shared hold
  b.release();
  ASSERT_EQ(a.acquire(file, /*wait=*/false), "");
  EXPECT_TRUE(a.held());
  GpuTurn c;
  EXPECT_NE(c.share(file, /*wait=*/false), "") << "set-up while another has the turn";
  ASSERT_EQ(a.share(file), "");  // the exit handler's conversion
  EXPECT_EQ(c.share(file, /*wait=*/false), "");
  fs::remove(file);
}

TEST(GpuTurn, DriverCallsThatPutWorkOnTheGpu) {
  for (const char* name :
       {"cuLaunchKernel", "cuLaunchKernelEx_ptsz", "cuMemcpyHtoD_v2", "cuMemcpyAsync",
        "cuMemsetD8_v2", "cuGraphLaunch", "cuStreamWriteValue32_v2"})
    EXPECT_TRUE(submitsGpuWork(name)) << name;
  for (const char* name : {"cuInit", "cuCtxCreate_v2", "cuMemAlloc_v2", "cuModuleLoadData",
                           "cuCtxSynchronize", "cuMemFree_v2", "cuStreamCreate"})
    EXPECT_FALSE(submitsGpuWork(name)) << name;
  EXPECT_FALSE(submitsGpuWork(nullptr));
}

// ARGUS_GPU_TURN_L2: unset or empty means the default (empty the L2); a misspelt mode is refused,
// not read as another.
TEST(GpuTurn, L2ModesByName) {
  EXPECT_EQ(turnL2(nullptr), TurnL2::Empty);
  EXPECT_EQ(turnL2(""), TurnL2::Empty);
  EXPECT_EQ(turnL2("empty"), TurnL2::Empty);
  EXPECT_EQ(turnL2("read"), TurnL2::Read);
  EXPECT_EQ(turnL2("write"), TurnL2::Write);
  EXPECT_EQ(turnL2("none"), TurnL2::Keep);
  EXPECT_EQ(turnL2("Empty"), std::nullopt);
  EXPECT_EQ(turnL2("flush"), std::nullopt);
  EXPECT_EQ(turnL2("0"), std::nullopt);
}

// A child of a process that holds the file (shared or exclusive) sees it and takes no turn of its
// own; a child of one that holds nothing does not.
TEST(GpuTurn, ChildrenSeeTheirAncestorsHold) {
  const fs::path file = turnFile("ancestor");
  const auto childSees = [&] {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(ancestorHoldsLock(file) ? 0 : 1);
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  {
    GpuTurn none;
    ASSERT_EQ(none.share(file), "");
    none.release();  // the file exists, nobody holds it
    EXPECT_FALSE(childSees());
  }
  GpuTurn parent;
  ASSERT_EQ(parent.share(file), "");
  EXPECT_TRUE(childSees());
  ASSERT_EQ(parent.acquire(file), "");
  EXPECT_TRUE(childSees());
  EXPECT_FALSE(ancestorHoldsLock(file)) << "this process holds it; no ancestor does";
  EXPECT_FALSE(ancestorHoldsLock("/nonexistent/x.turn"));
  fs::remove(file);
}

}  // namespace
}  // namespace argus::inject
