// Parsers for the /proc files the samplers read: /proc/<pid>/stat, status, schedstat
// (and the same files per thread under task/), and the pod's /proc/<pid>/net/netstat and
// snmp, and its listening TCP sockets (net/tcp, tcp6). Pure: they take the file text; tests feed
// copies of real files (testdata/).
#ifndef BOOSTER_SIDECAR_SAMPLE_PROC_STATS_H_
#define BOOSTER_SIDECAR_SAMPLE_PROC_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace booster::agent {

// /proc/<pid>/stat; for a thread-group leader utime/stime/faults cover all its threads,
// dead ones included.
struct ProcStat {
  std::string comm;
  char state = '?';
  uint64_t minflt = 0;
  uint64_t majflt = 0;
  uint64_t utime_ticks = 0;
  uint64_t stime_ticks = 0;
  int64_t num_threads = 0;
  uint64_t starttime_ticks = 0;  // with the pid, identifies a process across pid reuse
  int64_t rss_pages = 0;
};

// The lines of /proc/<pid>/status the samplers need. Context switches are per task.
struct ProcStatus {
  uint64_t vm_rss_bytes = 0;
  uint64_t voluntary_ctxt_switches = 0;
  uint64_t nonvoluntary_ctxt_switches = 0;
  int64_t threads = 0;
};

// /proc/<pid>/task/<tid>/schedstat: time on CPU, time waiting on a run queue, and the
// number of times the task ran. Per task.
struct Schedstat {
  uint64_t run_ns = 0;
  uint64_t wait_ns = 0;
  uint64_t timeslices = 0;
};

absl::StatusOr<ProcStat> ParseProcStat(absl::string_view text);
absl::StatusOr<ProcStatus> ParseProcStatus(absl::string_view text);
absl::StatusOr<Schedstat> ParseSchedstat(absl::string_view text);

// How many CPUs the task may run on: the CPUs of the "Cpus_allowed_list:" line of
// /proc/<pid>/status (or task/<tid>/status), its scheduler affinity ("0-3,8" -> 5).
// kNotFound without that line, kInvalidArgument when its list does not parse.
absl::StatusOr<int> ParseAllowedCpuCount(absl::string_view status_text);

// /proc/net/netstat and /proc/net/snmp: pairs of lines "Tcp: names..." / "Tcp: values...".
// Keys are "<Group>.<Name>", e.g. "TcpExt.ListenOverflows", "Tcp.RetransSegs".
absl::StatusOr<std::map<std::string, int64_t>> ParseNetCounters(absl::string_view text);

// A TCP socket in LISTEN state, from /proc/net/tcp or tcp6.
struct ListeningSocket {
  std::string address;  // "0.0.0.0", "127.0.0.1", "::", "::1"
  int port = 0;
  uint64_t inode = 0;
};

// The LISTEN sockets of /proc/<pid>/net/tcp (ipv6 = false) or tcp6 (true). Addresses are
// decoded in this machine's byte order, which is the order the kernel wrote them in.
absl::StatusOr<std::vector<ListeningSocket>> ParseListeningSockets(absl::string_view text,
                                                                   bool ipv6);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_SAMPLE_PROC_STATS_H_
