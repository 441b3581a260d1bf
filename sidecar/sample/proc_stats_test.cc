#include "sidecar/sample/proc_stats.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "sidecar/base/file_util.h"
#include "sidecar/testing/testdata.h"

namespace booster::agent {
namespace {

using ::booster::agent_testing::Fixture;

TEST(ProcStatsTest, ParsesRealStat) {
  absl::StatusOr<ProcStat> s = ParseProcStat(Fixture("proc_stat.txt"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->comm, "python3");
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->minflt, 2903u);
  EXPECT_EQ(s->majflt, 0u);
  EXPECT_EQ(s->utime_ticks, 35u);
  EXPECT_EQ(s->stime_ticks, 0u);
  EXPECT_EQ(s->num_threads, 4);
  EXPECT_EQ(s->starttime_ticks, 78436u);
  EXPECT_EQ(s->rss_pages, 3350);
}

TEST(ProcStatsTest, CommWithSpacesAndParens) {
  absl::StatusOr<ProcStat> s =
      ParseProcStat("42 (a (b) c) R 1 42 42 0 -1 0 7 0 3 0 11 12 0 0 20 0 2 0 999 1000 55 0");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->comm, "a (b) c");
  EXPECT_EQ(s->minflt, 7u);
  EXPECT_EQ(s->majflt, 3u);
  EXPECT_EQ(s->utime_ticks, 11u);
  EXPECT_EQ(s->num_threads, 2);
  EXPECT_EQ(s->starttime_ticks, 999u);
  EXPECT_FALSE(ParseProcStat("42 (x) R 1 2").ok());
  EXPECT_FALSE(ParseProcStat("garbage").ok());
}

TEST(ProcStatsTest, ParsesRealStatus) {
  absl::StatusOr<ProcStatus> s = ParseProcStatus(Fixture("proc_status.txt"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->voluntary_ctxt_switches, 34u);
  EXPECT_EQ(s->nonvoluntary_ctxt_switches, 7u);
  EXPECT_EQ(s->threads, 4);
  EXPECT_EQ(s->vm_rss_bytes, 13576u * 1024u);
  EXPECT_TRUE(ParseProcStatus(Fixture("task_status.txt")).ok());
  EXPECT_FALSE(ParseProcStatus("Name:\tx\n").ok());
}

TEST(ProcStatsTest, AllowedCpusOfTheProcessAndOfATask) {
  EXPECT_EQ(*ParseAllowedCpuCount(Fixture("proc_status.txt")), 2);  // "0-1"
  EXPECT_EQ(*ParseAllowedCpuCount("Name:\tx\nCpus_allowed:\t10f\nCpus_allowed_list:\t0-3,8\n"), 5);
  EXPECT_EQ(*ParseAllowedCpuCount("Cpus_allowed_list:\t7"), 1);
  EXPECT_EQ(ParseAllowedCpuCount("Name:\tx\nCpus_allowed:\tf\n").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ParseAllowedCpuCount("Cpus_allowed_list:\t3-1\n").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProcStatsTest, ParsesRealSchedstat) {
  absl::StatusOr<Schedstat> s = ParseSchedstat(Fixture("proc_schedstat.txt"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->run_ns, 57358923u);
  EXPECT_EQ(s->wait_ns, 19251646u);
  EXPECT_EQ(s->timeslices, 41u);
  absl::StatusOr<Schedstat> t = ParseSchedstat(Fixture("task_schedstat.txt"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->timeslices, 187u);
  EXPECT_FALSE(ParseSchedstat("1 2").ok());
}

TEST(ProcStatsTest, ParsesRealNetstatAndSnmp) {
  absl::StatusOr<std::map<std::string, int64_t>> n =
      ParseNetCounters(Fixture("proc_net_netstat.txt"));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->count("TcpExt.ListenOverflows"), 1u);
  EXPECT_EQ(n->count("TcpExt.ListenDrops"), 1u);
  EXPECT_EQ(n->count("IpExt.InOctets"), 1u);
  absl::StatusOr<std::map<std::string, int64_t>> s = ParseNetCounters(Fixture("proc_net_snmp.txt"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->count("Tcp.RetransSegs"), 1u);
  EXPECT_EQ(s->count("Tcp.OutSegs"), 1u);
  EXPECT_EQ(s->at("Tcp.RtoAlgorithm"), 1);
  EXPECT_EQ(s->at("Tcp.MaxConn"), -1);
  EXPECT_FALSE(ParseNetCounters("Tcp: A B\nTcp: 1\n").ok());
  EXPECT_FALSE(ParseNetCounters("Tcp: A\n").ok());
}

// Copied from this machine with three test sockets listening: 0.0.0.0:44213 (tcp),
// [::]:51893 and [::1]:59589 (tcp6), among established connections.
TEST(ProcStatsTest, ParsesRealListeningSockets) {
  absl::StatusOr<std::vector<ListeningSocket>> v4 =
      ParseListeningSockets(Fixture("proc_net_tcp.txt"), false);
  ASSERT_TRUE(v4.ok()) << v4.status();
  ASSERT_EQ(v4->size(), 2u);  // the ESTABLISHED line is left out
  EXPECT_EQ((*v4)[0].address, "0.0.0.0");
  EXPECT_EQ((*v4)[0].port, 44213);
  EXPECT_EQ((*v4)[0].inode, 253042u);
  EXPECT_EQ((*v4)[1].address, "127.0.0.1");
  EXPECT_EQ((*v4)[1].port, 0xADDF);
  absl::StatusOr<std::vector<ListeningSocket>> v6 =
      ParseListeningSockets(Fixture("proc_net_tcp6.txt"), true);
  ASSERT_TRUE(v6.ok()) << v6.status();
  ASSERT_EQ(v6->size(), 2u);
  EXPECT_EQ((*v6)[0].address, "::");
  EXPECT_EQ((*v6)[0].port, 51893);
  EXPECT_EQ((*v6)[1].address, "::1");
  EXPECT_EQ((*v6)[1].port, 59589);
  EXPECT_FALSE(ParseListeningSockets("header\n 0: 0100007F 00000000:0000 0A\n", false).ok());
  EXPECT_FALSE(ParseListeningSockets(Fixture("proc_net_tcp6.txt"), false).ok());
}

}  // namespace
}  // namespace booster::agent
