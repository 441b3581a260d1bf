// booster_probe: a small program the runtime tests run under LD_PRELOAD=libbooster.so in
// place of a third-party server. It reads one command per line on stdin, performs it
// through the ordinary libc calls (the ones the library interposes) and answers one line
// on stdout, so a test can drive it step by step and read what the process observed.
//
//   listen <backlog>      -> "port <p> fd <fd>"         (TCP on 127.0.0.1, port 0)
//   accept <fd>           -> "accepted <fd> <socket options>"
//   connect <port>        -> "connected <fd> <socket options>"
//   unix                  -> "unix ok|fail"             (connect on an AF_UNIX pair)
//   threads <n>           -> "threads <tid> ..."        (threads block until `release`)
//   attrthread <cpu>      -> "attrthread <tid>"         (affinity chosen through its attr)
//   release               -> "released"
//   clock                 -> "clock <res realtime ns> <res monotonic ns> <gettime rc>"
//   ticks                 -> "ticks <distinct gettimeofday values> <distinct clock_gettime
//                             (CLOCK_MONOTONIC) values>" over 2000 back-to-back reads each
//   mempolicy             -> "mempolicy <main mode> <thread mode>"
//   affinity              -> "affinity <cpu list of the main thread>"
//   fork                  -> "forked <pid>" (the child sleeps until the probe exits)
//   exec                  -> the probe replaces itself with a fresh copy (same pipes)
//   malloc                -> "malloc <file defining the malloc this process uses>"
//   quit
// Socket options are printed as "nodelay=N busy_poll=N rcvbuf=N sndbuf=N".
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

namespace {

int g_gate[2] = {-1, -1};  // threads block reading g_gate[0] until `release`

void PrintOptions(int fd) {
  int nodelay = -1, busy = -1, rcv = -1, snd = -1;
  socklen_t len = sizeof(int);
  getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len);
  len = sizeof(int);
  getsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &busy, &len);
  len = sizeof(int);
  getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len);
  len = sizeof(int);
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &len);
  printf(" nodelay=%d busy_poll=%d rcvbuf=%d sndbuf=%d\n", nodelay, busy, rcv, snd);
}

void* Blocker(void* tid_out) {
  *static_cast<long*>(tid_out) = syscall(SYS_gettid);
  char c;
  while (read(g_gate[0], &c, 1) < 0 && errno == EINTR) {
  }
  return nullptr;
}

long MempolicyMode() {
  int mode = -1;
  unsigned long mask[16] = {};
  if (syscall(SYS_get_mempolicy, &mode, mask, 16 * 64, nullptr, 0) != 0) return -1;
  return mode;
}

void* MempolicyThread(void* out) {
  *static_cast<long*>(out) = MempolicyMode();
  return nullptr;
}

void PrintCpuList(const cpu_set_t& set) {
  bool first = true;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    printf("%s%d", first ? "" : ",", cpu);
    first = false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  (void)argc;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  setvbuf(stdin, nullptr, _IONBF, 0);  // read no further than the current command (exec)
  signal(SIGPIPE, SIG_IGN);
  if (pipe(g_gate) != 0) return 1;
  char line[256];
  while (fgets(line, sizeof(line), stdin) != nullptr) {
    char cmd[32] = {};
    long arg = 0;
    int fields = sscanf(line, "%31s %ld", cmd, &arg);
    if (fields < 1) continue;
    if (strcmp(cmd, "listen") == 0) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      socklen_t len = sizeof(addr);
      if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
          listen(fd, static_cast<int>(arg)) != 0 ||
          getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        printf("error %d\n", errno);
        continue;
      }
      printf("port %d fd %d\n", ntohs(addr.sin_port), fd);
    } else if (strcmp(cmd, "accept") == 0) {
      int fd = accept(static_cast<int>(arg), nullptr, nullptr);
      if (fd < 0) {
        printf("error %d\n", errno);
        continue;
      }
      printf("accepted %d", fd);
      PrintOptions(fd);
    } else if (strcmp(cmd, "connect") == 0) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(arg));
      errno = 0;
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        printf("error %d\n", errno);
        continue;
      }
      printf("connected %d", fd);
      PrintOptions(fd);
    } else if (strcmp(cmd, "unix") == 0) {
      // A connect on AF_UNIX must work exactly as without the library, errno included.
      int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr addr{};
      addr.sa_family = AF_UNIX;
      errno = 0;
      int rc = connect(fd, &addr, sizeof(sa_family_t) + 1);
      printf("unix rc=%d errno=%d\n", rc, errno);
      close(fd);
    } else if (strcmp(cmd, "threads") == 0) {
      static long tids[64];
      long n = arg < 1 ? 1 : (arg > 64 ? 64 : arg);
      pthread_t t;
      printf("threads");
      for (long i = 0; i < n; ++i) {
        tids[i] = 0;
        if (pthread_create(&t, nullptr, &Blocker, &tids[i]) != 0) {
          printf(" error");
          continue;
        }
        pthread_detach(t);
        while (__atomic_load_n(&tids[i], __ATOMIC_ACQUIRE) == 0) sched_yield();
        printf(" %ld", tids[i]);
      }
      printf("\n");
    } else if (strcmp(cmd, "attrthread") == 0) {
      static long tid;
      tid = 0;
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(static_cast<int>(arg), &set);
      pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
      pthread_t t;
      if (pthread_create(&t, &attr, &Blocker, &tid) != 0) {
        printf("error\n");
        continue;
      }
      pthread_attr_destroy(&attr);
      pthread_detach(t);
      while (__atomic_load_n(&tid, __ATOMIC_ACQUIRE) == 0) sched_yield();
      printf("attrthread %ld\n", tid);
    } else if (strcmp(cmd, "release") == 0) {
      close(g_gate[1]);  // wakes every blocked thread
      close(g_gate[0]);
      if (pipe(g_gate) != 0) return 1;
      printf("released\n");
    } else if (strcmp(cmd, "clock") == 0) {
      timespec rt{}, mono{}, now{};
      clock_getres(CLOCK_REALTIME, &rt);
      clock_getres(CLOCK_MONOTONIC, &mono);
      int rc = clock_gettime(CLOCK_MONOTONIC, &now);
      printf("clock %ld %ld %d\n", rt.tv_sec * 1000000000L + rt.tv_nsec,
             mono.tv_sec * 1000000000L + mono.tv_nsec, rc);
    } else if (strcmp(cmd, "ticks") == 0) {
      constexpr int kReads = 2000;
      static timeval tv[kReads];
      static timespec ts[kReads];
      for (int i = 0; i < kReads; ++i) gettimeofday(&tv[i], nullptr);
      for (int i = 0; i < kReads; ++i) clock_gettime(CLOCK_MONOTONIC, &ts[i]);
      int distinct_tv = 1, distinct_ts = 1;
      for (int i = 1; i < kReads; ++i) {
        distinct_tv += tv[i].tv_sec != tv[i - 1].tv_sec || tv[i].tv_usec != tv[i - 1].tv_usec;
        distinct_ts += ts[i].tv_sec != ts[i - 1].tv_sec || ts[i].tv_nsec != ts[i - 1].tv_nsec;
      }
      printf("ticks %d %d\n", distinct_tv, distinct_ts);
    } else if (strcmp(cmd, "mempolicy") == 0) {
      long thread_mode = -2;
      pthread_t t;
      if (pthread_create(&t, nullptr, &MempolicyThread, &thread_mode) == 0)
        pthread_join(t, nullptr);
      printf("mempolicy %ld %ld\n", MempolicyMode(), thread_mode);
    } else if (strcmp(cmd, "affinity") == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      sched_getaffinity(0, sizeof(set), &set);
      printf("affinity ");
      PrintCpuList(set);
      printf("\n");
    } else if (strcmp(cmd, "fork") == 0) {
      int gate[2];
      if (pipe(gate) != 0) return 1;
      pid_t pid = fork();
      if (pid == 0) {
        // The child lives until the probe exits (its end of the pipe closes).
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(gate[1]);
        char c;
        while (read(gate[0], &c, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
      }
      close(gate[0]);  // gate[1] stays open in the probe on purpose
      printf("forked %d\n", static_cast<int>(pid));
    } else if (strcmp(cmd, "exec") == 0) {
      fflush(stdout);
      execv("/proc/self/exe", argv);
      printf("error %d\n", errno);
    } else if (strcmp(cmd, "malloc") == 0) {
      void* p = malloc(64);  // the allocator really serves this process
      Dl_info info{};
      void* sym = dlsym(RTLD_DEFAULT, "malloc");
      printf("malloc %s\n", sym != nullptr && dladdr(sym, &info) != 0 && info.dli_fname != nullptr
                                ? info.dli_fname
                                : "?");
      free(p);
    } else if (strcmp(cmd, "quit") == 0) {
      break;
    } else {
      printf("unknown %s\n", cmd);
    }
  }
  return 0;
}
