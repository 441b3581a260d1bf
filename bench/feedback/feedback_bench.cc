// feedback_bench: the simulated agents of bench/feedback (docs/benchmarks.md, "Feedback
// stream"). N FeedbackClients (the agent's real client, sidecar/feedback), one per pod, each
// with that pod's own bound token, stream one window per second to a running
// booster-operator, while this process reads the operator's CPU time and resident memory
// from /proc:
//
//   1. idle: the operator with its informers synced and the profile's step open, no stream,
//      for --baseline-seconds (its idle CPU rate and RSS);
//   2. connect: N clients started, every one reporting every second, until all N are
//      connected and have had a report acknowledged (or --connect-timeout);
//   3. steady: --seconds more of streaming.
//
// At the edges of the phases it runs `--snapshot-command LABEL` (idle0, idle1, start, end),
// with which run.sh saves the operator's and the API server's /metrics, so the figures can
// be checked against what the operator itself counted. Prints one JSON object.
//
//   feedback_bench --address 127.0.0.1:9443 --ca-file ca.pem --pods pods.tsv --count 100
//     --operator-pid 1234 --seconds 30 --baseline-seconds 15 --snapshot-command ./snap.sh
//
// pods.tsv: one pod a line, tab-separated: namespace, name, uid, arm, template hash, token
// file (a token bound to that pod, audience booster-operator). The first --count are used.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "sidecar/feedback/client/feedback_client.h"

namespace {

using booster::agent::FeedbackClient;
using booster::agent::FeedbackClientOptions;
using booster::agent::FeedbackClientStats;
using booster::agent::FeedbackWindow;
using Json = nlohmann::json;

struct Pod {
  std::string ns, name, uid, arm, hash, token_file;
};

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "feedback_bench: %s\n", message.c_str());
  std::exit(1);
}

std::map<std::string, std::string> Flags(int argc, char** argv) {
  std::map<std::string, std::string> f = {{"count", "100"},          {"seconds", "30"},
                                          {"baseline-seconds", "15"}, {"connect-timeout", "300"},
                                          {"operator-pid", "0"},      {"tls-server-name", ""},
                                          {"snapshot-command", ""}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) Die("unexpected argument " + k);
    f[k.substr(2)] = argv[i + 1];
  }
  for (const char* required : {"address", "ca-file", "pods"}) {
    if (f.count(required) == 0) Die(std::string("--") + required + " is required");
  }
  return f;
}

int64_t IntFlag(const std::map<std::string, std::string>& f, const std::string& name) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(f.at(name), &v) || v < 0) Die("--" + name + " must be an integer >= 0");
  return v;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  if (!in) Die("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<Pod> ReadPods(const std::string& path) {
  std::vector<Pod> pods;
  for (absl::string_view line : absl::StrSplit(ReadAll(path), '\n', absl::SkipEmpty())) {
    std::vector<std::string> c = absl::StrSplit(line, '\t');
    if (c.size() != 6) Die("pods file: not 6 tab-separated columns: " + std::string(line));
    pods.push_back({c[0], c[1], c[2], c[3], c[4], c[5]});
  }
  return pods;
}

// A process's CPU time (user + system) and resident memory, from /proc.
struct ProcSample {
  absl::Time at;
  double cpu_seconds = 0;
  int64_t rss_kib = 0;
};

ProcSample SampleProc(pid_t pid) {
  ProcSample s{absl::Now()};
  const std::string base = pid == 0 ? "/proc/self" : "/proc/" + std::to_string(pid);
  std::string stat = ReadAll(base + "/stat");
  // Fields after the command (which may hold spaces) start at ") ": state is field 3, utime
  // and stime are fields 14 and 15.
  std::vector<std::string> fields =
      absl::StrSplit(stat.substr(stat.rfind(')') + 2), ' ', absl::SkipEmpty());
  double utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtod(fields[11], &utime) ||
      !absl::SimpleAtod(fields[12], &stime)) {
    Die("cannot parse " + base + "/stat");
  }
  s.cpu_seconds = (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::istringstream status(ReadAll(base + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = std::atoll(line.c_str() + 6);
  }
  return s;
}

Json Delta(const ProcSample& from, const ProcSample& to) {
  const double secs = absl::ToDoubleSeconds(to.at - from.at);
  return Json{{"seconds", secs},
              {"cpu_seconds", to.cpu_seconds - from.cpu_seconds},
              {"cpu_cores", secs > 0 ? (to.cpu_seconds - from.cpu_seconds) / secs : 0},
              {"rss_kib_from", from.rss_kib},
              {"rss_kib_to", to.rss_kib}};
}

void Snapshot(const std::string& command, const std::string& label) {
  if (command.empty()) return;
  const std::string line = command + " " + label;
  if (std::system(line.c_str()) != 0) std::fprintf(stderr, "feedback_bench: %s failed\n", line.c_str());
}

// Sums of the clients' counters.
struct Totals {
  int connected = 0;
  int connected_and_acked = 0;
  uint64_t sent = 0, acked = 0, dropped = 0, reconnects = 0, streams = 0, buffered = 0;
  std::map<std::string, uint64_t> rejects;
  std::map<std::string, int> last_errors;  // message -> clients
};

Totals Sum(const std::vector<std::unique_ptr<FeedbackClient>>& clients) {
  Totals t;
  for (const auto& c : clients) {
    FeedbackClientStats s = c->Stats();
    t.connected += s.connected ? 1 : 0;
    t.connected_and_acked += s.connected && s.reports_acked > 0 ? 1 : 0;
    t.sent += s.reports_sent;
    t.acked += s.reports_acked;
    t.dropped += s.reports_dropped;
    t.reconnects += s.reconnects;
    t.streams += s.streams_opened;
    t.buffered += s.buffered;
    for (const auto& [reason, n] : s.rejects) t.rejects[reason] += n;
    if (!s.last_error.empty()) t.last_errors[s.last_error.substr(0, 200)]++;
  }
  return t;
}

Json ToJson(const Totals& t) {
  return Json{{"connected", t.connected},          {"connected_and_acked", t.connected_and_acked},
              {"reports_sent", t.sent},            {"reports_acked", t.acked},
              {"reports_dropped", t.dropped},      {"reconnects", t.reconnects},
              {"streams_opened", t.streams},       {"buffered", t.buffered},
              {"rejects", t.rejects},              {"last_errors", t.last_errors}};
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> f = Flags(argc, argv);
  const int64_t count = IntFlag(f, "count");
  const absl::Duration steady = absl::Seconds(IntFlag(f, "seconds"));
  const absl::Duration baseline = absl::Seconds(IntFlag(f, "baseline-seconds"));
  const absl::Duration connect_timeout = absl::Seconds(IntFlag(f, "connect-timeout"));
  const pid_t op = static_cast<pid_t>(IntFlag(f, "operator-pid"));
  const std::string snapshot = f["snapshot-command"];
  const std::string ca = ReadAll(f["ca-file"]);
  std::vector<Pod> pods = ReadPods(f["pods"]);
  if (static_cast<int64_t>(pods.size()) < count) {
    Die("--count " + std::to_string(count) + " but only " + std::to_string(pods.size()) +
        " pods in " + f["pods"]);
  }
  pods.resize(count);
  if (op == 0) Die("--operator-pid is required");

  Json out = {{"count", count}, {"address", f["address"]}};
  const ProcSample self0 = SampleProc(0);

  // 1. The operator idle: no stream.
  Snapshot(snapshot, "idle0");
  const ProcSample idle0 = SampleProc(op);
  absl::SleepFor(baseline);
  const ProcSample idle1 = SampleProc(op);
  Snapshot(snapshot, "idle1");
  out["operator_idle"] = Delta(idle0, idle1);

  // 2. N clients, reporting every second from the start (reports made before a stream is
  //    open are held and sent once it is, as an agent's are).
  std::atomic<uint64_t> log_lines{0};
  std::mutex log_mu;
  std::vector<std::string> first_logs;
  std::vector<std::unique_ptr<FeedbackClient>> clients;
  for (const Pod& p : pods) {
    FeedbackClientOptions o;
    o.address = f["address"];
    o.ca_pem = ca;
    o.tls_server_name = f["tls-server-name"];
    o.token_file = p.token_file;
    o.pod = {p.ns, p.name, p.uid};
    o.agent_version = "feedback-bench";
    o.topology = {.packages = 1, .numa_nodes = 1, .cores = 2, .pus = 2, .cpuset = "0-1"};
    o.log = [&](absl::string_view line) {
      log_lines++;
      std::lock_guard<std::mutex> l(log_mu);
      if (first_logs.size() < 5) first_logs.emplace_back(line);
    };
    absl::StatusOr<std::unique_ptr<FeedbackClient>> c = FeedbackClient::Create(std::move(o));
    if (!c.ok()) Die(std::string(c.status().ToString()));
    clients.push_back(*std::move(c));
  }
  const ProcSample self_created = SampleProc(0);
  const absl::Time t_connect = absl::Now();
  for (auto& c : clients) c->Start();

  // The reporter: at every whole second after the start, one window per client for the
  // second just closed, with the metrics an agent sends under load.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reported{0}, refused{0};
  std::thread reporter([&] {
    absl::Time next = absl::Now() + absl::Seconds(1);
    uint64_t tick = 0;
    while (!stop.load()) {
      absl::SleepFor(next - absl::Now());
      if (stop.load()) break;
      ++tick;
      for (size_t i = 0; i < clients.size(); ++i) {
        FeedbackWindow w;
        w.start = next - absl::Seconds(1);
        w.end = next;
        w.template_hash = pods[i].hash;
        const double jitter = static_cast<double>((tick * 7 + i) % 13);
        w.metrics["latencyP50"] = {0.002 + jitter * 1e-5, 180};
        w.metrics["latencyP99"] = {0.012 + jitter * 1e-4, 180};
        w.metrics["throughput"] = {180 + jitter, 180};
        w.metrics["errorRate"] = {0, 180};
        w.metrics["cpuPerRequest"] = {0.0004, 180};
        if (clients[i]->Report(std::move(w)).ok()) {
          reported++;
        } else {
          refused++;
        }
      }
      next += absl::Seconds(1);
    }
  });

  Totals at_start;
  while (true) {
    absl::SleepFor(absl::Milliseconds(200));
    at_start = Sum(clients);
    if (at_start.connected_and_acked == count) break;
    if (absl::Now() - t_connect > connect_timeout) break;
  }
  out["connect_seconds"] = absl::ToDoubleSeconds(absl::Now() - t_connect);
  out["clients_at_start"] = ToJson(at_start);
  const ProcSample start = SampleProc(op);
  const ProcSample self_start = SampleProc(0);
  out["operator_connect"] = Delta(idle1, start);
  Snapshot(snapshot, "start");

  // 3. Steady streaming.
  absl::SleepFor(steady);
  const ProcSample end = SampleProc(op);
  const ProcSample self_end = SampleProc(0);
  const Totals at_end = Sum(clients);
  Snapshot(snapshot, "end");
  out["operator_steady"] = Delta(start, end);
  out["clients_at_end"] = ToJson(at_end);
  out["steady_reports_sent"] = at_end.sent - at_start.sent;
  out["steady_reports_acked"] = at_end.acked - at_start.acked;
  out["reports_made"] = reported.load();
  out["reports_refused_by_client"] = refused.load();
  out["client_log_lines"] = log_lines.load();
  out["client_first_logs"] = first_logs;
  // This process is N agents' clients in one: its cost is an upper bound of the client's
  // own (one process, N channels, N threads).
  out["driver"] = {{"rss_kib_before_clients", self0.rss_kib},
                   {"rss_kib_clients_created", self_created.rss_kib},
                   {"steady", Delta(self_start, self_end)}};

  stop = true;
  reporter.join();
  // Stop the clients in parallel: each may wait up to its stop grace.
  std::vector<std::thread> stoppers;
  const size_t kStoppers = 16;
  for (size_t k = 0; k < kStoppers; ++k) {
    stoppers.emplace_back([&, k] {
      for (size_t i = k; i < clients.size(); i += kStoppers) clients[i]->Stop();
    });
  }
  for (std::thread& t : stoppers) t.join();
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
