/* alloc_churn: an allocation-heavy multi-threaded workload, the shape of a request
 * handler that builds and drops many small and medium objects, some of them freed by a
 * different thread than the one that allocated them (a producer/consumer hand-off).
 *
 *   alloc_churn <threads> <seconds>
 *
 * Prints: ops=N ops_per_s=R max_rss_kb=K   (an op is one malloc + its free) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum { kSlots = 4096, kHandoff = 1024 };

struct Worker {
  int id;
  double seconds;
  uint64_t ops;
  /* Objects this worker hands to the next worker to free. */
  void* _Atomic handoff[kHandoff];
};

static struct Worker* workers;
static int nworkers;

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t Next(uint64_t* s) { /* xorshift64 */
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static size_t SizeFor(uint64_t r) {
  /* Mostly small (16..512 B), sometimes medium (4..64 KiB), like request buffers. */
  if ((r & 63) == 0) return 4096 + (r >> 8) % 61440;
  return 16 + (r >> 8) % 496;
}

static void* Run(void* arg) {
  struct Worker* w = arg;
  struct Worker* next = &workers[(w->id + 1) % nworkers];
  void* slots[kSlots] = {0};
  uint64_t seed = 0x9E3779B97F4A7C15ull * (uint64_t)(w->id + 1);
  double end = Now() + w->seconds;
  uint64_t ops = 0;
  while ((ops & 1023) != 0 || Now() < end) {
    uint64_t r = Next(&seed);
    size_t i = r % kSlots;
    if (slots[i] != NULL) {
      if ((r & 7) == 0) {
        /* hand off to the next worker, freeing whatever it left there */
        void* old = atomic_exchange(&next->handoff[(r >> 20) % kHandoff], slots[i]);
        free(old);
      } else {
        free(slots[i]);
      }
      slots[i] = NULL;
      ++ops;
    } else {
      size_t n = SizeFor(r);
      char* p = malloc(n);
      if (p == NULL) abort();
      memset(p, (int)(r & 0xff), n < 64 ? n : 64);
      slots[i] = p;
    }
  }
  for (size_t i = 0; i < kSlots; ++i) free(slots[i]);
  w->ops = ops;
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: alloc_churn <threads> <seconds>\n");
    return 2;
  }
  nworkers = atoi(argv[1]);
  double seconds = atof(argv[2]);
  if (nworkers < 1) nworkers = 1;
  workers = calloc((size_t)nworkers, sizeof(*workers));
  pthread_t* threads = calloc((size_t)nworkers, sizeof(*threads));
  double start = Now();
  for (int i = 0; i < nworkers; ++i) {
    workers[i].id = i;
    workers[i].seconds = seconds;
    pthread_create(&threads[i], NULL, Run, &workers[i]);
  }
  uint64_t total = 0;
  for (int i = 0; i < nworkers; ++i) {
    pthread_join(threads[i], NULL);
    total += workers[i].ops;
  }
  double elapsed = Now() - start;
  for (int i = 0; i < nworkers; ++i) {
    for (int j = 0; j < kHandoff; ++j) free(atomic_load(&workers[i].handoff[j]));
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("ops=%llu ops_per_s=%.0f max_rss_kb=%ld\n", (unsigned long long)total,
         total / elapsed, ru.ru_maxrss);
  return 0;
}
