// Makes ThreadSanitizer see absl::Mutex. Debian's Abseil is not built with TSan, so the
// atomics and futex calls inside Mutex::Lock/Unlock are invisible to it and every field
// guarded by an absl::Mutex would be reported as racing. Linked into the test binaries of
// a BOOSTER_TSAN build only (cmake/BoosterHelpers.cmake): each Mutex entry point Booster
// or gRPC calls is defined here, calls the real one in libabsl_synchronization.so
// (dlsym RTLD_NEXT) and tells TSan about the acquire and release through its public mutex
// annotations — what Abseil does itself when it is compiled with TSan
// (ABSL_TSAN_MUTEX_PRE_LOCK and friends in absl/synchronization/mutex.cc).
//
// Not covered: Mutex::LockWhen*/ReaderLockWhen*, CondVar (Booster uses neither; a test
// that starts to would see false reports and should extend this file).
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/synchronization/mutex.h"

namespace {

#define BOOSTER_STR2(x) #x
#define BOOSTER_STR(x) BOOSTER_STR2(x)

// The mangled name of absl::<inline namespace>::Mutex::<rest>.
template <typename Fn>
Fn Real(const char* rest) {
#if ABSL_OPTION_USE_INLINE_NAMESPACE
  const std::string ns = BOOSTER_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name = "_ZN4absl" + std::to_string(ns.size()) + ns + "5Mutex" + rest;
#else
  const std::string name = std::string("_ZN4absl5Mutex") + rest;
#endif
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "absl_mutex_tsan: %s not found in the next object\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

using Plain = void (*)(absl::Mutex*);
using Try = bool (*)(absl::Mutex*);
using AwaitFn = void (*)(absl::Mutex*, const absl::Condition&);
using AwaitTimeoutFn = bool (*)(absl::Mutex*, const absl::Condition&, absl::Duration);
using AwaitDeadlineFn = bool (*)(absl::Mutex*, const absl::Condition&, absl::Time);

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const Plain real = Real<Plain>("4LockEv");
  __tsan_mutex_pre_lock(this, 0);
  real(this);
  __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::Unlock() {
  static const Plain real = Real<Plain>("6UnlockEv");
  __tsan_mutex_pre_unlock(this, 0);
  real(this);
  __tsan_mutex_post_unlock(this, 0);
}

bool Mutex::TryLock() {
  static const Try real = Real<Try>("7TryLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  __tsan_mutex_post_lock(
      this, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

void Mutex::ReaderLock() {
  static const Plain real = Real<Plain>("10ReaderLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

void Mutex::ReaderUnlock() {
  static const Plain real = Real<Plain>("12ReaderUnlockEv");
  __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

// Await releases the mutex while it waits and holds it again when it returns; the
// condition is evaluated under the mutex, by this thread or by the one unlocking. Modelled
// as an unlock and a lock in write mode (Booster awaits only under MutexLock); the real
// call runs between pre_unlock and post_unlock, where TSan ignores memory accesses.
void Mutex::Await(const Condition& cond) {
  static const AwaitFn real = Real<AwaitFn>("5AwaitERKNS0_9ConditionE");
  __tsan_mutex_pre_unlock(this, 0);
  real(this, cond);
  __tsan_mutex_post_unlock(this, 0);
  __tsan_mutex_pre_lock(this, 0);
  __tsan_mutex_post_lock(this, 0, 0);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  static const AwaitTimeoutFn real =
      Real<AwaitTimeoutFn>("16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  __tsan_mutex_pre_unlock(this, 0);
  const bool met = real(this, cond, timeout);
  __tsan_mutex_post_unlock(this, 0);
  __tsan_mutex_pre_lock(this, 0);
  __tsan_mutex_post_lock(this, 0, 0);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  static const AwaitDeadlineFn real =
      Real<AwaitDeadlineFn>("17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  __tsan_mutex_pre_unlock(this, 0);
  const bool met = real(this, cond, deadline);
  __tsan_mutex_post_unlock(this, 0);
  __tsan_mutex_pre_lock(this, 0);
  __tsan_mutex_post_lock(this, 0, 0);
  return met;
}

ABSL_NAMESPACE_END
}  // namespace absl
