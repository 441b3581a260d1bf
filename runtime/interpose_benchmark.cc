// interpose_benchmark: what an interposed call costs, in ns per call, against the direct
// libc call, with libbooster.so dormant and with the feature on.
//
// The benchmark dlopen()s libbooster.so privately (RTLD_LOCAL) and calls its interposers
// through dlsym(handle, ...): each one forwards to libc exactly as it does under
// LD_PRELOAD. The configuration is switched between runs through a control page
// (BOOSTER_CONTROL), the same way the agent does it in a pod.
//
//   build/runtime/interpose_benchmark [--benchmark_filter=Clock]
//   BOOSTER_LIB=/path/to/libbooster.so build/runtime/interpose_benchmark
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "booster/control.h"

namespace {

using ClockFn = int (*)(clockid_t, timespec*);
using ListenFn = int (*)(int, int);
using ConnectFn = int (*)(int, const sockaddr*, socklen_t);
using Accept4Fn = int (*)(int, sockaddr*, socklen_t*, int);
using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

struct Functions {
  ClockFn clock_gettime;
  ListenFn listen;
  ConnectFn connect;
  Accept4Fn accept4;
  PthreadCreateFn pthread_create;
};

Functions g_direct;
Functions g_booster;
volatile booster_control* g_page = nullptr;

enum Mode { kDirect, kDormant, kEnabled };
const char* kModeNames[] = {"direct", "dormant", "enabled"};

// Publishes a page: everything off (dormant) or the features the benchmark measures.
void Configure(Mode mode, uint64_t features) {
  booster_control page;
  booster_control_init(&page);
  if (mode == kEnabled) {
    page.features = features;
    page.listen_backlog = 4096;
    page.thread_mode = BOOSTER_THREADS_PIN;
  }
  booster_control_publish(g_page, &page);
}

const Functions& For(Mode mode) { return mode == kDirect ? g_direct : g_booster; }

template <typename F>
F Sym(void* handle, const char* name) {
  F f = reinterpret_cast<F>(dlsym(handle, name));
  if (f == nullptr) {
    fprintf(stderr, "interpose_benchmark: %s not found: %s\n", name, dlerror());
    exit(1);
  }
  return f;
}

bool Setup() {
  char path[] = "/tmp/booster-bench-control-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || ftruncate(fd, BOOSTER_CONTROL_FILE_SIZE) != 0) return false;
  void* map = mmap(nullptr, BOOSTER_CONTROL_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return false;
  g_page = static_cast<volatile booster_control*>(map);
  setenv("BOOSTER_CONTROL", path, 1);
  const char* lib = getenv("BOOSTER_LIB");
  void* handle = dlopen(lib != nullptr ? lib : BOOSTER_DEFAULT_LIB, RTLD_NOW | RTLD_LOCAL);
  unlink(path);  // the mapping stays valid
  if (handle == nullptr) {
    fprintf(stderr, "interpose_benchmark: %s\n", dlerror());
    return false;
  }
  g_direct = {Sym<ClockFn>(RTLD_DEFAULT, "clock_gettime"), Sym<ListenFn>(RTLD_DEFAULT, "listen"),
              Sym<ConnectFn>(RTLD_DEFAULT, "connect"), Sym<Accept4Fn>(RTLD_DEFAULT, "accept4"),
              Sym<PthreadCreateFn>(RTLD_DEFAULT, "pthread_create")};
  g_booster = {Sym<ClockFn>(handle, "clock_gettime"), Sym<ListenFn>(handle, "listen"),
               Sym<ConnectFn>(handle, "connect"), Sym<Accept4Fn>(handle, "accept4"),
               Sym<PthreadCreateFn>(handle, "pthread_create")};
  if (g_booster.clock_gettime == g_direct.clock_gettime) {
    fprintf(stderr, "interpose_benchmark: dlsym returned libc's own clock_gettime\n");
    return false;
  }
  return true;
}

// clock_gettime(CLOCK_MONOTONIC): direct, dormant, and enabled (served from the coarse
// clock, which is the point of the feature).
void BM_ClockGettime(benchmark::State& state) {
  Mode mode = static_cast<Mode>(state.range(0));
  Configure(mode, BOOSTER_FEATURE_COARSE_CLOCK);
  ClockFn f = For(mode).clock_gettime;
  timespec ts{};
  f(CLOCK_MONOTONIC, &ts);  // picks up the new page outside the timed loop
  for (auto _ : state) {
    f(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
  state.SetLabel(kModeNames[mode]);
}
BENCHMARK(BM_ClockGettime)->DenseRange(kDirect, kEnabled);

// The coarse clock called directly, for reference.
void BM_ClockGettimeCoarseDirect(benchmark::State& state) {
  timespec ts{};
  for (auto _ : state) {
    g_direct.clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK(BM_ClockGettimeCoarseDirect);

// listen() again on a listening socket (what a re-listen costs; the interposer also takes
// its lock and updates the listener table).
void BM_Listen(benchmark::State& state) {
  Mode mode = static_cast<Mode>(state.range(0));
  Configure(mode, BOOSTER_FEATURE_LISTEN_BACKLOG);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ListenFn f = For(mode).listen;
  for (auto _ : state) benchmark::DoNotOptimize(f(fd, 16));
  close(fd);
  state.SetLabel(kModeNames[mode]);
}
BENCHMARK(BM_Listen)->DenseRange(kDirect, kEnabled);

// One loopback TCP connection: socket, connect, accept4, close both. Enabled turns on
// TCP_NODELAY, so each side pays one getsockopt and one setsockopt.
void BM_ConnectAccept(benchmark::State& state) {
  Mode mode = static_cast<Mode>(state.range(0));
  Configure(mode, BOOSTER_FEATURE_TCP_NODELAY);
  const Functions& fns = For(mode);
  int server = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bind(server, reinterpret_cast<sockaddr*>(&addr), len);
  getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len);
  fns.listen(server, 1024);
  for (auto _ : state) {
    int client = socket(AF_INET, SOCK_STREAM, 0);
    if (fns.connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      state.SkipWithError("connect failed");
      break;
    }
    int accepted = fns.accept4(server, nullptr, nullptr, SOCK_CLOEXEC);
    // Close the accepted side first so TIME_WAIT lands on it, not on the client ports.
    close(accepted);
    close(client);
  }
  close(server);
  state.SetLabel(kModeNames[mode]);
}
BENCHMARK(BM_ConnectAccept)->DenseRange(kDirect, kEnabled);

void* Nothing(void*) { return nullptr; }

// pthread_create + pthread_join. Enabled pins each thread (one sched_setaffinity in the
// new thread).
void BM_PthreadCreate(benchmark::State& state) {
  Mode mode = static_cast<Mode>(state.range(0));
  Configure(mode, BOOSTER_FEATURE_THREAD_PLACEMENT);
  PthreadCreateFn f = For(mode).pthread_create;
  for (auto _ : state) {
    pthread_t t;
    if (f(&t, nullptr, &Nothing, nullptr) != 0) {
      state.SkipWithError("pthread_create failed");
      break;
    }
    pthread_join(t, nullptr);
  }
  state.SetLabel(kModeNames[mode]);
}
BENCHMARK(BM_PthreadCreate)->DenseRange(kDirect, kEnabled);

}  // namespace

int main(int argc, char** argv) {
  if (!Setup()) return 1;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
