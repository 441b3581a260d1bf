// Makes ThreadSanitizer see absl::Mutex. Debian's Abseil is not built with TSan, so the
// atomics and futex calls inside Mutex::Lock/Unlock are invisible to it and every field
// guarded by an absl::Mutex would be reported as racing. Linked into the test binaries of
// a BOOSTER_TSAN build only (cmake/BoosterHelpers.cmake): each Mutex entry point Booster
// or gRPC calls is defined here, calls the real one in libabsl_synchronization.so
// (dlsym RTLD_NEXT) and tells TSan about the acquire and release through its public mutex
// annotations — what Abseil does itself when it is compiled with TSan
// (ABSL_TSAN_MUTEX_PRE_LOCK and friends in absl/synchronization/mutex.cc).
//
// CondVar::Wait* are covered too: gRPC (libgpr, libgrpc, libgrpc++) waits on absl::CondVar
// with an absl::Mutex held, and the wait releases and retakes that mutex inside
// libabsl_synchronization (CondVar::WaitCommon, which calls no Mutex entry point through
// the PLT), so without these TSan would see the waiter still holding the mutex while
// others lock it: false double-lock and lock-order reports. These definitions interpose
// gRPC's calls because its libraries import the symbols from libabsl_synchronization and
// an executable's exported definitions come first in the dynamic linker's search.
//
// Not annotated: ~Mutex. Abseil built with TSan reports the destruction, but gRPC destroys
// its mutexes when a reference count it keeps with uninstrumented atomics drops to zero,
// so TSan would see the last unlock and the destruction unordered (a false report).
//
// Not covered: Mutex::LockWhen*/ReaderLockWhen* (neither Booster nor gRPC 1.51 calls them;
// a test that starts to would see false reports and should extend this file).
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/synchronization/mutex.h"

namespace {

#define BOOSTER_STR2(x) #x
#define BOOSTER_STR(x) BOOSTER_STR2(x)

// The mangled name of absl::<inline namespace>::<cls>::<rest>, where `cls` is mangled too
// ("5Mutex", "7CondVar").
template <typename Fn>
Fn Real(const char* cls, const char* rest) {
#if ABSL_OPTION_USE_INLINE_NAMESPACE
  const std::string ns = BOOSTER_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name = "_ZN4absl" + std::to_string(ns.size()) + ns + cls + rest;
#else
  const std::string name = std::string("_ZN4absl") + cls + rest;
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
using AwaitDeadlineFn = bool (*)(absl::Mutex*, const absl::Condition&, absl::Time);
using WaitFn = void (*)(absl::CondVar*, absl::Mutex*);
using WaitDeadlineFn = bool (*)(absl::CondVar*, absl::Mutex*, absl::Time);

// Around a wait that releases `mu` and holds it again when it returns (Await, CondVar::Wait):
// an unlock and a lock in write mode (Booster and gRPC wait only with the mutex held
// exclusively). The real call runs between pre_unlock and post_unlock, where TSan ignores
// memory accesses, as Abseil's own annotations do in CondVar::WaitCommon.
class ReleasedWhileWaiting {
 public:
  explicit ReleasedWhileWaiting(absl::Mutex* mu) : mu_(mu) { __tsan_mutex_pre_unlock(mu_, 0); }
  ~ReleasedWhileWaiting() {
    __tsan_mutex_post_unlock(mu_, 0);
    __tsan_mutex_pre_lock(mu_, 0);
    __tsan_mutex_post_lock(mu_, 0, 0);
  }
  ReleasedWhileWaiting(const ReleasedWhileWaiting&) = delete;
  ReleasedWhileWaiting& operator=(const ReleasedWhileWaiting&) = delete;

 private:
  absl::Mutex* const mu_;
};

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const Plain real = Real<Plain>("5Mutex", "4LockEv");
  __tsan_mutex_pre_lock(this, 0);
  real(this);
  __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::Unlock() {
  static const Plain real = Real<Plain>("5Mutex", "6UnlockEv");
  __tsan_mutex_pre_unlock(this, 0);
  real(this);
  __tsan_mutex_post_unlock(this, 0);
}

bool Mutex::TryLock() {
  static const Try real = Real<Try>("5Mutex", "7TryLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  __tsan_mutex_post_lock(
      this, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

void Mutex::ReaderLock() {
  static const Plain real = Real<Plain>("5Mutex", "10ReaderLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

void Mutex::ReaderUnlock() {
  static const Plain real = Real<Plain>("5Mutex", "12ReaderUnlockEv");
  __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

// Await releases the mutex while it waits and holds it again when it returns; the
// condition is evaluated under the mutex, by this thread or by the one unlocking.
void Mutex::Await(const Condition& cond) {
  static const AwaitFn real = Real<AwaitFn>("5Mutex", "5AwaitERKNS0_9ConditionE");
  ReleasedWhileWaiting waiting(this);
  real(this, cond);
}

// The library's AwaitWithTimeout calls AwaitWithDeadline through the PLT, which is the
// definition below: annotating both would release the mutex twice. So the timeout is
// turned into a deadline here, the way the library does it.
bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  return AwaitWithDeadline(cond, absl::Now() + timeout);
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  static const AwaitDeadlineFn real =
      Real<AwaitDeadlineFn>("5Mutex", "17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  ReleasedWhileWaiting waiting(this);
  return real(this, cond, deadline);
}

void CondVar::Wait(Mutex* mu) {
  static const WaitFn real = Real<WaitFn>("7CondVar", "4WaitEPNS0_5MutexE");
  ReleasedWhileWaiting waiting(mu);
  real(this, mu);
}

// As AwaitWithTimeout: the library's own calls WaitWithDeadline through the PLT.
bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  return WaitWithDeadline(mu, absl::Now() + timeout);
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  static const WaitDeadlineFn real =
      Real<WaitDeadlineFn>("7CondVar", "16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  ReleasedWhileWaiting waiting(mu);
  return real(this, mu, deadline);
}

ABSL_NAMESPACE_END
}  // namespace absl
