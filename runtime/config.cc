#include "runtime/config.h"

#include <stdio.h>
#include <string.h>

namespace booster::runtime {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

const char* SkipSpaces(const char* p) {
  while (IsSpace(*p)) ++p;
  return p;
}

// Parses an unsigned decimal at *p (no sign), advancing *p; false on no digits or overflow
// past `limit`.
bool ParseUnsigned(const char** p, uint64_t limit, uint64_t* out) {
  const char* s = *p;
  if (*s < '0' || *s > '9') return false;
  uint64_t v = 0;
  while (*s >= '0' && *s <= '9') {
    v = v * 10 + static_cast<uint64_t>(*s - '0');
    if (v > limit) return false;
    ++s;
  }
  *p = s;
  *out = v;
  return true;
}

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Case-insensitive comparison of `text` (trimmed of surrounding spaces) with `word`.
bool WordEquals(const char* text, const char* word) {
  const char* p = SkipSpaces(text);
  size_t n = strlen(word);
  for (size_t i = 0; i < n; ++i) {
    if (Lower(p[i]) != word[i]) return false;
  }
  return *SkipSpaces(p + n) == '\0';
}

void Say(ReportFn report, void* ctx, Problem problem, const char* fmt, const char* a,
         const char* b) {
  if (report == nullptr) return;
  char line[256];
  snprintf(line, sizeof(line), fmt, a, b);
  report(ctx, problem, line);
}

}  // namespace

bool ParseInt(const char* text, int64_t lo, int64_t hi, int64_t* out) {
  if (text == nullptr) return false;
  const char* p = SkipSpaces(text);
  bool negative = false;
  if (*p == '-' || *p == '+') {
    negative = *p == '-';
    ++p;
  }
  uint64_t magnitude = 0;
  if (!ParseUnsigned(&p, uint64_t{1} << 62, &magnitude)) return false;
  if (*SkipSpaces(p) != '\0') return false;
  int64_t v = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ParseBytes(const char* text, int64_t lo, int64_t hi, int64_t* out) {
  if (text == nullptr) return false;
  const char* p = SkipSpaces(text);
  uint64_t v = 0;
  if (!ParseUnsigned(&p, uint64_t{1} << 40, &v)) return false;
  int shift = 0;
  p = SkipSpaces(p);
  switch (Lower(*p)) {
    case 'k':
      shift = 10;
      ++p;
      break;
    case 'm':
      shift = 20;
      ++p;
      break;
    case 'g':
      shift = 30;
      ++p;
      break;
    default:
      break;
  }
  if (shift != 0 && (*p == 'i' || *p == 'I')) ++p;  // "KiB"
  if (shift != 0 && (*p == 'b' || *p == 'B')) ++p;  // "KB"
  if (*SkipSpaces(p) != '\0') return false;
  if (v > (uint64_t{1} << 40) >> shift) return false;
  int64_t bytes = static_cast<int64_t>(v << shift);
  if (bytes < lo || bytes > hi) return false;
  *out = bytes;
  return true;
}

int ParseBool(const char* text) {
  if (text == nullptr) return -1;
  static constexpr const char* kTrue[] = {"1", "true", "yes", "on"};
  static constexpr const char* kFalse[] = {"0", "false", "no", "off"};
  for (const char* w : kTrue) {
    if (WordEquals(text, w)) return 1;
  }
  for (const char* w : kFalse) {
    if (WordEquals(text, w)) return 0;
  }
  return -1;
}

bool ParseCpuList(const char* text, uint16_t* cpus, uint32_t capacity, uint32_t* count) {
  *count = 0;
  if (text == nullptr) return false;
  uint32_t n = 0;
  const char* p = SkipSpaces(text);
  if (*p == '\0') return false;
  while (true) {
    p = SkipSpaces(p);
    uint64_t first = 0;
    if (!ParseUnsigned(&p, kMaxCpuNumber, &first)) return false;
    uint64_t last = first;
    p = SkipSpaces(p);
    if (*p == '-') {
      p = SkipSpaces(p + 1);
      if (!ParseUnsigned(&p, kMaxCpuNumber, &last) || last < first) return false;
      p = SkipSpaces(p);
    }
    for (uint64_t cpu = first; cpu <= last; ++cpu) {
      bool seen = false;
      for (uint32_t i = 0; i < n && !seen; ++i) seen = cpus[i] == cpu;
      if (seen) continue;
      if (n == capacity) return false;
      cpus[n++] = static_cast<uint16_t>(cpu);
    }
    if (*p == '\0') break;
    if (*p != ',') return false;
    ++p;
  }
  *count = n;
  return true;
}

void ConfigFromEnv(LookupFn lookup, void* lookup_ctx, booster_control* page, ReportFn report,
                   void* report_ctx) {
  booster_control_init(page);
  auto get = [&](const char* name) { return lookup(lookup_ctx, name); };
  int64_t v = 0;

  if (const char* s = get("BOOSTER_LISTEN_BACKLOG")) {
    if (ParseInt(s, 1, kMaxListenBacklog, &v)) {
      page->features |= BOOSTER_FEATURE_LISTEN_BACKLOG;
      page->listen_backlog = static_cast<int32_t>(v);
    } else {
      Say(report, report_ctx, Problem::kListenBacklog,
          "BOOSTER_LISTEN_BACKLOG=%s: want an integer in [1, 1048576]; listen backlog floor "
          "off%s",
          s, "");
    }
  }
  struct BoolKnob {
    const char* name;
    uint64_t feature;
    Problem problem;
  };
  static constexpr BoolKnob kBools[] = {
      {"BOOSTER_TCP_NODELAY", BOOSTER_FEATURE_TCP_NODELAY, Problem::kTcpNodelay},
      {"BOOSTER_TCP_QUICKACK", BOOSTER_FEATURE_TCP_QUICKACK, Problem::kTcpQuickack},
  };
  for (const BoolKnob& knob : kBools) {
    const char* s = get(knob.name);
    if (s == nullptr) continue;
    int b = ParseBool(s);
    if (b == 1) page->features |= knob.feature;
    if (b < 0) {
      Say(report, report_ctx, knob.problem, "%s=%s: want 1 or 0; feature off", knob.name, s);
    }
  }
  if (const char* s = get("BOOSTER_BUSY_POLL")) {
    if (ParseInt(s, 0, kMaxBusyPollUs, &v)) {
      if (v > 0) {
        page->features |= BOOSTER_FEATURE_BUSY_POLL;
        page->busy_poll_us = static_cast<int32_t>(v);
      }
    } else {
      Say(report, report_ctx, Problem::kBusyPoll,
          "BOOSTER_BUSY_POLL=%s: want microseconds in [0, 1000000]; busy poll off%s", s, "");
    }
  }
  struct BufKnob {
    const char* name;
    int32_t booster_control::*field;
    Problem problem;
  };
  static constexpr BufKnob kBufs[] = {
      {"BOOSTER_RCVBUF", &booster_control::rcvbuf_bytes, Problem::kRcvbuf},
      {"BOOSTER_SNDBUF", &booster_control::sndbuf_bytes, Problem::kSndbuf},
  };
  for (const BufKnob& knob : kBufs) {
    const char* s = get(knob.name);
    if (s == nullptr) continue;
    if (ParseBytes(s, 1024, kMaxBufferBytes, &v)) {
      page->features |= BOOSTER_FEATURE_SOCKET_BUFFERS;
      page->*knob.field = static_cast<int32_t>(v);
    } else {
      Say(report, report_ctx, knob.problem,
          "%s=%s: want bytes in [1K, 1G] (K/M/G suffix allowed); left at the kernel default",
          knob.name, s);
    }
  }

  bool cpus_ok = false;
  if (const char* s = get("BOOSTER_CPUS")) {
    cpus_ok = ParseCpuList(s, page->cpus, BOOSTER_CONTROL_MAX_CPUS, &page->cpu_count);
    if (cpus_ok) {
      page->features |= BOOSTER_FEATURE_THREAD_PLACEMENT;
    } else {
      Say(report, report_ctx, Problem::kCpus,
          "BOOSTER_CPUS=%s: want a CPU list like 0-3,8 (CPUs 0..1023); thread placement and "
          "NUMA policy off%s",
          s, "");
    }
  }
  bool cpus_bad = get("BOOSTER_CPUS") != nullptr && !cpus_ok;
  if (const char* s = get("BOOSTER_THREADS")) {
    if (WordEquals(s, "pin") || WordEquals(s, "confine")) {
      page->thread_mode = WordEquals(s, "pin") ? BOOSTER_THREADS_PIN : BOOSTER_THREADS_CONFINE;
      if (!cpus_bad) page->features |= BOOSTER_FEATURE_THREAD_PLACEMENT;
    } else if (WordEquals(s, "off")) {
      page->features &= ~static_cast<uint64_t>(BOOSTER_FEATURE_THREAD_PLACEMENT);
    } else {
      page->features &= ~static_cast<uint64_t>(BOOSTER_FEATURE_THREAD_PLACEMENT);
      Say(report, report_ctx, Problem::kThreads,
          "BOOSTER_THREADS=%s: want pin, confine or off; thread placement off%s", s, "");
    }
  }
  if (const char* s = get("BOOSTER_NUMA")) {
    bool preferred = WordEquals(s, "preferred");
    if (preferred || WordEquals(s, "bind")) {
      page->numa_mode = preferred ? BOOSTER_NUMA_PREFERRED : BOOSTER_NUMA_BIND;
      if (!cpus_bad) page->features |= BOOSTER_FEATURE_NUMA_MEMPOLICY;
    } else if (!WordEquals(s, "off")) {
      Say(report, report_ctx, Problem::kNuma,
          "BOOSTER_NUMA=%s: want preferred, bind or off; NUMA policy off%s", s, "");
    }
  }
  if (const char* s = get("BOOSTER_CLOCK")) {
    if (WordEquals(s, "coarse")) {
      page->features |= BOOSTER_FEATURE_COARSE_CLOCK;
    } else if (!WordEquals(s, "default") && !WordEquals(s, "precise")) {
      Say(report, report_ctx, Problem::kClock,
          "BOOSTER_CLOCK=%s: want coarse or default; precise clocks kept%s", s, "");
    }
  }
}

void Sanitize(booster_control* page, ReportFn report, void* report_ctx) {
  char a[32];
  if (page->features & ~kAllFeatures) {
    snprintf(a, sizeof(a), "%#llx",
             static_cast<unsigned long long>(page->features & ~kAllFeatures));
    Say(report, report_ctx, Problem::kUnknownFeature,
        "control page: unknown feature bits %s ignored%s", a, "");
    page->features &= kAllFeatures;
  }
  auto off = [&](uint64_t feature, Problem problem, const char* what, int64_t value) {
    snprintf(a, sizeof(a), "%lld", static_cast<long long>(value));
    Say(report, report_ctx, problem, "control page: %s=%s out of range; feature off", what, a);
    page->features &= ~feature;
  };
  if ((page->features & BOOSTER_FEATURE_LISTEN_BACKLOG) &&
      (page->listen_backlog < 1 || page->listen_backlog > kMaxListenBacklog)) {
    off(BOOSTER_FEATURE_LISTEN_BACKLOG, Problem::kListenBacklog, "listen_backlog",
        page->listen_backlog);
  }
  if ((page->features & BOOSTER_FEATURE_BUSY_POLL) &&
      (page->busy_poll_us < 1 || page->busy_poll_us > kMaxBusyPollUs)) {
    off(BOOSTER_FEATURE_BUSY_POLL, Problem::kBusyPoll, "busy_poll_us", page->busy_poll_us);
  }
  if (page->features & BOOSTER_FEATURE_SOCKET_BUFFERS) {
    if (page->rcvbuf_bytes < 0 || page->sndbuf_bytes < 0 ||
        (page->rcvbuf_bytes == 0 && page->sndbuf_bytes == 0)) {
      off(BOOSTER_FEATURE_SOCKET_BUFFERS, Problem::kRcvbuf, "rcvbuf_bytes",
          page->rcvbuf_bytes < 0 ? page->rcvbuf_bytes : page->sndbuf_bytes);
    }
  }
  if ((page->features & BOOSTER_FEATURE_THREAD_PLACEMENT) &&
      page->thread_mode != BOOSTER_THREADS_PIN && page->thread_mode != BOOSTER_THREADS_CONFINE) {
    off(BOOSTER_FEATURE_THREAD_PLACEMENT, Problem::kThreads, "thread_mode", page->thread_mode);
  }
  if ((page->features & BOOSTER_FEATURE_NUMA_MEMPOLICY) &&
      page->numa_mode != BOOSTER_NUMA_PREFERRED && page->numa_mode != BOOSTER_NUMA_BIND) {
    off(BOOSTER_FEATURE_NUMA_MEMPOLICY, Problem::kNuma, "numa_mode", page->numa_mode);
  }
  if (page->cpu_count > BOOSTER_CONTROL_MAX_CPUS) page->cpu_count = BOOSTER_CONTROL_MAX_CPUS;
  // Drop CPUs that cpu_set_t cannot hold, keeping the order.
  uint32_t kept = 0;
  for (uint32_t i = 0; i < page->cpu_count; ++i) {
    if (page->cpus[i] <= kMaxCpuNumber) page->cpus[kept++] = page->cpus[i];
  }
  if (kept != page->cpu_count) {
    snprintf(a, sizeof(a), "%u", page->cpu_count - kept);
    Say(report, report_ctx, Problem::kCpus,
        "control page: %s CPUs above 1023 ignored for placement%s", a, "");
    page->cpu_count = kept;
  }
}

int EffectiveBacklog(const booster_control& page, int requested) {
  if ((page.features & BOOSTER_FEATURE_LISTEN_BACKLOG) && requested < page.listen_backlog) {
    return page.listen_backlog;
  }
  return requested;
}

void OrderWholeCoresFirst(const uint16_t* cpus, const int32_t* core_of, uint32_t n, uint16_t* out) {
  // rank[i]: how many earlier CPUs share the core of cpus[i]. Output is sorted by rank
  // (stable), which yields one CPU per core per pass. O(n^2) over at most 1024 CPUs, run
  // only when the configuration changes.
  uint32_t written = 0;
  for (uint32_t pass = 0; written < n; ++pass) {
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t rank = 0;
      if (core_of[i] >= 0) {
        for (uint32_t j = 0; j < i; ++j) rank += core_of[j] == core_of[i] ? 1 : 0;
      }
      if (rank == pass) out[written++] = cpus[i];
    }
  }
}

}  // namespace booster::runtime
