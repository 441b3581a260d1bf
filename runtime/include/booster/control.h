/* booster/control.h: the control page shared by booster-agent (the only writer) and
 * libbooster.so (a reader in every process of the pod).
 *
 * The page is a fixed-size file on the pod's shared volume, named by the BOOSTER_CONTROL
 * environment variable. The library maps it read-only; the agent maps it read-write and
 * changes it in place (never by rename, which would leave readers on the old inode).
 * `generation` is a sequence lock: odd while a write is in progress, even when the page
 * is stable; every completed write leaves it two higher. Readers copy the page and retry
 * while the generation is odd or changed under them.
 *
 *   struct booster_control page;                 // writer (the agent)
 *   booster_control_init(&page);
 *   page.features = BOOSTER_FEATURE_LISTEN_BACKLOG;
 *   page.listen_backlog = 4096;
 *   booster_control_publish(mapped, &page);       // mapped: the shared mapping
 *
 *   struct booster_control snap;                  // reader (the library)
 *   if (booster_control_snapshot(mapped, &snap) == 0) use(&snap);
 *
 * Plain C11 with GCC atomics: included by the C ABI library and by C++ code alike.
 */
#ifndef BOOSTER_RUNTIME_INCLUDE_BOOSTER_CONTROL_H_
#define BOOSTER_RUNTIME_INCLUDE_BOOSTER_CONTROL_H_

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BOOSTER_CONTROL_MAGIC 0x31545342u /* "BST1" little-endian */
#define BOOSTER_CONTROL_VERSION 1u
#define BOOSTER_CONTROL_FILE_SIZE 4096u
#define BOOSTER_CONTROL_MAX_CPUS 1024u

/* Feature bits: each feature switches on and off on its own. */
enum booster_feature {
  BOOSTER_FEATURE_LISTEN_BACKLOG = 1u << 0,   /* listen() backlog floor */
  BOOSTER_FEATURE_TCP_NODELAY = 1u << 1,      /* TCP_NODELAY on accepted/connected TCP */
  BOOSTER_FEATURE_TCP_QUICKACK = 1u << 2,     /* TCP_QUICKACK on accepted/connected TCP */
  BOOSTER_FEATURE_BUSY_POLL = 1u << 3,        /* SO_BUSY_POLL = busy_poll_us */
  BOOSTER_FEATURE_SOCKET_BUFFERS = 1u << 4,   /* SO_RCVBUF / SO_SNDBUF */
  BOOSTER_FEATURE_THREAD_PLACEMENT = 1u << 5, /* affinity at pthread_create */
  BOOSTER_FEATURE_NUMA_MEMPOLICY = 1u << 6,   /* mempolicy to the CPUs' NUMA nodes */
  BOOSTER_FEATURE_COARSE_CLOCK = 1u << 7,     /* clock_gettime from _COARSE clocks */
};

/* How new threads are placed when BOOSTER_FEATURE_THREAD_PLACEMENT is on. */
enum booster_thread_mode {
  BOOSTER_THREADS_PIN = 0,     /* each new thread pinned to one CPU, round-robin */
  BOOSTER_THREADS_CONFINE = 1, /* each new thread confined to the whole CPU set */
};

/* Memory policy when BOOSTER_FEATURE_NUMA_MEMPOLICY is on. */
enum booster_numa_mode {
  BOOSTER_NUMA_PREFERRED = 0, /* prefer the nodes of the CPUs; fall back elsewhere */
  BOOSTER_NUMA_BIND = 1,      /* allocate only on the nodes of the CPUs */
};

struct booster_control {
  uint32_t magic;      /* BOOSTER_CONTROL_MAGIC */
  uint32_t version;    /* BOOSTER_CONTROL_VERSION */
  uint64_t generation; /* sequence lock; see above */
  uint64_t features;   /* OR of booster_feature */
  int32_t listen_backlog;
  int32_t busy_poll_us;
  int32_t rcvbuf_bytes; /* 0: leave the kernel default */
  int32_t sndbuf_bytes; /* 0: leave the kernel default */
  int32_t thread_mode;  /* booster_thread_mode */
  int32_t numa_mode;    /* booster_numa_mode */
  /* CPUs for thread placement, in the order threads are assigned (whole cores
   * first); OS CPU numbers. */
  uint32_t cpu_count;
  uint16_t cpus[BOOSTER_CONTROL_MAX_CPUS];
  uint32_t reserved[8];
};

#ifdef __cplusplus
static_assert(sizeof(struct booster_control) <= BOOSTER_CONTROL_FILE_SIZE,
              "control page must fit its file");
#else
_Static_assert(sizeof(struct booster_control) <= BOOSTER_CONTROL_FILE_SIZE,
               "control page must fit its file");
#endif

static inline void booster_control_init(struct booster_control* page) {
  memset(page, 0, sizeof(*page));
  page->magic = BOOSTER_CONTROL_MAGIC;
  page->version = BOOSTER_CONTROL_VERSION;
}

/* The generation a reader compares against its last snapshot: one relaxed load, cheap
 * enough for every interposed call. */
static inline uint64_t booster_control_generation(const volatile struct booster_control* shared) {
  return __atomic_load_n(&shared->generation, __ATOMIC_ACQUIRE);
}

/* Copies a consistent page into *out. Returns 0 on success, -1 when the page is not a
 * Booster control page of a version this reader understands, -2 when a writer kept it
 * busy for too long (the caller keeps its previous snapshot). */
static inline int booster_control_snapshot(const volatile struct booster_control* shared,
                                           struct booster_control* out) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    uint64_t before = __atomic_load_n(&shared->generation, __ATOMIC_ACQUIRE);
    if (before & 1u) continue;
    memcpy(out, (const void*)shared, sizeof(*out));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint64_t after = __atomic_load_n(&shared->generation, __ATOMIC_RELAXED);
    if (before != after) continue;
    out->generation = before;
    if (out->magic != BOOSTER_CONTROL_MAGIC || out->version != BOOSTER_CONTROL_VERSION) {
      return -1;
    }
    if (out->cpu_count > BOOSTER_CONTROL_MAX_CPUS) out->cpu_count = BOOSTER_CONTROL_MAX_CPUS;
    return 0;
  }
  return -2;
}

/* Writes *page into the shared mapping under the sequence lock. Single writer only.
 * The generation stored is the shared one plus two, whatever page->generation says. */
static inline void booster_control_publish(volatile struct booster_control* shared,
                                           const struct booster_control* page) {
  uint64_t gen = __atomic_load_n(&shared->generation, __ATOMIC_RELAXED);
  if (gen & 1u) gen++; /* a writer died mid-write: finish its generation */
  __atomic_store_n(&shared->generation, gen + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  struct booster_control copy = *page;
  copy.generation = gen + 1;
  memcpy((void*)shared, &copy, sizeof(copy));
  __atomic_store_n(&shared->generation, gen + 2, __ATOMIC_RELEASE);
}

#ifdef __cplusplus
}
#endif

#endif /* BOOSTER_RUNTIME_INCLUDE_BOOSTER_CONTROL_H_ */
