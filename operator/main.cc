// booster-operator: the BoosterProfile controller process (docs/operator.md). Wires
// informers, the profile reconciler, leader election, /metrics (prometheus-cpp),
// /healthz and /readyz (CivetWeb), structured logs and graceful shutdown.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CivetServer.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/controller/log.h"
#include "operator/controller/options.h"
#include "operator/controller/reconciler.h"
#include "operator/kube/api_status.h"
#include "operator/kube/config.h"
#include "operator/kube/cpprest_transport.h"
#include "operator/kube/leader_election.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace booster::controller {
namespace {

using kube::Informer;
using kube::InformerOptions;

// Per-profile gauges; series of a deleted profile are removed.
class MetricsObserver final : public ReconcileObserver {
 public:
  explicit MetricsObserver(prometheus::Registry& registry)
      : phase_(prometheus::BuildGauge()
                   .Name("booster_operator_profile_phase")
                   .Help("1 for the current phase of each BoosterProfile, 0 for the others")
                   .Register(registry)),
        weight_(prometheus::BuildGauge()
                    .Name("booster_operator_profile_canary_weight")
                    .Help("Percent of the replicas on the canary")
                    .Register(registry)) {}

  void Reconciled(const std::string& ns, const std::string& name,
                  const rollout::RolloutStatus& status) override {
    std::lock_guard<std::mutex> l(mu_);
    for (rollout::Phase p : kPhases) {
      phase_.Add({{"namespace", ns}, {"profile", name}, {"phase", std::string(rollout::PhaseName(p))}})
          .Set(p == status.phase ? 1 : 0);
    }
    weight_.Add({{"namespace", ns}, {"profile", name}}).Set(status.canary_weight);
    known_[ns + "/" + name] = true;
  }

  void Forgotten(const std::string& ns, const std::string& name) override {
    std::lock_guard<std::mutex> l(mu_);
    if (known_.erase(ns + "/" + name) == 0) return;
    for (rollout::Phase p : kPhases) {
      phase_.Remove(&phase_.Add(
          {{"namespace", ns}, {"profile", name}, {"phase", std::string(rollout::PhaseName(p))}}));
    }
    weight_.Remove(&weight_.Add({{"namespace", ns}, {"profile", name}}));
  }

 private:
  static constexpr rollout::Phase kPhases[] = {
      rollout::Phase::kPending,     rollout::Phase::kEnrolling, rollout::Phase::kProgressing,
      rollout::Phase::kPaused,      rollout::Phase::kPromoting, rollout::Phase::kPromoted,
      rollout::Phase::kRollingBack, rollout::Phase::kRolledBack, rollout::Phase::kFailed};
  std::mutex mu_;
  prometheus::Family<prometheus::Gauge>& phase_;
  prometheus::Family<prometheus::Gauge>& weight_;
  std::map<std::string, bool> known_;
};

// What /healthz and /readyz answer, with the reason.
class Health {
 public:
  struct Answer {
    bool ok;
    std::string reason;
  };
  std::function<Answer()> healthz;
  std::function<Answer()> readyz;
};

class ProbeHandler final : public CivetHandler {
 public:
  explicit ProbeHandler(std::function<Health::Answer()> probe) : probe_(std::move(probe)) {}
  bool handleGet(CivetServer*, struct mg_connection* conn) override {
    Health::Answer a = probe_();
    const std::string body = a.ok ? "ok\n" : a.reason + "\n";
    mg_printf(conn,
              "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
              "Connection: close\r\n\r\n%s",
              a.ok ? 200 : 503, a.ok ? "OK" : "Service Unavailable", body.size(), body.c_str());
    return true;
  }

 private:
  std::function<Health::Answer()> probe_;
};

std::string HostOf(const std::string& bind) { return bind.substr(0, bind.rfind(':')); }

std::string HostnamePid() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "unknown");
  return absl::StrCat(host, "_", getpid());
}

int Run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<OperatorOptions> parsed = ParseOptions(
      args,
      [](const char* name) {
        const char* v = std::getenv(name);
        return std::string(v == nullptr ? "" : v);
      },
      HostnamePid());
  if (!parsed.ok()) {
    std::fprintf(stderr, "booster-operator: %s\n%s", std::string(parsed.status().message()).c_str(),
                 Usage().c_str());
    return 2;
  }
  const OperatorOptions& opt = *parsed;
  if (opt.help) {
    std::fputs(Usage().c_str(), stdout);
    return 0;
  }
  SetLogFormat(opt.log_format == "text" ? LogFormat::kText : LogFormat::kJson);

  // Signals are taken by one thread with sigwait; every other thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Log(Level::kInfo, "starting",
      {{"identity", opt.identity},
       {"namespace", opt.ns.empty() ? "(all)" : opt.ns},
       {"leaderElect", opt.leader_elect ? "true" : "false"},
       {"workers", absl::StrCat(opt.workers)},
       {"agentImage", opt.agent_image}});

  absl::StatusOr<kube::Config> config =
      opt.kubeconfig.empty() ? kube::InClusterConfig([](const char* n) {
        const char* v = std::getenv(n);
        return std::string(v == nullptr ? "" : v);
      })
                             : kube::LoadKubeconfig(opt.kubeconfig);
  if (!config.ok()) {
    Log(Level::kError, "cannot load the cluster configuration",
        {{"kubeconfig", opt.kubeconfig}, {"error", config.status().ToString()}});
    return 1;
  }
  config->qps = 50;
  config->burst = 100;
  absl::StatusOr<std::unique_ptr<kube::Client>> client = kube::NewClient(*config);
  if (!client.ok()) {
    Log(Level::kError, "cannot create the Kubernetes client", {{"error", client.status().ToString()}});
    return 1;
  }
  Clock* clock = &RealClock::Get();

  // --- metrics ---
  auto registry = std::make_shared<prometheus::Registry>();
  auto& reconcile_total = prometheus::BuildCounter()
                              .Name("booster_operator_reconcile_total")
                              .Help("Reconciles of BoosterProfiles by result")
                              .Register(*registry);
  auto& reconcile_errors = prometheus::BuildCounter()
                               .Name("booster_operator_reconcile_errors_total")
                               .Help("Reconciles that ended with an error (retried)")
                               .Register(*registry)
                               .Add({});
  auto& reconcile_duration =
      prometheus::BuildHistogram()
          .Name("booster_operator_reconcile_duration_seconds")
          .Help("Time of one reconcile, API calls included")
          .Register(*registry)
          .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                           0.1, 0.25, 0.5, 1, 2.5, 5, 10});
  auto& leader_gauge = prometheus::BuildGauge()
                           .Name("booster_operator_leader")
                           .Help("1 while this replica is the leader")
                           .Register(*registry)
                           .Add({});
  auto& synced_family = prometheus::BuildGauge()
                            .Name("booster_operator_informer_synced")
                            .Help("1 once the informer's first list is cached")
                            .Register(*registry);
  auto& events_family = prometheus::BuildGauge()
                            .Name("booster_operator_informer_events")
                            .Help("Watch events handled by each informer")
                            .Register(*registry);
  auto& cached_family = prometheus::BuildGauge()
                            .Name("booster_operator_informer_objects")
                            .Help("Objects cached by each informer")
                            .Register(*registry);
  MetricsObserver observer(*registry);

  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(opt.metrics_bind_address, 2);
  } catch (const std::exception& e) {
    Log(Level::kError, "cannot serve metrics",
        {{"address", opt.metrics_bind_address}, {"error", e.what()}});
    return 1;
  }
  exposer->RegisterCollectable(registry);
  {
    std::vector<int> ports = exposer->GetListeningPorts();
    Log(Level::kInfo, "serving",
        {{"endpoint", "metrics"},
         {"address", absl::StrCat(HostOf(opt.metrics_bind_address), ":",
                                  ports.empty() ? 0 : ports.front())},
         {"path", "/metrics"}});
  }

  // --- informers ---
  kube::Client* c = client->get();
  auto informer = [&](const kube::Resource& r, std::string selector) {
    InformerOptions io;
    io.ns = opt.ns;
    io.label_selector = std::move(selector);
    io.index_owner = false;
    return std::make_unique<Informer>(c, r, io, clock);
  };
  std::unique_ptr<Informer> profiles = informer(kBoosterProfiles, "");
  profiles->store().AddIndexer(kTargetIndex, ProfileTargetIndexFunc);
  std::unique_ptr<Informer> deployments = informer(kube::kDeployments, "");
  std::unique_ptr<Informer> replicasets = informer(kReplicaSets, rollout::kArmLabel);
  std::unique_ptr<Informer> pods = informer(kube::kPods, rollout::kArmLabel);
  std::unique_ptr<Informer> hpas = informer(kHorizontalPodAutoscalers, "");
  const std::vector<std::pair<std::string, Informer*>> informers = {
      {"boosterprofiles", profiles.get()}, {"deployments", deployments.get()},
      {"replicasets", replicasets.get()},  {"pods", pods.get()},
      {"horizontalpodautoscalers", hpas.get()}};
  auto all_synced = [&]() -> std::string {
    std::vector<std::string> waiting;
    for (const auto& [name, inf] : informers) {
      if (!inf->HasSynced()) waiting.push_back(name);
    }
    return absl::StrJoin(waiting, ", ");
  };

  // --- the reconciler ---
  kube::EventRecorder recorder(c, "booster-operator", clock, opt.identity);
  rollout::TimeVerdictSource verdicts;
  ReconcilerOptions ro;
  ro.mutation.agent_image = opt.agent_image;
  ro.mutation.image_pull_policy = opt.agent_image_pull_policy;
  ProfileReconciler reconciler(c, {&profiles->store(), &deployments->store(), &hpas->store()},
                               &recorder, &verdicts, clock, ro, &observer);
  kube::Controller controller(
      clock,
      [&](const std::string& key) -> absl::StatusOr<kube::Result> {
        const auto start = std::chrono::steady_clock::now();
        absl::StatusOr<kube::Result> r = reconciler.Reconcile(key);
        reconcile_duration.Observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        std::string result = "success";
        if (!r.ok()) {
          result = kube::IsConflict(r.status()) ? "conflict" : "error";
          reconcile_errors.Increment();
          if (!kube::IsConflict(r.status())) {
            Log(Level::kWarning, "reconcile failed; retrying with backoff",
                {{"profile", key}, {"error", r.status().ToString()}});
          }
        } else if (r->requeue_after > absl::ZeroDuration()) {
          result = "requeue";
        }
        reconcile_total.Add({{"result", result}}).Increment();
        return r;
      },
      kube::ControllerOptions{.workers = opt.workers});
  profiles->AddEventHandler(EnqueueSelf(&controller));
  deployments->AddEventHandler(
      EnqueueProfilesOf(&profiles->store(), ObjectKind::kDeployment, &controller));
  replicasets->AddEventHandler(
      EnqueueProfilesOf(&profiles->store(), ObjectKind::kReplicaSet, &controller));
  pods->AddEventHandler(EnqueueProfilesOf(&profiles->store(), ObjectKind::kPod, &controller));
  hpas->AddEventHandler(EnqueueProfilesOf(&profiles->store(), ObjectKind::kHpa, &controller));

  // --- the main loop's state ---
  std::mutex mu;
  std::condition_variable cv;
  bool shutdown = false, leading = false, lost = false;
  std::atomic<bool> stopping{false}, controller_running{false}, elector_running{false};
  int exit_code = 0;

  // --- probes ---
  Health health;
  health.healthz = [&]() -> Health::Answer {
    if (stopping.load()) return {false, "shutting down"};
    return {true, ""};
  };
  health.readyz = [&]() -> Health::Answer {
    if (stopping.load()) return {false, "shutting down"};
    std::string waiting = all_synced();
    if (!waiting.empty()) return {false, "informers not synced: " + waiting};
    if (!opt.leader_elect) {
      return controller_running.load() ? Health::Answer{true, ""}
                                       : Health::Answer{false, "workers not started"};
    }
    if (controller_running.load()) return {true, ""};
    if (elector_running.load()) return {true, ""};  // standing by for the Lease
    return {false, "leader election not running"};
  };
  std::unique_ptr<CivetServer> probes;
  ProbeHandler healthz(health.healthz), readyz(health.readyz);
  try {
    std::vector<std::string> civet_options = {"listening_ports", opt.health_probe_bind_address,
                                              "num_threads", "2"};
    probes = std::make_unique<CivetServer>(civet_options);
  } catch (const std::exception& e) {
    Log(Level::kError, "cannot serve health probes",
        {{"address", opt.health_probe_bind_address}, {"error", e.what()}});
    return 1;
  }
  probes->addHandler("/healthz", healthz);
  probes->addHandler("/readyz", readyz);
  {
    std::vector<int> ports = probes->getListeningPorts();
    Log(Level::kInfo, "serving",
        {{"endpoint", "health"},
         {"address", absl::StrCat(HostOf(opt.health_probe_bind_address), ":",
                                  ports.empty() ? 0 : ports.front())},
         {"path", "/healthz,/readyz"}});
  }

  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    Log(Level::kInfo, "signal received; shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : absl::StrCat(sig)}});
    std::lock_guard<std::mutex> l(mu);
    shutdown = true;
    cv.notify_all();
  });

  for (const auto& [name, inf] : informers) inf->Start();

  // Informer gauges, refreshed once a second by the main loop.
  auto refresh_informer_metrics = [&] {
    for (const auto& [name, inf] : informers) {
      synced_family.Add({{"resource", name}}).Set(inf->HasSynced() ? 1 : 0);
      events_family.Add({{"resource", name}}).Set(static_cast<double>(inf->EventsHandled()));
      cached_family.Add({{"resource", name}}).Set(static_cast<double>(inf->store().Size()));
    }
  };

  std::unique_ptr<kube::LeaderElector> elector;
  std::thread elector_thread;
  if (opt.leader_elect) {
    kube::LeaderElectionConfig lc;
    lc.ns = opt.leader_election_namespace;
    lc.name = opt.leader_election_id;
    lc.identity = opt.identity;
    elector = std::make_unique<kube::LeaderElector>(c, lc, clock);
    elector_running = true;
    // lc goes out of scope before the thread ends: the lambda keeps copies.
    elector_thread = std::thread([&, lease = lc.ns + "/" + lc.name, identity = lc.identity] {
      Log(Level::kInfo, "campaigning for the Lease", {{"lease", lease}, {"identity", identity}});
      elector->Run(
          [&] {
            leader_gauge.Set(1);
            Log(Level::kInfo, "leading", {{"lease", lease}});
            std::lock_guard<std::mutex> l(mu);
            leading = true;
            cv.notify_all();
          },
          [&] {
            leader_gauge.Set(0);
            std::lock_guard<std::mutex> l(mu);
            if (!stopping.load()) lost = true;
            cv.notify_all();
          });
      elector_running = false;
      std::lock_guard<std::mutex> l(mu);
      if (!stopping.load()) lost = true;  // Run returned without Stop(): the Lease is lost
      cv.notify_all();
    });
  } else {
    leading = true;
  }

  {
    std::unique_lock<std::mutex> l(mu);
    bool started = false;
    absl::Time last_sync_log = absl::InfinitePast();
    while (!shutdown && !lost) {
      cv.wait_for(l, std::chrono::seconds(1));
      l.unlock();
      refresh_informer_metrics();
      l.lock();
      if (shutdown || lost) break;
      if (leading && !started) {
        std::string waiting = all_synced();
        if (!waiting.empty()) {
          if (absl::Now() - last_sync_log > absl::Seconds(10)) {
            Log(Level::kInfo, "waiting for informers to sync", {{"informers", waiting}});
            last_sync_log = absl::Now();
          }
          continue;
        }
        for (const std::string& key : profiles->store().ListKeys()) controller.Enqueue(key);
        controller.Start();
        controller_running = true;
        started = true;
        Log(Level::kInfo, "workers started",
            {{"workers", absl::StrCat(opt.workers)},
             {"profiles", absl::StrCat(profiles->store().Size())}});
      }
    }
    if (lost && !shutdown) {
      Log(Level::kError, "leadership lost; exiting so a restart campaigns afresh");
      exit_code = 1;
    }
  }

  // --- graceful shutdown: workers first, then the Lease, then the watches ---
  stopping = true;
  if (controller_running.load()) controller.Stop();
  controller_running = false;
  if (elector != nullptr) {
    elector->Stop();
    elector_thread.join();
    Log(Level::kInfo, "lease released", {{"lease", opt.leader_election_namespace + "/" + opt.leader_election_id}});
  }
  for (const auto& [name, inf] : informers) inf->Stop();
  probes.reset();
  exposer.reset();
  // The signal thread is still in sigwait after a lost Lease: wake it.
  if (!shutdown) pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  Log(Level::kInfo, "stopped", {{"exitCode", absl::StrCat(exit_code)}});
  return exit_code;
}

}  // namespace
}  // namespace booster::controller

int main(int argc, char** argv) { return booster::controller::Run(argc, argv); }
