// runtime/config.h: the pure core of libbooster.so. Parses the standalone environment
// knobs into a control page, validates a page from either source, and orders CPUs
// whole cores first. No I/O, no allocation, no exceptions: the preload library links it
// without the C++ runtime, and the unit tests drive it with plain values.
//
//   booster_control page;
//   booster::runtime::ConfigFromEnv(&LookupEnv, nullptr, &page, &Report, nullptr);
//   booster::runtime::Sanitize(&page, &Report, nullptr);
#ifndef BOOSTER_RUNTIME_CONFIG_H_
#define BOOSTER_RUNTIME_CONFIG_H_

#include <stddef.h>
#include <stdint.h>

#include "booster/control.h"

namespace booster::runtime {

// Upper bounds a value from the environment or the page may take; beyond them the
// feature is switched off rather than clamped, since a typo should not become a tuning.
inline constexpr int32_t kMaxListenBacklog = 1 << 20;
inline constexpr int32_t kMaxBusyPollUs = 1000 * 1000;
inline constexpr int64_t kMaxBufferBytes = int64_t{1} << 30;
// cpu_set_t holds CPUs 0..1023; placement ignores larger CPU numbers.
inline constexpr uint32_t kMaxCpuNumber = 1023;

inline constexpr uint64_t kSocketFeatures =
    BOOSTER_FEATURE_TCP_NODELAY | BOOSTER_FEATURE_TCP_QUICKACK | BOOSTER_FEATURE_BUSY_POLL |
    BOOSTER_FEATURE_SOCKET_BUFFERS;
inline constexpr uint64_t kAllFeatures =
    BOOSTER_FEATURE_LISTEN_BACKLOG | kSocketFeatures | BOOSTER_FEATURE_THREAD_PLACEMENT |
    BOOSTER_FEATURE_NUMA_MEMPOLICY | BOOSTER_FEATURE_COARSE_CLOCK;

// One code per kind of problem, so the library reports each kind at most once.
enum class Problem : uint32_t {
  kListenBacklog = 0,
  kTcpNodelay,
  kTcpQuickack,
  kBusyPoll,
  kRcvbuf,
  kSndbuf,
  kCpus,
  kThreads,
  kNuma,
  kClock,
  kControl,         // BOOSTER_CONTROL cannot be opened, mapped or understood
  kUnknownFeature,  // the page sets bits this library does not know
  kPlacement,       // runtime: affinity could not be applied
  kMempolicy,       // runtime: set_mempolicy failed
  kSocketOption,    // runtime: a setsockopt failed
  kListenerTable,   // runtime: too many listening sockets to track
  kSymbol,          // runtime: a libc symbol could not be resolved
  kCount,
};

// Receives one human-readable line (without newline) about a problem.
using ReportFn = void (*)(void* ctx, Problem problem, const char* message);
// Returns the value of an environment variable or nullptr.
using LookupFn = const char* (*)(void* ctx, const char* name);

// Parses "0-3,8,10-11" into CPU numbers in the order given, without duplicates. Spaces
// around items are allowed. Returns false (and leaves *count 0) on any malformed item,
// a reversed range, a CPU above kMaxCpuNumber, more than `capacity` CPUs, or an empty list.
bool ParseCpuList(const char* text, uint16_t* cpus, uint32_t capacity, uint32_t* count);

// Parses a decimal integer in [lo, hi]; surrounding spaces allowed, nothing else.
bool ParseInt(const char* text, int64_t lo, int64_t hi, int64_t* out);

// Parses a byte count with an optional K/M/G suffix (powers of 1024), in [lo, hi].
bool ParseBytes(const char* text, int64_t lo, int64_t hi, int64_t* out);

// Parses 1/0, true/false, yes/no, on/off (any case). Returns 1, 0, or -1 when malformed.
int ParseBool(const char* text);

// Fills *page from the standalone variables (BOOSTER_LISTEN_BACKLOG, BOOSTER_TCP_NODELAY,
// BOOSTER_TCP_QUICKACK, BOOSTER_BUSY_POLL, BOOSTER_RCVBUF, BOOSTER_SNDBUF, BOOSTER_CPUS,
// BOOSTER_THREADS, BOOSTER_NUMA, BOOSTER_CLOCK). A malformed value switches its feature
// off and is reported; the other features are unaffected. Unset means off.
void ConfigFromEnv(LookupFn lookup, void* lookup_ctx, booster_control* page, ReportFn report,
                   void* report_ctx);

// Switches off every feature of *page whose parameters are out of range, reporting why,
// and clears bits this library does not know. Used on pages from both sources.
void Sanitize(booster_control* page, ReportFn report, void* report_ctx);

// The backlog listen() gets for a socket that asked for `requested` under *page.
int EffectiveBacklog(const booster_control& page, int requested);

// Orders `cpus` so that the first pass takes one CPU of each physical core (cores in
// order of first appearance), the second pass the second CPU of each core, and so on.
// core_of[i] identifies the core of cpus[i] (any integer unique per core; -1 = unknown,
// treated as a core of its own). Writes n CPUs to out.
void OrderWholeCoresFirst(const uint16_t* cpus, const int32_t* core_of, uint32_t n, uint16_t* out);

}  // namespace booster::runtime

#endif  // BOOSTER_RUNTIME_CONFIG_H_
