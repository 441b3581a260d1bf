// Happens-before edges that ThreadSanitizer cannot see because they are kept inside a
// library built without it (Debian's gRPC: docs/testing.md, ThreadSanitizer). Each use
// names the guarantee of the library it stands for; anything it does not promise must not
// be annotated, or TSan stops seeing real races. No-ops unless built with TSan.
//
//   void OnWriteDone(bool ok) override {
//     ...
//     TsanHappensBefore(this);  // gRPC: every reaction completes before OnDone
//   }
//   void OnDone() override {
//     TsanHappensAfter(this);
//     ...
//   }
#ifndef BOOSTER_COMMON_TSAN_ANNOTATIONS_H_
#define BOOSTER_COMMON_TSAN_ANNOTATIONS_H_

#include "absl/base/config.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace booster {

// What this thread did so far happens before whatever follows a TsanHappensAfter(`key`)
// that runs after it.
inline void TsanHappensBefore([[maybe_unused]] const void* key) {
#ifdef ABSL_HAVE_THREAD_SANITIZER
  __tsan_release(const_cast<void*>(key));
#endif
}

inline void TsanHappensAfter([[maybe_unused]] const void* key) {
#ifdef ABSL_HAVE_THREAD_SANITIZER
  __tsan_acquire(const_cast<void*>(key));
#endif
}

}  // namespace booster

#endif  // BOOSTER_COMMON_TSAN_ANNOTATIONS_H_
