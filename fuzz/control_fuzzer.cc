// libbooster.so reads its configuration from a control page the agent writes on a shared
// volume (any container of the pod can write that file) or from BOOSTER_* variables the
// pod's owner sets. Both reach runtime/config.h; the library runs inside the customer's
// process, so the parsers must never crash and Sanitize must leave only what the
// interposers can use safely. Checks after Sanitize: no unknown feature bit; every
// enabled feature's parameters in range; at most BOOSTER_CONTROL_MAX_CPUS CPUs, none above
// kMaxCpuNumber; Sanitize is idempotent and silent the second time; EffectiveBacklog never
// lowers a backlog; OrderWholeCoresFirst is a permutation.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "booster/control.h"
#include "fuzz/fuzz_check.h"
#include "runtime/config.h"

namespace {

namespace rt = booster::runtime;

int reports = 0;
void CountReport(void*, rt::Problem, const char*) { ++reports; }

constexpr const char* kVariables[] = {
    "BOOSTER_LISTEN_BACKLOG", "BOOSTER_TCP_NODELAY", "BOOSTER_TCP_QUICKACK",
    "BOOSTER_BUSY_POLL",      "BOOSTER_RCVBUF",      "BOOSTER_SNDBUF",
    "BOOSTER_CPUS",           "BOOSTER_THREADS",     "BOOSTER_NUMA",
    "BOOSTER_CLOCK"};
constexpr size_t kVariableCount = sizeof(kVariables) / sizeof(kVariables[0]);

struct Env {
  std::vector<std::string> values;  // per kVariables
  std::vector<bool> set;            // false: getenv returns nullptr
};

const char* Lookup(void* ctx, const char* name) {
  const Env* env = static_cast<const Env*>(ctx);
  for (size_t i = 0; i < kVariableCount; ++i) {
    if (std::strcmp(name, kVariables[i]) == 0) {
      return env->set[i] ? env->values[i].c_str() : nullptr;
    }
  }
  return nullptr;
}

void CheckSane(booster_control page) {
  FUZZ_CHECK((page.features & ~rt::kAllFeatures) == 0, "unknown bits %llx left",
             static_cast<unsigned long long>(page.features));
  if (page.features & BOOSTER_FEATURE_LISTEN_BACKLOG) {
    FUZZ_CHECK(page.listen_backlog >= 1 && page.listen_backlog <= rt::kMaxListenBacklog,
               "backlog %d", page.listen_backlog);
  }
  if (page.features & BOOSTER_FEATURE_BUSY_POLL) {
    FUZZ_CHECK(page.busy_poll_us >= 1 && page.busy_poll_us <= rt::kMaxBusyPollUs, "busy poll %d",
               page.busy_poll_us);
  }
  if (page.features & BOOSTER_FEATURE_SOCKET_BUFFERS) {
    FUZZ_CHECK(page.rcvbuf_bytes >= 0 && page.sndbuf_bytes >= 0 &&
                   (page.rcvbuf_bytes > 0 || page.sndbuf_bytes > 0),
               "buffers %d %d", page.rcvbuf_bytes, page.sndbuf_bytes);
  }
  if (page.features & BOOSTER_FEATURE_THREAD_PLACEMENT) {
    FUZZ_CHECK(page.thread_mode == BOOSTER_THREADS_PIN ||
                   page.thread_mode == BOOSTER_THREADS_CONFINE,
               "thread mode %d", page.thread_mode);
  }
  if (page.features & BOOSTER_FEATURE_NUMA_MEMPOLICY) {
    FUZZ_CHECK(page.numa_mode == BOOSTER_NUMA_PREFERRED || page.numa_mode == BOOSTER_NUMA_BIND,
               "numa mode %d", page.numa_mode);
  }
  FUZZ_CHECK(page.cpu_count <= BOOSTER_CONTROL_MAX_CPUS, "cpu_count %u", page.cpu_count);
  for (uint32_t i = 0; i < page.cpu_count; ++i) {
    FUZZ_CHECK(page.cpus[i] <= rt::kMaxCpuNumber, "cpu %u", page.cpus[i]);
  }

  // A second pass finds nothing to say and changes nothing.
  booster_control again = page;
  reports = 0;
  rt::Sanitize(&again, &CountReport, nullptr);
  FUZZ_CHECK(reports == 0 && std::memcmp(&again, &page, sizeof(page)) == 0,
             "Sanitize is not idempotent (%d reports)", reports);

  for (int requested : {-1, 0, 1, 128, 4096, 1 << 30}) {
    const int effective = rt::EffectiveBacklog(page, requested);
    FUZZ_CHECK(effective >= requested, "backlog %d lowered to %d", requested, effective);
  }

  // Whole cores first: same CPUs, another order.
  const uint32_t n = page.cpu_count;
  std::vector<int32_t> core_of(n);
  for (uint32_t i = 0; i < n; ++i) core_of[i] = (page.cpus[i] % 7 == 0) ? -1 : page.cpus[i] / 2;
  std::vector<uint16_t> out(n);
  rt::OrderWholeCoresFirst(page.cpus, core_of.data(), n, out.data());
  std::vector<uint16_t> a(page.cpus, page.cpus + n), b = out;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  FUZZ_CHECK(a == b, "OrderWholeCoresFirst is not a permutation of %u CPUs", n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;

  if (mode & 1) {
    // The bytes as the shared page file (zero-filled to its size), read the way the
    // library reads it.
    static booster_control shared_storage[2];
    auto* shared = reinterpret_cast<unsigned char*>(shared_storage);
    std::memset(shared, 0, sizeof(shared_storage));
    std::memcpy(shared, data, std::min(size, sizeof(booster_control)));
    if (mode & 2) {  // let most inputs through the magic/version check
      booster_control* p = reinterpret_cast<booster_control*>(shared);
      p->magic = BOOSTER_CONTROL_MAGIC;
      p->version = BOOSTER_CONTROL_VERSION;
      p->generation &= ~uint64_t{1};
    }
    booster_control page;
    if (booster_control_snapshot(reinterpret_cast<booster_control*>(shared), &page) != 0) {
      return 0;
    }
    rt::Sanitize(&page, &CountReport, nullptr);
    CheckSane(page);
    return 0;
  }

  // The bytes as the environment: values one per line, in kVariables order; an
  // empty value is an unset variable unless mode bit 2 is set.
  Env env;
  env.values.assign(kVariableCount, "");
  env.set.assign(kVariableCount, false);
  size_t var = 0, start = 0;
  for (size_t i = 0; i <= size && var < kVariableCount; ++i) {
    if (i == size || data[i] == '\n') {
      env.values[var].assign(reinterpret_cast<const char*>(data + start), i - start);
      env.set[var] = !env.values[var].empty() || (mode & 2);
      ++var;
      start = i + 1;
    }
  }
  booster_control page;
  rt::ConfigFromEnv(&Lookup, &env, &page, &CountReport, nullptr);
  rt::Sanitize(&page, &CountReport, nullptr);
  CheckSane(page);

  // The value parsers directly, on the whole input as one string.
  const std::string text(reinterpret_cast<const char*>(data), size);
  uint16_t cpus[BOOSTER_CONTROL_MAX_CPUS];
  uint32_t count = 99;
  if (rt::ParseCpuList(text.c_str(), cpus, BOOSTER_CONTROL_MAX_CPUS, &count)) {
    FUZZ_CHECK(count >= 1 && count <= BOOSTER_CONTROL_MAX_CPUS, "count %u", count);
    std::vector<uint16_t> sorted(cpus, cpus + count);
    std::sort(sorted.begin(), sorted.end());
    FUZZ_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
               "duplicate CPU in %s", text.c_str());
    FUZZ_CHECK(sorted.back() <= rt::kMaxCpuNumber, "cpu %u", sorted.back());
  } else {
    FUZZ_CHECK(count == 0, "failed parse left count %u", count);
  }
  int64_t v = 0;
  if (rt::ParseInt(text.c_str(), -1000, 1000, &v)) FUZZ_CHECK(v >= -1000 && v <= 1000, "%lld", (long long)v);
  if (rt::ParseBytes(text.c_str(), 0, rt::kMaxBufferBytes, &v)) {
    FUZZ_CHECK(v >= 0 && v <= rt::kMaxBufferBytes, "%lld", (long long)v);
  }
  const int b = rt::ParseBool(text.c_str());
  FUZZ_CHECK(b == -1 || b == 0 || b == 1, "ParseBool %d", b);
  return 0;
}
