#include "sidecar/loop/agent_loop.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sidecar/base/file_util.h"
#include "sidecar/sample/proc_stats.h"
#include "sidecar/sample/window_metrics.h"
#include "sidecar/topology/cgroup.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {
namespace {

constexpr int kRescanTicks = 10;  // look for new target processes every 10 ticks
// PROC_CGROUP_INIT_INO in the kernel: the inode of the initial cgroup namespace.
constexpr uint64_t kInitialCgroupNamespaceInode = 0xEFFFFFFBu;

// The keys of `d` that start with `prefix`, for AppliedStatus::failed_knobs.
std::vector<std::string> KeysWithPrefix(const Directive& d, absl::string_view prefix) {
  std::vector<std::string> out;
  for (const std::string& k : d.keys) {
    if (absl::StartsWith(k, prefix)) out.push_back(k);
  }
  return out;
}

// The value of `name:` in a /proc/<pid>/status text ("" when absent).
std::string StatusField(absl::string_view status, absl::string_view name) {
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (absl::ConsumePrefix(&line, name) && absl::ConsumePrefix(&line, ":")) {
      return std::string(absl::StripAsciiWhitespace(line));
    }
  }
  return "";
}

// The union of Cpus_allowed_list over the threads of `pid` (world-readable).
std::vector<int> ThreadsCpus(const std::string& proc_root, int pid) {
  std::set<int> cpus;
  std::string dir = absl::StrCat(proc_root, "/", pid, "/task");
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      absl::StatusOr<std::string> st = ReadFile(absl::StrCat(dir, "/", e->d_name, "/status"));
      if (!st.ok()) continue;
      absl::StatusOr<std::vector<int>> list = ParseCpuList(StatusField(*st, "Cpus_allowed_list"));
      if (list.ok()) cpus.insert(list->begin(), list->end());
    }
    closedir(d);
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

}  // namespace

Agent::Agent(AgentConfig config, Clock* clock, DirectiveSource* directives, Reporter* reporter,
             AgentMetrics* metrics)
    : config_(std::move(config)),
      clock_(clock),
      directives_(directives),
      reporter_(reporter),
      metrics_(metrics),
      arm_(config_.identity.arm) {}

absl::Status Agent::RevertAll(const std::string& why) {
  if (!journal_.has_value()) {
    absl::StatusOr<Journal> j = Journal::Open(config_.journal_path);
    if (!j.ok()) return j.status();
    journal_ = *std::move(j);
  }
  // Nothing journaled and no directive in force: nothing to undo, nothing to say. A
  // directive in force that changed nothing (its threads were already placed as planned)
  // still ends with an Applied, so the operator knows it is no longer in force.
  if (journal_->empty() && !active_.has_value()) return absl::OkStatus();
  Appliers appliers(&*journal_, config_.proc_root);
  std::vector<std::string> log;
  absl::Status s = appliers.RevertAll(&log);
  AppliedStatus status;
  status.generation = active_ ? active_->generation : 0;
  status.arm = arm_;
  status.action = why;
  status.ok = s.ok();
  status.applied = log;
  if (!s.ok()) status.failed.push_back(s.ToString());
  reporter_->Applied(status);
  if (s.ok()) {
    active_.reset();
    placements_.clear();
  }
  return s;
}

namespace {

// Whether libbooster.so is mapped into `pid`: true / false, or why it cannot be told
// (/proc/<pid>/maps needs ptrace-read access: the same user and no fewer capabilities).
absl::StatusOr<bool> MapsLibbooster(const std::string& proc_root, int pid) {
  absl::StatusOr<std::string> maps = ReadFile(absl::StrCat(proc_root, "/", pid, "/maps"));
  if (!maps.ok()) return maps.status();
  return absl::StrContains(*maps, "/libbooster.so");
}

// The library knobs that act on sockets and clocks, which libbooster.so applies inside
// libc's calls (and so cannot apply to a program that does not make them through libc).
bool IsSocketOrClockKnob(absl::string_view key) {
  return absl::StartsWith(key, "runtime.") && key != "runtime.thread_placement" &&
         key != "runtime.numa_mempolicy";
}

}  // namespace

absl::StatusOr<Agent::LibraryInProcess> Agent::LibraryIn(int pid) {
  // libbooster.so's presence locks (sidecar/sample/preload_presence.h), which any user can read,
  // on the library beside the control page; else the process's maps.
  if (!presence_.has_value() && !config_.control_path.empty()) {
    const std::string dir = config_.control_path.substr(0, config_.control_path.rfind('/') + 1);
    absl::StatusOr<PresenceByPid> p =
        ReadPreloadPresence(dir + "libbooster.so", config_.proc_root);
    if (p.ok()) presence_ = *std::move(p);
  }
  if (presence_.has_value()) {
    auto it = presence_->find(pid);
    if (it != presence_->end() && it->second.loaded) return LibraryInProcess{true, it->second.go};
    // No lock: not loaded, unless the maps say otherwise (a program that closed every
    // descriptor it did not open drops the lock).
    absl::StatusOr<bool> maps = MapsLibbooster(config_.proc_root, pid);
    return LibraryInProcess{maps.ok() && *maps, false};
  }
  absl::StatusOr<bool> maps = MapsLibbooster(config_.proc_root, pid);
  if (!maps.ok()) return maps.status();
  return LibraryInProcess{*maps, false};
}

std::string Agent::ProcessName(int pid) const {
  std::string comm = ReadFile(absl::StrCat(config_.proc_root, "/", pid, "/comm")).value_or("?");
  return absl::StrCat(absl::StripTrailingAsciiWhitespace(comm), " (pid ", pid, ")");
}

absl::StatusOr<Limits> Agent::TargetLimits() {
  const bool in_pod = config_.selector.pod_peers;
  Limits l;
  if (!in_pod) {
    absl::StatusOr<Limits> cg = LimitsOfProcess(config_.proc_root, targets_.front());
    if (!cg.ok()) return cg.status();
    l = *std::move(cg);
  } else {
    // The app container's cpuset as its threads see it: the union of their affinity
    // (every thread's mask lies inside the cpuset; libbooster.so's `pin` shrinks single
    // threads, never the union of a process's threads below what they use).
    std::set<int> cpus;
    for (int pid : targets_) {
      for (int cpu : ThreadsCpus(config_.proc_root, pid)) cpus.insert(cpu);
    }
    l.cpus.assign(cpus.begin(), cpus.end());
    absl::StatusOr<std::string> status =
        ReadFile(absl::StrCat(config_.proc_root, "/", targets_.front(), "/status"));
    if (status.ok()) {
      absl::StatusOr<std::vector<int>> mems =
          ParseCpuList(StatusField(*status, "Mems_allowed_list"));
      if (mems.ok()) l.mems = *mems;
    }
  }
  if (config_.target_cpu_limit_millis.has_value()) {
    l.cpu_quota_cores = static_cast<double>(*config_.target_cpu_limit_millis) / 1000;
    l.cfs_period_us = 100000;
    l.cfs_quota_us = *config_.target_cpu_limit_millis * 100;
  }
  if (config_.target_memory_limit_bytes.has_value()) {
    l.memory_limit_bytes = static_cast<uint64_t>(*config_.target_memory_limit_bytes);
  }
  return l;
}

absl::StatusOr<std::string> Agent::PlaceProcess(int pid, PlacementMode mode, bool* reached) {
  ThreadPlacementState& state = placements_[pid];
  state.pid = pid;
  const bool pin = mode == PlacementMode::kPinned;
  Appliers appliers(&*journal_, config_.proc_root);
  absl::StatusOr<PlaceThreadsResult> r = appliers.PlaceThreads(plan_->cpu_order, pin, &state);
  if (!r.ok()) return r.status();
  std::string comm = ReadFile(absl::StrCat(config_.proc_root, "/", pid, "/comm")).value_or("?");
  comm = std::string(absl::StripTrailingAsciiWhitespace(comm));
  absl::StatusOr<LibraryInProcess> lib = LibraryIn(pid);
  std::string how =
      !lib.ok()      ? absl::StrCat("libbooster.so unknown (", lib.status().message(), ")")
      : lib->loaded ? std::string("libbooster.so loaded: control page places the threads it starts")
                    : std::string("libbooster.so not loaded (a static binary?)");
  const std::string what =
      pin ? absl::StrCat("each thread pinned to one CPU of ", FormatCpuList(plan_->cpus))
          : absl::StrCat("threads confined to ", FormatCpuList(plan_->cpus));
  if (!r->denied.ok()) {
    placements_.erase(pid);
    *reached = false;
    return absl::StrCat("pid ", pid, " (", comm,
                        "): not reached from outside: ", r->denied.message(),
                        " (the agent needs the app's user or CAP_SYS_NICE; docs/agent.md); ", how);
  }
  *reached = true;
  return absl::StrCat("pid ", pid, " (", comm, "): ", what, "; sched_setaffinity from outside on ",
                      r->changed, " threads, ", r->already, " already placed; ", how);
}

void Agent::PlaceNewThreads() {
  if (!active_.has_value() || active_->placement == PlacementMode::kNone || !plan_.has_value()) {
    return;
  }
  for (auto& [pid, state] : placements_) {
    Appliers appliers(&*journal_, config_.proc_root);
    (void)appliers.PlaceThreads(plan_->cpu_order, active_->placement == PlacementMode::kPinned,
                                &state);
  }
}

absl::Status Agent::ApplyDirective(const Directive& d, AppliedStatus* status) {
  absl::StatusOr<std::vector<int>> targets = FindTargets(config_.proc_root, config_.selector);
  if (!targets.ok()) return targets.status();
  if (targets->empty()) {
    return absl::FailedPreconditionError("no target process matches the selector");
  }
  targets_ = *targets;
  status->target_pids = targets_;
  presence_.reset();  // read again for this directive
  absl::StatusOr<Limits> limits = TargetLimits();
  if (!limits.ok()) return limits.status();
  absl::StatusOr<Plan> plan = PlanPlacement(*topology_, *limits, d.policy);
  if (!plan.ok()) return plan.status();
  plan_ = *plan;
  status->plan = *plan;

  Appliers appliers(&*journal_, config_.proc_root);
  if (d.placement != PlacementMode::kNone) {
    std::vector<std::string> lines;
    int reached = 0;
    for (int pid : targets_) {
      bool ok = false;
      absl::StatusOr<std::string> line = PlaceProcess(pid, d.placement, &ok);
      if (!line.ok()) {
        status->failed_knobs = {"placement"};
        return line.status();
      }
      reached += ok ? 1 : 0;
      lines.push_back(*line);
      status->applied.push_back(
          absl::StrCat("placement ", PlacementModeName(d.placement), ": ", *line));
    }
    status->knob_notes["placement"] =
        absl::StrCat(PlacementModeName(d.placement), ": ", absl::StrJoin(lines, "; "));
    if (reached == 0) {
      status->failed_knobs = {"placement"};
      return absl::PermissionDeniedError(
          absl::StrCat("placement reached no target process: ", absl::StrJoin(lines, "; ")));
    }
  }
  if (d.numa != NumaMode::kNone) {
    std::vector<std::string> lines;
    const bool several_nodes = topology_->numa_nodes.size() > 1;
    const bool policy_by_page = (d.page.features & BOOSTER_FEATURE_NUMA_MEMPOLICY) != 0 && d.runtime;
    int policy_not_reached = 0;
    for (int pid : targets_) {
      absl::StatusOr<LibraryInProcess> lib = LibraryIn(pid);
      if (policy_by_page && lib.ok() && !lib->loaded) ++policy_not_reached;
      std::string policy =
          !policy_by_page ? std::string("no memory policy asked of libbooster.so")
          : !lib.ok()     ? absl::StrCat(
                                "memory policy by libbooster.so's control page if it is "
                                    "loaded (cannot tell: ",
                                lib.status().message(), ")")
          : lib->loaded ? absl::StrCat("memory policy ",
                                d.page.numa_mode == BOOSTER_NUMA_BIND ? "bind" : "preferred",
                                " to nodes ", FormatCpuList(plan->memory_nodes),
                                " by libbooster.so (control page)")
                 : std::string(
                       "memory policy not reached: Linux sets it only from inside the "
                       "process and libbooster.so is not loaded");
      std::string pages;
      if (d.migrate_memory) {
        if (plan->memory_nodes.empty()) {
          pages = "no memory node to move pages to";
        } else if (!several_nodes) {
          pages = "one NUMA node: no page to move";
        } else if (absl::Status m = appliers.MigrateMemory({pid}, plan->memory_nodes); m.ok()) {
          pages = absl::StrCat("pages moved to nodes ", FormatCpuList(plan->memory_nodes),
                               " (migrate_pages from outside)");
        } else {
          pages = absl::StrCat("pages not moved: ", m.message());
        }
      }
      std::string line = absl::StrCat("pid ", pid, ": ", policy, pages.empty() ? "" : "; ", pages);
      status->applied.push_back(absl::StrCat("numa ", NumaModeName(d.numa), ": ", line));
      lines.push_back(std::move(line));
    }
    status->knob_notes["numa"] = absl::StrCat(
        NumaModeName(d.numa), " (CPUs on ", plan->cross_numa ? "several nodes" : "one node",
        ", memory nodes ", FormatCpuList(plan->memory_nodes), "): ", absl::StrJoin(lines, "; "));
    // The memory policy is the knob's point; where no process can take it, say so.
    if (policy_not_reached > 0 && policy_not_reached == static_cast<int>(targets_.size())) {
      status->unreachable["numa"] = status->knob_notes["numa"];
    }
  }
  if (d.migrate_memory && d.numa == NumaMode::kNone && !plan->memory_nodes.empty()) {
    if (absl::Status s = appliers.MigrateMemory(targets_, plan->memory_nodes); !s.ok()) {
      status->failed_knobs = {"migrate_memory"};
      return s;
    }
    status->applied.push_back(
        absl::StrCat("memory migrated to nodes ", FormatCpuList(plan->memory_nodes)));
  }
  for (const auto& [key, value] : d.sysctls) {
    if (absl::Status s = appliers.SetSysctl(key, value); !s.ok()) {
      status->failed_knobs = {absl::StrCat("sysctl.", key)};
      return s;
    }
    status->applied.push_back(absl::StrCat("sysctl ", key, " = ", value));
  }
  if (d.runtime) {
    if (config_.control_path.empty()) {
      status->failed_knobs = KeysWithPrefix(d, "runtime.");
      return absl::FailedPreconditionError("runtime settings need --control-file");
    }
    booster_control page = d.page;
    page.cpu_count =
        static_cast<uint32_t>(std::min<size_t>(plan->cpu_order.size(), BOOSTER_CONTROL_MAX_CPUS));
    for (uint32_t i = 0; i < page.cpu_count; ++i) {
      page.cpus[i] = static_cast<uint16_t>(plan->cpu_order[i]);
    }
    if (absl::Status s = appliers.PublishControl(config_.control_path, page); !s.ok()) {
      status->failed_knobs = KeysWithPrefix(d, "runtime.");
      return s;
    }
    // The socket and clock knobs act inside libc's calls: they reach a process that loads
    // libbooster.so and makes those calls through libc, which a Go program does not.
    std::vector<std::string> why_not;
    int reached = 0;
    for (int pid : targets_) {
      absl::StatusOr<LibraryInProcess> lib = LibraryIn(pid);
      if (!lib.ok() || (lib->loaded && !lib->go)) {
        ++reached;  // reached, or cannot tell: nothing to report
      } else if (!lib->loaded) {
        why_not.push_back(absl::StrCat("libbooster.so is not loaded in ", ProcessName(pid),
                                       ": a statically linked program ignores LD_PRELOAD"));
      } else {
        why_not.push_back(absl::StrCat(ProcessName(pid),
                                       " is a Go program: its sockets and clocks make raw system "
                                       "calls, not libc's, so libbooster.so cannot change them"));
      }
    }
    if (reached == 0 && !why_not.empty()) {
      for (const std::string& k : d.keys) {
        if (IsSocketOrClockKnob(k)) status->unreachable[k] = absl::StrJoin(why_not, "; ");
      }
    }
    status->applied.push_back(absl::StrCat("control page features 0x", absl::Hex(page.features),
                                           " cpus ", FormatCpuList(plan->cpus)));
  }
  return absl::OkStatus();
}

void Agent::HandleDirective(const Directive& d) {
  // Every directive starts from the pod as it was: undo the previous one first.
  absl::Status reverted = RevertAll(absl::StrCat("revert-before-", ActionName(d.action)));
  arm_ = d.arm;
  if (metrics_ != nullptr) metrics_->SetArm(arm_);
  AppliedStatus status;
  status.generation = d.generation;
  status.arm = d.arm;
  status.action = ActionName(d.action);
  // Only an apply puts settings in force; observe and rollback leave none.
  if (d.action == Directive::Action::kApply) status.knobs = d.keys;
  if (reverted.ok()) {
    active_.reset();
    placements_.clear();
  }
  if (!reverted.ok()) {
    status.ok = false;
    status.failed.push_back(
        absl::StrCat("previous changes could not be reverted: ", reverted.ToString()));
  } else if (d.action == Directive::Action::kApply) {
    absl::Status s = ApplyDirective(d, &status);
    if (s.ok()) {
      active_ = d;
    } else {
      // All or nothing: a directive that fails half-way leaves nothing behind.
      status.ok = false;
      status.failed.push_back(s.ToString());
      Appliers appliers(&*journal_, config_.proc_root);
      std::vector<std::string> log;
      if (absl::Status r = appliers.RevertAll(&log); !r.ok()) {
        status.failed.push_back(absl::StrCat("and reverting failed: ", r.ToString()));
      }
      status.applied.clear();
      for (std::string& l : log) status.applied.push_back("reverted: " + l);
    }
  }
  if (status.ok) applied_generation_ = d.generation;
  if (metrics_ != nullptr) {
    metrics_->ObserveApplied(status.ok, d.generation);
    metrics_->ObserveTuning(status);
  }
  reporter_->Applied(status);
}

void Agent::RefreshTargets() {
  absl::StatusOr<std::vector<int>> t = FindTargets(config_.proc_root, config_.selector);
  if (!t.ok()) return;
  targets_ = *t;
  // New processes of an applied placement get the same CPUs.
  if (active_.has_value() && active_->placement != PlacementMode::kNone && plan_.has_value()) {
    for (int pid : targets_) {
      if (placements_.count(pid) != 0) continue;
      bool reached = false;
      absl::StatusOr<std::string> line = PlaceProcess(pid, active_->placement, &reached);
      if (line.ok()) std::fprintf(stderr, "booster-agent: placement: %s\n", line->c_str());
    }
  }
  if (targets_ == measured_) return;
  // The containers measured changed (the application started after the agent, restarted,
  // or another container joined): measure each target's cgroup once.
  measured_ = targets_;
  absl::StatusOr<uint64_t> cgns = NamespaceInode("cgroup");
  std::vector<CgroupPaths> cgroups;
  bool limited = false;
  for (int pid : targets_) {
    absl::StatusOr<CgroupPaths> p = FindCgroups(config_.proc_root, pid);
    if (!p.ok()) continue;
    // A target in the host's root cgroup: its counters are the machine's; measure the
    // targets' own CPU time instead.
    if (p->cpu_is_root && cgns.ok() && *cgns == kInitialCgroupNamespaceInode) {
      p->cpu.clear();
      p->cpuacct.clear();
    }
    absl::StatusOr<Limits> l = ReadLimits(*p);
    if (l.ok() && l->cpu_quota_cores.has_value() && *l->cpu_quota_cores > 0) limited = true;
    cgroups.push_back(*std::move(p));
  }
  sampler_->SetCgroups(std::move(cgroups));
  cpu_limited_ = limited;
}

void Agent::Tick() {
  absl::Time now = clock_->Now();
  if (directives_ != nullptr) {
    absl::StatusOr<std::optional<Directive>> d = directives_->Poll();
    if (!d.ok()) {
      AppliedStatus status;
      status.arm = arm_;
      status.action = "reject";
      status.ok = false;
      status.failed.push_back(d.status().ToString());
      reporter_->Applied(status);
      if (metrics_ != nullptr) metrics_->ObserveApplied(false, 0);
    } else if (d->has_value()) {
      initial_pending_ = false;  // the operator's (or the file's) directive replaces it
      HandleDirective(**d);
    }
  }
  if (ticks_ % kRescanTicks == 0 || targets_.empty()) RefreshTargets();
  // The pod's own tuning, once there is an application to apply it to.
  if (initial_pending_ && !targets_.empty()) {
    initial_pending_ = false;
    HandleDirective(*config_.initial_directive);
  }
  PlaceNewThreads();
  absl::Time t0 = absl::Now();
  absl::StatusOr<TickDelta> delta = sampler_->Sample(targets_, now);
  bool ok = delta.ok();
  if (ok) {
    windows_->Add(*delta);
  } else {
    windows_->AddError();
  }
  for (const std::string& note : sampler_->TakeNotes()) {
    std::fprintf(stderr, "booster-agent: %s\n", note.c_str());
  }
  if (metrics_ != nullptr) {
    metrics_->ObserveSample(absl::ToDoubleSeconds(absl::Now() - t0), ok);
    metrics_->SetDegraded(!ok ? absl::StrCat("sampling fails: ", delta.status().message())
                          : targets_.empty()
                              ? "no application process found (in a pod: is shareProcessNamespace "
                                "true, and do BOOSTER_CONTAINERS name its containers?)"
                              : "");
  }
  ++ticks_;
  if (windows_->Due(clock_->Now())) CloseWindow();
  if (metrics_ != nullptr) metrics_->Heartbeat();
}

std::optional<PromScrape> Agent::ScrapeApp(std::string* error) {
  absl::StatusOr<PromScrape> s = scraper_->Scrape(targets_);
  if (metrics_ != nullptr) metrics_->ObserveScrape(s.ok());
  if (scraper_->url() != scraped_url_ && !scraper_->url().empty()) {
    std::fprintf(stderr, "booster-agent: application metrics at %s\n", scraper_->url().c_str());
  }
  scraped_url_ = scraper_->url();
  if (!s.ok()) {
    *error = std::string(s.status().message());
    return std::nullopt;
  }
  return *std::move(s);
}

void Agent::CloseWindow() {
  absl::Time now = clock_->Now();
  WindowRecord record;
  WindowReport& r = record.report;
  r = windows_->Close(now);
  r.cpu_limited = cpu_limited_;
  if (r.rss_ticks > 0) {
    std::string facts = absl::StrCat(
        r.go_version.empty() ? "no Go version (not a Go program, or unreadable)" : r.go_version,
        r.go_default_godebug.empty() ? ""
                                     : absl::StrCat(" (DefaultGODEBUG ", r.go_default_godebug, ")"),
        ", CPUs allowed ", r.app_cpus > 0 ? absl::StrCat(r.app_cpus) : std::string("unknown"));
    if (facts != logged_go_facts_) {
      std::fprintf(stderr, "booster-agent: application: %s\n", facts.c_str());
      logged_go_facts_ = std::move(facts);
    }
  }
  std::string error;
  std::optional<PromScrape> scrape = ScrapeApp(&error);
  if (scrape.has_value()) {
    if (last_scrape_.has_value()) {
      double seconds = absl::ToDoubleSeconds(now - last_scrape_time_);
      r.app = ComputeWindow(*last_scrape_, *scrape, seconds);
      AppSeriesChoice choice = KeepOrChooseAppSeries(series_, *scrape, scraper_->source());
      if (choice.histogram != series_.histogram || choice.counter != series_.counter) {
        std::string requests = !choice.counter.empty()     ? choice.counter
                               : !choice.histogram.empty() ? choice.histogram + "_count"
                                                           : "(none)";
        std::fprintf(stderr, "booster-agent: application series: latency %s, requests %s\n",
                     choice.histogram.empty() ? "(none)" : choice.histogram.c_str(),
                     requests.c_str());
      }
      series_ = choice;
      r.requests =
          ComputeRequestWindow(*last_scrape_, *scrape, seconds, series_, scraper_->source());
      r.go_runtime = ComputeGoRuntimeWindow(*last_scrape_, *scrape, seconds);
    } else {
      r.app_error = "first scrape: the window starts now";
    }
    last_scrape_ = *std::move(scrape);
    last_scrape_time_ = now;
  } else {
    r.app_error = error;
    last_scrape_.reset();
  }
  record.identity = config_.identity;
  record.identity.arm = arm_;
  record.sequence = ++sequence_;
  record.generation = applied_generation_;
  record.metrics = ComputeWindowMetrics(r);
  if (metrics_ != nullptr) metrics_->ObserveWindow(record);
  reporter_->Report(record);
}

absl::Status Agent::Run(const std::atomic<bool>& stop) {
  if (metrics_ != nullptr) metrics_->SetArm(arm_);
  absl::StatusOr<Journal> j = Journal::Open(config_.journal_path);
  if (!j.ok()) return j.status();
  journal_ = *std::move(j);
  // An earlier agent died with changes in place: put the pod back first.
  if (!journal_->empty()) {
    if (absl::Status s = RevertAll("recover"); !s.ok()) return s;
  }
  absl::StatusOr<Topology> t = LoadHostTopology();
  if (!t.ok()) return t.status();
  topology_ = *std::move(t);

  absl::StatusOr<std::vector<int>> targets = FindTargets(config_.proc_root, config_.selector);
  if (!targets.ok()) return targets.status();
  sampler_ = std::make_unique<ProcessSampler>(config_.proc_root, std::vector<CgroupPaths>{});
  windows_ = std::make_unique<WindowAggregator>(config_.window, clock_->Now());
  scraper_ = std::make_unique<AppScraper>(config_.app_metrics, config_.proc_root,
                                          config_.discover_app_port);
  RefreshTargets();
  initial_pending_ = config_.initial_directive.has_value();

  HelloInfo hello;
  hello.identity = config_.identity;
  hello.identity.arm = arm_;
  hello.topology.packages = topology_->packages;
  hello.topology.numa_nodes = static_cast<int>(topology_->numa_nodes.size());
  hello.topology.cores = static_cast<int>(topology_->cores.size());
  hello.topology.pus = static_cast<int>(topology_->Cpus().size());
  if (!targets_.empty()) {
    absl::StatusOr<Limits> l = LimitsOfProcess(config_.proc_root, targets_.front());
    if (l.ok()) {
      hello.topology.cpuset = FormatCpuList(l->cpus);
      hello.topology.cpu_quota_cores = l->cpu_quota_cores.value_or(0);
      hello.topology.memory_limit_bytes = static_cast<int64_t>(l->memory_limit_bytes.value_or(0));
    }
  }
  hello.topology_summary =
      absl::StrCat(topology_->Cpus().size(), " CPUs, ", topology_->cores.size(), " cores, ",
                   topology_->numa_nodes.size(), " NUMA nodes");
  reporter_->Hello(hello);
  if (metrics_ != nullptr) {
    metrics_->SetStallTimeout(std::max(absl::Seconds(60), 10 * config_.tick));
    metrics_->SetPhase(AgentMetrics::Phase::kRunning);
  }
  // The first window's baseline. An application not up yet is scraped again at the end
  // of the window, which then becomes the baseline.
  std::string error;
  if (std::optional<PromScrape> s = ScrapeApp(&error); s.has_value()) {
    last_scrape_ = *std::move(s);
    last_scrape_time_ = clock_->Now();
  }

  absl::Time next = clock_->Now();
  while (!stop.load()) {
    Tick();
    if (config_.max_ticks > 0 && ticks_ >= config_.max_ticks) break;
    next += config_.tick;
    while (!stop.load()) {
      absl::Duration left = next - clock_->Now();
      if (left <= absl::ZeroDuration()) break;
      clock_->SleepFor(std::min(left, absl::Milliseconds(100)));
    }
  }
  if (metrics_ != nullptr) metrics_->SetPhase(AgentMetrics::Phase::kStopping);
  return RevertAll("shutdown");
}

}  // namespace booster::agent
