#include "sidecar/agent.h"

#include <sched.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sidecar/cgroup.h"
#include "sidecar/cpu_list.h"
#include "sidecar/http_get.h"

namespace booster::agent {
namespace {

constexpr int kRescanTicks = 10;  // look for new target processes every 10 ticks
// PROC_CGROUP_INIT_INO in the kernel: the inode of the initial cgroup namespace.
constexpr uint64_t kInitialCgroupNamespaceInode = 0xEFFFFFFBu;

}  // namespace

Agent::Agent(AgentConfig config, Clock* clock, DirectiveSource* directives, Reporter* reporter,
             AgentMetrics* metrics)
    : config_(std::move(config)),
      clock_(clock),
      directives_(directives),
      reporter_(reporter),
      metrics_(metrics) {}

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
    if (absl::Status s = appliers.SetAffinity(targets_, plan->cpus); !s.ok()) return s;
    placed_ = targets_;
    status->applied.push_back(
        absl::StrCat("affinity of ", targets_.size(), " processes -> ", FormatCpuList(plan->cpus)));
  }
  if (d.migrate_memory && !plan->memory_nodes.empty()) {
    if (absl::Status s = appliers.MigrateMemory(targets_, plan->memory_nodes); !s.ok()) return s;
    status->applied.push_back(
        absl::StrCat("memory migrated to nodes ", FormatCpuList(plan->memory_nodes)));
  }
  for (const auto& [key, value] : d.sysctls) {
    if (absl::Status s = appliers.SetSysctl(key, value); !s.ok()) return s;
    status->applied.push_back(absl::StrCat("sysctl ", key, " = ", value));
  }
  if (d.runtime) {
    if (config_.control_path.empty()) {
      return absl::FailedPreconditionError("runtime settings need --control-file");
    }
    booster_control page = d.page;
    page.cpu_count =
        static_cast<uint32_t>(std::min<size_t>(plan->cpu_order.size(), BOOSTER_CONTROL_MAX_CPUS));
    for (uint32_t i = 0; i < page.cpu_count; ++i) {
      page.cpus[i] = static_cast<uint16_t>(plan->cpu_order[i]);
    }
    if (absl::Status s = appliers.PublishControl(config_.control_path, page); !s.ok()) return s;
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
  if (metrics_ != nullptr) metrics_->ObserveApplied(status.ok, d.generation);
  reporter_->Applied(status);
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
  if (ticks_ % kRescanTicks == 0 || targets_.empty()) {
    absl::StatusOr<std::vector<int>> t = FindTargets(config_.proc_root, config_.selector);
    if (t.ok()) {
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
    }
  }
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
    metrics_->SetHealthy(ok || targets_.empty());
  }
  ++ticks_;
  if (windows_->Due(clock_->Now())) CloseWindow();
}

void Agent::CloseWindow() {
  absl::Time now = clock_->Now();
  WindowReport r = windows_->Close(now);
  if (!config_.app_metrics_url.empty()) {
    absl::StatusOr<std::string> body = HttpGet(config_.app_metrics_url, absl::Seconds(2));
    absl::StatusOr<PromScrape> scrape =
        body.ok() ? ParsePrometheusText(*body) : absl::StatusOr<PromScrape>(body.status());
    if (scrape.ok()) {
      if (last_scrape_.has_value()) {
        r.app =
            ComputeWindow(*last_scrape_, *scrape, absl::ToDoubleSeconds(now - last_scrape_time_));
      } else {
        r.app_error = "first scrape: no window yet";
      }
      last_scrape_ = *std::move(scrape);
      last_scrape_time_ = now;
    } else {
      r.app_error = scrape.status().ToString();
      last_scrape_.reset();
    }
  }
  if (metrics_ != nullptr) metrics_->ObserveWindow(r);
  reporter_->Report(r, config_.pod, arm_);
}

absl::Status Agent::Run(const std::atomic<bool>& stop) {
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

  CgroupPaths cgroup;
  absl::StatusOr<std::vector<int>> targets = FindTargets(config_.proc_root, config_.selector);
  if (!targets.ok()) return targets.status();
  targets_ = *targets;
  if (!targets_.empty()) {
    absl::StatusOr<CgroupPaths> p = FindCgroups(config_.proc_root, targets_.front());
    if (p.ok()) cgroup = *p;
    // A target in the host's root cgroup: its counters are the machine's; measure the
    // targets' own CPU time instead.
    absl::StatusOr<uint64_t> cgns = NamespaceInode("cgroup");
    if (cgroup.cpu_is_root && cgns.ok() && *cgns == kInitialCgroupNamespaceInode) {
      cgroup.cpu.clear();
      cgroup.cpuacct.clear();
    }
  }
  sampler_ = std::make_unique<ProcessSampler>(config_.proc_root, cgroup);
  windows_ = std::make_unique<WindowAggregator>(config_.window, clock_->Now());

  HelloInfo hello;
  hello.pod = config_.pod;
  hello.arm = arm_;
  hello.agent_version = "0.1.0";
  hello.topology_summary =
      absl::StrCat(topology_->Cpus().size(), " CPUs, ", topology_->cores.size(), " cores, ",
                   topology_->numa_nodes.size(), " NUMA nodes");
  reporter_->Hello(hello);
  if (!config_.app_metrics_url.empty()) {
    absl::StatusOr<std::string> body = HttpGet(config_.app_metrics_url, absl::Seconds(2));
    if (body.ok()) {
      absl::StatusOr<PromScrape> s = ParsePrometheusText(*body);
      if (s.ok()) {
        last_scrape_ = *std::move(s);
        last_scrape_time_ = clock_->Now();
      }
    }
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
  return RevertAll("shutdown");
}

}  // namespace booster::agent
