#include "sidecar/loop/directive.h"

#include <unistd.h>

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/base/file_util.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(DirectiveTest, ParsesAFullDirective) {
  absl::StatusOr<Directive> d = ParseDirective(R"(
# canary step 2
generation = 7
action = apply
arm = canary
placement = true
cross_numa = true
migrate_memory = false
gomemlimit_fraction = 0.8
sysctl.net.core.somaxconn = 4096
sysctl.net.ipv4.ip_local_port_range = 1024 65000
runtime.listen_backlog = 4096
runtime.tcp_nodelay = true
runtime.thread_placement = confine
runtime.numa_mempolicy = bind
)");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->generation, 7);
  EXPECT_EQ(d->action, Directive::Action::kApply);
  EXPECT_EQ(d->arm, "canary");
  EXPECT_EQ(d->placement, PlacementMode::kSpread);
  EXPECT_TRUE(d->policy.allow_cross_numa);
  EXPECT_DOUBLE_EQ(d->policy.gomemlimit_fraction, 0.8);
  EXPECT_THAT(d->sysctls, ElementsAre(Pair("net.core.somaxconn", "4096"),
                                      Pair("net.ipv4.ip_local_port_range", "1024 65000")));
  EXPECT_TRUE(d->runtime);
  EXPECT_EQ(
      d->page.features,
      static_cast<uint64_t>(BOOSTER_FEATURE_LISTEN_BACKLOG | BOOSTER_FEATURE_TCP_NODELAY |
                            BOOSTER_FEATURE_THREAD_PLACEMENT | BOOSTER_FEATURE_NUMA_MEMPOLICY));
  EXPECT_EQ(d->page.listen_backlog, 4096);
  EXPECT_EQ(d->page.thread_mode, BOOSTER_THREADS_CONFINE);
  EXPECT_EQ(d->page.numa_mode, BOOSTER_NUMA_BIND);
  EXPECT_EQ(d->page.magic, BOOSTER_CONTROL_MAGIC);
  // The knobs an Applied reports on: every setting, in order; not generation, action, arm.
  EXPECT_THAT(d->keys,
              ElementsAre("placement", "cross_numa", "migrate_memory", "gomemlimit_fraction",
                          "sysctl.net.core.somaxconn", "sysctl.net.ipv4.ip_local_port_range",
                          "runtime.listen_backlog", "runtime.tcp_nodelay",
                          "runtime.thread_placement", "runtime.numa_mempolicy"));
}

// One setting at a time, as the operator's stream sends them: an unknown key is
// kNotFound (not a setting of this agent), a bad value kInvalidArgument.
TEST(DirectiveTest, SetDirectiveSettingTellsUnknownFromBad) {
  Directive d;
  EXPECT_TRUE(SetDirectiveSetting("sysctl.net.core.somaxconn", "1024", &d).ok());
  EXPECT_TRUE(SetDirectiveSetting("runtime.tcp_nodelay", "true", &d).ok());
  EXPECT_TRUE(d.runtime);
  EXPECT_THAT(d.keys, ElementsAre("sysctl.net.core.somaxconn", "runtime.tcp_nodelay"));
  EXPECT_TRUE(absl::IsNotFound(SetDirectiveSetting("jvm.heap", "2g", &d)));
  EXPECT_TRUE(absl::IsNotFound(SetDirectiveSetting("runtime.bogus", "1", &d)));
  EXPECT_TRUE(absl::IsNotFound(SetDirectiveSetting("arm", "canary", &d)));
  EXPECT_TRUE(absl::IsInvalidArgument(SetDirectiveSetting("placement", "maybe", &d)));
  EXPECT_TRUE(absl::IsInvalidArgument(SetDirectiveSetting("numa", "interleave", &d)));
  // Each profile value of cpu.placement / cpu.numa is a value of these keys.
  for (const char* v : {"none", "spread", "whole-cores", "pinned"}) {
    Directive p;
    ASSERT_TRUE(SetDirectiveSetting("placement", v, &p).ok()) << v;
    EXPECT_STREQ(PlacementModeName(p.placement), v);
    EXPECT_EQ(p.policy.pack_cores, std::string(v) == "whole-cores");
  }
  for (const char* v : {"none", "preferred", "align", "bind"}) {
    Directive n;
    ASSERT_TRUE(SetDirectiveSetting("numa", v, &n).ok()) << v;
    EXPECT_STREQ(NumaModeName(n.numa), v);
    const bool one_node = std::string(v) == "align" || std::string(v) == "bind";
    EXPECT_EQ(n.policy.allow_cross_numa, !one_node) << v;
    EXPECT_EQ(n.migrate_memory, one_node) << v;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(SetDirectiveSetting("sysctl.vm.swappiness", "1", &d)));
  EXPECT_EQ(d.keys.size(), 2u) << "a refused setting is not recorded";
}

TEST(DirectiveTest, RefusesNodeWideSysctlsWithTheLine) {
  absl::StatusOr<Directive> d = ParseDirective("generation = 1\nsysctl.vm.swappiness = 1\n");
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("line 2"));
  EXPECT_THAT(d.status().message(), HasSubstr("vm.swappiness is not namespaced"));
}

TEST(DirectiveTest, RejectsBadInput) {
  for (const char* bad : {"action = launch", "arm = blue", "placement = maybe", "foo = 1",
                          "runtime.listen_backlog = -1", "runtime.bogus = 1", "generation",
                          "gomemlimit_fraction = 2", "runtime.thread_placement = spread"}) {
    EXPECT_FALSE(ParseDirective(bad).ok()) << bad;
  }
}

TEST(DirectiveTest, FileSourceReturnsEachNewGenerationOnce) {
  char tmpl[] = "/tmp/booster-directive-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string path = dir + "/directive";
  FileDirectiveSource src(path);
  EXPECT_FALSE(src.Poll()->has_value());  // no file yet
  ASSERT_TRUE(WriteFileAtomically(path, "generation = 1\naction = apply\n").ok());
  absl::StatusOr<std::optional<Directive>> d = src.Poll();
  ASSERT_TRUE(d.ok() && d->has_value());
  EXPECT_EQ((*d)->generation, 1);
  EXPECT_FALSE(src.Poll()->has_value());
  // An older generation is ignored; a broken file is reported once.
  ASSERT_TRUE(WriteFileAtomically(path, "generation = 0\naction = rollback\n").ok());
  EXPECT_FALSE(src.Poll()->has_value());
  ASSERT_TRUE(WriteFileAtomically(path, "generation = 2\naction = explode\n").ok());
  EXPECT_FALSE(src.Poll().ok());
  EXPECT_FALSE(src.Poll()->has_value());
  ASSERT_TRUE(WriteFileAtomically(path, "generation = 2\naction = rollback\n").ok());
  d = src.Poll();
  ASSERT_TRUE(d.ok() && d->has_value());
  EXPECT_EQ((*d)->action, Directive::Action::kRollback);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace booster::agent
