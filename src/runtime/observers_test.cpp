#include "argus/runtime/observer.h"

#include <cstdio>

#include <gtest/gtest.h>

#include "argus/runtime/scheduler.h"
#include "argus/support/process.h"
#include "runtime_test_util.h"

namespace argus::runtime {
namespace {

using nlohmann::json;

// Records hook calls; also checks they are never concurrent.
class RecordingObserver final : public RunObserver {
 public:
  void onRunStart(std::size_t n) override { log("run " + std::to_string(n)); }
  void onTaskReady(const TaskDescriptor& t) override { log("ready " + t.id); }
  void onTaskStart(const TaskDescriptor& t, const Lane&, const RunCounts&) override {
    log("start " + t.id);
  }
  void onTaskFinish(const TaskDescriptor& t, const TaskOutcome& o, const RunCounts&) override {
    log("finish " + t.id + " " + std::string(toString(o.state)));
  }
  void onBranchAdded(const TaskDescriptor& c, std::span<const TaskDescriptor> added) override {
    log("branch " + c.id + " +" + std::to_string(added.size()));
  }
  void onRunFinish(const RunCounts& c) override { log("done " + std::to_string(c.done)); }
  std::vector<std::string> events;

 private:
  void log(std::string e) {
    EXPECT_FALSE(inside_.exchange(true)) << "hooks ran concurrently";
    events.push_back(std::move(e));
    inside_ = false;
  }
  std::atomic<bool> inside_{false};
};

std::size_t indexOf(const std::vector<std::string>& v, const std::string& s) {
  auto it = std::find(v.begin(), v.end(), s);
  EXPECT_NE(it, v.end()) << s;
  return static_cast<std::size_t>(it - v.begin());
}

class ObserverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registry_.add({"cpu", "", test::recordingExecutor(timeline_)}));
    ASSERT_TRUE(registry_.add({"gpu", "", test::recordingExecutor(timeline_)}));
    ASSERT_TRUE(registry_.add(
        {"control", "", std::make_shared<FunctionExecutor>([](TaskContext&) -> Result<TaskOutputs> {
           TaskOutputs out;
           out.branches.push_back(test::gpuTask("collect", "gpu"));
           return out;
         })}));
    ASSERT_TRUE(plan_.add(test::task("compile", "cpu")));
    ASSERT_TRUE(plan_.add(test::task("discover", "control", {}, {}, TaskType::Control)));
    auto s = test::task("report", "cpu", {"compile.out"});
    s.dependencies = {"discover"};
    ASSERT_TRUE(plan_.add(s));
  }
  RunReport run(std::vector<RunObserver*> observers) {
    RunOptions o;
    o.cpuThreads = 2;
    o.devices = {"0"};
    o.observers = std::move(observers);
    Scheduler s(registry_, store_, o);
    auto r = s.run(plan_);
    EXPECT_TRUE(r);
    return *r;
  }
  test::Timeline timeline_;
  ExecutorRegistry registry_;
  MemoryResultStore store_;
  Plan plan_;
};

TEST_F(ObserverTest, HooksArriveInCausalOrder) {
  RecordingObserver rec;
  auto report = run({&rec});
  ASSERT_TRUE(report.ok()) << report.toText();
  const auto& e = rec.events;
  EXPECT_EQ(e.front(), "run 3");
  EXPECT_EQ(e.back(), "done 4");
  EXPECT_LT(indexOf(e, "branch discover +1"), indexOf(e, "ready collect"));
  EXPECT_LT(indexOf(e, "ready collect"), indexOf(e, "start collect"));
  EXPECT_LT(indexOf(e, "finish collect succeeded"), indexOf(e, "ready report"));
  EXPECT_LT(indexOf(e, "finish compile succeeded"), indexOf(e, "ready report"));
}

TEST_F(ObserverTest, ChromeTraceHasOneTrackPerLane) {
  ChromeTraceObserver trace;
  auto report = run({&trace});
  ASSERT_TRUE(report.ok());
  json j = json::parse(trace.json());
  std::set<std::string> tracks;
  std::size_t spans = 0;
  for (const auto& ev : j["traceEvents"]) {
    if (ev["ph"] == "M" && ev["name"] == "thread_name") tracks.insert(ev["args"]["name"]);
    if (ev["ph"] == "X") {
      ++spans;
      EXPECT_GE(ev["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(spans, 4u);
  EXPECT_TRUE(tracks.contains("gpu0/0")) << j.dump();
  EXPECT_TRUE(std::any_of(tracks.begin(), tracks.end(),
                          [](const std::string& t) { return t.starts_with("cpu-"); }));
}

std::string readBack(std::FILE* f) {
  std::rewind(f);
  std::string text;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, f)) text.append(buffer, n);
  return text;
}

TEST_F(ObserverTest, ProgressPrintsPlainLinesWhenNotATty) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressObserver progress(f, std::chrono::hours(1));
  progress.setTty(false);
  run({&progress});
  std::string text = readBack(f);
  std::fclose(f);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_NE(text.find("argus: 4/4 done, 0 running, 0 failed, 0 skipped\n"), std::string::npos)
      << text;
}

TEST_F(ObserverTest, ProgressRewritesOneLineOnATty) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressObserver progress(f);
  progress.setTty(true);
  run({&progress});
  std::string text = readBack(f);
  std::fclose(f);
  EXPECT_NE(text.find("\rargus: 4/4 done"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

}  // namespace
}  // namespace argus::runtime
