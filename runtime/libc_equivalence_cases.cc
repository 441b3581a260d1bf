// booster_libc_cases: the argument table of libc_equivalence_test. Each case calls one
// interposed libc entry point with one set of arguments (NULL pointers, bad descriptors,
// bad clock ids, odd thread attributes, fork and exec, hundreds of threads) and prints one
// line of what the caller can observe: the return value, errno, and the state that
// matters (is the socket listening, which CPUs the thread runs on, is the time plausible).
// The test runs every case in a fresh process without libbooster.so and under it, and
// compares the lines; a crash or a hang is a failure of that case.
//
//   booster_libc_cases --list               -> one "<interposer>/<case>" per line
//   booster_libc_cases <case> <cpu list>    -> one line; exit status 0
//
// <cpu list> ("0-3,8") is the CPU set the process was started with: under thread
// placement the main thread is pinned at load, so the process cannot ask itself.
//
// Built like booster_probe (without sanitizers), so it stands for a third-party program.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

extern char** environ;

namespace {

// errno is set to this before every call: a call that succeeds must leave it alone.
constexpr int kUntouched = 9999;

std::vector<int> g_cpus;  // the CPU set the process was started with (argv[2])

std::string ErrnoName(int e) {
  if (e == kUntouched) return "untouched";
  const char* name = strerrorname_np(e);
  return name != nullptr ? name : std::to_string(e);
}

// "rc=-1 errno=EBADF": the return value of `call` and the errno it left.
template <typename Call>
std::string Answer(Call call) {
  errno = kUntouched;
  long rc = static_cast<long>(call());
  int e = errno;
  return "rc=" + std::to_string(rc) + " errno=" + ErrnoName(e);
}

std::string Flag(const char* name, bool value) {
  return std::string(" ") + name + "=" + (value ? "1" : "0");
}

int64_t Ns(const timespec& ts) { return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec; }

// ---------------------------------------------------------------------------------------
// Descriptors and sockets.

int ClosedFd() {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  close(fd);
  return fd;
}

int PipeFd() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  return fds[0];
}

// A page the process may not read: a pointer libc hands to the kernel, which says EFAULT.
void* Unreadable() {
  void* p = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

int LocalPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  return ntohs(addr.sin_port);
}

// A TCP socket bound to 127.0.0.1 (port 0), listening when `listening`.
int BoundTcp(bool listening, int extra_type = 0) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | extra_type, 0);
  sockaddr_in addr = Loopback(0);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return -1;
  if (listening && listen(fd, 16) != 0) return -1;
  return fd;
}

int ConnectedTo(int listener) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Loopback(LocalPort(listener));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return -1;
  return fd;
}

// A listener with one connection waiting in its queue; *client gets the other end.
int ListenerWithPending(int* client, int extra_type = 0) {
  int listener = BoundTcp(true, extra_type);
  *client = ConnectedTo(listener);
  return listener;
}

// An AF_UNIX stream socket listening on an abstract name.
int UnixListener(sockaddr_un* addr, socklen_t* len) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  *addr = sockaddr_un{};
  addr->sun_family = AF_UNIX;
  int n = snprintf(addr->sun_path + 1, sizeof(addr->sun_path) - 1, "booster-cases-%d", getpid());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  if (bind(fd, reinterpret_cast<sockaddr*>(addr), *len) != 0 || listen(fd, 4) != 0) return -1;
  return fd;
}

// One byte from `from` arrives at `to`.
bool RoundTrip(int from, int to) {
  if (write(from, "x", 1) != 1) return false;
  pollfd p{to, POLLIN, 0};
  char c = 0;
  return poll(&p, 1, 5000) == 1 && read(to, &c, 1) == 1 && c == 'x';
}

// What the application can see of a socket, whatever the library did to its options.
std::string SocketState(int fd) {
  int accepting = 0;
  socklen_t len = sizeof(accepting);
  bool listening = getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) == 0 && accepting;
  sockaddr_storage peer{};
  len = sizeof(peer);
  bool connected = getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0;
  int fl = fcntl(fd, F_GETFL);
  int fdfl = fcntl(fd, F_GETFD);
  return Flag("listening", listening) + Flag("connected", connected) +
         Flag("nonblock", fl >= 0 && (fl & O_NONBLOCK)) +
         Flag("cloexec", fdfl >= 0 && (fdfl & FD_CLOEXEC));
}

// ---------------------------------------------------------------------------------------
// listen

std::string ListenOn(int fd, int backlog) {
  std::string answer = Answer([&] { return listen(fd, backlog); });
  if (fd >= 0) answer += SocketState(fd);
  return answer;
}

// A listening socket really accepts a connection.
std::string ListenAndServe(int backlog) {
  int fd = BoundTcp(false);
  std::string answer = ListenOn(fd, backlog);
  int client = ConnectedTo(fd);
  int server = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
  return answer + Flag("serves", client >= 0 && server >= 0 && RoundTrip(client, server));
}

std::string ListenConnectedTcp() {
  int client = -1;
  ListenerWithPending(&client);
  return ListenOn(client, 5);
}

std::string ListenUnixBound() {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "booster-listen-%d", getpid());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) return "bind failed";
  return ListenOn(fd, 5);
}

// ---------------------------------------------------------------------------------------
// accept and accept4 share their cases; `four` picks the entry point (flags 0 for accept).

int AcceptVia(bool four, int fd, sockaddr* addr, socklen_t* len, int flags) {
  return four ? accept4(fd, addr, len, flags) : accept(fd, addr, len);
}

std::string AcceptOn(bool four, int fd) {
  return Answer([&] { return AcceptVia(four, fd, nullptr, nullptr, 0); });
}

// The accepted socket: what it returned, its state, and that it carries data.
std::string AcceptedState(int fd, int client) {
  if (fd < 0) return "";
  return SocketState(fd) + Flag("roundtrip", RoundTrip(client, fd));
}

template <bool kFour>
std::string AcceptNullAddrNullLen() {
  int client = -1;
  int listener = ListenerWithPending(&client);
  int fd = -1;
  std::string answer = Answer([&] { return fd = AcceptVia(kFour, listener, nullptr, nullptr, 0); });
  return answer + AcceptedState(fd, client);
}

template <bool kFour>
std::string AcceptFullAddr() {
  int client = -1;
  int listener = ListenerWithPending(&client);
  sockaddr_in peer{};
  socklen_t len = sizeof(peer);
  int fd = -1;
  std::string answer = Answer(
      [&] { return fd = AcceptVia(kFour, listener, reinterpret_cast<sockaddr*>(&peer), &len, 0); });
  return answer + " len=" + std::to_string(len) + Flag("family_inet", peer.sin_family == AF_INET) +
         Flag("peer_port", ntohs(peer.sin_port) == LocalPort(client)) + AcceptedState(fd, client);
}

// A buffer shorter than the address: the kernel truncates and reports the full length.
template <bool kFour>
std::string AcceptShortLen() {
  int client = -1;
  int listener = ListenerWithPending(&client);
  unsigned char buf[sizeof(sockaddr_in)];
  memset(buf, 0xab, sizeof(buf));
  socklen_t len = 4;
  int fd = -1;
  std::string answer = Answer(
      [&] { return fd = AcceptVia(kFour, listener, reinterpret_cast<sockaddr*>(buf), &len, 0); });
  bool tail_untouched = true;
  for (size_t i = 4; i < sizeof(buf); ++i) tail_untouched &= buf[i] == 0xab;
  sa_family_t family;
  memcpy(&family, buf, sizeof(family));
  return answer + " len=" + std::to_string(len) + Flag("family_inet", family == AF_INET) +
         Flag("tail_untouched", tail_untouched) + AcceptedState(fd, client);
}

// NULL address with a length: the kernel ignores the length.
template <bool kFour>
std::string AcceptNullAddrWithLen() {
  int client = -1;
  int listener = ListenerWithPending(&client);
  socklen_t len = 77;
  int fd = -1;
  std::string answer = Answer([&] { return fd = AcceptVia(kFour, listener, nullptr, &len, 0); });
  return answer + " len=" + std::to_string(len) + AcceptedState(fd, client);
}

template <bool kFour>
std::string AcceptAddrWithNullLen() {
  int client = -1;
  int listener = ListenerWithPending(&client);
  sockaddr_in peer{};
  return Answer(
      [&] { return AcceptVia(kFour, listener, reinterpret_cast<sockaddr*>(&peer), nullptr, 0); });
}

template <bool kFour>
std::string AcceptNegativeLen() {
  int client = -1;
  int listener = ListenerWithPending(&client);
  sockaddr_in peer{};
  socklen_t len = static_cast<socklen_t>(-1);
  return Answer(
      [&] { return AcceptVia(kFour, listener, reinterpret_cast<sockaddr*>(&peer), &len, 0); });
}

template <bool kFour>
std::string AcceptUnreadableAddr() {
  int client = -1;
  int listener = ListenerWithPending(&client);
  socklen_t len = sizeof(sockaddr_in);
  return Answer(
      [&] { return AcceptVia(kFour, listener, static_cast<sockaddr*>(Unreadable()), &len, 0); });
}

template <bool kFour>
std::string AcceptEmptyNonblocking() {
  return AcceptOn(kFour, BoundTcp(true, SOCK_NONBLOCK));
}

template <bool kFour>
std::string AcceptUnix() {
  sockaddr_un addr{};
  socklen_t len = 0;
  int listener = UnixListener(&addr, &len);
  int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(client, reinterpret_cast<sockaddr*>(&addr), len) != 0) return "connect failed";
  int fd = -1;
  std::string answer = Answer([&] { return fd = AcceptVia(kFour, listener, nullptr, nullptr, 0); });
  return answer + AcceptedState(fd, client);
}

std::string Accept4Flags(int flags) {
  int client = -1;
  int listener = ListenerWithPending(&client);
  int fd = -1;
  std::string answer = Answer([&] { return fd = accept4(listener, nullptr, nullptr, flags); });
  return answer + AcceptedState(fd, client);
}

// ---------------------------------------------------------------------------------------
// connect

std::string ConnectOn(int fd, const void* addr, socklen_t len) {
  std::string answer = Answer([&] { return connect(fd, static_cast<const sockaddr*>(addr), len); });
  if (fd >= 0) answer += SocketState(fd);
  return answer;
}

int NewTcp(int extra_type = 0) {
  return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | extra_type, 0);
}

std::string ConnectLoopbackListener() {
  int listener = BoundTcp(true);
  int fd = NewTcp();
  sockaddr_in addr = Loopback(LocalPort(listener));
  std::string answer = ConnectOn(fd, &addr, sizeof(addr));
  int server = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  return answer + Flag("roundtrip", server >= 0 && RoundTrip(fd, server));
}

std::string ConnectIpv6Loopback() {
  int listener = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  socklen_t len = sizeof(addr);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(listener, 4) != 0 || getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len)) {
    return "no ipv6 loopback";  // the same in both runs
  }
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  return ConnectOn(fd, &addr, sizeof(addr));
}

// A bound socket that does not listen: connecting to its port is refused.
std::string ConnectRefused() {
  int bound = BoundTcp(false);
  sockaddr_in addr = Loopback(LocalPort(bound));
  return ConnectOn(NewTcp(), &addr, sizeof(addr));
}

// Non-blocking: in progress (or done at once on loopback), then connected.
std::string ConnectNonblocking() {
  int listener = BoundTcp(true);
  int fd = NewTcp(SOCK_NONBLOCK);
  sockaddr_in addr = Loopback(LocalPort(listener));
  errno = kUntouched;
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  bool started = rc == 0 || errno == EINPROGRESS;
  pollfd p{fd, POLLOUT, 0};
  int error = -1;
  socklen_t len = sizeof(error);
  bool done = poll(&p, 1, 5000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0;
  return Flag("started", started) + Flag("so_error_zero", done && error == 0) + SocketState(fd);
}

std::string ConnectAlreadyConnected() {
  int listener = BoundTcp(true);
  int fd = ConnectedTo(listener);
  sockaddr_in addr = Loopback(LocalPort(listener));
  return ConnectOn(fd, &addr, sizeof(addr));
}

std::string ConnectTcp(int family, socklen_t len) {
  sockaddr_in addr = Loopback(LocalPort(BoundTcp(true)));
  addr.sin_family = static_cast<sa_family_t>(family);
  return ConnectOn(NewTcp(), &addr, len);
}

std::string ConnectUdp() {
  int peer = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  bind(peer, reinterpret_cast<sockaddr*>(&addr), len);
  getsockname(peer, reinterpret_cast<sockaddr*>(&addr), &len);
  return ConnectOn(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), &addr, len);
}

std::string ConnectUnix(bool existing) {
  sockaddr_un addr{};
  socklen_t len = 0;
  int listener = UnixListener(&addr, &len);
  if (!existing) {
    close(listener);
    addr.sun_path[1] = 'X';  // an abstract name nobody listens on
  }
  return ConnectOn(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), &addr, len);
}

// ---------------------------------------------------------------------------------------
// pthread_create

// What a new thread sees of itself. Filled in by Observe (the start routine).
struct Seen {
  const cpu_set_t* expect_cpus = nullptr;  // checked when set (size expect_size)
  size_t expect_size = 0;
  int errno_at_start = -1;
  bool sigmask_kept = false;
  bool affinity_kept = false;
  bool exit_through_pthread_exit = false;
  sem_t* finished = nullptr;  // posted at the end (detached threads)
};

void* Observe(void* raw) {
  Seen* seen = static_cast<Seen*>(raw);
  seen->errno_at_start = errno;
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  seen->sigmask_kept = sigismember(&mask, SIGUSR1) == 1;
  if (seen->expect_cpus != nullptr) {
    cpu_set_t* now = CPU_ALLOC(2048);
    size_t size = CPU_ALLOC_SIZE(2048);
    CPU_ZERO_S(size, now);
    seen->affinity_kept =
        sched_getaffinity(0, size, now) == 0 &&
        CPU_COUNT_S(size, now) == CPU_COUNT_S(seen->expect_size, seen->expect_cpus);
    for (int cpu = 0; cpu < 2048 && seen->affinity_kept; ++cpu) {
      seen->affinity_kept =
          CPU_ISSET_S(cpu, size, now) == (static_cast<size_t>(cpu) < seen->expect_size * 8 &&
                                          CPU_ISSET_S(cpu, seen->expect_size, seen->expect_cpus));
    }
    CPU_FREE(now);
  }
  bool through_pthread_exit = seen->exit_through_pthread_exit;
  if (seen->finished != nullptr) sem_post(seen->finished);  // *seen may be gone after this
  if (through_pthread_exit) pthread_exit(raw);
  return raw;
}

// Creates one thread with `attr` (joinable unless the attr says detached) and reports the
// return code, what the thread saw and what pthread_join returned.
std::string CreateWith(const pthread_attr_t* attr, Seen seen = {}) {
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);  // a new thread inherits the creator's mask
  int detach = PTHREAD_CREATE_JOINABLE;
  if (attr != nullptr) pthread_attr_getdetachstate(attr, &detach);
  static sem_t finished;  // static: a detached thread may still be in sem_post
  sem_init(&finished, 0, 0);
  if (detach == PTHREAD_CREATE_DETACHED) seen.finished = &finished;
  pthread_t thread;
  errno = kUntouched;
  int rc = pthread_create(&thread, attr, &Observe, &seen);
  std::string answer =
      "rc=" + (rc == 0 ? std::string("0") : ErrnoName(rc)) + " errno=" + ErrnoName(errno);
  if (rc != 0) return answer;
  if (detach == PTHREAD_CREATE_DETACHED) {
    while (sem_wait(&finished) != 0) {
    }
  } else {
    void* value = nullptr;
    answer += Flag("joined", pthread_join(thread, &value) == 0 && value == &seen);
  }
  answer +=
      " errno_at_start=" + ErrnoName(seen.errno_at_start) + Flag("sigmask_kept", seen.sigmask_kept);
  if (seen.expect_cpus != nullptr) answer += Flag("affinity_kept", seen.affinity_kept);
  return answer;
}

// An attr whose own affinity is `cpus` (size bytes).
std::string CreateWithCpus(const cpu_set_t* cpus, size_t size) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  int set = pthread_attr_setaffinity_np(&attr, size, cpus);
  if (set != 0) {
    pthread_attr_destroy(&attr);
    return "setaffinity " + ErrnoName(set);
  }
  std::string answer = CreateWith(&attr, Seen{.expect_cpus = cpus, .expect_size = size});
  pthread_attr_destroy(&attr);
  return answer;
}

std::string CreateOnOneCpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(g_cpus.back(), &set);
  return CreateWithCpus(&set, sizeof(set));
}

std::string CreateOnAllCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : g_cpus) CPU_SET(cpu, &set);
  return CreateWithCpus(&set, sizeof(set));
}

// A cpuset larger than cpu_set_t (CPU_ALLOC for 2048 CPUs), as programs for big machines use.
std::string CreateOnLargeCpuset() {
  cpu_set_t* set = CPU_ALLOC(2048);
  size_t size = CPU_ALLOC_SIZE(2048);
  CPU_ZERO_S(size, set);
  CPU_SET_S(g_cpus.front(), size, set);
  std::string answer = CreateWithCpus(set, size);
  CPU_FREE(set);
  return answer;
}

// Only a CPU that does not exist: libc refuses to create the thread.
std::string CreateOnMissingCpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(1000, &set);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
  std::string answer = CreateWith(&attr);
  pthread_attr_destroy(&attr);
  return answer;
}

std::string CreateDefaultAttr() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  std::string answer = CreateWith(&attr);
  pthread_attr_destroy(&attr);
  return answer;
}

std::string CreateDetached() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  std::string answer = CreateWith(&attr);
  pthread_attr_destroy(&attr);
  return answer;
}

std::string CreateMinimalStack() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
  std::string answer = CreateWith(&attr);
  pthread_attr_destroy(&attr);
  return answer;
}

// Real-time scheduling: EPERM without CAP_SYS_NICE, 0 with it; the same either way.
std::string CreateExplicitFifo() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
  pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
  sched_param param{};
  param.sched_priority = 1;
  pthread_attr_setschedparam(&attr, &param);
  std::string answer = CreateWith(&attr);
  pthread_attr_destroy(&attr);
  return answer;
}

std::string CreateExitingThroughPthreadExit() {
  return CreateWith(nullptr, Seen{.exit_through_pthread_exit = true});
}

void* BlockOnPipe(void* raw) {
  int fd = *static_cast<int*>(raw);
  char c;
  while (true) {
    if (read(fd, &c, 1) < 0) continue;  // a cancellation point; only cancellation ends it
  }
  return nullptr;
}

// Cancellation unwinds through whatever the library put under the start routine.
std::string CreateAndCancel() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return "pipe failed";
  pthread_t thread;
  int rc = pthread_create(&thread, nullptr, &BlockOnPipe, &fds[0]);
  if (rc != 0) return "rc=" + ErrnoName(rc);
  int cancel = pthread_cancel(thread);
  void* value = nullptr;
  int join = pthread_join(thread, &value);
  return "rc=0 cancel=" + std::to_string(cancel) + " join=" + std::to_string(join) +
         Flag("canceled", value == PTHREAD_CANCELED);
}

// 300 threads alive at once (more than the library's 128 start slots), created from six
// threads at the same time, a quarter each with no attr, a default attr, an attr with
// its own CPU, and detached.
struct Crowd {
  static constexpr int kCreators = 6;
  static constexpr int kPerCreator = 50;
  static constexpr int kThreads = kCreators * kPerCreator;
  int gate[2] = {-1, -1};  // every thread blocks reading gate[0] until it closes
  sem_t started;
  sem_t detached_done;
  cpu_set_t one_cpu;
  struct Member {
    Crowd* crowd;
    int kind;  // 0 null attr, 1 default attr, 2 own cpuset, 3 detached
    pthread_t thread;
    int rc;
    int errno_at_start;
    bool affinity_kept;
  } members[kThreads];
};

void* CrowdMember(void* raw) {
  auto* m = static_cast<Crowd::Member*>(raw);
  m->errno_at_start = errno;
  if (m->kind == 2) {
    cpu_set_t now;
    m->affinity_kept =
        sched_getaffinity(0, sizeof(now), &now) == 0 && CPU_EQUAL(&now, &m->crowd->one_cpu);
  }
  sem_post(&m->crowd->started);
  char c;
  while (read(m->crowd->gate[0], &c, 1) < 0 && errno == EINTR) {
  }
  if (m->kind == 3) sem_post(&m->crowd->detached_done);
  return raw;
}

struct CreatorArg {
  Crowd* crowd;
  int first;
};

void* Creator(void* raw) {
  auto* arg = static_cast<CreatorArg*>(raw);
  Crowd* crowd = arg->crowd;
  for (int i = arg->first; i < arg->first + Crowd::kPerCreator; ++i) {
    Crowd::Member& m = crowd->members[i];
    m.crowd = crowd;
    m.kind = i % 4;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (m.kind == 2) pthread_attr_setaffinity_np(&attr, sizeof(cpu_set_t), &crowd->one_cpu);
    if (m.kind == 3) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    m.rc = pthread_create(&m.thread, m.kind == 0 ? nullptr : &attr, &CrowdMember, &m);
    pthread_attr_destroy(&attr);
  }
  return nullptr;
}

std::string CreateThreeHundredConcurrently() {
  static Crowd crowd;
  if (pipe2(crowd.gate, O_CLOEXEC) != 0) return "pipe failed";
  sem_init(&crowd.started, 0, 0);
  sem_init(&crowd.detached_done, 0, 0);
  CPU_ZERO(&crowd.one_cpu);
  CPU_SET(g_cpus.back(), &crowd.one_cpu);
  pthread_t creators[Crowd::kCreators];
  CreatorArg args[Crowd::kCreators];
  for (int c = 0; c < Crowd::kCreators; ++c) {
    args[c] = CreatorArg{&crowd, c * Crowd::kPerCreator};
    if (pthread_create(&creators[c], nullptr, &Creator, &args[c]) != 0) return "creator failed";
  }
  for (pthread_t& t : creators) pthread_join(t, nullptr);
  int created = 0, detached = 0;
  for (const auto& m : crowd.members) {
    created += m.rc == 0;
    detached += m.rc == 0 && m.kind == 3;
  }
  for (int i = 0; i < created; ++i) {
    while (sem_wait(&crowd.started) != 0) {
    }
  }
  // All of them are alive now, blocked on the gate.
  close(crowd.gate[1]);
  int joined = 0, errno_zero = 0, with_cpuset = 0, kept = 0;
  for (auto& m : crowd.members) {
    if (m.rc != 0) continue;
    errno_zero += m.errno_at_start == 0;
    if (m.kind == 2) {
      ++with_cpuset;
      kept += m.affinity_kept;
    }
    void* value = nullptr;
    if (m.kind != 3) joined += pthread_join(m.thread, &value) == 0 && value == &m;
  }
  for (int i = 0; i < detached; ++i) {
    while (sem_wait(&crowd.detached_done) != 0) {
    }
  }
  return "created=" + std::to_string(created) + " joined=" + std::to_string(joined) +
         " detached=" + std::to_string(detached) + " errno_zero=" + std::to_string(errno_zero) +
         " cpuset_kept=" + std::to_string(kept) + "/" + std::to_string(with_cpuset);
}

// ---------------------------------------------------------------------------------------
// Clocks

// The clock the kernel compares a reading of `id` with (coarse clocks lag their precise
// sibling by up to a tick; the library may serve one for the other).
clockid_t Reference(clockid_t id) {
  switch (id) {
    case CLOCK_REALTIME_COARSE:
    case CLOCK_REALTIME_ALARM:
      return CLOCK_REALTIME;
    case CLOCK_MONOTONIC_COARSE:
      return CLOCK_MONOTONIC;
    case CLOCK_BOOTTIME_ALARM:
      return CLOCK_BOOTTIME;
    default:
      return id;
  }
}

// A reading is plausible when it is a normalised time within one second before what the
// kernel says right after (system call, not libc, so the library cannot be in the way).
bool Plausible(clockid_t id, const timespec& ts) {
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return false;
  timespec now{};
  if (syscall(SYS_clock_gettime, Reference(id), &now) != 0) return false;
  int64_t behind = Ns(now) - Ns(ts);
  return behind >= -1000000 && behind < 1000000000;
}

bool NeverGoesBack(clockid_t id) {
  timespec last{};
  clock_gettime(id, &last);
  for (int i = 0; i < 1000; ++i) {
    timespec now{};
    clock_gettime(id, &now);
    if (Ns(now) < Ns(last)) return false;
    last = now;
  }
  return true;
}

template <clockid_t kId>
std::string GettimeValid() {
  timespec ts{-1, -1};
  std::string answer = Answer([&] { return clock_gettime(kId, &ts); });
  if (ts.tv_nsec == -1) return answer;  // not supported here (alarm clocks without an RTC)
  answer += Flag("plausible", Plausible(kId, ts));
  if (kId != CLOCK_REALTIME && kId != CLOCK_REALTIME_COARSE && kId != CLOCK_TAI &&
      kId != CLOCK_REALTIME_ALARM) {
    answer += Flag("monotonic", NeverGoesBack(kId));
  }
  return answer;
}

template <clockid_t kId>
std::string GetresValid() {
  timespec res{-1, -1};
  std::string answer = Answer([&] { return clock_getres(kId, &res); });
  if (res.tv_nsec == -1) return answer;
  // The library may report a coarse clock's tick for a precise one; both are > 0, < 0.1 s.
  return answer + Flag("plausible", res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec < 100000000);
}

// POSIX: clock_getres ignores a NULL res.
template <clockid_t kId>
std::string GetresNull() {
  return Answer([] { return clock_getres(kId, nullptr); });
}

// Clock ids made up the way the kernel encodes CPU-time and fd-based clocks.
clockid_t CpuClockOfPid(pid_t pid) { return static_cast<clockid_t>((~pid) << 3) | 2; }
clockid_t CpuClockOfTid(pid_t tid) { return static_cast<clockid_t>((~tid) << 3) | 2 | 4; }
clockid_t ClockOfFd(int fd) { return static_cast<clockid_t>((~fd) << 3) | 3; }

pid_t DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

void* StoreTid(void* out) {
  *static_cast<pid_t*>(out) = static_cast<pid_t>(syscall(SYS_gettid));
  return nullptr;
}

// A thread of a child process that has been reaped. (pthread_join alone returns before the
// kernel has released the thread, whose clock then still answers for a moment.)
pid_t DeadTid() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return 0;
  pid_t pid = fork();
  if (pid == 0) {
    pid_t tid = 0;
    pthread_t t;
    if (pthread_create(&t, nullptr, &StoreTid, &tid) == 0) pthread_join(t, nullptr);
    _exit(write(fds[1], &tid, sizeof(tid)) == sizeof(tid) ? 0 : 1);
  }
  close(fds[1]);
  pid_t tid = 0;
  if (read(fds[0], &tid, sizeof(tid)) != sizeof(tid)) tid = 0;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return tid;
}

// Bad ids, with a valid buffer and with NULL (the kernel checks the id first).
template <bool kGetres>
std::string ClockBad(clockid_t id, bool null_buffer) {
  timespec ts{-1, -1};
  timespec* out = null_buffer ? nullptr : &ts;
  std::string answer =
      Answer([&] { return kGetres ? clock_getres(id, out) : clock_gettime(id, out); });
  return answer + Flag("untouched", ts.tv_sec == -1 && ts.tv_nsec == -1);
}

template <bool kGetres>
std::string ClockOfLiveChild() {
  pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  clockid_t id;
  int rc = clock_getcpuclockid(pid, &id);
  timespec ts{};
  std::string answer = "getcpuclockid=" + std::to_string(rc) + " " + Answer([&] {
                         return kGetres ? clock_getres(id, &ts) : clock_gettime(id, &ts);
                       });
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return answer;
}

// ---------------------------------------------------------------------------------------
// gettimeofday

std::string GettimeofdayCase(bool with_tv, bool with_tz) {
  timeval tv{-1, -1};
  struct timezone tz {
    - 12345, -12345
  };
  // glibc declares tv __nonnull but accepts NULL (the kernel and the vDSO skip it), as the
  // man page says; volatile keeps the compiler from judging the call by the declaration.
  timeval* volatile tv_arg = with_tv ? &tv : nullptr;
  struct timezone* volatile tz_arg = with_tz ? &tz : nullptr;
  std::string answer = Answer([&] { return gettimeofday(tv_arg, tz_arg); });
  if (with_tv) {
    timespec ts{tv.tv_sec, tv.tv_usec * 1000};
    answer +=
        Flag("plausible", tv.tv_usec >= 0 && tv.tv_usec < 1000000 && Plausible(CLOCK_REALTIME, ts));
  }
  if (with_tz) {
    answer += " minuteswest=" + std::to_string(tz.tz_minuteswest) +
              " dsttime=" + std::to_string(tz.tz_dsttime);
  }
  return answer;
}

// ---------------------------------------------------------------------------------------
// fork and exec

void* Nothing(void* arg) { return arg; }

// The interposers answer as usual in a forked child, with its lock state inherited from
// whatever the other threads were doing at the fork.
bool InterposersWorkAfterFork() {
  timespec ts{};
  timeval tv{};
  pthread_t t;
  errno = 0;
  bool ok = clock_gettime(CLOCK_MONOTONIC, &ts) == 0 && clock_getres(CLOCK_REALTIME, &ts) == 0 &&
            gettimeofday(&tv, nullptr) == 0;
  ok = ok && clock_gettime(12345, &ts) == -1 && errno == EINVAL;
  ok = ok && listen(-1, 1) == -1 && errno == EBADF;
  ok = ok && pthread_create(&t, nullptr, &Nothing, nullptr) == 0 && pthread_join(t, nullptr) == 0;
  int listener = BoundTcp(true);
  int client = ConnectedTo(listener);
  int server = accept(listener, nullptr, nullptr);
  return ok && client >= 0 && server >= 0 && RoundTrip(client, server);
}

// Threads that keep calling every interposer while the main thread forks.
struct Busy {
  std::atomic<bool> stop{false};
  static void* Loop(void* raw) {
    auto* busy = static_cast<Busy*>(raw);
    while (!busy->stop.load(std::memory_order_relaxed)) {
      timespec ts{};
      timeval tv{};
      clock_gettime(CLOCK_REALTIME, &ts);
      clock_getres(CLOCK_MONOTONIC, &ts);
      gettimeofday(&tv, nullptr);
      listen(-1, 1);
      accept(-1, nullptr, nullptr);
      accept4(-1, nullptr, nullptr, 0);
      connect(-1, nullptr, 0);
      pthread_t t;
      if (pthread_create(&t, nullptr, &Nothing, nullptr) == 0) pthread_join(t, nullptr);
    }
    return nullptr;
  }
};

// fork, check the interposers in the child, exec /bin/true; counts children that exit 0.
std::string ForkExecTrue(int forks, int busy_threads) {
  Busy busy;
  std::vector<pthread_t> threads(static_cast<size_t>(busy_threads));
  for (pthread_t& t : threads) pthread_create(&t, nullptr, &Busy::Loop, &busy);
  int exited_zero = 0;
  for (int i = 0; i < forks; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      if (!InterposersWorkAfterFork()) _exit(3);
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    exited_zero +=
        pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  busy.stop.store(true);
  for (pthread_t& t : threads) pthread_join(t, nullptr);
  return "forks=" + std::to_string(forks) + " exited_zero=" + std::to_string(exited_zero);
}

std::string ExitedZero(pid_t pid) {
  int status = -1;
  bool zero =
      pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return Flag("exited_zero", zero);
}

std::string VforkExecTrue() {
  pid_t pid = vfork();
  if (pid == 0) {
    execl("/bin/true", "true", static_cast<char*>(nullptr));
    _exit(127);
  }
  return ExitedZero(pid);
}

std::string PosixSpawnTrue() {
  char arg0[] = "true";
  char* argv[] = {arg0, nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ);
  return "rc=" + std::to_string(rc) + ExitedZero(pid);
}

// ---------------------------------------------------------------------------------------
// What the features change, by design: the test checks the library really was on.

void* CountCpus(void* out) {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  *static_cast<int*>(out) = CPU_COUNT(&set);
  return nullptr;
}

std::string Features() {
  timespec res{};
  clock_getres(CLOCK_MONOTONIC, &res);
  int client = -1;
  int listener = ListenerWithPending(&client);
  int server = accept(listener, nullptr, nullptr);
  int nodelay = -1;
  socklen_t len = sizeof(nodelay);
  getsockopt(server, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len);
  int thread_cpus = -1;
  pthread_t t;
  if (pthread_create(&t, nullptr, &CountCpus, &thread_cpus) == 0) pthread_join(t, nullptr);
  return "monotonic_res_ns=" + std::to_string(Ns(res)) + " nodelay=" + std::to_string(nodelay) +
         " thread_cpus=" + std::to_string(thread_cpus);
}

// ---------------------------------------------------------------------------------------
// The table. Names are "<interposer>/<case>"; the test sweeps every exported interposer's
// prefix, plus "fork/". "witness/" shows the features at work (it differs from libc on
// purpose); "harness/" cases prove the test notices a crash or a hang.

struct Case {
  const char* name;
  std::string (*run)();
};

const Case kCases[] = {
    {"listen/minus_one_fd", [] { return ListenOn(-1, 5); }},
    {"listen/closed_fd", [] { return ListenOn(ClosedFd(), 5); }},
    {"listen/pipe_fd", [] { return ListenOn(PipeFd(), 5); }},
    {"listen/udp_socket",
     [] { return ListenOn(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), 5); }},
    {"listen/unix_dgram_socket",
     [] { return ListenOn(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), 5); }},
    {"listen/unix_unbound",
     [] { return ListenOn(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), 5); }},
    {"listen/unix_bound", [] { return ListenUnixBound(); }},
    {"listen/tcp_unbound", [] { return ListenOn(NewTcp(), 5); }},
    {"listen/tcp_backlog_5", [] { return ListenAndServe(5); }},
    {"listen/tcp_backlog_0", [] { return ListenAndServe(0); }},
    {"listen/tcp_backlog_negative", [] { return ListenAndServe(-1); }},
    {"listen/tcp_backlog_int_max", [] { return ListenAndServe(2147483647); }},
    {"listen/tcp_twice",
     [] {
       int fd = BoundTcp(true);
       return ListenOn(fd, 100);
     }},
    {"listen/tcp_connected", [] { return ListenConnectedTcp(); }},
    {"listen/tcp_reused_fd",  // a tracked listener closed, its number reused by a new one
     [] {
       int first = BoundTcp(true);
       close(first);
       int second = BoundTcp(false);
       return "same_fd=" + std::to_string(first == second) + " " + ListenOn(second, 3);
     }},

    {"accept/minus_one_fd", [] { return AcceptOn(false, -1); }},
    {"accept/closed_fd", [] { return AcceptOn(false, ClosedFd()); }},
    {"accept/pipe_fd", [] { return AcceptOn(false, PipeFd()); }},
    {"accept/tcp_not_listening", [] { return AcceptOn(false, BoundTcp(false)); }},
    {"accept/udp_socket",
     [] { return AcceptOn(false, socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)); }},
    {"accept/nonblocking_empty_queue", &AcceptEmptyNonblocking<false>},
    {"accept/null_addr_null_len", &AcceptNullAddrNullLen<false>},
    {"accept/full_addr", &AcceptFullAddr<false>},
    {"accept/short_len", &AcceptShortLen<false>},
    {"accept/null_addr_with_len", &AcceptNullAddrWithLen<false>},
    {"accept/addr_with_null_len", &AcceptAddrWithNullLen<false>},
    {"accept/negative_len", &AcceptNegativeLen<false>},
    {"accept/unreadable_addr", &AcceptUnreadableAddr<false>},
    {"accept/unix_listener", &AcceptUnix<false>},

    {"accept4/minus_one_fd", [] { return AcceptOn(true, -1); }},
    {"accept4/closed_fd", [] { return AcceptOn(true, ClosedFd()); }},
    {"accept4/pipe_fd", [] { return AcceptOn(true, PipeFd()); }},
    {"accept4/tcp_not_listening", [] { return AcceptOn(true, BoundTcp(false)); }},
    {"accept4/nonblocking_empty_queue", &AcceptEmptyNonblocking<true>},
    {"accept4/null_addr_null_len", &AcceptNullAddrNullLen<true>},
    {"accept4/full_addr", &AcceptFullAddr<true>},
    {"accept4/short_len", &AcceptShortLen<true>},
    {"accept4/null_addr_with_len", &AcceptNullAddrWithLen<true>},
    {"accept4/addr_with_null_len", &AcceptAddrWithNullLen<true>},
    {"accept4/negative_len", &AcceptNegativeLen<true>},
    {"accept4/unreadable_addr", &AcceptUnreadableAddr<true>},
    {"accept4/unix_listener", &AcceptUnix<true>},
    {"accept4/nonblock_cloexec", [] { return Accept4Flags(SOCK_NONBLOCK | SOCK_CLOEXEC); }},
    {"accept4/nonblock", [] { return Accept4Flags(SOCK_NONBLOCK); }},
    {"accept4/invalid_flags", [] { return Accept4Flags(0x40000000); }},

    {"connect/minus_one_fd",
     [] {
       sockaddr_in addr = Loopback(9);
       return ConnectOn(-1, &addr, sizeof(addr));
     }},
    {"connect/closed_fd",
     [] {
       sockaddr_in addr = Loopback(9);
       return ConnectOn(ClosedFd(), &addr, sizeof(addr));
     }},
    {"connect/pipe_fd",
     [] {
       sockaddr_in addr = Loopback(9);
       return ConnectOn(PipeFd(), &addr, sizeof(addr));
     }},
    {"connect/minus_one_fd_null_addr", [] { return ConnectOn(-1, nullptr, 0); }},
    {"connect/null_addr_zero_len", [] { return ConnectOn(NewTcp(), nullptr, 0); }},
    {"connect/null_addr_full_len",
     [] { return ConnectOn(NewTcp(), nullptr, sizeof(sockaddr_in)); }},
    {"connect/unreadable_addr",
     [] { return ConnectOn(NewTcp(), Unreadable(), sizeof(sockaddr_in)); }},
    {"connect/unreadable_addr_unix",
     [] {
       return ConnectOn(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), Unreadable(),
                        sizeof(sockaddr_un));
     }},
    {"connect/len_one", [] { return ConnectTcp(AF_INET, 1); }},
    {"connect/short_len", [] { return ConnectTcp(AF_INET, 4); }},
    {"connect/af_unspec", [] { return ConnectTcp(AF_UNSPEC, sizeof(sockaddr_in)); }},
    {"connect/af_unix_family_on_tcp", [] { return ConnectTcp(AF_UNIX, sizeof(sockaddr_in)); }},
    {"connect/loopback_listener", &ConnectLoopbackListener},
    {"connect/ipv6_loopback", &ConnectIpv6Loopback},
    {"connect/refused", &ConnectRefused},
    {"connect/nonblocking", &ConnectNonblocking},
    {"connect/already_connected", &ConnectAlreadyConnected},
    {"connect/udp", &ConnectUdp},
    {"connect/unix_listener", [] { return ConnectUnix(true); }},
    {"connect/unix_nobody_listening", [] { return ConnectUnix(false); }},

    {"pthread_create/null_attr", [] { return CreateWith(nullptr); }},
    {"pthread_create/default_attr", &CreateDefaultAttr},
    {"pthread_create/detached", &CreateDetached},
    {"pthread_create/own_cpuset_one_cpu", &CreateOnOneCpu},
    {"pthread_create/own_cpuset_all_cpus", &CreateOnAllCpus},
    {"pthread_create/own_cpuset_2048_cpus", &CreateOnLargeCpuset},
    {"pthread_create/own_cpuset_missing_cpu", &CreateOnMissingCpu},
    {"pthread_create/minimal_stack", &CreateMinimalStack},
    {"pthread_create/explicit_sched_fifo", &CreateExplicitFifo},
    {"pthread_create/pthread_exit_value", &CreateExitingThroughPthreadExit},
    {"pthread_create/cancelled", &CreateAndCancel},
    {"pthread_create/300_concurrent", &CreateThreeHundredConcurrently},

    {"clock_gettime/realtime", &GettimeValid<CLOCK_REALTIME>},
    {"clock_gettime/monotonic", &GettimeValid<CLOCK_MONOTONIC>},
    {"clock_gettime/process_cputime", &GettimeValid<CLOCK_PROCESS_CPUTIME_ID>},
    {"clock_gettime/thread_cputime", &GettimeValid<CLOCK_THREAD_CPUTIME_ID>},
    {"clock_gettime/monotonic_raw", &GettimeValid<CLOCK_MONOTONIC_RAW>},
    {"clock_gettime/realtime_coarse", &GettimeValid<CLOCK_REALTIME_COARSE>},
    {"clock_gettime/monotonic_coarse", &GettimeValid<CLOCK_MONOTONIC_COARSE>},
    {"clock_gettime/boottime", &GettimeValid<CLOCK_BOOTTIME>},
    {"clock_gettime/realtime_alarm", &GettimeValid<CLOCK_REALTIME_ALARM>},
    {"clock_gettime/boottime_alarm", &GettimeValid<CLOCK_BOOTTIME_ALARM>},
    {"clock_gettime/tai", &GettimeValid<CLOCK_TAI>},
    {"clock_gettime/id_12345", [] { return ClockBad<false>(12345, false); }},
    {"clock_gettime/id_minus_one", [] { return ClockBad<false>(-1, false); }},
    {"clock_gettime/id_12345_null_ts", [] { return ClockBad<false>(12345, true); }},
    {"clock_gettime/id_minus_one_null_ts", [] { return ClockBad<false>(-1, true); }},
    {"clock_gettime/cpu_clock_of_dead_pid",
     [] { return ClockBad<false>(CpuClockOfPid(DeadPid()), false); }},
    {"clock_gettime/cpu_clock_of_dead_thread",
     [] { return ClockBad<false>(CpuClockOfTid(DeadTid()), false); }},
    {"clock_gettime/dynamic_clock_closed_fd",
     [] { return ClockBad<false>(ClockOfFd(ClosedFd()), false); }},
    {"clock_gettime/dynamic_clock_pipe_fd",
     [] { return ClockBad<false>(ClockOfFd(PipeFd()), false); }},
    {"clock_gettime/cpu_clock_of_live_child", &ClockOfLiveChild<false>},

    {"clock_getres/realtime", &GetresValid<CLOCK_REALTIME>},
    {"clock_getres/monotonic", &GetresValid<CLOCK_MONOTONIC>},
    {"clock_getres/process_cputime", &GetresValid<CLOCK_PROCESS_CPUTIME_ID>},
    {"clock_getres/thread_cputime", &GetresValid<CLOCK_THREAD_CPUTIME_ID>},
    {"clock_getres/monotonic_raw", &GetresValid<CLOCK_MONOTONIC_RAW>},
    {"clock_getres/realtime_coarse", &GetresValid<CLOCK_REALTIME_COARSE>},
    {"clock_getres/monotonic_coarse", &GetresValid<CLOCK_MONOTONIC_COARSE>},
    {"clock_getres/boottime", &GetresValid<CLOCK_BOOTTIME>},
    {"clock_getres/tai", &GetresValid<CLOCK_TAI>},
    {"clock_getres/realtime_null_res", &GetresNull<CLOCK_REALTIME>},
    {"clock_getres/monotonic_null_res", &GetresNull<CLOCK_MONOTONIC>},
    {"clock_getres/boottime_null_res", &GetresNull<CLOCK_BOOTTIME>},
    {"clock_getres/id_12345", [] { return ClockBad<true>(12345, false); }},
    {"clock_getres/id_minus_one", [] { return ClockBad<true>(-1, false); }},
    {"clock_getres/id_12345_null_res", [] { return ClockBad<true>(12345, true); }},
    {"clock_getres/cpu_clock_of_dead_pid",
     [] { return ClockBad<true>(CpuClockOfPid(DeadPid()), false); }},
    {"clock_getres/dynamic_clock_closed_fd",
     [] { return ClockBad<true>(ClockOfFd(ClosedFd()), false); }},
    {"clock_getres/cpu_clock_of_live_child", &ClockOfLiveChild<true>},

    {"gettimeofday/tv_null_tz", [] { return GettimeofdayCase(true, false); }},
    {"gettimeofday/null_tv_null_tz", [] { return GettimeofdayCase(false, false); }},
    {"gettimeofday/tv_and_tz", [] { return GettimeofdayCase(true, true); }},
    {"gettimeofday/null_tv_with_tz", [] { return GettimeofdayCase(false, true); }},

    {"fork/exec_true", [] { return ForkExecTrue(5, 0); }},
    {"fork/exec_true_while_threads_call_every_interposer", [] { return ForkExecTrue(40, 4); }},
    {"fork/vfork_exec_true", &VforkExecTrue},
    {"fork/posix_spawn_true", &PosixSpawnTrue},

    {"witness/features", &Features},

    {"harness/crash",
     [] {
       raise(SIGSEGV);
       return std::string("not reached");
     }},
    {"harness/hang",
     [] {
       pause();
       return std::string("not reached");
     }},
};

std::vector<int> ParseCpus(const char* text) {
  std::vector<int> cpus;
  const char* p = text;
  while (*p != '\0') {
    char* end = nullptr;
    long first = strtol(p, &end, 10);
    long last = first;
    if (end == p) return {};
    if (*end == '-') {
      p = end + 1;
      last = strtol(p, &end, 10);
      if (end == p) return {};
    }
    for (long cpu = first; cpu <= last && cpu < CPU_SETSIZE; ++cpu) {
      cpus.push_back(static_cast<int>(cpu));
    }
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') return {};
  }
  return cpus;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (const Case& c : kCases) printf("%s\n", c.name);
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: %s --list | <case> <cpu list>\n", argv[0]);
    return 2;
  }
  g_cpus = ParseCpus(argv[2]);
  if (g_cpus.empty()) {
    fprintf(stderr, "bad cpu list %s\n", argv[2]);
    return 2;
  }
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // a crashing case is reported, not dumped
  signal(SIGPIPE, SIG_IGN);
  for (const Case& c : kCases) {
    if (strcmp(c.name, argv[1]) != 0) continue;
    std::string line = c.run();
    printf("%s\n", line.c_str() + (line[0] == ' '));
    fflush(stdout);
    return 0;
  }
  fprintf(stderr, "unknown case %s\n", argv[1]);
  return 2;
}
