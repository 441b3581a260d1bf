/* pingpong: a request/response exchange that stalls on Nagle's algorithm plus delayed
 * ACK. The client sends each request in two writes (header, then body) and the server
 * answers in two writes; without TCP_NODELAY every second write waits for the peer's
 * delayed ACK (about 40 ms on Linux).
 *
 *   pingpong server <port-file>                 listen on 127.0.0.1:0, write the port
 *   pingpong client <port> <connections> <seconds>
 *
 * The client prints one line: requests=N rps=R p50_us=A p99_us=B
 * The program never sets TCP_NODELAY itself: that is libbooster.so's job in the bench. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kHeader = 32, kBody = 96, kRespHeader = 32, kRespBody = 512 };

static int WriteAll(int fd, const char* buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

static int ReadAll(int fd, char* buf, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, buf, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    buf += r;
    n -= (size_t)r;
  }
  return 0;
}

static void* Serve(void* arg) {
  int fd = (int)(intptr_t)arg;
  char req[kHeader + kBody];
  char resp[kRespHeader + kRespBody];
  memset(resp, 'r', sizeof(resp));
  while (ReadAll(fd, req, sizeof(req)) == 0) {
    if (WriteAll(fd, resp, kRespHeader) != 0) break;
    if (WriteAll(fd, resp + kRespHeader, kRespBody) != 0) break;
  }
  close(fd);
  return NULL;
}

static int RunServer(const char* port_file) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(ls, (struct sockaddr*)&addr, sizeof(addr)) != 0 || listen(ls, 128) != 0) {
    perror("pingpong: bind/listen");
    return 1;
  }
  socklen_t len = sizeof(addr);
  getsockname(ls, (struct sockaddr*)&addr, &len);
  FILE* f = fopen(port_file, "w");
  if (f == NULL) {
    perror("pingpong: port file");
    return 1;
  }
  fprintf(f, "%d\n", ntohs(addr.sin_port));
  fclose(f);
  for (;;) {
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) {
      if (errno == EINTR) continue;
      perror("pingpong: accept");
      return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, Serve, (void*)(intptr_t)fd);
    pthread_detach(t);
  }
}

struct ClientArgs {
  int port;
  double seconds;
  uint32_t* latencies_us; /* owned by main */
  size_t capacity;
  size_t count;
  int failed;
};

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void* Client(void* arg) {
  struct ClientArgs* a = arg;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)a->port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&addr, sizeof(addr)) != 0) {
    perror("pingpong: connect");
    a->failed = 1;
    return NULL;
  }
  char req[kHeader + kBody];
  char resp[kRespHeader + kRespBody];
  memset(req, 'q', sizeof(req));
  double end = Now() + a->seconds;
  while (a->count < a->capacity) {
    double start = Now();
    if (start >= end) break;
    if (WriteAll(fd, req, kHeader) != 0 || WriteAll(fd, req + kHeader, kBody) != 0 ||
        ReadAll(fd, resp, sizeof(resp)) != 0) {
      a->failed = 1;
      break;
    }
    a->latencies_us[a->count++] = (uint32_t)((Now() - start) * 1e6);
  }
  close(fd);
  return NULL;
}

static int CompareU32(const void* x, const void* y) {
  uint32_t a = *(const uint32_t*)x, b = *(const uint32_t*)y;
  return (a > b) - (a < b);
}

static int RunClient(int port, int connections, double seconds) {
  enum { kCapacity = 1 << 20 };
  struct ClientArgs* args = calloc((size_t)connections, sizeof(*args));
  pthread_t* threads = calloc((size_t)connections, sizeof(*threads));
  for (int i = 0; i < connections; ++i) {
    args[i] = (struct ClientArgs){.port = port, .seconds = seconds, .capacity = kCapacity};
    args[i].latencies_us = malloc(kCapacity * sizeof(uint32_t));
  }
  double start = Now();
  for (int i = 0; i < connections; ++i) pthread_create(&threads[i], NULL, Client, &args[i]);
  size_t total = 0;
  int failed = 0;
  for (int i = 0; i < connections; ++i) {
    pthread_join(threads[i], NULL);
    total += args[i].count;
    failed |= args[i].failed;
  }
  double elapsed = Now() - start;
  uint32_t* all = malloc((total > 0 ? total : 1) * sizeof(uint32_t));
  size_t k = 0;
  for (int i = 0; i < connections; ++i) {
    memcpy(all + k, args[i].latencies_us, args[i].count * sizeof(uint32_t));
    k += args[i].count;
  }
  qsort(all, total, sizeof(uint32_t), CompareU32);
  uint32_t p50 = total ? all[total / 2] : 0;
  uint32_t p99 = total ? all[(size_t)(total * 0.99)] : 0;
  printf("requests=%zu rps=%.1f p50_us=%u p99_us=%u\n", total, total / elapsed, p50, p99);
  return failed ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "server") == 0) return RunServer(argv[2]);
  if (argc == 5 && strcmp(argv[1], "client") == 0) {
    return RunClient(atoi(argv[2]), atoi(argv[3]), atof(argv[4]));
  }
  fprintf(stderr,
          "usage: pingpong server <port-file>\n"
          "       pingpong client <port> <connections> <seconds>\n");
  return 2;
}
