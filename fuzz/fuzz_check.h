// FUZZ_CHECK for the fuzz targets: an invariant that does not hold prints what was expected
// and aborts, which libFuzzer reports as a crash and saves the input.
#ifndef BOOSTER_FUZZ_FUZZ_CHECK_H_
#define BOOSTER_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, ...)                                                   \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, __LINE__, \
                   #cond);                                                      \
      std::fprintf(stderr, __VA_ARGS__);                                        \
      std::fprintf(stderr, "\n");                                               \
      std::abort();                                                             \
    }                                                                           \
  } while (0)

#endif  // BOOSTER_FUZZ_FUZZ_CHECK_H_
