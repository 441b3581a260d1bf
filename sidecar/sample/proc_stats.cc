#include "sidecar/sample/proc_stats.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {

absl::StatusOr<ProcStat> ParseProcStat(absl::string_view text) {
  // comm may hold spaces and parentheses: it ends at the last ')'.
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == absl::string_view::npos || close == absl::string_view::npos || close < open) {
    return absl::InvalidArgumentError("bad /proc/<pid>/stat: no (comm)");
  }
  ProcStat s;
  s.comm = std::string(text.substr(open + 1, close - open - 1));
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::StripAsciiWhitespace(text.substr(close + 1)), ' ', absl::SkipEmpty());
  // f[0] is field 3 (state); field N is f[N - 3].
  if (f.size() < 22) return absl::InvalidArgumentError("bad /proc/<pid>/stat: too few fields");
  s.state = f[0].empty() ? '?' : f[0][0];
  bool ok =
      absl::SimpleAtoi(f[10 - 3], &s.minflt) && absl::SimpleAtoi(f[12 - 3], &s.majflt) &&
      absl::SimpleAtoi(f[14 - 3], &s.utime_ticks) && absl::SimpleAtoi(f[15 - 3], &s.stime_ticks) &&
      absl::SimpleAtoi(f[20 - 3], &s.num_threads) &&
      absl::SimpleAtoi(f[22 - 3], &s.starttime_ticks) && absl::SimpleAtoi(f[24 - 3], &s.rss_pages);
  if (!ok) return absl::InvalidArgumentError("bad /proc/<pid>/stat: non-numeric field");
  return s;
}

absl::StatusOr<ProcStatus> ParseProcStatus(absl::string_view text) {
  ProcStatus s;
  int seen = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    absl::string_view key = line.substr(0, colon);
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (key == "VmRSS") {
      absl::ConsumeSuffix(&value, " kB");
      uint64_t kb = 0;
      if (!absl::SimpleAtoi(value, &kb)) return absl::InvalidArgumentError("bad VmRSS");
      s.vm_rss_bytes = kb * 1024;
    } else if (key == "voluntary_ctxt_switches") {
      if (!absl::SimpleAtoi(value, &s.voluntary_ctxt_switches)) {
        return absl::InvalidArgumentError("bad voluntary_ctxt_switches");
      }
      ++seen;
    } else if (key == "nonvoluntary_ctxt_switches") {
      if (!absl::SimpleAtoi(value, &s.nonvoluntary_ctxt_switches)) {
        return absl::InvalidArgumentError("bad nonvoluntary_ctxt_switches");
      }
      ++seen;
    } else if (key == "Threads") {
      absl::SimpleAtoi(value, &s.threads);
    }
  }
  if (seen != 2) return absl::InvalidArgumentError("/proc/<pid>/status has no ctxt_switches");
  return s;
}

absl::StatusOr<int> ParseAllowedCpuCount(absl::string_view text) {
  constexpr absl::string_view kKey = "Cpus_allowed_list:";
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (!absl::ConsumePrefix(&line, kKey)) continue;
    absl::StatusOr<std::vector<int>> cpus = ParseCpuList(line);
    if (!cpus.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad Cpus_allowed_list in /proc/<pid>/status: ", cpus.status().message()));
    }
    return static_cast<int>(cpus->size());
  }
  return absl::NotFoundError("/proc/<pid>/status has no Cpus_allowed_list");
}

absl::StatusOr<Schedstat> ParseSchedstat(absl::string_view text) {
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  Schedstat s;
  if (f.size() != 3 || !absl::SimpleAtoi(f[0], &s.run_ns) || !absl::SimpleAtoi(f[1], &s.wait_ns) ||
      !absl::SimpleAtoi(f[2], &s.timeslices)) {
    return absl::InvalidArgumentError(absl::StrCat("bad schedstat: \"", text, "\""));
  }
  return s;
}

absl::StatusOr<std::map<std::string, int64_t>> ParseNetCounters(absl::string_view text) {
  std::map<std::string, int64_t> out;
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  if (lines.size() % 2 != 0) return absl::InvalidArgumentError("net counters: odd line count");
  for (size_t i = 0; i < lines.size(); i += 2) {
    std::vector<absl::string_view> names = absl::StrSplit(lines[i], ' ', absl::SkipEmpty());
    std::vector<absl::string_view> values = absl::StrSplit(lines[i + 1], ' ', absl::SkipEmpty());
    if (names.empty() || names.size() != values.size() || names[0] != values[0] ||
        !absl::EndsWith(names[0], ":")) {
      return absl::InvalidArgumentError(absl::StrCat("net counters: mismatched lines ", lines[i]));
    }
    absl::string_view group = names[0].substr(0, names[0].size() - 1);
    for (size_t k = 1; k < names.size(); ++k) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(values[k], &v)) {
        return absl::InvalidArgumentError(absl::StrCat("net counters: bad value for ", names[k]));
      }
      out[absl::StrCat(group, ".", names[k])] = v;
    }
  }
  return out;
}

absl::StatusOr<std::vector<ListeningSocket>> ParseListeningSockets(absl::string_view text,
                                                                   bool ipv6) {
  constexpr absl::string_view kListen = "0A";  // TCP_LISTEN
  std::vector<ListeningSocket> out;
  bool header = true;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    if (header) {  // "  sl  local_address rem_address   st ..."
      header = false;
      continue;
    }
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 10) return absl::InvalidArgumentError(absl::StrCat("bad tcp line: ", line));
    if (f[3] != kListen) continue;
    absl::string_view local = f[1];
    size_t colon = local.find(':');
    size_t hex_len = ipv6 ? 32 : 8;
    ListeningSocket sock;
    uint32_t port = 0;
    if (colon != hex_len || !absl::SimpleHexAtoi(local.substr(colon + 1), &port) || port > 65535 ||
        !absl::SimpleAtoi(f[9], &sock.inode)) {
      return absl::InvalidArgumentError(absl::StrCat("bad tcp line: ", line));
    }
    sock.port = static_cast<int>(port);
    // The kernel prints each 32-bit word of the address as a number in host order.
    unsigned char bytes[16] = {0};
    for (size_t w = 0; w < hex_len / 8; ++w) {
      uint32_t word = 0;
      if (!absl::SimpleHexAtoi(local.substr(w * 8, 8), &word)) {
        return absl::InvalidArgumentError(absl::StrCat("bad tcp address: ", line));
      }
      std::memcpy(bytes + w * 4, &word, sizeof(word));
    }
    char buf[INET6_ADDRSTRLEN] = {0};
    if (inet_ntop(ipv6 ? AF_INET6 : AF_INET, bytes, buf, sizeof(buf)) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("bad tcp address: ", line));
    }
    sock.address = buf;
    out.push_back(std::move(sock));
  }
  return out;
}

}  // namespace booster::agent
