// runtime/interpose.cc: the LD_PRELOAD shell of libbooster.so. Each exported function
// interposes one libc entry point, asks the pure core (config.h) what to do, and calls
// the next definition (libc) through dlsym(RTLD_NEXT).
//
// Rules this file keeps, because it runs inside other people's processes:
//   - fail open: every error switches a feature off (reported once with BOOSTER_DEBUG=1)
//     and the original call still happens with the caller's arguments;
//   - errno is preserved across everything the library does on its own;
//   - no allocation, no C++ runtime, no locks that can block forever: state is static,
//     the one lock is a spin lock taken with a bound, so a signal handler or a forked
//     child never deadlocks on it;
//   - the hot path (clock_gettime, accept) is a few relaxed loads when dormant.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "booster/control.h"
#include "runtime/config.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

#define BOOSTER_EXPORT extern "C" __attribute__((visibility("default")))
#define BOOSTER_LIKELY(x) __builtin_expect(!!(x), 1)
#define BOOSTER_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace booster::runtime {
namespace {

using ListenFn = int (*)(int, int);
using AcceptFn = int (*)(int, sockaddr*, socklen_t*);
using Accept4Fn = int (*)(int, sockaddr*, socklen_t*, int);
using ConnectFn = int (*)(int, const sockaddr*, socklen_t);
using ThreadStart = void* (*)(void*);
using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*, ThreadStart, void*);
using ClockFn = int (*)(clockid_t, timespec*);
using GettimeofdayFn = int (*)(timeval*, void*);

// ---------------------------------------------------------------------------------------
// Process-wide state. Everything is constant-initialised: no static constructors.

std::atomic<ListenFn> g_listen{nullptr};
std::atomic<AcceptFn> g_accept{nullptr};
std::atomic<Accept4Fn> g_accept4{nullptr};
std::atomic<ConnectFn> g_connect{nullptr};
std::atomic<PthreadCreateFn> g_pthread_create{nullptr};
std::atomic<ClockFn> g_clock_gettime{nullptr};
std::atomic<ClockFn> g_clock_getres{nullptr};
std::atomic<GettimeofdayFn> g_gettimeofday{nullptr};

enum InitState : int { kUninitialised = 0, kInitialising = 1, kReady = 2 };
std::atomic<int> g_init{kUninitialised};
bool g_debug = false;
std::atomic<uint32_t> g_reported{0};

// The active configuration, as the hot paths read it. Values are stored before the
// feature bits, so a reader that sees a bit sees a validated value.
std::atomic<uint64_t> g_features{0};
std::atomic<int32_t> g_busy_poll{0};
std::atomic<int32_t> g_rcvbuf{0};
std::atomic<int32_t> g_sndbuf{0};

// The control page mapping (read-only) and the generation last acted on.
std::atomic<const volatile booster_control*> g_page{nullptr};
std::atomic<uint64_t> g_seen_generation{~uint64_t{0}};
char g_control_path[4096];
std::atomic<int64_t> g_next_open_ns{0};

// A spin lock taken with a bound; see Lock(). Guards everything below it.
std::atomic<bool> g_locked{false};

booster_control g_env_page;  // what the environment asked for (the fallback)
booster_control g_active;    // the configuration in force
booster_control g_scratch;   // the next configuration, being built
cpu_set_t g_allowed;         // CPUs the process could run on when the library loaded
uint16_t g_place_cpus[BOOSTER_CONTROL_MAX_CPUS];
uint32_t g_place_count = 0;
int32_t g_thread_mode = BOOSTER_THREADS_PIN;
cpu_set_t g_place_set;
uint32_t g_next_cpu = 0;
constexpr int kNodeWords = 16;  // 1024 NUMA nodes
unsigned long g_nodemask[kNodeWords];
int g_numa_mode = -1;  // -1: no policy set by us
int g_fork_cpu = -1;
bool g_fork_locked = false;

struct Listener {
  int fd;
  int requested;  // what the application asked for
  int applied;    // what the kernel was given
};
constexpr uint32_t kMaxListeners = 1024;
Listener g_listeners[kMaxListeners];
uint32_t g_listener_count = 0;

// ---------------------------------------------------------------------------------------
// Small helpers.

class ErrnoKeeper {
 public:
  ErrnoKeeper() : saved_(errno) {}
  ~ErrnoKeeper() { errno = saved_; }
  ErrnoKeeper(const ErrnoKeeper&) = delete;
  ErrnoKeeper& operator=(const ErrnoKeeper&) = delete;

 private:
  int saved_;
};

void Report(void* /*ctx*/, Problem problem, const char* message) {
  if (!g_debug) return;
  uint32_t bit = 1u << static_cast<uint32_t>(problem);
  if (g_reported.fetch_or(bit, std::memory_order_relaxed) & bit) return;
  ErrnoKeeper keep;
  char line[400];
  int n = snprintf(line, sizeof(line), "booster[%d]: %s\n", static_cast<int>(getpid()), message);
  if (n <= 0) return;
  if (n > static_cast<int>(sizeof(line)) - 1) n = sizeof(line) - 1;
  ssize_t ignored = write(STDERR_FILENO, line, static_cast<size_t>(n));
  (void)ignored;
}

void Reportf(Problem problem, const char* fmt, long a, long b = 0) {
  if (!g_debug) return;
  char message[300];
  snprintf(message, sizeof(message), fmt, a, b);
  Report(nullptr, problem, message);
}

// Lock with a bound: spins, then yields, then gives up. Callers that fail to lock skip
// their optional work, so a holder interrupted by a signal handler that re-enters the
// library cannot deadlock the thread.
bool Lock(int attempts = 2000) {
  for (int i = 0; i < attempts; ++i) {
    bool expected = false;
    if (!g_locked.load(std::memory_order_relaxed) &&
        g_locked.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
      return true;
    }
    if (i > 64) sched_yield();
  }
  return false;
}
bool TryLock() { return Lock(1); }
void Unlock() { g_locked.store(false, std::memory_order_release); }

template <typename F>
F Resolve(std::atomic<F>& slot, const char* name) {
  F f = slot.load(std::memory_order_relaxed);
  if (BOOSTER_LIKELY(f != nullptr)) return f;
  f = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
  if (f != nullptr) slot.store(f, std::memory_order_relaxed);
  return f;
}

// The same pointer, with nothing known about it. For parameters libc's headers declare
// __nonnull although libc accepts NULL: without it the compiler deletes a NULL check.
template <typename T>
T* Opaque(T* p) {
  asm("" : "+r"(p));
  return p;
}

// Direct system calls, used only if libc's definition cannot be found.
int SysListen(int fd, int backlog) { return static_cast<int>(syscall(SYS_listen, fd, backlog)); }
int SysAccept4(int fd, sockaddr* a, socklen_t* l, int flags) {
  return static_cast<int>(syscall(SYS_accept4, fd, a, l, flags));
}
int SysAccept(int fd, sockaddr* a, socklen_t* l) { return SysAccept4(fd, a, l, 0); }
int SysConnect(int fd, const sockaddr* a, socklen_t l) {
  return static_cast<int>(syscall(SYS_connect, fd, a, l));
}
int SysClockGettime(clockid_t id, timespec* ts) {
  return static_cast<int>(syscall(SYS_clock_gettime, id, ts));
}
int SysClockGetres(clockid_t id, timespec* ts) {
  return static_cast<int>(syscall(SYS_clock_getres, id, ts));
}
int SysGettimeofday(timeval* tv, void* tz) {
  return static_cast<int>(syscall(SYS_gettimeofday, tv, tz));
}

// libc's definition, or the direct system call when it cannot be found.
template <typename F>
F RealOr(std::atomic<F>& slot, const char* name, F fallback) {
  F f = Resolve(slot, name);
  return f != nullptr ? f : fallback;
}
ListenFn RealListen() { return RealOr(g_listen, "listen", &SysListen); }
AcceptFn RealAccept() { return RealOr(g_accept, "accept", &SysAccept); }
Accept4Fn RealAccept4() { return RealOr(g_accept4, "accept4", &SysAccept4); }
ConnectFn RealConnect() { return RealOr(g_connect, "connect", &SysConnect); }
ClockFn RealClockGettime() { return RealOr(g_clock_gettime, "clock_gettime", &SysClockGettime); }
ClockFn RealClockGetres() { return RealOr(g_clock_getres, "clock_getres", &SysClockGetres); }
GettimeofdayFn RealGettimeofday() {
  return RealOr(g_gettimeofday, "gettimeofday", &SysGettimeofday);
}
PthreadCreateFn RealPthreadCreate() {
  PthreadCreateFn f = g_pthread_create.load(std::memory_order_relaxed);
  if (BOOSTER_LIKELY(f != nullptr)) return f;
  f = reinterpret_cast<PthreadCreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
  if (f == nullptr) {
    f = reinterpret_cast<PthreadCreateFn>(dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.34"));
  }
  if (f == nullptr) {
    f = reinterpret_cast<PthreadCreateFn>(dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.2.5"));
  }
  if (f != nullptr) g_pthread_create.store(f, std::memory_order_relaxed);
  return f;
}

int64_t MonotonicNs() {
  timespec ts{};
  RealClockGettime()(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Reads a small file into buf (NUL-terminated). Returns false on any error.
bool ReadSmallFile(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

const char* LookupEnv(void* /*ctx*/, const char* name) { return getenv(name); }

// ---------------------------------------------------------------------------------------
// Placement and memory policy (run under the lock, when the configuration changes).

int32_t CoreOf(uint16_t cpu) {
  char path[96];
  char buf[32];
  int64_t core = 0;
  int64_t package = 0;
  snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%u/topology/core_id", cpu);
  if (!ReadSmallFile(path, buf, sizeof(buf)) || !ParseInt(buf, 0, 65535, &core)) return -1;
  snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%u/topology/physical_package_id", cpu);
  if (!ReadSmallFile(path, buf, sizeof(buf)) || !ParseInt(buf, 0, 32767, &package)) return -1;
  return static_cast<int32_t>(package * 65536 + core);
}

// Builds g_place_cpus from the page: its CPUs (or, without any, the CPUs allowed at load)
// minus those outside the allowed set. Pages from the environment are ordered whole cores
// first here; the agent orders its own. Returns the number of CPUs.
uint32_t BuildPlacement(const booster_control& page, bool from_env) {
  static uint16_t listed[BOOSTER_CONTROL_MAX_CPUS];
  static int32_t cores[BOOSTER_CONTROL_MAX_CPUS];
  uint32_t n = 0;
  if (page.cpu_count > 0) {
    for (uint32_t i = 0; i < page.cpu_count; ++i) {
      if (CPU_ISSET(page.cpus[i], &g_allowed)) listed[n++] = page.cpus[i];
    }
  } else {
    for (uint32_t cpu = 0; cpu <= kMaxCpuNumber && n < BOOSTER_CONTROL_MAX_CPUS; ++cpu) {
      if (CPU_ISSET(cpu, &g_allowed)) listed[n++] = static_cast<uint16_t>(cpu);
    }
    from_env = true;  // the allowed set carries no order of its own
  }
  if (from_env) {
    for (uint32_t i = 0; i < n; ++i) cores[i] = CoreOf(listed[i]);
    OrderWholeCoresFirst(listed, cores, n, g_place_cpus);
  } else {
    memcpy(g_place_cpus, listed, n * sizeof(listed[0]));
  }
  g_place_count = n;
  CPU_ZERO(&g_place_set);
  for (uint32_t i = 0; i < n; ++i) CPU_SET(g_place_cpus[i], &g_place_set);
  return n;
}

// Sets g_nodemask to the NUMA nodes holding any placement CPU. Returns the node count.
int BuildNodemask() {
  memset(g_nodemask, 0, sizeof(g_nodemask));
  char buf[4096];
  if (!ReadSmallFile("/sys/devices/system/node/online", buf, sizeof(buf))) return 0;
  static uint16_t nodes[BOOSTER_CONTROL_MAX_CPUS];
  static uint16_t cpus[BOOSTER_CONTROL_MAX_CPUS];
  uint32_t node_count = 0;
  if (!ParseCpuList(buf, nodes, BOOSTER_CONTROL_MAX_CPUS, &node_count)) return 0;
  int found = 0;
  for (uint32_t i = 0; i < node_count; ++i) {
    char path[96];
    snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/cpulist", nodes[i]);
    uint32_t cpu_count = 0;
    if (!ReadSmallFile(path, buf, sizeof(buf)) ||
        !ParseCpuList(buf, cpus, BOOSTER_CONTROL_MAX_CPUS, &cpu_count)) {
      continue;  // a memory-only node has an empty cpulist
    }
    for (uint32_t c = 0; c < cpu_count; ++c) {
      if (CPU_ISSET(cpus[c], &g_place_set)) {
        g_nodemask[nodes[i] / 64] |= 1ul << (nodes[i] % 64);
        ++found;
        break;
      }
    }
  }
  return found;
}

long SetMempolicy(int mode, const unsigned long* mask) {
  return syscall(SYS_set_mempolicy, mode, mask, mask == nullptr ? 0 : kNodeWords * 64 + 1);
}

// Applies the memory policy `mode` (or MPOL_DEFAULT for -1) to the calling thread.
void ApplyMempolicy(int mode, const unsigned long* mask) {
  ErrnoKeeper keep;
  long rc = 0;
  if (mode == BOOSTER_NUMA_BIND) {
    rc = SetMempolicy(MPOL_BIND, mask);
  } else if (mode == BOOSTER_NUMA_PREFERRED) {
    rc = SetMempolicy(MPOL_PREFERRED_MANY, mask);
    if (rc != 0 && errno == EINVAL) {  // kernels before 5.15: one preferred node
      unsigned long first[kNodeWords] = {};
      for (int w = 0; w < kNodeWords; ++w) {
        if (mask[w] != 0) {
          first[w] = mask[w] & (~mask[w] + 1);
          break;
        }
      }
      rc = SetMempolicy(MPOL_PREFERRED, first);
    }
  } else {
    rc = SetMempolicy(MPOL_DEFAULT, nullptr);
  }
  if (rc != 0) {
    Reportf(Problem::kMempolicy, "set_mempolicy(mode %ld) failed: errno %ld; NUMA policy off", mode,
            errno);
  }
}

void SetAffinity(const cpu_set_t* set) {
  ErrnoKeeper keep;
  if (sched_setaffinity(0, sizeof(cpu_set_t), set) != 0) {
    Reportf(Problem::kPlacement, "sched_setaffinity failed: errno %ld; thread not placed", errno);
  }
}

// The next CPU in round-robin order (pin mode). Under the lock.
int NextCpu() {
  if (g_place_count == 0) return -1;
  int cpu = g_place_cpus[g_next_cpu % g_place_count];
  ++g_next_cpu;
  return cpu;
}

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  SetAffinity(&set);
}

// ---------------------------------------------------------------------------------------
// Configuration changes.

void Relisten(const booster_control& page) {
  ListenFn real = RealListen();
  for (uint32_t i = 0; i < g_listener_count; ++i) {
    Listener& l = g_listeners[i];
    int want = EffectiveBacklog(page, l.requested);
    if (want == l.applied) continue;
    int accepting = 0;
    socklen_t len = sizeof(accepting);
    if (getsockopt(l.fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting) {
      // Closed, or reused for something that is not listening: forget it.
      g_listeners[i--] = g_listeners[--g_listener_count];
      continue;
    }
    if (real(l.fd, want) == 0) l.applied = want;
  }
}

// Puts *next into force. Under the lock; `next` is g_scratch.
void Activate(booster_control* next, bool from_env) {
  ErrnoKeeper keep;
  Sanitize(next, &Report, nullptr);
  uint64_t features = next->features;
  const uint64_t kPlacementFeatures =
      BOOSTER_FEATURE_THREAD_PLACEMENT | BOOSTER_FEATURE_NUMA_MEMPOLICY;
  if (features & kPlacementFeatures) {
    if (BuildPlacement(*next, from_env) == 0) {
      Report(nullptr, Problem::kPlacement,
             "none of the configured CPUs is allowed for this process; thread placement and "
             "NUMA policy off");
      features &= ~kPlacementFeatures;
    }
    g_thread_mode = next->thread_mode;
  }
  int numa_mode = -1;
  if (features & BOOSTER_FEATURE_NUMA_MEMPOLICY) {
    if (BuildNodemask() == 0) {
      Report(nullptr, Problem::kNuma,
             "no NUMA node found for the placement CPUs (/sys/devices/system/node); NUMA "
             "policy off");
      features &= ~static_cast<uint64_t>(BOOSTER_FEATURE_NUMA_MEMPOLICY);
    } else {
      numa_mode = next->numa_mode;
    }
  }
  // The calling thread takes the new memory policy now; new threads take it at start.
  static unsigned long applied_mask[kNodeWords];
  if (numa_mode != g_numa_mode || memcmp(applied_mask, g_nodemask, sizeof(g_nodemask)) != 0) {
    ApplyMempolicy(numa_mode, g_nodemask);
    memcpy(applied_mask, g_nodemask, sizeof(g_nodemask));
  }
  g_numa_mode = numa_mode;

  next->features = features;
  g_busy_poll.store(next->busy_poll_us, std::memory_order_relaxed);
  g_rcvbuf.store(next->rcvbuf_bytes, std::memory_order_relaxed);
  g_sndbuf.store(next->sndbuf_bytes, std::memory_order_relaxed);
  g_features.store(features, std::memory_order_release);
  Relisten(*next);
  memcpy(&g_active, next, sizeof(g_active));
}

// Re-reads the control page if its generation moved (or unconditionally with force) and
// puts the result in force. A zeroed page (the agent has not written it yet) or an
// unreadable one leaves the environment's configuration in force.
void Refresh(bool force, bool wait = false) {
  // Without `wait`, someone else refreshing means they will see the same page.
  if (!(wait ? Lock() : TryLock())) return;
  const volatile booster_control* page = g_page.load(std::memory_order_acquire);
  bool from_env = true;
  bool changed = force;
  if (page != nullptr) {
    uint64_t generation = booster_control_generation(page);
    if (generation != g_seen_generation.load(std::memory_order_relaxed)) {
      changed = true;
      int rc = booster_control_snapshot(page, &g_scratch);
      g_seen_generation.store(generation, std::memory_order_relaxed);
      if (rc == 0) {
        from_env = false;
      } else if (generation != 0 || rc == -2) {
        Report(nullptr, Problem::kControl,
               rc == -2 ? "control page busy (writer stuck mid-write); keeping the last one"
                        : "control page has a foreign magic or version; using the environment");
        if (rc == -2) changed = false;
      }
    }
  }
  if (changed) {
    if (from_env) memcpy(&g_scratch, &g_env_page, sizeof(g_scratch));
    Activate(&g_scratch, from_env);
  }
  Unlock();
}

inline void MaybeRefresh() {
  const volatile booster_control* page = g_page.load(std::memory_order_acquire);
  if (BOOSTER_LIKELY(page == nullptr)) return;
  if (BOOSTER_UNLIKELY(booster_control_generation(page) !=
                       g_seen_generation.load(std::memory_order_relaxed))) {
    Refresh(false);
  }
}

// Maps BOOSTER_CONTROL read-only. Returns true when mapped.
bool OpenControl() {
  int fd = open(g_control_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  void* map = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(sizeof(booster_control))) {
    map = mmap(nullptr, sizeof(booster_control), PROT_READ, MAP_SHARED, fd, 0);
  }
  close(fd);
  if (map == MAP_FAILED) return false;
  g_page.store(static_cast<const volatile booster_control*>(map), std::memory_order_release);
  return true;
}

// Called on the slow paths: while BOOSTER_CONTROL names a file that is not mapped yet
// (the agent may create it after the process started), retries at most once a second.
inline void MaybeOpenControl() {
  if (BOOSTER_LIKELY(g_control_path[0] == '\0' ||
                     g_page.load(std::memory_order_relaxed) != nullptr)) {
    return;
  }
  int64_t now = MonotonicNs();
  if (now < g_next_open_ns.load(std::memory_order_relaxed)) return;
  g_next_open_ns.store(now + 1000000000, std::memory_order_relaxed);
  ErrnoKeeper keep;
  if (!TryLock()) return;
  bool opened = g_page.load(std::memory_order_relaxed) == nullptr && OpenControl();
  Unlock();
  if (opened) Refresh(true);
}

// ---------------------------------------------------------------------------------------
// Thread start.

struct StartSlot {
  ThreadStart fn;
  void* arg;
  cpu_set_t cpus;
  unsigned long nodemask[kNodeWords];
  int numa_mode;  // -1: leave the inherited policy
  bool place;
  std::atomic<bool> busy;
};
constexpr uint32_t kStartSlots = 128;
StartSlot g_slots[kStartSlots];
std::atomic<uint32_t> g_slot_hint{0};

StartSlot* ClaimSlot() {
  uint32_t start = g_slot_hint.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t i = 0; i < kStartSlots; ++i) {
    StartSlot& s = g_slots[(start + i) % kStartSlots];
    if (!s.busy.load(std::memory_order_relaxed) &&
        !s.busy.exchange(true, std::memory_order_acquire)) {
      return &s;
    }
  }
  return nullptr;
}

void* ThreadTrampoline(void* raw) {
  StartSlot* slot = static_cast<StartSlot*>(raw);
  ThreadStart fn = slot->fn;
  void* arg = slot->arg;
  if (slot->place) SetAffinity(&slot->cpus);
  if (slot->numa_mode >= 0) ApplyMempolicy(slot->numa_mode, slot->nodemask);
  slot->busy.store(false, std::memory_order_release);
  return fn(arg);
}

// True when the application gave the thread an affinity of its own.
bool AttrHasAffinity(const pthread_attr_t* attr) {
  if (attr == nullptr) return false;
  cpu_set_t set;
  if (pthread_attr_getaffinity_np(attr, sizeof(set), &set) != 0) return false;
  return CPU_COUNT(&set) != CPU_SETSIZE;  // glibc reports all CPUs when none was set
}

// ---------------------------------------------------------------------------------------
// Sockets.

// Applies the socket features to a TCP socket; leaves other sockets alone.
void ApplySocketOptions(int fd, uint64_t features) {
  ErrnoKeeper keep;
  int protocol = 0;
  socklen_t len = sizeof(protocol);
  if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0 ||
      (protocol != IPPROTO_TCP && protocol != IPPROTO_MPTCP)) {
    return;
  }
  int one = 1;
  if ((features & BOOSTER_FEATURE_TCP_NODELAY) &&
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    Reportf(Problem::kTcpNodelay, "setsockopt(TCP_NODELAY) failed: errno %ld", errno);
  }
  if ((features & BOOSTER_FEATURE_TCP_QUICKACK) &&
      setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one)) != 0) {
    Reportf(Problem::kTcpQuickack, "setsockopt(TCP_QUICKACK) failed: errno %ld", errno);
  }
  if (features & BOOSTER_FEATURE_BUSY_POLL) {
    int us = g_busy_poll.load(std::memory_order_relaxed);
    if (us > 0 && setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) != 0) {
      Reportf(Problem::kBusyPoll,
              "setsockopt(SO_BUSY_POLL=%ld) failed: errno %ld (raising it needs CAP_NET_ADMIN)", us,
              errno);
    }
  }
  if (features & BOOSTER_FEATURE_SOCKET_BUFFERS) {
    int rcv = g_rcvbuf.load(std::memory_order_relaxed);
    int snd = g_sndbuf.load(std::memory_order_relaxed);
    if (rcv > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)) != 0) {
      Reportf(Problem::kRcvbuf, "setsockopt(SO_RCVBUF=%ld) failed: errno %ld", rcv, errno);
    }
    if (snd > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd)) != 0) {
      Reportf(Problem::kSndbuf, "setsockopt(SO_SNDBUF=%ld) failed: errno %ld", snd, errno);
    }
  }
}

void AfterAccept(int fd) {
  MaybeRefresh();  // the accept may have blocked across a configuration change
  uint64_t features = g_features.load(std::memory_order_acquire);
  if (BOOSTER_UNLIKELY(features & kSocketFeatures)) ApplySocketOptions(fd, features);
}

// ---------------------------------------------------------------------------------------
// Presence. The agent cannot read another user's memory maps, so the library tells it, to
// any reader of /proc/locks, that it is loaded: a POSIX read lock on its own file, byte 0,
// for the life of the process; byte 1 too when the program is Go (its sockets and clocks
// use raw system calls, so the socket and clock knobs cannot reach it). The agent reads
// this with sidecar/sample/preload_presence.h. The descriptor sits high, out of the way of
// programs that expect their first descriptors, and closes on exec; a forked child takes
// the locks again (POSIX locks are not inherited).

int g_presence_fd = -1;
bool g_is_go = false;

void AnnouncePresence() {
  if (g_presence_fd < 0) return;
  struct flock l {};
  l.l_type = F_RDLCK;
  l.l_whence = SEEK_SET;
  l.l_start = 0;
  l.l_len = g_is_go ? 2 : 1;
  (void)fcntl(g_presence_fd, F_SETLK, &l);
}

void OpenPresence() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&OpenPresence), &info) == 0 || info.dli_fname == nullptr ||
      info.dli_fname[0] != '/') {
    return;
  }
  int fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct rlimit lim {};
  int high = 512;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
      lim.rlim_cur <= static_cast<rlim_t>(high)) {
    high = static_cast<int>(lim.rlim_cur) / 2;
  }
  int moved = high > fd ? fcntl(fd, F_DUPFD_CLOEXEC, high) : -1;
  if (moved >= 0) {
    close(fd);
    fd = moved;
  }
  g_presence_fd = fd;
  // Go's runtime/cgo exports this from every dynamically linked Go program.
  g_is_go = dlsym(RTLD_DEFAULT, "_cgo_topofstack") != nullptr;
  AnnouncePresence();
}

// ---------------------------------------------------------------------------------------
// Start-up and fork.

void AtforkPrepare() {
  g_fork_locked = Lock();
  g_fork_cpu = -1;
  if (g_fork_locked &&
      (g_features.load(std::memory_order_relaxed) & BOOSTER_FEATURE_THREAD_PLACEMENT) &&
      g_thread_mode == BOOSTER_THREADS_PIN) {
    g_fork_cpu = NextCpu();
  }
}

void AtforkParent() {
  if (g_fork_locked) Unlock();
}

void AtforkChild() {
  // Only this thread survives the fork: whoever held the lock is gone.
  g_locked.store(false, std::memory_order_relaxed);
  if (g_fork_cpu >= 0) PinTo(g_fork_cpu);
  AnnouncePresence();
}

void Init() {
  int expected = kUninitialised;
  if (!g_init.compare_exchange_strong(expected, kInitialising, std::memory_order_acq_rel)) {
    return;  // done, or in progress on this or another thread: callers pass through
  }
  ErrnoKeeper keep;
  g_debug = ParseBool(getenv("BOOSTER_DEBUG")) == 1;
  RealListen();
  RealAccept();
  RealAccept4();
  RealConnect();
  RealClockGettime();
  RealClockGetres();
  RealGettimeofday();
  if (RealPthreadCreate() == nullptr) {
    Report(nullptr, Problem::kSymbol, "pthread_create not found in libc; placement off");
  }
  if (sched_getaffinity(0, sizeof(g_allowed), &g_allowed) != 0) CPU_ZERO(&g_allowed);
  ConfigFromEnv(&LookupEnv, nullptr, &g_env_page, &Report, nullptr);
  if (g_pthread_create.load(std::memory_order_relaxed) == nullptr) {
    g_env_page.features &= ~static_cast<uint64_t>(BOOSTER_FEATURE_THREAD_PLACEMENT);
  }
  const char* path = getenv("BOOSTER_CONTROL");
  if (path != nullptr && path[0] != '\0') {
    if (strlen(path) >= sizeof(g_control_path)) {
      Report(nullptr, Problem::kControl, "BOOSTER_CONTROL path too long; ignored");
    } else {
      memcpy(g_control_path, path, strlen(path) + 1);
      if (!OpenControl()) {
        Reportf(Problem::kControl,
                "BOOSTER_CONTROL cannot be mapped yet (errno %ld); using the environment and "
                "retrying once a second",
                errno);
        g_next_open_ns.store(MonotonicNs() + 1000000000, std::memory_order_relaxed);
      }
    }
  }
  Refresh(/*force=*/true, /*wait=*/true);
  OpenPresence();
  pthread_atfork(&AtforkPrepare, &AtforkParent, &AtforkChild);
  g_init.store(kReady, std::memory_order_release);
}

inline bool Ready() {
  if (BOOSTER_LIKELY(g_init.load(std::memory_order_acquire) == kReady)) return true;
  Init();
  return g_init.load(std::memory_order_acquire) == kReady;
}

// The loading thread (normally the main thread) is placed like the first new thread.
__attribute__((constructor)) void OnLoad() {
  Init();
  if (!Ready()) return;
  if (!(g_features.load(std::memory_order_acquire) & BOOSTER_FEATURE_THREAD_PLACEMENT)) return;
  if (!Lock()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (g_thread_mode == BOOSTER_THREADS_PIN) {
    int cpu = NextCpu();
    if (cpu >= 0) CPU_SET(cpu, &set);
  } else {
    set = g_place_set;
  }
  Unlock();
  if (CPU_COUNT(&set) > 0) SetAffinity(&set);
}

}  // namespace
}  // namespace booster::runtime

// ---------------------------------------------------------------------------------------
// The interposers: the only symbols the library exports (see runtime/libbooster.map).

using namespace booster::runtime;  // NOLINT: the exported C functions live outside it

BOOSTER_EXPORT int listen(int fd, int backlog) noexcept {
  if (!Ready()) return RealListen()(fd, backlog);
  MaybeOpenControl();
  MaybeRefresh();
  uint64_t features = g_features.load(std::memory_order_acquire);
  if (features & BOOSTER_FEATURE_SOCKET_BUFFERS) {
    // Before listen(), so the window scale offered in the handshake covers the buffer.
    ApplySocketOptions(fd, features & BOOSTER_FEATURE_SOCKET_BUFFERS);
  }
  // The lock makes "decide, listen, remember" atomic against a concurrent refresh, so a
  // tracked socket always carries the backlog it was really given.
  bool locked = Lock();
  int applied = EffectiveBacklog(g_active, backlog);
  if (!locked) applied = backlog;
  int rc = RealListen()(fd, applied);
  if (rc == 0 && locked) {
    uint32_t i = 0;
    while (i < g_listener_count && g_listeners[i].fd != fd) ++i;
    if (i == g_listener_count) {
      if (g_listener_count < kMaxListeners) {
        ++g_listener_count;
      } else {
        Report(nullptr, Problem::kListenerTable,
               "more than 1024 listening sockets; later ones miss run-time backlog changes");
        i = kMaxListeners;
      }
    }
    if (i < kMaxListeners) g_listeners[i] = Listener{fd, backlog, applied};
  }
  if (locked) Unlock();
  return rc;
}

BOOSTER_EXPORT int accept(int fd, sockaddr* addr, socklen_t* len) {
  int client = RealAccept()(fd, addr, len);
  if (client >= 0 && BOOSTER_LIKELY(g_init.load(std::memory_order_acquire) == kReady)) {
    AfterAccept(client);
  }
  return client;
}

BOOSTER_EXPORT int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  int client = RealAccept4()(fd, addr, len, flags);
  if (client >= 0 && BOOSTER_LIKELY(g_init.load(std::memory_order_acquire) == kReady)) {
    AfterAccept(client);
  }
  return client;
}

BOOSTER_EXPORT int connect(int fd, const sockaddr* addr, socklen_t len) {
  if (Ready()) {
    MaybeOpenControl();
    MaybeRefresh();
    uint64_t features = g_features.load(std::memory_order_acquire);
    // The socket, not the address, says whether this is TCP (ApplySocketOptions asks
    // SO_PROTOCOL). The address is never read here: libc hands it to the kernel, which
    // answers EFAULT for one the caller cannot read, and so must the library.
    if (features & kSocketFeatures) ApplySocketOptions(fd, features);
  }
  return RealConnect()(fd, addr, len);
}

BOOSTER_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                  void* (*start)(void*), void* arg) noexcept {
  PthreadCreateFn real = RealPthreadCreate();
  if (BOOSTER_UNLIKELY(real == nullptr)) return ENOSYS;
  if (!Ready()) return real(thread, attr, start, arg);
  MaybeOpenControl();
  MaybeRefresh();
  const uint64_t kPlacementFeatures =
      BOOSTER_FEATURE_THREAD_PLACEMENT | BOOSTER_FEATURE_NUMA_MEMPOLICY;
  uint64_t features = g_features.load(std::memory_order_acquire);
  if (BOOSTER_LIKELY(!(features & kPlacementFeatures))) return real(thread, attr, start, arg);
  StartSlot* slot = ClaimSlot();
  if (slot == nullptr) return real(thread, attr, start, arg);
  slot->fn = start;
  slot->arg = arg;
  slot->place = false;
  slot->numa_mode = -1;
  if (Lock()) {
    features = g_features.load(std::memory_order_relaxed);
    if ((features & BOOSTER_FEATURE_THREAD_PLACEMENT) && !AttrHasAffinity(attr)) {
      CPU_ZERO(&slot->cpus);
      if (g_thread_mode == BOOSTER_THREADS_PIN) {
        int cpu = NextCpu();
        if (cpu >= 0) CPU_SET(cpu, &slot->cpus);
      } else {
        slot->cpus = g_place_set;
      }
      slot->place = CPU_COUNT(&slot->cpus) > 0;
    }
    if (features & BOOSTER_FEATURE_NUMA_MEMPOLICY) {
      slot->numa_mode = g_numa_mode;
      memcpy(slot->nodemask, g_nodemask, sizeof(g_nodemask));
    }
    Unlock();
  }
  int rc = real(thread, attr, &ThreadTrampoline, slot);
  if (rc != 0) slot->busy.store(false, std::memory_order_release);
  return rc;
}

BOOSTER_EXPORT int clock_gettime(clockid_t id, struct timespec* ts) noexcept {
  MaybeRefresh();
  if (BOOSTER_UNLIKELY(g_features.load(std::memory_order_relaxed) & BOOSTER_FEATURE_COARSE_CLOCK)) {
    if (id == CLOCK_REALTIME) {
      id = CLOCK_REALTIME_COARSE;
    } else if (id == CLOCK_MONOTONIC) {
      id = CLOCK_MONOTONIC_COARSE;
    }
  }
  return RealClockGettime()(id, ts);
}

BOOSTER_EXPORT int clock_getres(clockid_t id, struct timespec* res) noexcept {
  MaybeRefresh();
  if (g_features.load(std::memory_order_relaxed) & BOOSTER_FEATURE_COARSE_CLOCK) {
    if (id == CLOCK_REALTIME) {
      id = CLOCK_REALTIME_COARSE;
    } else if (id == CLOCK_MONOTONIC) {
      id = CLOCK_MONOTONIC_COARSE;
    }
  }
  return RealClockGetres()(id, res);
}

BOOSTER_EXPORT int gettimeofday(struct timeval* tv, void* tz) noexcept {
  MaybeRefresh();
  // A NULL tv asks for nothing (libc returns 0), so only a real buffer is served from the
  // coarse clock. glibc declares tv __nonnull, which would let the compiler drop this
  // check; Opaque() keeps it.
  tv = Opaque(tv);
  if (BOOSTER_UNLIKELY(g_features.load(std::memory_order_relaxed) & BOOSTER_FEATURE_COARSE_CLOCK) &&
      tv != nullptr && tz == nullptr) {
    timespec ts{};
    int rc = RealClockGettime()(CLOCK_REALTIME_COARSE, &ts);
    if (rc == 0) {
      tv->tv_sec = ts.tv_sec;
      tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
  }
  return RealGettimeofday()(tv, tz);
}
