// operator/kube against the real kube-apiserver of tests/e2e/cluster: CRUD on ConfigMaps
// and a CRD, paging, patches, subresources, 409 conflicts retried, watches that outlive the
// server's watch timeout, 410 Gone recovered by relisting, leader election between two
// processes with SIGKILL, service-account token rotation, and a wrong CA failing clearly.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "operator/kube/api_status.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/controller.h"
#include "operator/kube/cpprest_transport.h"
#include "operator/kube/informer.h"
#include "operator/kube/leader_election.h"
#include "tests/e2e/e2e_util.h"

namespace booster::kube {
namespace {

namespace fs = std::filesystem;

Config AdminConfig() {
  absl::StatusOr<Config> c = LoadDefaultConfig();
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : Config();
}

std::unique_ptr<Client> AdminClient() {
  Config c = AdminConfig();
  c.qps = 0;  // tests create many objects quickly
  absl::StatusOr<std::unique_ptr<Client>> client = NewClient(c);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

Json ConfigMap(const std::string& ns, const std::string& name,
               std::map<std::string, std::string> data = {}) {
  Json j = {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"data", Json::object()}};
  for (auto& [k, v] : data) j["data"][k] = v;
  return j;
}

bool Eventually(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(60)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return pred();
}

class KubeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ns_ = std::make_unique<e2e::TestNamespace>("kube");
    ASSERT_TRUE(ns_->status().ok()) << ns_->status();
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
  }
  const std::string& ns() { return ns_->name(); }
  std::unique_ptr<e2e::TestNamespace> ns_;
  std::unique_ptr<Client> client_;
};

TEST_F(KubeE2eTest, ConfigMapCrudPatchesAndPaging) {
  absl::StatusOr<Json> created = client_->Create(kConfigMaps, ns(), ConfigMap(ns(), "a", {{"k", "1"}}));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(JsonString(*created, "/metadata/uid").empty());
  EXPECT_TRUE(absl::IsAlreadyExists(
      client_->Create(kConfigMaps, ns(), ConfigMap(ns(), "a")).status()));

  absl::StatusOr<Json> got = client_->Get(kConfigMaps, ns(), "a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(JsonString(*got, "/data/k"), "1");

  // Update with the current resourceVersion works; with a stale one it is a conflict.
  Json stale = *got;
  (*got)["data"]["k"] = "2";
  absl::StatusOr<Json> updated = client_->Update(kConfigMaps, ns(), *got);
  ASSERT_TRUE(updated.ok()) << updated.status();
  stale["data"]["k"] = "lost";
  absl::Status conflict = client_->Update(kConfigMaps, ns(), stale).status();
  EXPECT_TRUE(IsConflict(conflict)) << conflict;

  // Merge patch, JSON patch, server-side apply.
  ASSERT_TRUE(client_->Patch(kConfigMaps, ns(), "a", PatchType::kMerge, {{"data", {{"m", "x"}}}}).ok());
  ASSERT_TRUE(client_->Patch(kConfigMaps, ns(), "a", PatchType::kJson,
                             Json::array({{{"op", "replace"}, {"path", "/data/k"}, {"value", "3"}}}))
                  .ok());
  PatchOptions apply;
  apply.field_manager = "booster-e2e";
  absl::StatusOr<Json> applied = client_->Patch(
      kConfigMaps, ns(), "a", PatchType::kApply,
      {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "a"}}},
       {"data", {{"applied", "yes"}}}},
      apply);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(JsonString(*applied, "/data/k"), "3");
  EXPECT_EQ(JsonString(*applied, "/data/m"), "x");
  EXPECT_EQ(JsonString(*applied, "/data/applied"), "yes");
  bool managed = false;
  for (const Json& f : (*applied)["metadata"]["managedFields"]) {
    if (JsonString(f, "/manager") == "booster-e2e") managed = true;
  }
  EXPECT_TRUE(managed) << "the field manager owns the applied field";

  // 422 carries the server's message.
  absl::Status invalid = client_->Create(kConfigMaps, ns(), ConfigMap(ns(), "Not_Valid")).status();
  EXPECT_TRUE(absl::IsInvalidArgument(invalid)) << invalid;
  EXPECT_TRUE(absl::StrContains(invalid.message(), "Not_Valid")) << invalid;

  // Paging: 7 objects in pages of 2.
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(client_->Create(kConfigMaps, ns(), ConfigMap(ns(), absl::StrCat("p", i))).ok());
  }
  ListOptions lo;
  lo.limit = 2;
  absl::StatusOr<Json> page = client_->List(kConfigMaps, ns(), lo);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ((*page)["items"].size(), 2u);
  EXPECT_FALSE(JsonString(*page, "/metadata/continue").empty());
  absl::StatusOr<Json> all = client_->ListAll(kConfigMaps, ns(), lo);
  ASSERT_TRUE(all.ok()) << all.status();
  std::set<std::string> names;
  for (const Json& item : (*all)["items"]) names.insert(JsonString(item, "/metadata/name"));
  EXPECT_EQ(names.size(), 8u) << "7 of ours plus kube-root-ca.crt";

  // Delete with a wrong uid precondition is refused; with the right one it goes through.
  DeleteOptions wrong;
  wrong.precondition_uid = "00000000-0000-0000-0000-000000000000";
  absl::Status pre = client_->Delete(kConfigMaps, ns(), "a", wrong);
  EXPECT_TRUE(IsConflict(pre)) << pre;
  DeleteOptions right;
  right.precondition_uid = JsonString(*created, "/metadata/uid");
  right.propagation_policy = "Foreground";
  ASSERT_TRUE(client_->Delete(kConfigMaps, ns(), "a", right).ok());
  // Foreground deletion: the garbage collector removes the object once it has no
  // dependents, a moment later.
  EXPECT_TRUE(Eventually([&] {
    return absl::IsNotFound(client_->Get(kConfigMaps, ns(), "a").status());
  }));
  EXPECT_TRUE(absl::IsNotFound(client_->Delete(kConfigMaps, ns(), "a")));
}

// Creates (if needed) and waits for the Widget CRD used by these tests; returns its
// resource. A CRD's watch cache starts when the CRD is established, far above
// resourceVersion 1, which makes "1" a reliably expired version for the 410 test.
Resource EnsureWidgetCrd(Client& client) {
  Client* client_ = &client;
  const std::string group = "kubee2e.booster.dev";
  const std::string crd_name = absl::StrCat("widgets.", group);
  Json crd = {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata", {{"name", crd_name}}},
      {"spec",
       {{"group", group},
        {"scope", "Namespaced"},
        {"names", {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"}}},
        {"versions",
         Json::array({{{"name", "v1"},
                       {"served", true},
                       {"storage", true},
                       {"subresources",
                        {{"status", Json::object()},
                         {"scale",
                          {{"specReplicasPath", ".spec.replicas"},
                           {"statusReplicasPath", ".status.replicas"}}}}},
                       {"schema",
                        {{"openAPIV3Schema",
                          {{"type", "object"},
                           {"properties",
                            {{"spec",
                              {{"type", "object"},
                               {"properties",
                                {{"replicas", {{"type", "integer"}}},
                                 {"color", {{"type", "string"}}}}}}},
                             {"status",
                              {{"type", "object"},
                               {"properties",
                                {{"replicas", {{"type", "integer"}}},
                                 {"phase", {{"type", "string"}}}}}}}}}}}}}}})}}}};
  absl::Status s = client_->Create(kCustomResourceDefinitions, "", crd).status();
  EXPECT_TRUE(s.ok() || absl::IsAlreadyExists(s)) << s;
  EXPECT_TRUE(Eventually([&] {
    absl::StatusOr<Json> c = client_->Get(kCustomResourceDefinitions, "", crd_name);
    if (!c.ok()) return false;
    for (const Json& cond : (*c)["status"]["conditions"]) {
      if (JsonString(cond, "/type") == "Established" && JsonString(cond, "/status") == "True") {
        return true;
      }
    }
    return false;
  })) << "CRD never established";
  return Resource{group, "v1", "widgets", true};
}

Json Widget(const std::string& name, const std::string& color) {
  return {{"apiVersion", "kubee2e.booster.dev/v1"},
          {"kind", "Widget"},
          {"metadata", {{"name", name}}},
          {"spec", {{"replicas", 1}, {"color", color}}}};
}

TEST_F(KubeE2eTest, CustomResourceCrudStatusAndScale) {
  const std::string group = "kubee2e.booster.dev";
  Resource widgets = EnsureWidgetCrd(*client_);
  Json w = {{"apiVersion", group + "/v1"},
            {"kind", "Widget"},
            {"metadata", {{"name", "w1"}}},
            {"spec", {{"replicas", 1}, {"color", "red"}}}};
  // Discovery of a new CRD can lag establishment by a moment.
  absl::StatusOr<Json> created;
  ASSERT_TRUE(Eventually([&] {
    created = client_->Create(widgets, ns(), w);
    return created.ok();
  })) << created.status();
  Json obj = *created;
  obj["status"] = {{"phase", "Ready"}, {"replicas", 1}};
  absl::StatusOr<Json> st = client_->UpdateStatus(widgets, ns(), obj);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(JsonString(*st, "/status/phase"), "Ready");
  // A status write through the main resource is ignored by the server.
  Json main = *st;
  main["status"]["phase"] = "Ignored";
  main["spec"]["color"] = "blue";
  absl::StatusOr<Json> upd = client_->Update(widgets, ns(), main);
  ASSERT_TRUE(upd.ok()) << upd.status();
  EXPECT_EQ(JsonString(*upd, "/status/phase"), "Ready");
  EXPECT_EQ(JsonString(*upd, "/spec/color"), "blue");
  absl::StatusOr<Json> scale = client_->GetScale(widgets, ns(), "w1");
  ASSERT_TRUE(scale.ok()) << scale.status();
  EXPECT_EQ(JsonInt(*scale, "/spec/replicas"), 1);
  (*scale)["spec"]["replicas"] = 3;
  ASSERT_TRUE(client_->UpdateScale(widgets, ns(), *scale).ok());
  EXPECT_EQ(JsonInt(*client_->Get(widgets, ns(), "w1"), "/spec/replicas"), 3);
  ASSERT_TRUE(client_->Delete(widgets, ns(), "w1").ok());
  EXPECT_TRUE(absl::IsNotFound(client_->Get(widgets, ns(), "w1").status()));
}

TEST_F(KubeE2eTest, ConflictsAreRetriedUntilEveryIncrementLands) {
  ASSERT_TRUE(client_->Create(kConfigMaps, ns(), ConfigMap(ns(), "counter", {{"n", "0"}})).ok());
  constexpr int kWriters = 4, kIncrements = 10;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&] {
      std::unique_ptr<Client> c = AdminClient();
      for (int i = 0; i < kIncrements; ++i) {
        absl::Status s = RetryOnConflict(&RealClock::Get(), [&]() -> absl::Status {
          absl::StatusOr<Json> cm = c->Get(kConfigMaps, ns(), "counter");
          if (!cm.ok()) return cm.status();
          (*cm)["data"]["n"] = std::to_string(std::stoi(JsonString(*cm, "/data/n")) + 1);
          absl::Status u = c->Update(kConfigMaps, ns(), *cm).status();
          if (IsConflict(u)) conflicts++;
          return u;
        }, 50);
        EXPECT_TRUE(s.ok()) << s;
      }
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(JsonString(*client_->Get(kConfigMaps, ns(), "counter"), "/data/n"),
            std::to_string(kWriters * kIncrements));
  std::printf("conflicts seen and retried: %d\n", conflicts.load());
  EXPECT_GT(conflicts.load(), 0) << "four writers on one object must collide at least once";
}

// Reads what the informer's store holds as name -> resourceVersion.
std::map<std::string, std::string> StoreState(Informer& inf) {
  std::map<std::string, std::string> m;
  for (const ObjectPtr& o : inf.store().List()) {
    m[ObjectKey(*o)] = JsonString(*o, "/metadata/resourceVersion");
  }
  return m;
}

std::map<std::string, std::string> FreshList(Client& c, const std::string& ns) {
  std::map<std::string, std::string> m;
  absl::StatusOr<Json> l = c.ListAll(kConfigMaps, ns, ListOptions());
  EXPECT_TRUE(l.ok()) << l.status();
  if (!l.ok()) return m;
  for (const Json& o : (*l)["items"]) m[ObjectKey(o)] = JsonString(o, "/metadata/resourceVersion");
  return m;
}

TEST_F(KubeE2eTest, InformerWatchOutlivesTheServersWatchTimeout) {
  InformerOptions o;
  o.ns = ns();
  o.min_watch_timeout = absl::Seconds(2);  // the server ends each watch after 2-4 s
  Informer inf(client_.get(), kConfigMaps, o);
  std::mutex mu;
  std::map<std::string, int> adds;
  inf.AddEventHandler({[&](const ObjectPtr& p) {
                         std::lock_guard<std::mutex> l(mu);
                         adds[ObjectKey(*p)]++;
                       },
                       nullptr, nullptr});
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(absl::Seconds(30)));
  // Create objects over ~12 s, across several server-side watch timeouts.
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(client_->Create(kConfigMaps, ns(), ConfigMap(ns(), absl::StrCat("w", i))).ok());
    absl::SleepFor(absl::Seconds(1));
  }
  ASSERT_TRUE(Eventually([&] { return StoreState(inf) == FreshList(*client_, ns()); }));
  EXPECT_GE(inf.Watches(), 3) << "the server closed watches and the informer re-watched";
  EXPECT_EQ(inf.Relists(), 0) << "a normal watch timeout never needs a relist";
  std::lock_guard<std::mutex> l(mu);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(adds[absl::StrCat(ns(), "/w", i)], 1) << "each object added exactly once";
  }
  inf.Stop();
}

TEST_F(KubeE2eTest, GoneIsRecoveredByRelistingToExactlyTheFreshList) {
  Resource widgets = EnsureWidgetCrd(*client_);
  // The state a restarted informer remembers: some objects, at resourceVersion 1, which
  // the API server no longer serves (410 "too old resource version").
  for (const char* n : {"keep", "change", "vanish"}) {
    absl::StatusOr<Json> c;
    ASSERT_TRUE(Eventually([&] {
      c = client_->Create(widgets, ns(), Widget(n, "old"));
      return c.ok();
    })) << c.status();
  }
  absl::StatusOr<Json> before = client_->ListAll(widgets, ns(), ListOptions());
  ASSERT_TRUE(before.ok());
  std::vector<Json> saved;
  for (const Json& o : (*before)["items"]) saved.push_back(o);
  ASSERT_EQ(saved.size(), 3u);
  // Meanwhile: one object changes, one vanishes, one is new.
  absl::StatusOr<Json> change = client_->Get(widgets, ns(), "change");
  (*change)["spec"]["color"] = "new";
  ASSERT_TRUE(client_->Update(widgets, ns(), *change).ok());
  ASSERT_TRUE(client_->Delete(widgets, ns(), "vanish").ok());
  ASSERT_TRUE(client_->Create(widgets, ns(), Widget("new", "new")).ok());

  InformerOptions o;
  o.ns = ns();
  Informer inf(client_.get(), widgets, o);
  std::mutex mu;
  std::vector<std::string> events;
  auto rec = [&](std::string s) {
    std::lock_guard<std::mutex> l(mu);
    events.push_back(std::move(s));
  };
  inf.AddEventHandler(
      {[&](const ObjectPtr& p) { rec("add " + JsonString(*p, "/metadata/name")); },
       [&](const ObjectPtr&, const ObjectPtr& p) { rec("update " + JsonString(*p, "/metadata/name")); },
       [&](const ObjectPtr& p) { rec("delete " + JsonString(*p, "/metadata/name")); }});
  inf.Resume(saved, "1");
  inf.Start();
  ASSERT_TRUE(Eventually([&] { return inf.Relists() >= 1; })) << "no 410 for resourceVersion 1";
  auto fresh = [&] {
    std::map<std::string, std::string> m;
    absl::StatusOr<Json> l = client_->ListAll(widgets, ns(), ListOptions());
    if (l.ok()) {
      for (const Json& x : (*l)["items"]) m[ObjectKey(x)] = JsonString(x, "/metadata/resourceVersion");
    }
    return m;
  };
  ASSERT_TRUE(Eventually([&] { return StoreState(inf) == fresh(); }));
  inf.Stop();
  std::lock_guard<std::mutex> l(mu);
  std::multiset<std::string> after_resume(events.begin() + saved.size(), events.end());
  EXPECT_EQ(after_resume,
            (std::multiset<std::string>{"delete vanish", "update change", "add new"}))
      << "exactly the differences, each once";
  EXPECT_EQ(inf.Relists(), 1);
}

TEST_F(KubeE2eTest, TwoProcessesElectOneLeaderAndTheOtherTakesOverAfterSigkill) {
  const char* helper = std::getenv("BOOSTER_KUBE_LEADER_HELPER");
  ASSERT_NE(helper, nullptr);
  struct Proc {
    pid_t pid = -1;
    FILE* out = nullptr;
  };
  auto spawn = [&](const std::string& id) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    Proc p;
    p.pid = fork();
    if (p.pid == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      close(fds[1]);
      execl(helper, helper, ns().c_str(), "e2e-leader", id.c_str(), nullptr);
      _exit(127);
    }
    close(fds[1]);
    p.out = fdopen(fds[0], "r");
    return p;
  };
  auto holder = [&]() -> std::string {
    absl::StatusOr<Json> l = client_->Get(kLeases, ns(), "e2e-leader");
    return l.ok() ? JsonString(*l, "/spec/holderIdentity") : "";
  };
  Proc a = spawn("cand-a");
  ASSERT_TRUE(Eventually([&] { return holder() == "cand-a"; }, absl::Seconds(30)));
  Proc b = spawn("cand-b");
  // b campaigns but must not take a live lease.
  absl::SleepFor(absl::Seconds(5));  // negative check over two renew periods
  EXPECT_EQ(holder(), "cand-a");
  char line[256];
  ASSERT_NE(fgets(line, sizeof line, a.out), nullptr);
  EXPECT_EQ(std::string(line), "LEADING cand-a\n");

  const absl::Time killed = absl::Now();
  ASSERT_EQ(kill(a.pid, SIGKILL), 0);
  waitpid(a.pid, nullptr, 0);
  ASSERT_NE(fgets(line, sizeof line, b.out), nullptr) << "b never led";
  const absl::Duration takeover = absl::Now() - killed;
  EXPECT_EQ(std::string(line), "LEADING cand-b\n");
  EXPECT_EQ(holder(), "cand-b");
  std::printf("leader takeover after SIGKILL: %.1f s (lease 15 s, retry 2 s)\n",
              absl::ToDoubleSeconds(takeover));
  // The lease runs 15 s from a's last renewal, which b observes up to one retry period
  // (2 s) late, and b polls every 2 s.
  EXPECT_LE(takeover, absl::Seconds(15 + 2 + 1));
  // Graceful shutdown releases the lease.
  ASSERT_EQ(kill(b.pid, SIGTERM), 0);
  int status = 0;
  waitpid(b.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(holder(), "") << "released on SIGTERM";
  fclose(a.out);
  fclose(b.out);
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kube_e2e.XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteAtomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << content;
  fs::rename(tmp, path);
}

TEST_F(KubeE2eTest, RotatedTokenFileIsPickedUpByARunningClient) {
  ASSERT_TRUE(e2e::Apply(absl::StrCat(R"(
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: )", ns(), R"(}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-reader, namespace: )", ns(), R"(}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: )", ns(), R"(}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
subjects:
- {kind: ServiceAccount, name: reader, namespace: )", ns(), R"(}
)")).ok());
  // Tokens bound to a Secret die with it, which lets the test revoke the old token.
  auto token_bound_to = [&](const std::string& secret) -> std::string {
    absl::StatusOr<Json> sec = client_->Create(
        Resource{"", "v1", "secrets", true}, ns(),
        {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", secret}}}});
    EXPECT_TRUE(sec.ok()) << sec.status();
    Json req = {{"apiVersion", "authentication.k8s.io/v1"},
                {"kind", "TokenRequest"},
                {"spec",
                 {{"expirationSeconds", 600},
                  {"boundObjectRef",
                   {{"apiVersion", "v1"},
                    {"kind", "Secret"},
                    {"name", secret},
                    {"uid", JsonString(*sec, "/metadata/uid")}}}}}};
    absl::StatusOr<std::string> resp = client_->Do(
        "POST", ResourcePath(Resource{"", "v1", "serviceaccounts", true}, ns(), "reader", "token"),
        req.dump());
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? JsonString(*ParseJson(*resp), "/status/token") : "";
  };
  const std::string first = token_bound_to("bind-1");
  ASSERT_FALSE(first.empty());
  TempDir dir;
  const std::string token_file = dir.path() + "/token";
  WriteAtomically(token_file, first);

  Config admin = AdminConfig();
  Config sa;
  sa.server = admin.server;
  sa.ca_pem = admin.ca_pem;
  sa.token_file = token_file;
  sa.token_refresh = absl::Seconds(1);  // the production default is one minute
  absl::StatusOr<std::unique_ptr<Client>> c = NewClient(sa);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE((*c)->Get(kConfigMaps, ns(), "kube-root-ca.crt").ok());

  // Rotate: new token in the file, old token revoked.
  const std::string second = token_bound_to("bind-2");
  WriteAtomically(token_file, second);
  ASSERT_TRUE(client_->Delete(Resource{"", "v1", "secrets", true}, ns(), "bind-1").ok());
  Config old_only = sa;
  old_only.token_file.clear();
  old_only.token = first;
  auto stale = NewClient(old_only);
  ASSERT_TRUE(stale.ok());
  ASSERT_TRUE(Eventually([&] {
    return absl::IsUnauthenticated((*stale)->Get(kConfigMaps, ns(), "kube-root-ca.crt").status());
  })) << "the old token must stop working for this test to mean anything";
  absl::SleepFor(absl::Milliseconds(1100));  // past the 1 s refresh period
  absl::Status s = (*c)->Get(kConfigMaps, ns(), "kube-root-ca.crt").status();
  EXPECT_TRUE(s.ok()) << "the running client re-read the rotated token: " << s;
  EXPECT_TRUE(absl::IsPermissionDenied((*c)->Get(kPods, ns(), "none").status()))
      << "and it really is the service account speaking";
}

TEST_F(KubeE2eTest, WrongCaFailsClearly) {
  TempDir dir;
  absl::StatusOr<std::string> out = e2e::RunCommand(
      {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
       dir.path() + "/key.pem", "-out", dir.path() + "/ca.pem", "-subj", "/CN=not-the-cluster-ca",
       "-days", "1"});
  ASSERT_TRUE(out.ok()) << out.status();
  Config c = AdminConfig();
  c.ca_pem = *ReadFileToString(dir.path() + "/ca.pem");
  absl::StatusOr<std::unique_ptr<Client>> client = NewClient(c);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::Status s = (*client)->Get(kConfigMaps, ns(), "kube-root-ca.crt").status();
  std::printf("wrong CA -> %s\n", s.ToString().c_str());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "TLS verification")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), c.server)) << s;
  // Without any CA (system roots only) the cluster's self-signed CA is not trusted either.
  Config no_ca = AdminConfig();
  no_ca.ca_pem.clear();
  absl::StatusOr<std::unique_ptr<Client>> client2 = NewClient(no_ca);
  ASSERT_TRUE(client2.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*client2)->Get(kConfigMaps, ns(), "x").status()));
  // Watches fail the same way.
  EXPECT_TRUE(absl::IsFailedPrecondition((*client)->Watch(kConfigMaps, ns(), {}).status()));
}

}  // namespace
}  // namespace booster::kube
