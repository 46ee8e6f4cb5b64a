#include <unistd.h>

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/runtime/observer.h"
#include "argus/support/process.h"

namespace argus::runtime {

std::string Lane::name() const {
  if (gpu) return fmt::format("gpu{}/{}", device, slot);
  if (slot == std::numeric_limits<std::size_t>::max()) return "cpu";
  return fmt::format("cpu-{}", slot);
}

// ---------------------------------------------------------------------------------------------
// ProgressObserver

ProgressObserver::ProgressObserver(std::FILE* out, std::chrono::milliseconds interval)
    : out_(out), interval_(interval), tty_(::isatty(::fileno(out)) != 0) {}

void ProgressObserver::onRunStart(std::size_t) {
  last_ = {};
}

void ProgressObserver::onTaskStart(const TaskDescriptor& task, const Lane& lane,
                                   const RunCounts& counts) {
  if (lane.gpu) currentGpu_ = fmt::format("{} on gpu {}", task.id, lane.device);
  print(counts, false);
}

void ProgressObserver::onTaskFinish(const TaskDescriptor& task, const TaskOutcome& outcome,
                                    const RunCounts& counts) {
  if (outcome.lane.gpu && currentGpu_.starts_with(task.id + " ")) currentGpu_.clear();
  if (!tty_ && (outcome.state == TaskState::Failed || outcome.state == TaskState::TimedOut))
    std::fprintf(out_, "argus: task %s %s: %s\n", task.id.c_str(),
                 std::string(toString(outcome.state)).c_str(), outcome.error.c_str());
  print(counts, false);
}

void ProgressObserver::onTick(const RunCounts& counts) {
  print(counts, false);
}

void ProgressObserver::onRunFinish(const RunCounts& counts) {
  currentGpu_.clear();
  print(counts, true);
  if (tty_) std::fputc('\n', out_);
  std::fflush(out_);
}

void ProgressObserver::print(const RunCounts& c, bool force) {
  auto now = Clock::now();
  // A TTY line is cheap to redraw; ten times a second is smooth and costs nothing.
  auto every = tty_ ? std::chrono::milliseconds(100) : interval_;
  if (!force && last_ != Clock::time_point{} && now - last_ < every) return;
  last_ = now;
  std::string line = fmt::format("argus: {}/{} done, {} running, {} failed, {} skipped", c.done,
                                 c.total, c.running, c.failed, c.skipped);
  if (c.memoized) line += fmt::format(" ({} reused)", c.memoized);
  if (!currentGpu_.empty()) line += " | " + currentGpu_;
  if (tty_) {
    std::size_t width = line.size();
    if (width < lastWidth_) line.append(lastWidth_ - width, ' ');
    lastWidth_ = width;
    std::fprintf(out_, "\r%s", line.c_str());
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

// ---------------------------------------------------------------------------------------------
// ChromeTraceObserver

void ChromeTraceObserver::onRunStart(std::size_t) {
  origin_ = Clock::now();
  events_.clear();
}

void ChromeTraceObserver::onTaskFinish(const TaskDescriptor& task, const TaskOutcome& outcome,
                                       const RunCounts&) {
  if (outcome.start == Clock::time_point{}) return;
  auto us = [&](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - origin_).count();
  };
  bool ran = outcome.state != TaskState::Skipped && outcome.state != TaskState::Memoized &&
             !(outcome.state == TaskState::Cancelled && outcome.start == outcome.end);
  events_.push_back(Event{task.id, std::string(toString(task.type)),
                          ran ? outcome.lane.name() : "scheduler",
                          std::string(toString(outcome.state)), us(outcome.start),
                          std::max(0.0, us(outcome.end) - us(outcome.start))});
}

void ChromeTraceObserver::onRunFinish(const RunCounts&) {
  if (!path_.empty()) (void)write(path_);
}

std::string ChromeTraceObserver::json() const {
  using nlohmann::json;
  // Stable track ids: scheduler first, then CPU threads, then device slots, each sorted by name.
  std::map<std::string, int> tids;
  for (const auto& e : events_) tids.emplace(e.lane, 0);
  std::vector<std::string> names;
  for (const auto& [name, id] : tids) names.push_back(name);
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    auto rank = [](const std::string& n) {
      return n == "scheduler" ? 0 : n.starts_with("cpu") ? 1 : 2;
    };
    return rank(a) < rank(b);
  });
  for (std::size_t i = 0; i < names.size(); ++i) tids[names[i]] = static_cast<int>(i) + 1;
  json events = json::array();
  events.push_back({{"ph", "M"},
                    {"name", "process_name"},
                    {"pid", 1},
                    {"tid", 0},
                    {"args", {{"name", "argus runtime"}}}});
  for (const auto& [name, tid] : tids) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 1},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_sort_index"},
                      {"pid", 1},
                      {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
  }
  for (const auto& e : events_)
    events.push_back({{"ph", "X"},
                      {"name", e.name},
                      {"cat", e.category},
                      {"pid", 1},
                      {"tid", tids[e.lane]},
                      {"ts", e.startUs},
                      {"dur", e.durationUs},
                      {"args", {{"state", e.state}}}});
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump();
}

Result<void> ChromeTraceObserver::write(const std::filesystem::path& path) const {
  return writeFile(path, json());
}

}  // namespace argus::runtime
