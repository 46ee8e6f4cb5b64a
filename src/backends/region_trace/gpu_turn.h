// The device's turn: how several traced processes share one GPU without their measured GPU work
// ever overlapping other GPU activity. Probe collections are separate processes; much of a
// process's life (exec, loading libcuda and CUPTI, creating the context, loading modules, the
// program's host set-up) is not the work being measured, so they start together. One lock file
// per device, two kinds of hold (flock(2)):
//   shared     from cuInit until the first GPU work (a launch, copy or memset), and again from the
//              exit handler to the end of the process: context creation, module uploads, memory
//              set-up and teardown, which the driver may carry out on the GPU. Many at once.
//   exclusive  from the first GPU work until the exit handler has synchronized the context: the
//              program's own work, the measured launch among it. One process, and no process in
//              its shared phase, at a time. With ARGUS_GPU_TURN_IDLE_MS the process gives it up
//              (holding nothing) while it is idle after its measured launch, and its next driver
//              call, whatever it is, waits for it again.
// Every sharing process follows the same rule, so a measured launch is its own execution on the
// device: no other process's kernel, copy or driver set-up runs beside it. The kernel drops a
// hold when its process ends, also after a crash. kernels.jsonl's CUPTI intervals let the join
// check the kernels afterwards.
//
// Three things the holds cannot see, measured on the H200 (experiments/HISTORY.md, issue 7):
// - The L2's content. A process's input copies stay in L2 for its kernels only when the L2 holds
//   little else: after another process's exit (its teardown leaves the L2 nearly empty) they
//   did, and TMA loads measured 320-400 ns; after a batch of context set-ups, or after a buffer
//   of twice the L2's size was written or read, they did not, and the same loads measured
//   416-830 ns. So the first holder after concurrent set-ups measured 17-117 % high in about a
//   third of the batches. A new holder therefore empties the L2 before the program's first GPU
//   work (TurnL2::Empty, the injection library's default: it reads a buffer of twice the L2's
//   size with a kernel of its own, then frees the buffer, and the lines go with it). With it, 64
//   probes at eight at once (32 with no quiet time, 32 with 60 ms after exits) all came within
//   15 % of their one-at-a-time values.
// - The driver's work for a context outlives the calls that asked for it. Before the L2 was
//   emptied, probes whose kernels ran within ~60 ms of another process's exit often measured
//   high. The file therefore also records, per process, when it last ended a set-up or gave up
//   the turn, at its exit or while idle (noteEvent), and a new holder can wait until a quiet time
//   has passed since the latest such moment of another process (quietWait;
//   ARGUS_GPU_TURN_QUIET_MS in the injection library, default 0 since the L2 is emptied: the
//   quiet time's effect was the L2's).
// - A process's descriptors are closed at its exit in ascending order, so a hold opened during
//   cuInit would end before the driver's descriptors opened later (the context's) are closed and
//   the driver tears the context down. The hold's descriptor is therefore moved above them
//   (kHighDescriptor): it closes last.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace argus::inject {

/// What a new holder does to the L2 once it has the turn, before the program's first GPU work
/// (ARGUS_GPU_TURN_L2).
enum class TurnL2 {
  Empty,  ///< `empty` (default): read a buffer of twice the L2's size, then free it.
  Read,   ///< `read`: read it and keep it: the L2 full of that buffer's clean lines.
  Write,  ///< `write`: write it and keep it: the L2 full of dirty lines.
  Keep,   ///< `none`: leave the L2 as the processes before left it.
};

/// ARGUS_GPU_TURN_L2's value as a TurnL2: unset or "" is Empty; nullopt for anything else not
/// named above.
inline std::optional<TurnL2> turnL2(const char* value) {
  const std::string_view text = value == nullptr ? "" : value;
  if (text.empty() || text == "empty") return TurnL2::Empty;
  if (text == "read") return TurnL2::Read;
  if (text == "write") return TurnL2::Write;
  if (text == "none") return TurnL2::Keep;
  return std::nullopt;
}

/// A process's hold on one device's turn file.
class GpuTurn {
 public:
  enum class Hold { None, Shared, Exclusive };

  GpuTurn() = default;
  GpuTurn(const GpuTurn&) = delete;
  GpuTurn& operator=(const GpuTurn&) = delete;
  ~GpuTurn() { release(); }

  /// Waits for a shared hold of `path` (created when missing). "" on success, else why not.
  std::string share(const std::string& path, bool wait = true) {
    return take(path, LOCK_SH, Hold::Shared, wait);
  }
  /// Waits for the exclusive hold (the turn), converting a shared one. "" on success.
  std::string acquire(const std::string& path, bool wait = true) {
    return take(path, LOCK_EX, Hold::Exclusive, wait);
  }

  [[nodiscard]] Hold hold() const { return hold_; }
  /// The turn (exclusive hold) is this process's.
  [[nodiscard]] bool held() const { return hold_ == Hold::Exclusive; }

  /// Drops every hold (a later share or acquire waits again).
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    hold_ = Hold::None;
  }

  /// The hold's descriptor (-1 without one).
  [[nodiscard]] int descriptor() const { return fd_; }

  /// What noteEvent records; each kind has its own quiet time in the injection library.
  /// TurnGivenUp: the turn given up at the exit or while idle, or, after an idle release, the
  /// teardown begun.
  enum class Event { SetUpEnded = 0, TurnGivenUp = 1 };

  /// Records in the open file that this process had `event` now, on the steady clock (which all
  /// processes of the machine share), in the slot it claims at its first note: from pid modulo
  /// kSlots onward, the first that is its own, empty, or holds only events older than kStaleNs
  /// (so that processes alive together keep apart even when their pids collide). False when the
  /// file could only be opened read-only or the write failed: then others do not wait for it.
  bool noteEvent(Event event) {
    if (fd_ < 0) return false;
    if (slot_ < 0) slot_ = claimSlot();
    char line[64];
    const int length =
        std::snprintf(line, sizeof line, "%10d %19llu\n", static_cast<int>(::getpid()),
                      static_cast<unsigned long long>(nowNs()));
    if (length != static_cast<int>(kSlotBytes)) return false;
    const auto at = static_cast<off_t>(
        (static_cast<std::size_t>(slot_) * kKinds + static_cast<std::size_t>(event)) * kSlotBytes);
    return ::pwrite(fd_, line, kSlotBytes, at) == static_cast<ssize_t>(kSlotBytes);
  }

  /// The steady-clock time of the latest `event` (noteEvent) of another process, if any. Times
  /// after now are left out: they come from before the machine started again (a turn file that
  /// outlived a reboot) or are not the clock's, and would make a process wait for nothing.
  [[nodiscard]] std::optional<std::uint64_t> lastOtherEvent(Event event) const {
    return latestOther(readTable(), event, nowNs());
  }

  /// How long a new holder still waits: until `setUpNs` have passed since another process's
  /// latest set-up end and `exitNs` since its latest giving-up of the turn (0 for a kind: not
  /// waited for). Never more than the larger of the two.
  [[nodiscard]] std::uint64_t quietWait(std::uint64_t setUpNs, std::uint64_t exitNs) const {
    if (setUpNs == 0 && exitNs == 0) return 0;  // the default: the file is not read
    const std::string table = readTable();      // one read for both kinds
    const std::uint64_t now = nowNs();
    std::uint64_t until = 0;
    for (const auto& [event, quiet] :
         {std::pair{Event::SetUpEnded, setUpNs}, std::pair{Event::TurnGivenUp, exitNs}})
      if (quiet != 0)
        if (const auto last = latestOther(table, event, now))
          until = std::max(until, *last + quiet);
    return until > now ? until - now : 0;
  }

  /// The clock noteEvent writes.
  static std::uint64_t nowNs() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }

  /// Where the hold's descriptor goes (see the file comment): the lowest free descriptor at or
  /// above this, or above the process's limit less 64 where that is lower.
  static constexpr int kHighDescriptor = 1000;
  /// A slot whose events are all older than this may be claimed by another process; quiet times
  /// are far shorter.
  static constexpr std::uint64_t kStaleNs = 60'000'000'000;

 private:
  static constexpr std::size_t kSlotBytes = 31;  ///< "%10d %19llu\n"
  static constexpr std::size_t kSlots = 1024;    ///< Process slots in the file.
  static constexpr std::size_t kKinds = 2;       ///< Event's values, a record each per slot.

  /// The whole slot table as the file holds it (shorter where the file is).
  [[nodiscard]] std::string readTable() const {
    std::string table(kSlots * kKinds * kSlotBytes, '\0');
    const ssize_t got = fd_ < 0 ? -1 : ::pread(fd_, table.data(), table.size(), 0);
    table.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    return table;
  }

  /// The (pid, time) of `slot`'s `event` record in `table`; nullopt when empty or unreadable.
  static std::optional<std::pair<pid_t, std::uint64_t>> recordAt(const std::string& table,
                                                                 std::size_t slot, Event event) {
    const std::size_t at = (slot * kKinds + static_cast<std::size_t>(event)) * kSlotBytes;
    if (at + kSlotBytes > table.size()) return std::nullopt;
    char text[kSlotBytes + 1];
    std::memcpy(text, table.data() + at, kSlotBytes);
    text[kSlotBytes] = '\0';
    int pid = 0;
    unsigned long long ns = 0;
    if (std::sscanf(text, "%10d %19llu", &pid, &ns) != 2 || pid <= 0) return std::nullopt;
    return std::pair{static_cast<pid_t>(pid), static_cast<std::uint64_t>(ns)};
  }

  /// lastOtherEvent over `table` read at `now`.
  static std::optional<std::uint64_t> latestOther(const std::string& table, Event event,
                                                  std::uint64_t now) {
    std::optional<std::uint64_t> latest;
    for (std::size_t slot = 0; slot < kSlots; ++slot) {
      const auto record = recordAt(table, slot, event);
      if (record && record->first != ::getpid() && record->second <= now)
        latest = std::max(latest.value_or(0), record->second);
    }
    return latest;
  }

  /// noteEvent's slot for this process.
  [[nodiscard]] int claimSlot() const {
    const std::string table = readTable();
    const pid_t self = ::getpid();
    const std::uint64_t now = nowNs();
    const auto start = static_cast<std::size_t>(self) % kSlots;
    for (std::size_t i = 0; i < kSlots; ++i) {
      const std::size_t slot = (start + i) % kSlots;
      bool free = true;
      for (const Event event : {Event::SetUpEnded, Event::TurnGivenUp}) {
        const auto record = recordAt(table, slot, event);
        free = free && (!record || record->first == self || record->second > now ||
                        now - record->second > kStaleNs);
      }
      if (free) return static_cast<int>(slot);
    }
    return static_cast<int>(start);
  }

  /// `fd` moved up to kHighDescriptor (see there), closing the original; `fd` itself when it is
  /// already as high or the move fails.
  static int movedHigh(int fd) {
    rlimit limit{};
    int floor = kHighDescriptor;
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
      floor = std::min<int>(floor, static_cast<int>(limit.rlim_cur) - 64);
    if (floor <= fd) return fd;
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (high < 0) return fd;
    ::close(fd);
    return high;
  }

  std::string take(const std::string& path, int operation, Hold hold, bool wait) {
    if (hold_ == hold) return "";
    if (fd_ < 0) {
      // Everyone may open the file; where the kernel forbids O_CREAT on another user's file in
      // /tmp (fs.protected_regular), it is opened as it is.
      // Read-write for the event slots; read-only still gives the holds.
      fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd_ >= 0) {
        (void)::fchmod(fd_, 0666);
      } else if (errno == EACCES || errno == EPERM) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (fd_ < 0) fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      }
      if (fd_ < 0) return "cannot open the turn file " + path + ": " + std::strerror(errno);
      fd_ = movedHigh(fd_);
    }
    // A conversion is not atomic: the old hold goes first, so two converting processes cannot
    // deadlock.
    int status = 0;
    do {
      status = ::flock(fd_, operation | (wait ? 0 : LOCK_NB));
    } while (status != 0 && errno == EINTR);
    if (status != 0) {
      const std::string why = std::strerror(errno);
      release();
      return "cannot take the turn " + path + ": " + why;
    }
    hold_ = hold;
    return "";
  }

  int fd_ = -1;
  Hold hold_ = Hold::None;
  int slot_ = -1;  ///< noteEvent's slot, once claimed.
};

/// Whether an ancestor of this process holds a lock on `path` (from /proc/locks). A program's
/// child processes inherit ARGUS_GPU_TURN but not the lock (its descriptor closes on exec): a
/// child that waited for the turn while its parent held the file, shared or exclusive, would wait
/// for a parent that waits for it. Its GPU work runs under the ancestor's hold instead.
inline bool ancestorHoldsLock(const std::string& path) {
  struct stat file {};
  if (::stat(path.c_str(), &file) != 0) return false;
  std::set<long> holders;
  if (std::FILE* locks = std::fopen("/proc/locks", "re")) {
    char line[256];
    while (std::fgets(line, sizeof line, locks) != nullptr) {
      // "1: FLOCK  ADVISORY  READ  1234 08:01:5678 0 EOF" (device numbers in hex)
      char kind[16], mode[16], access[16];
      long pid = 0;
      unsigned devMajor = 0, devMinor = 0;
      unsigned long long inode = 0;
      if (std::sscanf(line, "%*d: %15s %15s %15s %ld %x:%x:%llu", kind, mode, access, &pid,
                      &devMajor, &devMinor, &inode) == 7 &&
          std::strcmp(kind, "FLOCK") == 0 && devMajor == major(file.st_dev) &&
          devMinor == minor(file.st_dev) && inode == file.st_ino)
        holders.insert(pid);
    }
    std::fclose(locks);
  }
  for (long pid = static_cast<long>(::getppid()); pid > 1;) {
    if (holders.contains(pid)) return true;
    // /proc/PID/stat: "PID (comm) S PPID ..."; comm may hold spaces and parentheses.
    std::FILE* stat = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "re");
    if (stat == nullptr) break;
    char text[512] = {};
    const std::size_t n = std::fread(text, 1, sizeof text - 1, stat);
    std::fclose(stat);
    const char* close = std::strrchr(text, ')');
    long parent = 0;
    if (n == 0 || close == nullptr || std::sscanf(close + 1, " %*c %ld", &parent) != 1) break;
    pid = parent;
  }
  return false;
}

/// Whether a driver API entry point (by CUPTI's callback name) puts work on the GPU: launches,
/// graph launches, copies, memsets and stream memory operations.
inline bool submitsGpuWork(const char* name) {
  if (name == nullptr) return false;
  for (const char* prefix : {"cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset",
                             "cuStreamBatchMemOp", "cuStreamWriteValue", "cuStreamWaitValue"}) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

}  // namespace argus::inject
