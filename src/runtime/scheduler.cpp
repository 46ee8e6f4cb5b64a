#include "argus/runtime/scheduler.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "argus/support/process.h"

namespace argus::runtime {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

std::atomic<bool> gInterrupted{false};

void onSigint(int) {
  if (gInterrupted.load()) {  // a second Ctrl-C (or SIGTERM) while stopping kills
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
  }
  gInterrupted.store(true);
}

std::string dirName(const std::string& id) {
  std::string out;
  for (char c : id)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (out.empty() || out[0] == '.') out.insert(0, "t");
  // Distinct ids may sanitize to the same name; the hash suffix keeps directories apart.
  if (out != id) out += "-" + contentHash(id).substr(0, 8);
  return out;
}

// Fixed-size pool running jobs in FIFO order. Jobs get the index of the thread running them.
class ThreadPool {
 public:
  explicit ThreadPool(std::size_t threads) {
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this, i] { loop(i); });
  }
  ~ThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void submit(std::function<void(std::size_t)> job) {
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

 private:
  void loop(std::size_t index) {
    for (;;) {
      std::function<void(std::size_t)> job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job(index);
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void(std::size_t)>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

struct Node {
  TaskDescriptor task;
  std::vector<std::size_t> upstream;
  std::vector<std::size_t> dependents;
  std::size_t waiting = 0;  // upstream tasks not yet succeeded
  bool ready = false;       // became ready (memo-checked, queued or dispatched)
  bool running = false;
  bool finished = false;
  bool branch = false;   // added by a Control task
  bool partial = false;  // config.partial_branches: runs with the branches that succeeded
  TaskOutputs outputs;
  TaskReport report;
  std::thread gpuThread;
  std::string device;  // GPU tasks: where it runs
};

struct Completion {
  std::size_t node;
  Result<TaskOutputs> result;
  std::string log;
  bool timedOut = false;
  bool cancelled = false;
  bool late = false;  // in-process executor returned after its deadline
  Lane lane;
  Clock::time_point start, end;
};

struct Device {
  std::string id;
  std::vector<std::size_t> running;  // node indices
  std::vector<bool> slots;
};

bool isFailure(TaskState s) {
  return s == TaskState::Failed || s == TaskState::TimedOut;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// One execution of a plan. Everything here runs on the scheduler thread except execute(), which
// runs on pool/device threads and touches only its own context and the completion queue.
class Run {
 public:
  Run(const ExecutorRegistry& executors, ResultStore& store, const RunOptions& options,
      std::atomic<bool>& cancelRequested)
      : executors_(executors), store_(store), options_(options), cancelRequested_(cancelRequested) {
    perDevice_ = std::max<std::size_t>(1, options_.maxTasksPerDevice);
    turnsPerDevice_ = std::max<std::size_t>(1, options_.maxTurnTasksPerDevice);
    for (const auto& id : options_.devices)
      devices_.push_back(
          Device{id, {}, std::vector<bool>(std::max(perDevice_, turnsPerDevice_), false)});
  }

  Result<RunReport> execute(const Plan& plan) {
    if (auto v = plan.validate(); !v) return std::unexpected(v.error());
    fs::path root = options_.workRoot;
    bool removeRoot = false;
    if (root.empty()) {
      auto tmp = makeTempDir("argus-run");
      if (!tmp) return std::unexpected(tmp.error());
      root = *tmp;
      removeRoot = !options_.keepTaskDirs;
    }
    root_ = root;
    const auto runStart = Clock::now();
    for (const auto& t : plan.tasks()) addNode(t);
    for (std::size_t i = 0; i < nodes_.size(); ++i) wire(i);
    counts_.total = nodes_.size();
    std::size_t threads = options_.cpuThreads ? options_.cpuThreads
                                              : std::max(1u, std::thread::hardware_concurrency());
    {
      ThreadPool pool(threads);
      pool_ = &pool;
      for (auto* o : options_.observers) o->onRunStart(nodes_.size());
      for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].waiting == 0) readyList_.push_back(i);
      loop();
      pool_ = nullptr;
    }
    for (auto& n : nodes_)
      if (n.gpuThread.joinable()) n.gpuThread.join();
    for (auto* o : options_.observers) o->onRunFinish(counts_);

    RunReport report;
    for (auto& n : nodes_) {
      (void)report.plan.add(n.task);
      n.report.id = n.task.id;
      n.report.type = n.task.type;
      report.tasks.push_back(std::move(n.report));
    }
    report.counts = counts_;
    report.cancelled = stopping_;
    report.elapsed = Clock::now() - runStart;
    if (removeRoot) {
      std::error_code ec;
      fs::remove_all(root, ec);
    }
    return report;
  }

 private:
  void addNode(const TaskDescriptor& t) {
    index_.emplace(t.id, nodes_.size());
    nodes_.emplace_back();
    nodes_.back().task = t;
    nodes_.back().partial = t.config.is_object() && t.config.value("partial_branches", false);
  }

  // Connects node i to its upstream tasks; returns how many it still waits for.
  void wire(std::size_t i) {
    Node& n = nodes_[i];
    for (const auto& id : n.task.upstream()) {
      std::size_t u = index_.at(id);
      n.upstream.push_back(u);
      nodes_[u].dependents.push_back(i);
      if (!(nodes_[u].finished && !isFailure(nodes_[u].report.outcome.state) &&
            nodes_[u].report.outcome.state != TaskState::Skipped &&
            nodes_[u].report.outcome.state != TaskState::Cancelled))
        ++n.waiting;
    }
  }

  bool stopRequested() const {
    return cancelRequested_.load() || (options_.cancelFlag && options_.cancelFlag->load());
  }

  void loop() {
    auto lastTick = Clock::now();
    while (counts_.done + counts_.failed + counts_.skipped < nodes_.size()) {
      if (!stopping_ && stopRequested()) beginStop();
      if (stopping_) cancelUnstarted();
      while (!readyList_.empty() && !stopping_) {
        std::size_t i = readyList_.front();
        readyList_.pop_front();
        makeReady(i);
      }
      dispatchGpu();
      if (counts_.done + counts_.failed + counts_.skipped >= nodes_.size()) break;
      std::vector<Completion> batch;
      {
        std::unique_lock lock(mutex_);
        if (completions_.empty() && readyList_.empty())
          cv_.wait_for(lock, options_.tick, [&] { return !completions_.empty(); });
        batch.swap(completions_);
      }
      for (auto& c : batch) complete(c);
      if (batch.empty() && readyList_.empty() && counts_.running == 0 && gpuQueue_.empty() &&
          !stopping_) {
        // Nothing can make progress: a bug, not a user error; fail the rest loudly.
        for (std::size_t i = 0; i < nodes_.size(); ++i)
          if (!nodes_[i].finished)
            finishUnrun(i, TaskState::Failed, "runtime: task never became ready (internal error)");
      }
      if (auto now = Clock::now(); now - lastTick >= options_.tick) {
        lastTick = now;
        for (auto* o : options_.observers) o->onTick(counts_);
      }
    }
  }

  void beginStop() {
    stopping_ = true;
    stop_.store(true);
  }

  // While stopping: everything that has not started is cancelled (also tasks that became ready
  // or were added by a Control task that finished during the stop).
  void cancelUnstarted() {
    readyList_.clear();
    gpuQueue_.clear();
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (!nodes_[i].finished && !nodes_[i].running)
        finishUnrun(i, TaskState::Cancelled, "run cancelled before the task started");
  }

  // Inputs (by binding name) and evidence (outputs of every other upstream task).
  void gatherInputs(const Node& n, std::map<std::string, Artifact>& inputs,
                    std::map<std::string, Artifact>& evidence) const {
    for (const auto& in : n.task.inputs) {
      const Node& p = nodes_[index_.at(in.task)];
      auto it = p.outputs.artifacts.find(in.output);
      if (it != p.outputs.artifacts.end()) inputs.emplace(in.name, it->second);
    }
    for (std::size_t u : n.upstream) {
      const Node& p = nodes_[u];
      bool producer = std::any_of(n.task.inputs.begin(), n.task.inputs.end(),
                                  [&](const InputBinding& b) { return b.task == p.task.id; });
      if (producer) continue;
      for (const auto& [name, a] : p.outputs.artifacts) evidence.emplace(p.task.id + "/" + name, a);
    }
  }

  void makeReady(std::size_t i) {
    Node& n = nodes_[i];
    if (n.finished || n.ready) return;
    n.ready = true;
    for (auto* o : options_.observers) o->onTaskReady(n.task);
    std::map<std::string, Artifact> inputs, evidence;
    gatherInputs(n, inputs, evidence);
    std::vector<std::pair<std::string, std::string>> hashes;
    hashes.reserve(inputs.size() + evidence.size());
    for (const auto& [name, a] : inputs) hashes.emplace_back(name, a.hash);
    for (const auto& [name, a] : evidence) hashes.emplace_back("@" + name, a.hash);
    n.report.memoKey = memoKey(n.task, std::move(hashes), executors_.version(n.task.executor));

    if (auto hit = store_.lookup(n.report.memoKey)) {
      store_.reused(n.task, n.report.memoKey);
      auto now = Clock::now();
      n.report.outcome.start = n.report.outcome.end = now;
      succeed(i, std::move(*hit), TaskState::Memoized);
      return;
    }
    Executor* executor = executors_.find(n.task.executor);
    if (executor == nullptr) {
      std::string known;
      for (const auto* r : executors_.records()) known += (known.empty() ? "" : ", ") + r->name;
      finishUnrun(i, TaskState::Failed,
                  fmt::format("runtime: no executor `{}` is registered (known: {}); register the "
                              "backend before running the plan",
                              n.task.executor, known.empty() ? "none" : known));
      return;
    }
    auto ctx = std::make_shared<TaskContext>(n.task, root_ / dirName(n.task.id));
    ctx->inputs = std::move(inputs);
    ctx->evidence = std::move(evidence);
    ctx->cancelFlag = &stop_;
    ctx->launcher = options_.launcher;
    if (n.task.needs(Requirement::Gpu)) {
      if (devices_.empty()) {
        finishUnrun(i, TaskState::Failed,
                    fmt::format("runtime: task `{}` needs a GPU but no devices are configured; "
                                "list them in RunOptions::devices",
                                n.task.id));
        return;
      }
      if (n.task.gpus > devices_.size()) {
        finishUnrun(i, TaskState::Failed,
                    fmt::format("runtime: task `{}` needs {} GPUs at once and this machine has "
                                "{} ({}); run it where there are enough, or lower the program "
                                "spec's run.gpus",
                                n.task.id, n.task.gpus, devices_.size(), deviceList()));
        return;
      }
      if (n.task.gpus > perTaskLimit()) {
        finishUnrun(i, TaskState::Failed,
                    fmt::format("runtime: task `{}` needs {} GPUs at once and one node has at "
                                "most {}; lower the program spec's run.gpus",
                                n.task.id, n.task.gpus, perTaskLimit()));
        return;
      }
      gpuQueue_.push_back(Pending{i, executor, std::move(ctx)});
      return;
    }
    ctx->deadline = deadlineFor(n.task);
    store_.begin(n.task, n.report.memoKey);
    n.running = true;
    ++counts_.running;
    for (auto* o : options_.observers) o->onTaskStart(n.task, Lane{false, {}, kNone}, counts_);
    pool_->submit([this, i, executor, ctx](std::size_t thread) {
      runTask(i, *executor, *ctx, Lane{false, {}, thread});
    });
  }

  /// A task that takes GPU turns may wait for the turns of the others sharing its device, so its
  /// limit scales with how many may.
  Clock::time_point deadlineFor(const TaskDescriptor& t) const {
    const double scale = t.isolation.gpuTurns ? static_cast<double>(turnsPerDevice_) : 1.0;
    if (t.timeoutSeconds)
      return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(*t.timeoutSeconds * scale));
    if (options_.defaultTimeout)
      return Clock::now() +
             std::chrono::duration_cast<Clock::duration>(*options_.defaultTimeout * scale);
    return Clock::time_point::max();
  }

  // Runs on a pool or device thread.
  void runTask(std::size_t i, Executor& executor, TaskContext& ctx, Lane lane) {
    Completion c{i, fail("runtime", "not run"), {}, false, false, false, lane, Clock::now(), {}};
    if (stop_.load()) {
      c.result = fail("runtime", "run cancelled before the task started");
      c.cancelled = true;
    } else {
      try {
        c.result = executor.execute(ctx);
      } catch (const std::exception& e) {
        c.result =
            fail("runtime", fmt::format("executor `{}` threw: {}", ctx.task.executor, e.what()));
      }
      c.timedOut = ctx.timedOut;
      c.cancelled = !c.result && ctx.cancelled() && !ctx.timedOut;
      c.late = c.result && ctx.expired();
    }
    c.end = Clock::now();
    c.log = std::move(ctx.log);
    {
      std::lock_guard lock(mutex_);
      completions_.push_back(std::move(c));
    }
    cv_.notify_one();
  }

  /// Devices a task takes: 1, or (multi-GPU programs) whole devices, as many as one task can hold
  /// for gpus = 0.
  std::size_t devicesFor(const TaskDescriptor& t) const {
    return t.gpus == 0 ? perTaskLimit() : t.gpus;
  }

  /// The most devices one task holds (RunOptions::maxDevicesPerTask).
  std::size_t perTaskLimit() const {
    return options_.maxDevicesPerTask == 0 ? devices_.size()
                                           : std::min(options_.maxDevicesPerTask, devices_.size());
  }

  std::string deviceList() const {
    std::string ids;
    for (const auto& d : devices_) ids += (ids.empty() ? "" : ",") + d.id;
    return ids;
  }

  bool admits(const Device& d, const TaskDescriptor& t) const {
    const bool turns = t.isolation.gpuTurns && devicesFor(t) == 1;
    if (d.running.size() >= (turns ? turnsPerDevice_ : perDevice_)) return false;
    if ((t.isolation.exclusiveDevice || devicesFor(t) > 1) && !d.running.empty()) return false;
    for (std::size_t r : d.running) {
      const Isolation& other = nodes_[r].task.isolation;
      if (other.exclusiveDevice || devicesFor(nodes_[r].task) > 1) return false;
      // Turn-taking tasks share a device only among themselves.
      if (turns != (other.gpuTurns && devicesFor(nodes_[r].task) == 1)) return false;
      if (!t.isolation.group.empty() && contains(other.incompatibleWith, t.isolation.group))
        return false;
      if (!other.group.empty() && contains(t.isolation.incompatibleWith, other.group)) return false;
    }
    return true;
  }

  /// Where a queued task would run now: the least busy device that admits it, or for a task of
  /// several GPUs that many idle ones; empty when it has to wait.
  std::vector<Device*> placement(const TaskDescriptor& t) {
    std::vector<Device*> chosen;
    if (devicesFor(t) > 1) {
      for (auto& d : devices_)
        if (chosen.size() < devicesFor(t) && admits(d, t)) chosen.push_back(&d);
      if (chosen.size() < devicesFor(t)) chosen.clear();
      return chosen;
    }
    Device* best = nullptr;
    for (auto& d : devices_)
      if (admits(d, t) && (!best || d.running.size() < best->running.size())) best = &d;
    if (best != nullptr) chosen.push_back(best);
    return chosen;
  }

  void dispatchGpu() {
    if (stopping_) return;
    for (auto it = gpuQueue_.begin(); it != gpuQueue_.end();) {
      const std::vector<Device*> devices = placement(nodes_[it->node].task);
      if (devices.empty()) {
        ++it;
        continue;
      }
      Pending p = std::move(*it);
      it = gpuQueue_.erase(it);
      Node& n = nodes_[p.node];
      // A multi-GPU task's devices are idle, so it takes slot 0 on each; its lane names them
      // all ("0,1": CUDA_VISIBLE_DEVICES).
      std::string ids;
      std::size_t slot = 0;
      for (Device* d : devices) {
        slot = static_cast<std::size_t>(std::find(d->slots.begin(), d->slots.end(), false) -
                                        d->slots.begin());
        d->slots[slot] = true;
        d->running.push_back(p.node);
        ids += (ids.empty() ? "" : ",") + d->id;
      }
      n.device = ids;
      p.ctx->device = ids;
      if (n.task.isolation.gpuTurns) p.ctx->turnSharers = turnsPerDevice_;
      p.ctx->deadline = deadlineFor(n.task);
      store_.begin(n.task, n.report.memoKey);
      n.running = true;
      ++counts_.running;
      Lane lane{true, ids, slot};
      for (auto* o : options_.observers) o->onTaskStart(n.task, lane, counts_);
      n.gpuThread = std::thread([this, i = p.node, executor = p.executor, ctx = p.ctx, lane] {
        runTask(i, *executor, *ctx, lane);
      });
    }
  }

  void releaseDevice(std::size_t i, const Lane& lane) {
    // A multi-GPU task's lane names every device it held: "0,1".
    for (auto& d : devices_) {
      if (("," + lane.device + ",").find("," + d.id + ",") == std::string::npos) continue;
      std::erase(d.running, i);
      if (lane.slot < d.slots.size()) d.slots[lane.slot] = false;
    }
  }

  void complete(Completion& c) {
    Node& n = nodes_[c.node];
    if (n.gpuThread.joinable()) n.gpuThread.join();
    if (c.lane.gpu) releaseDevice(c.node, c.lane);
    n.running = false;
    --counts_.running;
    n.report.outcome.lane = c.lane;
    n.report.outcome.start = c.start;
    n.report.outcome.end = c.end;
    n.report.log = std::move(c.log);
    n.report.executed = true;
    if (c.result && c.late) {
      c.result = fail("runtime", fmt::format("task `{}`: in-process executor `{}` returned after "
                                             "its timeout; its result was discarded",
                                             n.task.id, n.task.executor));
      c.timedOut = true;
    }
    if (!c.result) {
      TaskState state = c.cancelled  ? TaskState::Cancelled
                        : c.timedOut ? TaskState::TimedOut
                                     : TaskState::Failed;
      if (c.cancelled && c.result.error().message == "run cancelled before the task started")
        n.report.executed = false;
      store_.fail(n.task, n.report.memoKey, state, c.result.error().text(), n.report.log);
      failNode(c.node, state, c.result.error().text());
      return;
    }
    TaskOutputs outputs = std::move(*c.result);
    for (const auto& name : n.task.outputs)
      if (!outputs.artifacts.contains(name)) {
        std::string error = fmt::format(
            "runtime: task `{}` did not produce its declared output "
            "`{}`",
            n.task.id, name);
        store_.fail(n.task, n.report.memoKey, TaskState::Failed, error, n.report.log);
        failNode(c.node, TaskState::Failed, error);
        return;
      }
    if (n.task.type == TaskType::Control && !outputs.branches.empty()) {
      json branches = json::array();
      for (const auto& b : outputs.branches) branches.push_back(toJson(b));
      outputs.artifacts[kBranchesOutput] = Artifact::fromData(canonicalJson(branches));
    }
    auto stored = store_.publish(n.task, n.report.memoKey, std::move(outputs), n.report.log);
    if (!stored) {
      failNode(c.node, TaskState::Failed, stored.error().text());
      return;
    }
    succeed(c.node, std::move(*stored), TaskState::Succeeded);
  }

  // Adds the branches of Control task c; every task waiting for c also waits for them.
  Result<void> expand(std::size_t c, std::vector<TaskDescriptor> branches) {
    const std::string& cid = nodes_[c].task.id;
    std::unordered_set<std::string> newIds;
    for (const auto& b : branches) {
      if (b.id.empty() || index_.contains(b.id) || !newIds.insert(b.id).second)
        return fail("runtime", fmt::format("control task `{}` added task `{}`, whose id is empty "
                                           "or already in the plan",
                                           cid, b.id));
    }
    // Tasks downstream of c wait for the branches; a branch that waited for them would deadlock.
    std::unordered_set<std::size_t> downstream;
    std::vector<std::size_t> stack(nodes_[c].dependents);
    while (!stack.empty()) {
      std::size_t d = stack.back();
      stack.pop_back();
      if (!downstream.insert(d).second) continue;
      for (std::size_t e : nodes_[d].dependents) stack.push_back(e);
    }
    Plan check;  // validates references and cycles among the branches
    for (const auto& b : branches) {
      for (const auto& id : b.upstream()) {
        if (newIds.contains(id)) continue;
        auto it = index_.find(id);
        if (it == index_.end())
          return fail("runtime", fmt::format("control task `{}` added task `{}`, which refers to "
                                             "unknown task `{}`",
                                             cid, b.id, id));
        if (downstream.contains(it->second))
          return fail("runtime", fmt::format("control task `{}` added task `{}`, which depends on "
                                             "`{}`, a task that waits for `{}` (a cycle)",
                                             cid, b.id, id, cid));
        TaskDescriptor stub;  // stand-in so that the check plan resolves outside references
        stub.id = id;
        stub.outputs = nodes_[it->second].task.outputs;
        if (!check.find(id)) (void)check.add(std::move(stub));
      }
    }
    for (const auto& b : branches)
      if (auto r = check.add(b); !r) return r;
    if (auto v = check.validate(); !v)
      return fail("runtime", fmt::format("control task `{}` added an invalid branch: {}", cid,
                                         v.error().message));

    std::vector<std::size_t> waiters;
    for (std::size_t d : nodes_[c].dependents)
      if (!nodes_[d].finished) waiters.push_back(d);
    const std::size_t first = nodes_.size();
    for (auto& b : branches) addNode(b);
    for (std::size_t i = first; i < nodes_.size(); ++i) nodes_[i].branch = true;
    for (std::size_t i = first; i < nodes_.size(); ++i) wire(i);
    for (std::size_t d : waiters)
      for (std::size_t i = first; i < nodes_.size(); ++i) {
        nodes_[d].upstream.push_back(i);
        nodes_[i].dependents.push_back(d);
        ++nodes_[d].waiting;
      }
    counts_.total = nodes_.size();
    for (auto* o : options_.observers)
      o->onBranchAdded(nodes_[c].task, std::span<const TaskDescriptor>(branches));
    for (std::size_t i = first; i < nodes_.size(); ++i) {
      // A branch may hang off a task that already failed.
      for (std::size_t u : nodes_[i].upstream)
        if (nodes_[u].finished && nodes_[u].report.outcome.state != TaskState::Succeeded &&
            nodes_[u].report.outcome.state != TaskState::Memoized) {
          finishUnrun(i, TaskState::Skipped,
                      fmt::format("blocked: upstream task `{}` {}", nodes_[u].task.id,
                                  toString(nodes_[u].report.outcome.state)));
          break;
        }
      if (!nodes_[i].finished && nodes_[i].waiting == 0) readyList_.push_back(i);
    }
    return {};
  }

  void succeed(std::size_t i, TaskOutputs outputs, TaskState state) {
    Node& n = nodes_[i];
    if (n.task.type == TaskType::Control) {
      if (outputs.branches.empty())
        if (auto it = outputs.artifacts.find(kBranchesOutput); it != outputs.artifacts.end()) {
          auto text = it->second.read();
          json parsed = text ? json::parse(*text, nullptr, false) : json();
          if (parsed.is_array())
            for (const auto& b : parsed)
              if (auto t = taskFromJson(b)) outputs.branches.push_back(std::move(*t));
        }
      if (!outputs.branches.empty()) {
        auto branches = std::move(outputs.branches);
        outputs.branches.clear();
        if (auto r = expand(i, std::move(branches)); !r) {
          store_.fail(n.task, n.report.memoKey, TaskState::Failed, r.error().text(), n.report.log);
          failNode(i, TaskState::Failed, r.error().text());
          return;
        }
      }
    }
    Node& m = nodes_[i];  // expand() may have reallocated nodes_
    m.outputs = std::move(outputs);
    m.finished = true;
    m.report.outcome.state = state;
    ++counts_.done;
    if (state == TaskState::Memoized) ++counts_.memoized;
    for (auto* o : options_.observers) o->onTaskFinish(m.task, m.report.outcome, counts_);
    for (std::size_t d : nodes_[i].dependents) {
      Node& dn = nodes_[d];
      if (dn.waiting > 0) --dn.waiting;
      if (dn.waiting == 0 && !dn.finished && !dn.ready) readyList_.push_back(d);
    }
  }

  // Records a final state for a task that did not run (or whose run already ended).
  void finishUnrun(std::size_t i, TaskState state, std::string error) {
    Node& n = nodes_[i];
    if (n.finished) return;
    n.finished = true;
    n.report.outcome.state = state;
    n.report.outcome.error = std::move(error);
    if (n.report.outcome.start == Clock::time_point{})
      n.report.outcome.start = n.report.outcome.end = Clock::now();
    if (isFailure(state))
      ++counts_.failed;
    else
      ++counts_.skipped;
    for (auto* o : options_.observers) o->onTaskFinish(n.task, n.report.outcome, counts_);
  }

  // Fails task i and blocks everything downstream of it. A dependent with partial_branches is
  // not blocked by a failed or blocked Control branch: it stops waiting for that branch and
  // runs with the outputs of the branches that succeeded (its synthesis says which are missing).
  void failNode(std::size_t i, TaskState state, const std::string& error) {
    finishUnrun(i, state, error);
    std::vector<std::pair<std::size_t, std::size_t>> stack;  // (from, dependent)
    for (std::size_t d : nodes_[i].dependents) stack.emplace_back(i, d);
    while (!stack.empty()) {
      auto [from, d] = stack.back();
      stack.pop_back();
      Node& dn = nodes_[d];
      if (dn.finished || dn.running) continue;
      if (dn.partial && nodes_[from].branch && !stopping_) {
        if (dn.waiting > 0) --dn.waiting;
        if (dn.waiting == 0 && !dn.ready) readyList_.push_back(d);
        continue;
      }
      finishUnrun(
          d, stopping_ && state == TaskState::Cancelled ? TaskState::Cancelled : TaskState::Skipped,
          fmt::format("blocked: upstream task `{}` {}", nodes_[i].task.id, toString(state)));
      for (std::size_t e : nodes_[d].dependents) stack.emplace_back(d, e);
    }
  }

  struct Pending {
    std::size_t node;
    Executor* executor;
    std::shared_ptr<TaskContext> ctx;
  };

  const ExecutorRegistry& executors_;
  ResultStore& store_;
  const RunOptions& options_;
  std::atomic<bool>& cancelRequested_;
  std::atomic<bool> stop_{false};
  bool stopping_ = false;
  std::size_t perDevice_ = 1;
  std::size_t turnsPerDevice_ = 1;
  fs::path root_;
  std::deque<Node> nodes_;  // deque: running tasks hold references to their descriptors
  std::unordered_map<std::string, std::size_t> index_;
  std::deque<std::size_t> readyList_;
  std::deque<Pending> gpuQueue_;
  std::vector<Device> devices_;
  ThreadPool* pool_ = nullptr;
  RunCounts counts_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Completion> completions_;
};

}  // namespace

Scheduler::Scheduler(const ExecutorRegistry& executors, ResultStore& store, RunOptions options)
    : executors_(executors), store_(store), options_(std::move(options)) {}

Result<RunReport> Scheduler::run(const Plan& plan) {
  cancelled_.store(false);
  Run run(executors_, store_, options_, cancelled_);
  return run.execute(plan);
}

const std::atomic<bool>* interruptFlag() {
  return &gInterrupted;
}

void installInterruptHandler() {
  struct sigaction sa {};
  sa.sa_handler = onSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

void resetInterruptFlag() {
  gInterrupted.store(false);
}

// ---------------------------------------------------------------------------------------------
// RunReport

bool RunReport::ok() const {
  return std::all_of(tasks.begin(), tasks.end(), [](const TaskReport& t) {
    return t.outcome.state == TaskState::Succeeded || t.outcome.state == TaskState::Memoized;
  });
}

std::vector<const TaskReport*> RunReport::failures() const {
  std::vector<const TaskReport*> out;
  for (const auto& t : tasks)
    if (isFailure(t.outcome.state)) out.push_back(&t);
  return out;
}

const TaskReport* RunReport::find(const std::string& id) const {
  for (const auto& t : tasks)
    if (t.id == id) return &t;
  return nullptr;
}

json RunReport::toJson() const {
  Clock::time_point origin = Clock::time_point::max();
  for (const auto& t : tasks) origin = std::min(origin, t.outcome.start);
  auto us = [&](Clock::time_point tp) {
    return std::chrono::duration<double, std::micro>(tp - origin).count();
  };
  json jt = json::array();
  for (const auto& t : tasks) {
    json e{{"id", t.id},
           {"type", toString(t.type)},
           {"state", toString(t.outcome.state)},
           {"executed", t.executed},
           {"memo_key", t.memoKey},
           {"lane", t.outcome.lane.name()},
           {"start_us", us(t.outcome.start)},
           {"end_us", us(t.outcome.end)}};
    if (!t.outcome.error.empty()) e["error"] = t.outcome.error;
    if (!t.log.empty()) e["log"] = t.log;
    jt.push_back(std::move(e));
  }
  return json{{"argus_run", 1},
              {"ok", ok()},
              {"cancelled", cancelled},
              {"elapsed_s", std::chrono::duration<double>(elapsed).count()},
              {"counts",
               {{"total", counts.total},
                {"done", counts.done},
                {"memoized", counts.memoized},
                {"failed", counts.failed},
                {"skipped", counts.skipped}}},
              {"tasks", std::move(jt)}};
}

std::string RunReport::toText() const {
  std::string out = fmt::format(
      "{} tasks: {} done ({} memoized), {} failed, {} skipped/cancelled{} in {:.2f} s\n",
      counts.total, counts.done, counts.memoized, counts.failed, counts.skipped,
      cancelled ? " — run cancelled" : "", std::chrono::duration<double>(elapsed).count());
  for (const auto* t : failures()) {
    fmt::format_to(std::back_inserter(out), "FAILED {} [{}]: {}\n", t->id,
                   toString(t->outcome.state), t->outcome.error);
    // The last lines of the log usually say why.
    std::vector<std::string_view> lines;
    std::string_view log = t->log;
    while (!log.empty()) {
      auto nl = log.find('\n');
      lines.push_back(log.substr(0, nl));
      log = nl == std::string_view::npos ? std::string_view{} : log.substr(nl + 1);
    }
    std::size_t from = lines.size() > 10 ? lines.size() - 10 : 0;
    for (std::size_t k = from; k < lines.size(); ++k)
      fmt::format_to(std::back_inserter(out), "  | {}\n", lines[k]);
  }
  return out;
}

}  // namespace argus::runtime
