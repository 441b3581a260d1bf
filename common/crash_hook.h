// The chaos tests' one-shot crash points (tests/e2e/chaos). With `<env>=POINT:FILE` in the
// environment, CrashHere(env, POINT) creates FILE and kills the process with SIGKILL, the
// way the kernel's OOM killer or `kill -9` would: no destructor, no flush, no revert. FILE
// makes it happen once, also across restarts of a container that keeps its volume. Unset,
// or another point, it costs one getenv.
//
//   common::CrashHere("BOOSTER_TEST_CRASH_AT", "journal-append");
//
// The operator's point is BOOSTER_TEST_CRASH_AFTER_STATUS=PHASE:FILE (after the status
// write into PHASE); the agent's are BOOSTER_TEST_CRASH_AT=journal-append:FILE (after a
// journal entry is durable, before the change it announces) and revert:FILE (after the
// first of several journaled changes is reverted).
#ifndef BOOSTER_COMMON_CRASH_HOOK_H_
#define BOOSTER_COMMON_CRASH_HOOK_H_

#include <string_view>

namespace booster::common {

void CrashHere(const char* env, std::string_view point);

}  // namespace booster::common

#endif  // BOOSTER_COMMON_CRASH_HOOK_H_
