#include "sidecar/loop/directive_from_tuning.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;

Directive Must(const std::string& json) {
  absl::StatusOr<std::optional<Directive>> d = DirectiveFromTuning(json, "canary");
  EXPECT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d.ok() && d->has_value()) << json;
  return d.ok() && d->has_value() ? **d : Directive{};
}

// Each value of cpu.placement and cpu.numa has one effect: what the planner and the
// appliers are asked to do, and what libbooster.so's control page says.
TEST(TuningDirectiveTest, EveryPlacementAndNumaValue) {
  struct Case {
    const char* placement;
    const char* numa;
    PlacementMode mode;
    bool pack;
    int thread_mode;  // -1: thread placement off on the page
    NumaMode numa_mode;
    bool cross_numa;
    bool migrate;
    int numa_page;  // -1: memory policy off on the page
  };
  const Case cases[] = {
      {"spread", "none", PlacementMode::kSpread, false, BOOSTER_THREADS_CONFINE, NumaMode::kNone,
       false, false, -1},
      {"whole-cores", "none", PlacementMode::kWholeCores, true, BOOSTER_THREADS_CONFINE,
       NumaMode::kNone, false, false, -1},
      {"pinned", "none", PlacementMode::kPinned, false, BOOSTER_THREADS_PIN, NumaMode::kNone, false,
       false, -1},
      {"none", "preferred", PlacementMode::kNone, false, -1, NumaMode::kPreferred, true, false,
       BOOSTER_NUMA_PREFERRED},
      {"spread", "align", PlacementMode::kSpread, false, BOOSTER_THREADS_CONFINE, NumaMode::kAlign,
       false, true, BOOSTER_NUMA_PREFERRED},
      {"pinned", "bind", PlacementMode::kPinned, false, BOOSTER_THREADS_PIN, NumaMode::kBind, false,
       true, BOOSTER_NUMA_BIND},
  };
  for (const Case& c : cases) {
    const std::string json = std::string(R"({"cpu":{"placement":")") + c.placement +
                             R"(","numa":")" + c.numa + R"("},"sysctls":{},"runtime":{}})";
    Directive d = Must(json);
    EXPECT_EQ(d.action, Directive::Action::kApply) << json;
    EXPECT_EQ(d.generation, 0);
    EXPECT_EQ(d.arm, "canary");
    EXPECT_EQ(d.placement, c.mode) << json;
    EXPECT_EQ(d.policy.pack_cores, c.pack) << json;
    EXPECT_EQ(d.numa, c.numa_mode) << json;
    if (c.numa_mode != NumaMode::kNone) {
      EXPECT_EQ(d.policy.allow_cross_numa, c.cross_numa) << json;
      EXPECT_EQ(d.migrate_memory, c.migrate) << json;
    }
    EXPECT_TRUE(d.runtime);
    EXPECT_EQ((d.page.features & BOOSTER_FEATURE_THREAD_PLACEMENT) != 0, c.thread_mode >= 0)
        << json;
    if (c.thread_mode >= 0) {
      EXPECT_EQ(d.page.thread_mode, c.thread_mode) << json;
    }
    EXPECT_EQ((d.page.features & BOOSTER_FEATURE_NUMA_MEMPOLICY) != 0, c.numa_page >= 0) << json;
    if (c.numa_page >= 0) {
      EXPECT_EQ(d.page.numa_mode, c.numa_page) << json;
    }
  }
}

// A published control page replaces the library's environment knobs, so the page carries
// them too; the allocator, sysctls and Go knobs are not the page's and stay out.
TEST(TuningDirectiveTest, TheLibraryKnobsRideAlong) {
  Directive d = Must(R"({"cpu":{"placement":"pinned","numa":"none"},
      "sysctls":{"net.core.somaxconn":"4096"},
      "runtime":{"go":{"gomaxprocs":"auto"},
                 "preload":{"listenBacklog":3000,"tcpNoDelay":true,"tcpQuickAck":false,
                            "busyPollMicros":50,"receiveBufferBytes":65536,
                            "sendBufferBytes":131072,"coarseClocks":true,
                            "allocator":"jemalloc"}}})");
  EXPECT_THAT(d.keys,
              ElementsAre("placement", "runtime.thread_placement", "runtime.listen_backlog",
                          "runtime.tcp_nodelay", "runtime.busy_poll_us", "runtime.rcvbuf_bytes",
                          "runtime.sndbuf_bytes", "runtime.coarse_clock"));
  EXPECT_TRUE(d.sysctls.empty());
  EXPECT_EQ(d.page.listen_backlog, 3000);
  EXPECT_EQ(d.page.busy_poll_us, 50);
  EXPECT_EQ(d.page.rcvbuf_bytes, 65536);
  EXPECT_EQ(d.page.sndbuf_bytes, 131072);
  EXPECT_EQ(d.page.features & BOOSTER_FEATURE_TCP_QUICKACK, 0u);
  EXPECT_NE(d.page.features & BOOSTER_FEATURE_COARSE_CLOCK, 0u);
}

// Library knobs alone make a directive too: the agent publishes them on the control page
// and reports whether they reach the program (a static or Go binary they cannot).
TEST(TuningDirectiveTest, LibraryKnobsAloneAreADirective) {
  Directive d = Must(R"({"cpu":{},"runtime":{"preload":{"listenBacklog":10}}})");
  EXPECT_EQ(d.placement, PlacementMode::kNone);
  EXPECT_TRUE(d.runtime);
  EXPECT_EQ(d.keys, std::vector<std::string>({"runtime.listen_backlog"}));
}

TEST(TuningDirectiveTest, NothingToApplyNoDirective) {
  for (const char* json : {R"({})", R"({"cpu":{"placement":"none","numa":"none"}})",
                           R"({"sysctls":{"net.core.somaxconn":"4096"},
                               "runtime":{"go":{"gomaxprocs":"auto"}}})"}) {
    absl::StatusOr<std::optional<Directive>> d = DirectiveFromTuning(json, "canary");
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_FALSE(d->has_value()) << json;
  }
  for (const char* bad : {"", "[1]", "{bad", R"({"cpu":{"placement":"tight"}})",
                          R"({"cpu":{"numa":"interleave"}})"}) {
    EXPECT_FALSE(DirectiveFromTuning(bad, "canary").ok()) << bad;
  }
}

}  // namespace
}  // namespace booster::agent
