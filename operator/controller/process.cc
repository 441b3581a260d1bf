#include "operator/controller/process.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "CivetServer.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "operator/controller/log.h"
#include "operator/controller/operator_metrics.h"
#include "operator/feedback/leader_endpoint.h"
#include "operator/kube/api_status.h"
#include "operator/kube/config.h"
#include "operator/kube/cpprest_transport.h"
#include "operator/notify/kube_adapters.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace booster::controller {
namespace {

std::string HostOf(const std::string& bind) { return bind.substr(0, bind.rfind(':')); }

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// What a probe answers, with the reason when it is not ok.
struct ProbeAnswer {
  bool ok;
  std::string reason;
};

class ProbeHandler final : public CivetHandler {
 public:
  explicit ProbeHandler(std::function<ProbeAnswer()> probe) : probe_(std::move(probe)) {}
  bool handleGet(CivetServer*, struct mg_connection* conn) override {
    ProbeAnswer a = probe_();
    const std::string body = a.ok ? "ok\n" : a.reason + "\n";
    mg_printf(conn,
              "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
              "Connection: close\r\n\r\n%s",
              a.ok ? 200 : 503, a.ok ? "OK" : "Service Unavailable", body.size(), body.c_str());
    return true;
  }

 private:
  std::function<ProbeAnswer()> probe_;
};

}  // namespace

// The reconciler's observer: the metrics, and the window store's steps. A profile at step
// k (Progressing or Paused) gets that step opened with the template hash of each arm,
// the pod-template marker its agents report under; a finished or forgotten profile's
// windows are dropped.
// The Prometheus metrics of the step, when there is a Prometheus (`prometheus` not null),
// are tracked the same way: what to ask for each arm from the step's analysis start.
class StepTracker final : public ReconcileObserver {
 public:
  StepTracker(OperatorMetrics* metrics, feedback::WindowStore* windows,
              promql::PrometheusWindows* prometheus)
      : metrics_(metrics), windows_(windows), prometheus_(prometheus) {}
  void Reconciled(const std::string& ns, const std::string& name,
                  const rollout::RolloutStatus& status, const rollout::Observations& obs,
                  const rollout::AnalysisSpec* analysis) override {
    metrics_->Reconciled(ns, name, status, obs);
    const std::string key = ns + "/" + name;
    const bool stepping = (status.phase == rollout::Phase::kProgressing ||
                           status.phase == rollout::Phase::kPaused) &&
                          status.current_step > 0;
    if (stepping) {
      const std::array<std::string, 2> markers = {
          rollout::StepBaselineMarker(status, obs),
          rollout::TemplateMarker(obs.canary.pod_template)};
      windows_->BeginStep(key,
                          feedback::StepId{.generation = status.observed_generation,
                                           .step = status.current_step,
                                           .started = status.step_start_time},
                          markers);
      if (prometheus_ != nullptr && analysis != nullptr) {
        prometheus_->Track(key, promql::Tracked{.ns = ns,
                                                .name = name,
                                                .generation = status.observed_generation,
                                                .step = status.current_step,
                                                .step_started = status.step_start_time,
                                                .analysis_start = status.analysis_start_time,
                                                .interval = analysis->interval,
                                                .metrics = promql::PrometheusMetrics(*analysis),
                                                .markers = markers});
      }
    } else if (status.phase == rollout::Phase::kPromoted ||
               status.phase == rollout::Phase::kRolledBack ||
               status.phase == rollout::Phase::kFailed) {
      Forget(key);
    }
  }
  void Foreign(const std::string& ns, const std::string& name,
               const std::string& instance) override {
    metrics_->Foreign(ns, name, instance);
    Forget(ns + "/" + name);
  }
  void Forgotten(const std::string& ns, const std::string& name) override {
    metrics_->Forgotten(ns, name);
    Forget(ns + "/" + name);
  }

 private:
  void Forget(const std::string& key) {
    windows_->Forget(key);
    if (prometheus_ != nullptr) prometheus_->Forget(key);
  }

  OperatorMetrics* const metrics_;
  feedback::WindowStore* const windows_;
  promql::PrometheusWindows* const prometheus_;
};

// What became of each notification: booster_operator_notifications_total by result, and on
// the profile a Warning Event at a delivery's first failure and when it is given up, and a
// Normal one when it gets through after failing (not one per attempt).
class NotificationReports final : public notify::DeliveryObserver {
 public:
  NotificationReports(prometheus::Registry& registry, kube::EventRecorder* events)
      : family_(prometheus::BuildCounter()
                    .Name("booster_operator_notifications_total")
                    .Help("Notification delivery attempts (spec.notifications) by result: "
                          "delivered, failed (tried again later), refused (a 4xx answer, not "
                          "tried again), given_up (an hour of failures, or the queue full)")
                    .Register(registry)),
        events_(events) {}

  void Delivered(const notify::DeliveryReport& r) override {
    Count(r, "delivered");
    if (r.attempts > 1) {
      Record(r, "Normal", "NotificationDelivered",
             absl::StrCat("delivered at attempt ", r.attempts));
    }
  }
  void Failed(const notify::DeliveryReport& r) override {
    const bool refused = r.final && absl::IsFailedPrecondition(r.error);
    Count(r, !r.final ? "failed" : refused ? "refused" : "given_up");
    Log(Level::kWarning, "notification not delivered",
        {{"profile", r.ns + "/" + r.profile},
         {"channel", r.channel},
         {"event", std::string(notify::KindName(r.kind))},
         {"attempt", absl::StrCat(r.attempts)},
         {"error", r.error.ToString()}});
    if (r.attempts == 1 || r.final) {
      Record(r, "Warning", "NotificationFailed",
             absl::StrCat("not delivered (attempt ", r.attempts, "): ", r.error.message(),
                          r.final ? "; not tried again"
                                  : absl::StrCat("; trying again in ",
                                                 absl::FormatDuration(r.retry_in),
                                                 " and then with backoff for up to an hour")));
    }
  }

 private:
  void Count(const notify::DeliveryReport& r, const char* result) {
    family_
        .Add({{"namespace", r.ns},
              {"profile", r.profile},
              {"channel", r.channel},
              {"provider", std::string(notify::ProviderName(r.provider))},
              {"event", std::string(notify::KindName(r.kind))},
              {"result", result}})
        .Increment();
  }
  void Record(const notify::DeliveryReport& r, const char* type, const char* reason,
              const std::string& what) {
    if (events_ == nullptr || !r.profile_ref.is_object()) return;
    absl::Status s = events_->Event(
        r.profile_ref, type, reason,
        absl::StrCat("notification ", r.channel, " (", notify::ProviderName(r.provider), ") of ",
                     notify::KindName(r.kind), " ", what));
    if (!s.ok()) {
      Log(Level::kWarning, "event not recorded",
          {{"profile", r.ns + "/" + r.profile}, {"error", s.ToString()}});
    }
  }

  prometheus::Family<prometheus::Counter>& family_;
  kube::EventRecorder* const events_;
};

// /metrics (prometheus-cpp) and /healthz, /readyz (CivetWeb, real 503s).
class HttpEndpoints {
 public:
  static absl::StatusOr<std::unique_ptr<HttpEndpoints>> Start(
      const OperatorOptions& options, std::shared_ptr<prometheus::Registry> registry,
      std::function<ProbeAnswer()> healthz, std::function<ProbeAnswer()> readyz) {
    auto e = std::unique_ptr<HttpEndpoints>(new HttpEndpoints(std::move(healthz), std::move(readyz)));
    try {
      e->exposer_ = std::make_unique<prometheus::Exposer>(options.metrics_bind_address, 2);
    } catch (const std::exception& ex) {
      return absl::UnavailableError(
          absl::StrCat("cannot serve metrics on ", options.metrics_bind_address, ": ", ex.what()));
    }
    e->exposer_->RegisterCollectable(registry);
    try {
      std::vector<std::string> civet = {"listening_ports", options.health_probe_bind_address,
                                        "num_threads", "2"};
      e->probes_ = std::make_unique<CivetServer>(civet);
    } catch (const std::exception& ex) {
      return absl::UnavailableError(absl::StrCat("cannot serve health probes on ",
                                                 options.health_probe_bind_address, ": ",
                                                 ex.what()));
    }
    e->probes_->addHandler("/healthz", e->healthz_);
    e->probes_->addHandler("/readyz", e->readyz_);
    Log(Level::kInfo, "serving",
        {{"endpoint", "metrics"},
         {"address", absl::StrCat(HostOf(options.metrics_bind_address), ":", e->metrics_port())},
         {"path", "/metrics"}});
    Log(Level::kInfo, "serving",
        {{"endpoint", "health"},
         {"address", absl::StrCat(HostOf(options.health_probe_bind_address), ":",
                                  e->health_port())},
         {"path", "/healthz,/readyz"}});
    return e;
  }
  int metrics_port() const {
    std::vector<int> p = exposer_->GetListeningPorts();
    return p.empty() ? 0 : p.front();
  }
  int health_port() const {
    std::vector<int> p = probes_->getListeningPorts();
    return p.empty() ? 0 : p.front();
  }

 private:
  HttpEndpoints(std::function<ProbeAnswer()> healthz, std::function<ProbeAnswer()> readyz)
      : healthz_(std::move(healthz)), readyz_(std::move(readyz)) {}
  ProbeHandler healthz_, readyz_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<CivetServer> probes_;  // destroyed first: it calls the handlers
};

absl::StatusOr<std::unique_ptr<kube::Client>> OperatorProcess::NewClient(
    const OperatorOptions& options) {
  absl::StatusOr<kube::Config> config = options.kubeconfig.empty()
                                            ? kube::InClusterConfig(Getenv)
                                            : kube::LoadKubeconfig(options.kubeconfig);
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        absl::StrCat("cannot load the cluster configuration (",
                                     options.kubeconfig.empty() ? "in-cluster" : options.kubeconfig,
                                     "): ", config.status().message()));
  }
  config->qps = 50;
  config->burst = 100;
  return kube::NewClient(*config);
}

OperatorProcess::OperatorProcess(const OperatorOptions& options,
                                 std::unique_ptr<kube::Client> client, Clock* clock)
    : options_(options), clock_(clock), client_(std::move(client)) {}

OperatorProcess::~OperatorProcess() {
  if (elector_thread_.joinable()) {
    elector_->Stop();
    elector_thread_.join();
  }
}

absl::StatusOr<std::unique_ptr<OperatorProcess>> OperatorProcess::Create(
    const OperatorOptions& options, std::unique_ptr<kube::Client> client, Clock* clock) {
  auto p = std::unique_ptr<OperatorProcess>(new OperatorProcess(options, std::move(client), clock));
  absl::Status s = p->Build();
  if (!s.ok()) return s;
  return p;
}

absl::Status OperatorProcess::Build() {
  metrics_ = std::make_unique<OperatorMetrics>(clock_->Now());
  feedback_metrics_ = std::make_unique<feedback::PrometheusFeedbackObserver>(*metrics_->registry);
  feedback_observers_ = std::make_unique<feedback::FanOutObserver>(
      std::vector<feedback::FeedbackObserver*>{feedback_metrics_.get(), &reach_});
  kube::Client* c = client_.get();
  auto informer = [&](const kube::Resource& r, std::string selector) {
    kube::InformerOptions io;
    io.ns = r.namespaced ? options_.ns : "";
    io.index_namespace = r.namespaced;
    io.label_selector = std::move(selector);
    io.index_owner = false;
    return std::make_unique<kube::Informer>(c, r, io, clock_);
  };
  profiles_ = informer(kBoosterProfiles, "");
  profiles_->store().AddIndexer(kTargetIndex, ProfileTargetIndexFunc);
  deployments_ = informer(kube::kDeployments, "");
  replicasets_ = informer(kReplicaSets, rollout::kArmLabel);
  pods_ = informer(kube::kPods, rollout::kArmLabel);
  hpas_ = informer(kHorizontalPodAutoscalers, "");
  informers_ = {{"boosterprofiles", profiles_.get()},
                {"deployments", deployments_.get()},
                {"replicasets", replicasets_.get()},
                {"pods", pods_.get()},
                {"horizontalpodautoscalers", hpas_.get()}};
  // The templates' CRDs come with the profile's (crds/boosterprofile.yaml), but `helm
  // upgrade` does not install new CRDs: without them the operator runs on, and a profile
  // naming a template holds with InvalidSpec saying it is not found.
  auto served = [&](const kube::Resource& r) {
    kube::ListOptions one;
    one.limit = 1;
    absl::StatusOr<Json> probe = c->List(r, r.namespaced ? options_.ns : "", one);
    if (probe.ok()) return true;
    if (absl::IsNotFound(probe.status())) {
      Log(Level::kWarning,
          "analysis templates are not served (their CRD is not installed): profiles naming "
          "one hold until it is and the operator restarts; kubectl apply -f "
          "crds/boosterprofile.yaml",
          {{"resource", r.resource}, {"error", probe.status().ToString()}});
      return false;
    }
    if (absl::IsPermissionDenied(probe.status())) {
      Log(Level::kWarning,
          "analysis templates may not be listed (RBAC): profiles naming one hold; grant "
          "list and watch on them (the Helm chart's rules do)",
          {{"resource", r.resource}, {"error", probe.status().ToString()}});
      return false;
    }
    return true;  // anything else (the API server not reachable yet): the informer retries
  };
  if (served(kBoosterAnalysisTemplates)) {
    analysis_templates_ = informer(kBoosterAnalysisTemplates, "");
    informers_.push_back({"boosteranalysistemplates", analysis_templates_.get()});
  }
  if (served(kBoosterClusterAnalysisTemplates)) {
    cluster_analysis_templates_ = informer(kBoosterClusterAnalysisTemplates, "");
    informers_.push_back({"boosterclusteranalysistemplates", cluster_analysis_templates_.get()});
  }
  // Namespaces opt in (namespace_policy.h). Watching one namespace, the installer chose
  // it: it is opted in, and Namespace labels (cluster-scoped) are not read. Watching all,
  // with a label, the opted-in Namespaces are watched (that label only).
  namespace_policy_.enabled = options_.enabled_namespaces;
  namespace_policy_.label = options_.namespace_label;
  if (!options_.ns.empty()) {
    namespace_policy_.enabled.push_back(options_.ns);
    namespace_policy_.label_readable = false;
  } else if (!options_.namespace_label.empty()) {
    kube::InformerOptions io;
    io.label_selector = options_.namespace_label + "=true";
    io.index_namespace = false;
    io.index_owner = false;
    namespaces_ = std::make_unique<kube::Informer>(c, kube::kNamespaces, io, clock_);
    informers_.push_back({"namespaces", namespaces_.get()});
  }

  recorder_ = std::make_unique<kube::EventRecorder>(c, "booster-operator", clock_,
                                                    options_.identity);
  notification_reports_ =
      std::make_unique<NotificationReports>(*metrics_->registry, recorder_.get());
  poster_ = std::make_unique<notify::HttpPoster>();
  secrets_ = std::make_unique<notify::KubeSecretReader>(c);
  notifications_ = std::make_unique<notify::Dispatcher>(poster_.get(), secrets_.get(), clock_,
                                                        notification_reports_.get());
  // The Prometheus metrics: queried on their own thread, read by the judge beside the
  // agents' windows.
  analysis::WindowSource* judged = &window_source_;
  if (!options_.prometheus_address.empty()) {
    absl::StatusOr<std::unique_ptr<promql::HttpQuerier>> q =
        promql::NewHttpQuerier({.address = options_.prometheus_address,
                                .ca_file = options_.prometheus_ca_file,
                                .bearer_token_file = options_.prometheus_bearer_token_file,
                                .timeout = options_.prometheus_timeout});
    if (!q.ok()) return q.status();
    querier_ = *std::move(q);
    metric_queries_ = std::make_unique<MetricQueries>(*metrics_->registry, recorder_.get(),
                                                      &profiles_->store());
    const kube::Store* pods = &pods_->store();
    prometheus_windows_ = std::make_unique<promql::PrometheusWindows>(
        querier_.get(),
        [pods](const std::string& ns, const std::string& marker) {
          return ArmPodsOf(*pods, ns, marker);
        },
        metric_queries_.get(), clock_);
    all_windows_ =
        std::make_unique<promql::CombinedWindowSource>(&window_source_, prometheus_windows_.get());
    judged = all_windows_.get();
  }
  verdicts_ = std::make_unique<analysis::JudgeVerdictSource>(*judged);
  steps_ = std::make_unique<StepTracker>(metrics_.get(), &windows_, prometheus_windows_.get());

  ReconcilerOptions ro;
  ro.prometheus = prometheus_windows_ != nullptr;
  ro.notify = [this](const Json& profile, const rollout::Action& e) {
    return notifications_->Enqueue(profile,
                                   {e.event_type, e.reason, e.message, e.transition_to});
  };
  ro.mutation.instance = options_.instance;
  ro.mutation.agent_image = options_.agent_image;
  ro.mutation.image_pull_policy = options_.agent_image_pull_policy;
  ro.mutation.agent_crash_at = Getenv("BOOSTER_TEST_AGENT_CRASH_AT");  // chaos tests only
  ro.mutation.operator_address = options_.agent_feedback_address;
  ro.namespace_refusal = [this](const std::string& ns) {
    kube::ObjectPtr obj = namespaces_ ? namespaces_->store().Get(ns) : nullptr;
    return NamespaceRefusal(namespace_policy_, ns, obj.get());
  };
  ro.arms = [this](const std::string& key) -> std::optional<rollout::ArmsReport> {
    std::optional<feedback::WindowStore::StepSummary> s = windows_.CurrentSummary(key);
    if (!s) return std::nullopt;
    auto arm = [&](feedback::Arm a) {
      const feedback::WindowStore::ArmSummary& r = s->arms[static_cast<int>(a)];
      return rollout::ArmReport{static_cast<int>(r.pods), static_cast<int64_t>(r.windows)};
    };
    return rollout::ArmsReport{s->step.step, arm(feedback::Arm::kBaseline),
                               arm(feedback::Arm::kCanary)};
  };
  ro.reach = [this](const std::string& key) -> std::optional<rollout::ReachReport> {
    feedback::ReachSummary s = reach_.Summary(key);
    if (s.pods == 0) return std::nullopt;
    rollout::ReachReport r{.pods = s.pods, .not_reached = {}};
    for (const feedback::UnreachedKnob& k : s.not_reached) {
      r.not_reached.push_back({k.knob,
                               k.outcome == feedback::KnobOutcome::kFailed ? "Failed"
                                                                           : "NotReachable",
                               k.reason, k.pods});
    }
    return r;
  };
  ro.go_facts = [this](const std::string& key) -> std::optional<rollout::GoFacts> {
    std::optional<feedback::AppFacts> f = reach_.Facts(key);
    if (!f) return std::nullopt;
    return rollout::GoFacts{
        .version = f->go_version, .cpus = f->cpus, .default_godebug = f->go_default_godebug};
  };
  ro.memory = [this](const std::string& key) -> std::optional<rollout::MemoryPeaks> {
    std::optional<feedback::WindowStore::StepSummary> s = windows_.CurrentSummary(key);
    if (!s) return std::nullopt;
    auto peak = [&](feedback::Arm a) -> std::optional<rollout::ArmMemoryPeak> {
      const feedback::WindowStore::ArmSummary& r = s->arms[static_cast<int>(a)];
      if (!r.memory_rss_peak) return std::nullopt;
      return rollout::ArmMemoryPeak{r.memory_rss_peak_pod, *r.memory_rss_peak};
    };
    return rollout::MemoryPeaks{peak(feedback::Arm::kBaseline), peak(feedback::Arm::kCanary)};
  };
  if (!options_.agent_feedback_ca_file.empty()) {
    absl::StatusOr<std::string> ca = kube::ReadFileToString(options_.agent_feedback_ca_file);
    if (!ca.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--agent-feedback-ca-file: ", ca.status().message()));
    }
    if (ca->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--agent-feedback-ca-file ",
                                                     options_.agent_feedback_ca_file,
                                                     " holds no PEM certificate"));
    }
    ro.mutation.operator_ca_pem = *std::move(ca);
  } else {
    Log(Level::kWarning,
        "agents will not stream their windows: --agent-feedback-ca-file is not set, so they "
        "cannot verify the feedback server",
        {});
  }
  reconciler_ = std::make_unique<ProfileReconciler>(
      c, ReconcilerStores{&profiles_->store(), &deployments_->store(), &hpas_->store(),
                          &pods_->store(),
                          analysis_templates_ ? &analysis_templates_->store() : nullptr,
                          cluster_analysis_templates_ ? &cluster_analysis_templates_->store()
                                                      : nullptr},
      recorder_.get(), verdicts_.get(), clock_, ro, steps_.get());
  controller_ = std::make_unique<kube::Controller>(
      clock_, [this](const std::string& key) { return ReconcileAndMeasure(key); },
      kube::ControllerOptions{.workers = options_.workers});
  profiles_->AddEventHandler(EnqueueSelf(controller_.get()));
  const kube::Store* ps = &profiles_->store();
  deployments_->AddEventHandler(EnqueueProfilesOf(ps, ObjectKind::kDeployment, controller_.get()));
  replicasets_->AddEventHandler(EnqueueProfilesOf(ps, ObjectKind::kReplicaSet, controller_.get()));
  pods_->AddEventHandler(EnqueueProfilesOf(ps, ObjectKind::kPod, controller_.get()));
  hpas_->AddEventHandler(EnqueueProfilesOf(ps, ObjectKind::kHpa, controller_.get()));
  if (analysis_templates_) {
    analysis_templates_->AddEventHandler(
        EnqueueProfilesOf(ps, ObjectKind::kAnalysisTemplate, controller_.get()));
  }
  if (cluster_analysis_templates_) {
    cluster_analysis_templates_->AddEventHandler(
        EnqueueProfilesOf(ps, ObjectKind::kClusterAnalysisTemplate, controller_.get()));
  }
  if (namespaces_) {
    // A namespace that opts in or out: its profiles are looked at again.
    auto enqueue = [ps, this](const kube::ObjectPtr& n) {
      if (n == nullptr) return;
      const std::string name = kube::JsonString(*n, "/metadata/name");
      for (const kube::ObjectPtr& p : ps->ByIndex(kube::kNamespaceIndex, name)) {
        controller_->Enqueue(kube::ObjectKey(*p));
      }
    };
    kube::EventHandlers h;
    h.on_add = enqueue;
    h.on_update = [enqueue](const kube::ObjectPtr&, const kube::ObjectPtr& n) { enqueue(n); };
    h.on_delete = enqueue;
    namespaces_->AddEventHandler(std::move(h));
  }

  absl::StatusOr<std::unique_ptr<HttpEndpoints>> endpoints = HttpEndpoints::Start(
      options_, metrics_->registry,
      [this]() -> ProbeAnswer {
        if (stopping_.load()) return {false, "shutting down"};
        return {true, ""};
      },
      [this]() -> ProbeAnswer {
        if (stopping_.load()) return {false, "shutting down"};
        std::string waiting = InformersNotSynced();
        if (!waiting.empty()) return {false, "informers not synced: " + waiting};
        if (workers_running_.load()) return {true, ""};
        if (!options_.leader_elect) return {false, "workers not started"};
        if (elector_running_.load()) return {true, ""};  // standing by for the Lease
        return {false, "leader election not running"};
      });
  if (!endpoints.ok()) return endpoints.status();
  endpoints_ = *std::move(endpoints);
  return absl::OkStatus();
}

int OperatorProcess::metrics_port() const { return endpoints_->metrics_port(); }
int OperatorProcess::feedback_port() const { return feedback_port_.load(); }

absl::Status OperatorProcess::StartFeedback() {
  if (options_.feedback_cert_file.empty()) {
    Log(Level::kWarning,
        "no feedback server: --feedback-cert-file and --feedback-key-file are not set, so "
        "agents cannot report and analysis has no windows");
    return absl::OkStatus();
  }
  reviewer_ = std::make_unique<feedback::KubeTokenReviewer>(client_.get());
  pod_lookup_ = std::make_unique<feedback::StorePodLookup>(&pods_->store());
  absl::StatusOr<std::unique_ptr<feedback::FeedbackServer>> server = feedback::FeedbackServer::Start(
      feedback::FeedbackServerOptions{.address = options_.feedback_bind_address,
                                      .cert_file = options_.feedback_cert_file,
                                      .key_file = options_.feedback_key_file},
      feedback::FeedbackServerDeps{.reviewer = reviewer_.get(),
                                   .pods = pod_lookup_.get(),
                                   .store = &windows_,
                                   .observer = feedback_observers_.get(),
                                   .clock = clock_});
  if (!server.ok()) return server.status();
  feedback_ = *std::move(server);
  feedback_port_ = feedback_->port();
  Log(Level::kInfo, "serving",
      {{"endpoint", "feedback"},
       {"address", absl::StrCat(HostOf(options_.feedback_bind_address), ":", feedback_->port())},
       {"protocol", "gRPC over TLS"}});
  return absl::OkStatus();
}
// Points --feedback-service at this pod, retried every second (under mu_) until it works;
// until then agents cannot reach this leader, so a failure is logged (every 10 s).
void OperatorProcess::PublishEndpoint() {
  if (options_.feedback_service.empty() || feedback_ == nullptr) {
    endpoint_published_ = true;
    return;
  }
  feedback::LeaderEndpoint e{.pod = options_.identity, .ip = options_.pod_ip,
                             .port = feedback_->port()};
  absl::Status s = feedback::ParseServiceRef(options_.feedback_service, &e.ns, &e.service);
  if (s.ok()) s = feedback::PublishLeaderEndpoint(*client_, e);
  if (s.ok()) {
    endpoint_published_ = true;
    Log(Level::kInfo, "agents are sent to this leader",
        {{"service", options_.feedback_service}, {"address", absl::StrCat(e.ip, ":", e.port)}});
    return;
  }
  if (absl::Now() - endpoint_error_logged_ > absl::Seconds(10)) {
    endpoint_error_logged_ = absl::Now();
    Log(Level::kError, "cannot point the agents' Service at this leader; retrying",
        {{"service", options_.feedback_service}, {"error", s.ToString()}});
  }
}

int OperatorProcess::health_port() const { return endpoints_->health_port(); }

absl::StatusOr<kube::Result> OperatorProcess::ReconcileAndMeasure(const std::string& key) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<kube::Result> r = reconciler_->Reconcile(key);
  metrics_->reconcile_duration.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::string result = "success";
  if (!r.ok()) {
    result = kube::IsConflict(r.status()) ? "conflict" : "error";
    metrics_->reconcile_errors.Increment();
    if (!kube::IsConflict(r.status())) {
      Log(Level::kWarning, "reconcile failed; retrying with backoff",
          {{"profile", key}, {"error", r.status().ToString()}});
    }
  } else if (r->requeue_after > absl::ZeroDuration()) {
    result = "requeue";
  }
  metrics_->reconcile_total.Add({{"result", result}}).Increment();
  return r;
}

std::string OperatorProcess::InformersNotSynced() const {
  std::vector<std::string> waiting;
  for (const auto& [name, inf] : informers_) {
    if (!inf->HasSynced()) waiting.push_back(name);
  }
  return absl::StrJoin(waiting, ", ");
}

void OperatorProcess::RefreshInformerMetrics() {
  for (const auto& [name, inf] : informers_) {
    metrics_->informer_synced.Add({{"resource", name}}).Set(inf->HasSynced() ? 1 : 0);
    metrics_->informer_events.Add({{"resource", name}})
        .Set(static_cast<double>(inf->EventsHandled()));
    metrics_->informer_objects.Add({{"resource", name}})
        .Set(static_cast<double>(inf->store().Size()));
    metrics_->informer_relists.Add({{"resource", name}})
        .Set(static_cast<double>(inf->Relists()));
  }
}

void OperatorProcess::RequestStop(const std::string& why) {
  Log(Level::kInfo, "stop requested; shutting down", {{"reason", why}});
  std::lock_guard<std::mutex> l(mu_);
  stop_requested_ = true;
  cv_.notify_all();
}

// The Lease is lost while leading: the process ends at once, in the elector's thread.
// A graceful stop would let the workers finish what they hold, and each of their requests
// may wait up to the client's timeout: writes after the renew deadline, when another
// replica may already lead. Exiting drops every request not yet sent (as client-go's
// leaders do, and controller-runtime's); the Deployment's restart campaigns afresh.
void OperatorProcess::ExitLeadershipLost() {
  Log(Level::kError, "leadership lost; exiting at once so that nothing acts without the Lease",
      {{"lease", options_.leader_election_namespace + "/" + options_.leader_election_id}});
  std::fflush(nullptr);
  std::_Exit(1);
}

void OperatorProcess::StartElection() {
  kube::LeaderElectionConfig lc;
  lc.ns = options_.leader_election_namespace;
  lc.name = options_.leader_election_id;
  lc.identity = options_.identity;
  elector_ = std::make_unique<kube::LeaderElector>(client_.get(), lc, clock_);
  elector_running_ = true;
  elector_thread_ = std::thread([this, lease = lc.ns + "/" + lc.name, identity = lc.identity] {
    Log(Level::kInfo, "campaigning for the Lease", {{"lease", lease}, {"identity", identity}});
    elector_->Run(
        [&] {
          metrics_->leader.Set(1);
          Log(Level::kInfo, "leading", {{"lease", lease}});
          std::lock_guard<std::mutex> l(mu_);
          leading_ = true;
          cv_.notify_all();
        },
        [&] {
          metrics_->leader.Set(0);
          if (!stopping_.load()) ExitLeadershipLost();
        });
    elector_running_ = false;
    if (!stopping_.load()) ExitLeadershipLost();  // Run returned without Stop()
  });
}

int OperatorProcess::Run() {
  for (const auto& [name, inf] : informers_) inf->Start();
  if (options_.leader_elect) {
    StartElection();
  } else {
    std::lock_guard<std::mutex> l(mu_);
    leading_ = true;
  }

  int exit_code = 0;
  {
    std::unique_lock<std::mutex> l(mu_);
    absl::Time last_sync_log = absl::InfinitePast();
    while (!stop_requested_) {
      cv_.wait_for(l, std::chrono::seconds(1));
      l.unlock();
      RefreshInformerMetrics();
      l.lock();
      if (stop_requested_ || !leading_) continue;
      if (workers_running_.load()) {
        if (!endpoint_published_) PublishEndpoint();
        continue;
      }
      std::string waiting = InformersNotSynced();
      if (!waiting.empty()) {
        if (absl::Now() - last_sync_log > absl::Seconds(10)) {
          Log(Level::kInfo, "waiting for informers to sync", {{"informers", waiting}});
          last_sync_log = absl::Now();
        }
        continue;
      }
      if (absl::Status fs = StartFeedback(); !fs.ok()) {
        Log(Level::kError, "cannot serve the agents' feedback stream",
            {{"address", options_.feedback_bind_address}, {"error", fs.ToString()}});
        exit_code = 1;
        break;
      }
      for (const std::string& key : profiles_->store().ListKeys()) controller_->Enqueue(key);
      notifications_->Start();
      if (prometheus_windows_ != nullptr) prometheus_windows_->Start();
      controller_->Start();
      workers_running_ = true;
      Log(Level::kInfo, "workers started",
          {{"workers", absl::StrCat(options_.workers)},
           {"profiles", absl::StrCat(profiles_->store().Size())}});
    }
  }

  // The agents' streams first (they reconnect to the next leader), then the workers
  // (nothing acts without the Lease), then the Lease, then the watches.
  stopping_ = true;
  if (feedback_ != nullptr) feedback_->Shutdown();
  feedback_.reset();
  feedback_port_ = 0;
  if (workers_running_.load()) controller_->Stop();
  workers_running_ = false;
  notifications_->Stop();  // what is still queued is not sent (docs/notifications.md)
  if (prometheus_windows_ != nullptr) prometheus_windows_->Stop();
  if (elector_ != nullptr && elector_thread_.joinable()) {
    elector_->Stop();
    elector_thread_.join();
    Log(Level::kInfo, "lease released",
        {{"lease", options_.leader_election_namespace + "/" + options_.leader_election_id}});
  }
  for (const auto& [name, inf] : informers_) inf->Stop();
  endpoints_.reset();
  return exit_code;
}

}  // namespace booster::controller
