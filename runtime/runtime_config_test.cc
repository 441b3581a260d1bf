#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "runtime/config.h"

namespace booster::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<int> Cpus(const char* text, uint32_t capacity = BOOSTER_CONTROL_MAX_CPUS) {
  std::vector<uint16_t> buf(capacity + 1, 0xffff);
  uint32_t n = 99;
  if (!ParseCpuList(text, buf.data(), capacity, &n)) {
    EXPECT_EQ(n, 0u);
    return {-1};
  }
  EXPECT_EQ(buf[capacity], 0xffff) << "wrote past capacity";
  return std::vector<int>(buf.begin(), buf.begin() + n);
}

TEST(ParseCpuListTest, SinglesRangesAndOrder) {
  EXPECT_THAT(Cpus("0"), ElementsAre(0));
  EXPECT_THAT(Cpus("0-3"), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(Cpus("8,0-2,10-11"), ElementsAre(8, 0, 1, 2, 10, 11));
  EXPECT_THAT(Cpus(" 1 , 3 - 4 "), ElementsAre(1, 3, 4));
  EXPECT_THAT(Cpus("1023"), ElementsAre(1023));
}

TEST(ParseCpuListTest, DuplicatesKeepFirstPosition) {
  EXPECT_THAT(Cpus("3,1-4,1"), ElementsAre(3, 1, 2, 4));
}

TEST(ParseCpuListTest, RejectsMalformed) {
  for (const char* bad : {"", " ", ",", "1,", ",1", "a", "1-", "-1", "3-1", "1--2", "1024",
                          "0-1024", "1.5", "1;2", "99999999999999999999", "0x1"}) {
    EXPECT_THAT(Cpus(bad), ElementsAre(-1)) << "'" << bad << "'";
  }
  uint32_t n = 7;
  EXPECT_FALSE(ParseCpuList(nullptr, nullptr, 0, &n));
  EXPECT_EQ(n, 0u);
}

TEST(ParseCpuListTest, RespectsCapacity) {
  EXPECT_THAT(Cpus("0-3", 4), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(Cpus("0-4", 4), ElementsAre(-1));
  EXPECT_THAT(Cpus("0-1023"), ::testing::SizeIs(1024));
}

TEST(ParseIntTest, BoundsAndJunk) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt("42", 1, 100, &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(ParseInt(" -5 ", -10, 10, &v));
  EXPECT_EQ(v, -5);
  EXPECT_TRUE(ParseInt("+7", 0, 10, &v));
  EXPECT_EQ(v, 7);
  v = 123;
  for (const char* bad : {"", "0", "101", "4k", "abc", "1 2", "--1", "99999999999999999999"}) {
    EXPECT_FALSE(ParseInt(bad, 1, 100, &v)) << bad;
  }
  EXPECT_EQ(v, 123) << "failed parses leave the output alone";
  EXPECT_FALSE(ParseInt(nullptr, 0, 1, &v));
}

TEST(ParseBytesTest, Suffixes) {
  int64_t v = 0;
  EXPECT_TRUE(ParseBytes("4096", 1, int64_t{1} << 40, &v));
  EXPECT_EQ(v, 4096);
  EXPECT_TRUE(ParseBytes("64k", 1, int64_t{1} << 40, &v));
  EXPECT_EQ(v, 64 * 1024);
  EXPECT_TRUE(ParseBytes("4M", 1, int64_t{1} << 40, &v));
  EXPECT_EQ(v, 4 << 20);
  EXPECT_TRUE(ParseBytes("1GiB", 1, int64_t{1} << 40, &v));
  EXPECT_EQ(v, int64_t{1} << 30);
  EXPECT_TRUE(ParseBytes("2 KB", 1, int64_t{1} << 40, &v));
  EXPECT_EQ(v, 2048);
  for (const char* bad : {"", "k", "4T", "4kk", "-1", "1.5M", "4 M B x"}) {
    EXPECT_FALSE(ParseBytes(bad, 1, int64_t{1} << 40, &v)) << bad;
  }
  EXPECT_FALSE(ParseBytes("2G", 1, int64_t{1} << 30, &v)) << "above the bound";
  EXPECT_FALSE(ParseBytes("512", 1024, int64_t{1} << 30, &v)) << "below the bound";
}

TEST(ParseBoolTest, Words) {
  for (const char* t : {"1", "true", "TRUE", "yes", "On", " on "}) EXPECT_EQ(ParseBool(t), 1) << t;
  for (const char* f : {"0", "false", "no", "OFF"}) EXPECT_EQ(ParseBool(f), 0) << f;
  for (const char* bad : {"", "2", "y", "enable", "truex"}) EXPECT_EQ(ParseBool(bad), -1) << bad;
  EXPECT_EQ(ParseBool(nullptr), -1);
}

// Runs ConfigFromEnv over a map and collects the reported lines.
struct EnvResult {
  booster_control page;
  std::vector<std::string> problems;
};

EnvResult FromEnv(const std::map<std::string, std::string>& env) {
  EnvResult r;
  ConfigFromEnv(
      [](void* ctx, const char* name) -> const char* {
        auto* m = static_cast<const std::map<std::string, std::string>*>(ctx);
        auto it = m->find(name);
        return it == m->end() ? nullptr : it->second.c_str();
      },
      const_cast<std::map<std::string, std::string>*>(&env), &r.page,
      [](void* ctx, Problem, const char* message) {
        static_cast<std::vector<std::string>*>(ctx)->push_back(message);
      },
      &r.problems);
  Sanitize(
      &r.page,
      [](void* ctx, Problem, const char* message) {
        static_cast<std::vector<std::string>*>(ctx)->push_back(message);
      },
      &r.problems);
  return r;
}

TEST(ConfigFromEnvTest, EmptyEnvironmentIsDormant) {
  EnvResult r = FromEnv({});
  EXPECT_EQ(r.page.features, 0u);
  EXPECT_EQ(r.page.magic, BOOSTER_CONTROL_MAGIC);
  EXPECT_EQ(r.page.version, BOOSTER_CONTROL_VERSION);
  EXPECT_THAT(r.problems, IsEmpty());
}

TEST(ConfigFromEnvTest, EveryKnob) {
  EnvResult r = FromEnv({{"BOOSTER_LISTEN_BACKLOG", "4096"},
                         {"BOOSTER_TCP_NODELAY", "1"},
                         {"BOOSTER_TCP_QUICKACK", "yes"},
                         {"BOOSTER_BUSY_POLL", "50"},
                         {"BOOSTER_RCVBUF", "256k"},
                         {"BOOSTER_SNDBUF", "1M"},
                         {"BOOSTER_CPUS", "1,0"},
                         {"BOOSTER_THREADS", "confine"},
                         {"BOOSTER_NUMA", "bind"},
                         {"BOOSTER_CLOCK", "coarse"}});
  EXPECT_THAT(r.problems, IsEmpty());
  EXPECT_EQ(r.page.features, kAllFeatures);
  EXPECT_EQ(r.page.listen_backlog, 4096);
  EXPECT_EQ(r.page.busy_poll_us, 50);
  EXPECT_EQ(r.page.rcvbuf_bytes, 256 * 1024);
  EXPECT_EQ(r.page.sndbuf_bytes, 1 << 20);
  EXPECT_EQ(r.page.thread_mode, BOOSTER_THREADS_CONFINE);
  EXPECT_EQ(r.page.numa_mode, BOOSTER_NUMA_BIND);
  ASSERT_EQ(r.page.cpu_count, 2u);
  EXPECT_EQ(r.page.cpus[0], 1);
  EXPECT_EQ(r.page.cpus[1], 0);
}

TEST(ConfigFromEnvTest, BadValueSwitchesOnlyItsFeatureOffAndSaysWhy) {
  EnvResult r = FromEnv({{"BOOSTER_LISTEN_BACKLOG", "lots"},
                         {"BOOSTER_TCP_NODELAY", "1"},
                         {"BOOSTER_CLOCK", "fast"}});
  EXPECT_EQ(r.page.features, static_cast<uint64_t>(BOOSTER_FEATURE_TCP_NODELAY));
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_THAT(r.problems[0], HasSubstr("BOOSTER_LISTEN_BACKLOG=lots"));
  EXPECT_THAT(r.problems[1], HasSubstr("BOOSTER_CLOCK=fast"));
}

TEST(ConfigFromEnvTest, OffValuesAreNotProblems) {
  EnvResult r = FromEnv({{"BOOSTER_TCP_NODELAY", "0"},
                         {"BOOSTER_BUSY_POLL", "0"},
                         {"BOOSTER_THREADS", "off"},
                         {"BOOSTER_NUMA", "off"},
                         {"BOOSTER_CLOCK", "default"}});
  EXPECT_EQ(r.page.features, 0u);
  EXPECT_THAT(r.problems, IsEmpty());
}

TEST(ConfigFromEnvTest, ThreadsWithoutCpusMeansAllowedCpus) {
  EnvResult r = FromEnv({{"BOOSTER_THREADS", "pin"}});
  EXPECT_EQ(r.page.features, static_cast<uint64_t>(BOOSTER_FEATURE_THREAD_PLACEMENT));
  EXPECT_EQ(r.page.cpu_count, 0u);
  EXPECT_EQ(r.page.thread_mode, BOOSTER_THREADS_PIN);
}

TEST(ConfigFromEnvTest, CpusAloneMeansPin) {
  EnvResult r = FromEnv({{"BOOSTER_CPUS", "0-1"}});
  EXPECT_EQ(r.page.features, static_cast<uint64_t>(BOOSTER_FEATURE_THREAD_PLACEMENT));
  EXPECT_EQ(r.page.thread_mode, BOOSTER_THREADS_PIN);
}

TEST(ConfigFromEnvTest, BadCpusDisablePlacementAndNumaEvenWithModes) {
  EnvResult r =
      FromEnv({{"BOOSTER_CPUS", "0-"}, {"BOOSTER_THREADS", "pin"}, {"BOOSTER_NUMA", "preferred"}});
  EXPECT_EQ(r.page.features, 0u);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_THAT(r.problems[0], HasSubstr("BOOSTER_CPUS=0-"));
}

TEST(ConfigFromEnvTest, BadModesAreReported) {
  EnvResult r = FromEnv({{"BOOSTER_CPUS", "0"},
                         {"BOOSTER_THREADS", "spread"},
                         {"BOOSTER_NUMA", "interleave"},
                         {"BOOSTER_RCVBUF", "12"},
                         {"BOOSTER_BUSY_POLL", "-1"},
                         {"BOOSTER_TCP_QUICKACK", "maybe"}});
  EXPECT_EQ(r.page.features, 0u);
  EXPECT_EQ(r.problems.size(), 5u);
}

TEST(SanitizeTest, SwitchesOffOutOfRangeFeatures) {
  booster_control page;
  booster_control_init(&page);
  page.features = kAllFeatures | (uint64_t{1} << 40);
  page.listen_backlog = 0;
  page.busy_poll_us = -3;
  page.rcvbuf_bytes = 0;
  page.sndbuf_bytes = 0;
  page.thread_mode = 7;
  page.numa_mode = 9;
  std::vector<std::string> problems;
  Sanitize(
      &page,
      [](void* ctx, Problem, const char* m) {
        static_cast<std::vector<std::string>*>(ctx)->push_back(m);
      },
      &problems);
  EXPECT_EQ(page.features,
            static_cast<uint64_t>(BOOSTER_FEATURE_TCP_NODELAY | BOOSTER_FEATURE_TCP_QUICKACK |
                                  BOOSTER_FEATURE_COARSE_CLOCK));
  EXPECT_EQ(problems.size(), 6u);
}

TEST(SanitizeTest, KeepsValidPageAndDropsHugeCpuNumbers) {
  booster_control page;
  booster_control_init(&page);
  page.features = BOOSTER_FEATURE_LISTEN_BACKLOG | BOOSTER_FEATURE_THREAD_PLACEMENT;
  page.listen_backlog = 1024;
  page.cpu_count = 3;
  page.cpus[0] = 2;
  page.cpus[1] = 5000;
  page.cpus[2] = 1;
  Sanitize(&page, nullptr, nullptr);
  EXPECT_EQ(page.features, static_cast<uint64_t>(BOOSTER_FEATURE_LISTEN_BACKLOG |
                                                 BOOSTER_FEATURE_THREAD_PLACEMENT));
  ASSERT_EQ(page.cpu_count, 2u);
  EXPECT_EQ(page.cpus[0], 2);
  EXPECT_EQ(page.cpus[1], 1);
}

TEST(EffectiveBacklogTest, FloorOnlyRaises) {
  booster_control page;
  booster_control_init(&page);
  page.listen_backlog = 4096;
  EXPECT_EQ(EffectiveBacklog(page, 5), 5) << "feature off";
  page.features = BOOSTER_FEATURE_LISTEN_BACKLOG;
  EXPECT_EQ(EffectiveBacklog(page, 5), 4096);
  EXPECT_EQ(EffectiveBacklog(page, -1), 4096);
  EXPECT_EQ(EffectiveBacklog(page, 8192), 8192);
}

TEST(OrderWholeCoresFirstTest, OneCpuPerCoreFirst) {
  // Two cores with two hyperthreads each, listed sibling-adjacent: 0,1 on core 0;
  // 2,3 on core 1.
  const uint16_t cpus[] = {0, 1, 2, 3};
  const int32_t cores[] = {0, 0, 1, 1};
  uint16_t out[4];
  OrderWholeCoresFirst(cpus, cores, 4, out);
  EXPECT_THAT(out, ElementsAre(0, 2, 1, 3));
}

TEST(OrderWholeCoresFirstTest, LinuxStyleNumberingAndUnknownCores) {
  // Linux often numbers siblings n and n+N: cores {0,4},{1,5}; CPU 9 has no topology.
  const uint16_t cpus[] = {0, 1, 4, 5, 9};
  const int32_t cores[] = {10, 11, 10, 11, -1};
  uint16_t out[5];
  OrderWholeCoresFirst(cpus, cores, 5, out);
  EXPECT_THAT(out, ElementsAre(0, 1, 9, 4, 5));
}

TEST(OrderWholeCoresFirstTest, UnevenCores) {
  const uint16_t cpus[] = {7, 6, 5, 4};
  const int32_t cores[] = {1, 1, 1, 2};
  uint16_t out[4];
  OrderWholeCoresFirst(cpus, cores, 4, out);
  EXPECT_THAT(out, ElementsAre(7, 4, 6, 5));
}

}  // namespace
}  // namespace booster::runtime
