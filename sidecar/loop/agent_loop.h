// The agent loop: recover what an earlier agent left, then once a tick poll for a
// directive, sample the targets, and close report windows — each scored into the judged
// metrics (sample/window_metrics.h) and numbered per incarnation; on stop, revert everything.
// All outside effects go through Appliers (journaled), all time through the Clock, all
// directives through a DirectiveSource and all reporting through a Reporter.
//
//   Agent agent(config, &clock, &directives, &reporter, &metrics);
//   absl::Status s = agent.Run(stop_flag);   // returns after stop_flag turns true
#ifndef BOOSTER_SIDECAR_LOOP_AGENT_LOOP_H_
#define BOOSTER_SIDECAR_LOOP_AGENT_LOOP_H_

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "sidecar/apply/appliers.h"
#include "sidecar/apply/journal.h"
#include "sidecar/loop/directive.h"
#include "sidecar/plan/planner.h"
#include "sidecar/report/agent_metrics.h"
#include "sidecar/report/reporter.h"
#include "sidecar/sample/app_metrics.h"
#include "sidecar/sample/app_scraper.h"
#include "sidecar/sample/preload_presence.h"
#include "sidecar/sample/prom_text.h"
#include "sidecar/sample/sampler.h"
#include "sidecar/topology/topology.h"

namespace booster::agent {

struct AgentConfig {
  AgentIdentity identity;  // arm: the arm before any directive
  TargetSelector selector;
  std::string journal_path;  // on the pod's shared volume
  std::string control_path;  // the libbooster.so control page
  // The application's metrics. Without a url or port they are scraped only when
  // discover_app_port is set (the in-pod default: find the port among the pod's sockets).
  AppMetricsSource app_metrics;
  bool discover_app_port = false;
  absl::Duration tick = absl::Seconds(1);
  absl::Duration window = absl::Seconds(10);
  std::string proc_root = "/proc";
  int max_ticks = 0;  // 0: run until stopped
  // The tuning the pod was created with (BOOSTER_TUNING), as the directive applied once
  // the first target process is found; a directive from the operator or the file
  // replaces it. None: wait for directives.
  std::optional<Directive> initial_directive;
  // The app container's limits as its pod spec gives them (BOOSTER_TARGET_CPU_LIMIT,
  // BOOSTER_TARGET_MEMORY_LIMIT). Inside a pod the agent cannot read the app's cgroup
  // (its own cgroup namespace), so with pod_peers these replace the cgroup's limits and
  // the app's cpuset is read from its threads' Cpus_allowed_list.
  std::optional<int64_t> target_cpu_limit_millis;
  std::optional<int64_t> target_memory_limit_bytes;
};

class Agent {
 public:
  // Nothing is owned; `metrics` may be null.
  Agent(AgentConfig config, Clock* clock, DirectiveSource* directives, Reporter* reporter,
        AgentMetrics* metrics);

  // Runs until `stop` is true (checked every 100 ms of clock time) or max_ticks, then
  // reverts every change. Errors only when the journal cannot be used.
  absl::Status Run(const std::atomic<bool>& stop);

  // For tests and the `revert` command: reverts what the journal holds.
  absl::Status RevertAll(const std::string& why);

 private:
  void HandleDirective(const Directive& d);
  void Tick();
  void RefreshTargets();
  void CloseWindow();
  // Scrapes the application; nullopt with `error` set when it cannot.
  std::optional<PromScrape> ScrapeApp(std::string* error);
  absl::Status ApplyDirective(const Directive& d, AppliedStatus* status);
  // The limits the plan is made for: the target's cgroup, or in a pod the env's limits
  // and the union of the targets' threads' affinity.
  absl::StatusOr<Limits> TargetLimits();
  // Places the threads of `pid` not placed yet (a new process, or new threads of one
  // placed before); returns one line on what it did, for Applied.
  absl::StatusOr<std::string> PlaceProcess(int pid, PlacementMode mode, bool* reached);
  // Every tick while a placement is in force: threads started since the last tick.
  void PlaceNewThreads();
  // Whether libbooster.so is loaded in `pid` and the program is Go: from the library's
  // presence locks (sidecar/sample/preload_presence.h), else its maps; an error when neither
  // can be read.
  struct LibraryInProcess {
    bool loaded = false;
    bool go = false;
  };
  absl::StatusOr<LibraryInProcess> LibraryIn(int pid);
  // "comm (pid N)", for messages.
  std::string ProcessName(int pid) const;

  AgentConfig config_;
  Clock* clock_;
  DirectiveSource* directives_;
  Reporter* reporter_;
  AgentMetrics* metrics_;
  std::optional<Journal> journal_;
  std::optional<Topology> topology_;
  std::string arm_ = "baseline";
  std::optional<Directive> active_;  // the applied directive, if any
  std::vector<int> targets_;
  // The placed processes by pid (only while a directive with a placement is in force).
  std::map<int, ThreadPlacementState> placements_;
  bool initial_pending_ = false;
  std::optional<Plan> plan_;
  std::optional<PresenceByPid> presence_;  // read once per directive by LibraryIn
  std::unique_ptr<ProcessSampler> sampler_;
  std::unique_ptr<WindowAggregator> windows_;
  std::unique_ptr<AppScraper> scraper_;
  std::string scraped_url_;  // logged when it changes
  AppSeriesChoice series_;   // sticky across windows (KeepOrChooseAppSeries)
  // The application's facts (Go version, default GODEBUG, CPUs), logged when they change.
  std::string logged_go_facts_;
  std::optional<PromScrape> last_scrape_;
  absl::Time last_scrape_time_;
  std::vector<int> measured_;  // the targets whose cgroups the sampler reads
  bool cpu_limited_ = false;
  uint64_t sequence_ = 0;
  int64_t applied_generation_ = 0;
  int ticks_ = 0;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_LOOP_AGENT_LOOP_H_
