#include "sidecar/agent.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sidecar/cgroup.h"
#include "sidecar/cpu_list.h"
#include "sidecar/window_metrics.h"

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
  if (journal_->empty()) return absl::OkStatus();
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
    placed_.clear();
  }
  return s;
}

absl::Status Agent::ApplyDirective(const Directive& d, AppliedStatus* status) {
  absl::StatusOr<std::vector<int>> targets = FindTargets(config_.proc_root, config_.selector);
  if (!targets.ok()) return targets.status();
  if (targets->empty()) {
    return absl::FailedPreconditionError("no target process matches the selector");
  }
  targets_ = *targets;
  status->target_pids = targets_;
  absl::StatusOr<Limits> limits = LimitsOfProcess(config_.proc_root, targets_.front());
  if (!limits.ok()) return limits.status();
  absl::StatusOr<Plan> plan = PlanPlacement(*topology_, *limits, d.policy);
  if (!plan.ok()) return plan.status();
  plan_ = *plan;
  status->plan = *plan;

  Appliers appliers(&*journal_, config_.proc_root);
  if (d.placement) {
    if (absl::Status s = appliers.SetAffinity(targets_, plan->cpus); !s.ok()) {
      status->failed_knobs = {"placement"};
      return s;
    }
    placed_ = targets_;
    status->applied.push_back(
        absl::StrCat("affinity of ", targets_.size(), " processes -> ", FormatCpuList(plan->cpus)));
  }
  if (d.migrate_memory && !plan->memory_nodes.empty()) {
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
    placed_.clear();
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
  if (metrics_ != nullptr) metrics_->ObserveApplied(status.ok, d.generation);
  reporter_->Applied(status);
}

void Agent::RefreshTargets() {
  absl::StatusOr<std::vector<int>> t = FindTargets(config_.proc_root, config_.selector);
  if (!t.ok()) return;
  targets_ = *t;
  // New processes of an applied placement get the same CPUs.
  if (active_.has_value() && active_->placement && plan_.has_value()) {
    std::vector<int> fresh;
    for (int pid : targets_) {
      if (std::find(placed_.begin(), placed_.end(), pid) == placed_.end()) fresh.push_back(pid);
    }
    if (!fresh.empty()) {
      Appliers appliers(&*journal_, config_.proc_root);
      if (appliers.SetAffinity(fresh, plan_->cpus).ok()) {
        placed_.insert(placed_.end(), fresh.begin(), fresh.end());
      }
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
      HandleDirective(**d);
    }
  }
  if (ticks_ % kRescanTicks == 0 || targets_.empty()) RefreshTargets();
  absl::Time t0 = absl::Now();
  absl::StatusOr<TickDelta> delta = sampler_->Sample(targets_, now);
  bool ok = delta.ok();
  if (ok) {
    windows_->Add(*delta);
  } else {
    windows_->AddError();
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
