// backlog_server: the cluster benchmark's short-connection server (bench/cluster, burst
// case). A single-threaded accept loop with a small listen backlog, the way many C
// servers and old frameworks ship: each connection is read up to the end of its request
// headers, given WORK_US microseconds of CPU (a little work per request), answered with a
// small HTTP/1.0 200 and closed by the server.
//
// Dynamically linked on purpose: libbooster.so, loaded with LD_PRELOAD, interposes
// listen() and can raise the backlog without a rebuild.
//
//   backlog_server [PORT [BACKLOG [WORK_US]]]      defaults: 8080 8 300
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// CPU work, not sleep: what a handler does with a request.
static unsigned long burn(long us) {
  unsigned long x = 1;
  double end = now_us() + us;
  while (now_us() < end)
    for (int i = 0; i < 256; i++) x = x * 6364136223846793005ul + 1442695040888963407ul;
  return x;
}

int main(int argc, char** argv) {
  int port = argc > 1 ? atoi(argv[1]) : 8080;
  int backlog = argc > 2 ? atoi(argv[2]) : 8;
  long work_us = argc > 3 ? atol(argv[3]) : 300;
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stdout, NULL, _IOLBF, 0);

  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, sizeof a) != 0 || listen(fd, backlog) != 0) {
    perror("backlog_server: socket/bind/listen");
    return 1;
  }
  printf("backlog_server: port %d, listen backlog %d, %ld us of work per request\n", port,
         backlog, work_us);

  char buf[4096];
  unsigned long served = 0;
  for (;;) {
    int c = accept(fd, NULL, NULL);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      perror("accept");
      continue;
    }
    struct timeval tv = {.tv_sec = 2};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t got = 0;
    for (;;) {  // up to the end of the headers
      ssize_t n = read(c, buf + got, sizeof buf - 1 - got);
      if (n <= 0) break;
      got += (size_t)n;
      buf[got] = 0;
      if (strstr(buf, "\r\n\r\n") || got == sizeof buf - 1) break;
    }
    if (got > 0) {
      unsigned long x = burn(work_us);
      char resp[256];
      int body = snprintf(buf, sizeof buf, "served %lu (%lu)\n", ++served, x % 10);
      int len = snprintf(resp, sizeof resp,
                         "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                         "Connection: close\r\n\r\n%s",
                         body, buf);
      ssize_t off = 0;
      while (off < len) {
        ssize_t n = write(c, resp + off, len - off);
        if (n <= 0) break;
        off += n;
      }
    }
    close(c);
  }
}
