// informer-bench (C++): the operator/kube side of bench/informer. Two modes:
//   informer_bench watch --namespace bench --selector app=informer-bench --pods N --rounds R
//     A Pod informer (managedFields dropped); prints a JSON line after the initial sync
//     (time, resident memory) and after R churn rounds (events handled per second).
//   informer_bench create --namespace bench --pods N --node bench-kwok
//     Creates N pods bound to the kwok node.
//   informer_bench churn --namespace bench --selector app=informer-bench --rounds R --tag T
//     The churn driver: R rounds of a merge patch of annotation bench/round=T-<round> on
//     every pod.
// Both talk to the cluster of $KUBECONFIG.
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "operator/kube/config.h"
#include "operator/kube/cpprest_transport.h"
#include "operator/kube/informer.h"

namespace {

using booster::kube::Json;

long RssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

std::map<std::string, std::string> Flags(int argc, char** argv) {
  std::map<std::string, std::string> f = {{"namespace", "bench"},
                                          {"selector", "app=informer-bench"},
                                          {"pods", "1000"},
                                          {"rounds", "3"},
                                          {"threads", "8"},
                                          {"node", "bench-kwok"},
                                          {"tag", "run"}};
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) == 0) f[k.substr(2)] = argv[i + 1];
  }
  return f;
}

std::unique_ptr<booster::kube::Client> NewClient(double qps, int burst) {
  auto config = booster::kube::LoadDefaultConfig();
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    std::exit(1);
  }
  config->qps = qps;
  config->burst = burst;
  auto client = booster::kube::NewClient(*config);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(client);
}

int Watch(std::map<std::string, std::string> f) {
  auto client = NewClient(20, 30);  // same as client-go's side of the benchmark
  // The baseline is taken with the client warm (connection, TLS, threads up), as on the
  // client-go side, so that the per-pod figure is the cache's and not the client's.
  if (auto ns = client->Get(booster::kube::kNamespaces, "", f["namespace"]); !ns.ok()) {
    std::fprintf(stderr, "%s\n", ns.status().ToString().c_str());
    return 1;
  }
  const long rss_before = RssKb();
  const int pods = std::stoi(f["pods"]);
  const int rounds = std::stoi(f["rounds"]);
  booster::kube::InformerOptions o;
  o.ns = f["namespace"];
  o.label_selector = f["selector"];
  booster::kube::Informer inf(client.get(), booster::kube::kPods, o);
  std::mutex mu;
  std::condition_variable cv;
  int seen = 0;
  std::chrono::steady_clock::time_point first, last;
  const int want = pods * rounds;
  // Counts the updates that changed the driver's annotation (not kwok's status writes,
  // which also reach the handler).
  auto round_of = [](const booster::kube::Json& pod) {
    return booster::kube::JsonString(pod, "/metadata/annotations/bench~1round");
  };
  inf.AddEventHandler({nullptr,
                       [&](const booster::kube::ObjectPtr& old, const booster::kube::ObjectPtr& n) {
                         std::string round = round_of(*n);
                         if (round.empty() || round == round_of(*old)) return;
                         std::lock_guard<std::mutex> l(mu);
                         auto now = std::chrono::steady_clock::now();
                         if (seen == 0) first = now;
                         last = now;
                         if (++seen == want) cv.notify_all();
                       },
                       nullptr});
  auto start = std::chrono::steady_clock::now();
  inf.Start();
  if (!inf.WaitForSync(absl::Minutes(10))) {
    std::fprintf(stderr, "sync failed\n");
    return 1;
  }
  const double sync_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const size_t n = inf.store().Size();
  if (std::getenv("INFORMER_BENCH_MALLOC_STATS") != nullptr) {
    malloc_stats();
    std::fprintf(stderr, "rss %ld kB; after malloc_trim(0):\n", RssKb());
    malloc_trim(0);
    malloc_stats();
    std::fprintf(stderr, "rss %ld kB\n", RssKb());
  }
  const long rss = RssKb();
  // Where the resident memory is: malloc's live bytes (arena + mmapped chunks), the bytes
  // it holds free, and the cache's own compact objects.
  const struct mallinfo2 mi = mallinfo2();
  std::printf(
      "%s\n",
      Json{{"impl", "cpp"}, {"phase", "synced"}, {"pods", n}, {"sync_s", sync_s},
           {"rss_before_kb", rss_before}, {"rss_kb", rss},
           {"rss_per_pod_kb", static_cast<double>(rss - rss_before) / std::max<size_t>(n, 1)},
           {"heap_inuse_kb", (mi.uordblks + mi.hblkhd) / 1024},
           {"heap_free_kb", mi.fordblks / 1024},
           {"cache_kb", inf.store().CompactBytes() / 1024}}
          .dump()
          .c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "READY\n");
  if (rounds == 0) {  // a sync-only run
    inf.Stop();
    return 0;
  }
  std::unique_lock<std::mutex> l(mu);
  cv.wait_for(l, std::chrono::minutes(10), [&] { return seen >= want; });
  const double d = std::chrono::duration<double>(last - first).count();
  std::printf("%s\n", Json{{"impl", "cpp"}, {"phase", "churn"}, {"events", seen},
                           {"events_per_s", seen / d}, {"rss_kb", RssKb()}}
                          .dump()
                          .c_str());
  std::fflush(stdout);
  l.unlock();
  inf.Stop();
  return 0;
}

int Churn(std::map<std::string, std::string> f) {
  auto client = NewClient(0, 1);  // the driver is not rate limited
  booster::kube::ListOptions lo;
  lo.label_selector = f["selector"];
  lo.limit = 500;
  auto list = client->ListAll(booster::kube::kPods, f["namespace"], lo);
  if (!list.ok()) {
    std::fprintf(stderr, "%s\n", list.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> names;
  for (const Json& p : (*list)["items"]) names.push_back(booster::kube::JsonString(p, "/metadata/name"));
  const int rounds = std::stoi(f["rounds"]);
  const int threads = std::stoi(f["threads"]);
  std::atomic<int> errors{0};
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::thread> ts;
    std::atomic<size_t> next{0};
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&] {
        for (size_t i = next++; i < names.size(); i = next++) {
          // The value names the run, so that a second watcher's churn is not a no-op patch
          // of the value the first one's left behind (no-op patches make no events).
          Json patch = {{"metadata",
                         {{"annotations", {{"bench/round", absl::StrCat(f["tag"], "-", r)}}}}}};
          auto s = client->Patch(booster::kube::kPods, f["namespace"], names[i],
                                 booster::kube::PatchType::kMerge, patch);
          if (!s.ok()) errors++;
        }
      });
    }
    for (auto& t : ts) t.join();
  }
  const double d = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s\n", Json{{"impl", "driver"}, {"phase", "churn"}, {"writes", names.size() * rounds},
                           {"writes_per_s", names.size() * rounds / d}, {"errors", errors.load()}}
                          .dump()
                          .c_str());
  return errors.load() == 0 ? 0 : 1;
}

// Creates pods bench-0..bench-(N-1) bound to a kwok node (no scheduler involved).
int Create(std::map<std::string, std::string> f) {
  auto client = NewClient(0, 1);
  const int pods = std::stoi(f["pods"]);
  const int threads = std::stoi(f["threads"]);
  std::atomic<int> next{0}, errors{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      for (int i = next++; i < pods; i = next++) {
        Json pod = {
            {"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", absl::StrCat("bench-", i)},
              {"labels", {{"app", "informer-bench"}, {"shard", std::to_string(i % 16)}}}}},
            {"spec",
             {{"nodeName", f["node"]},
              {"tolerations", Json::array({{{"key", "kwok.x-k8s.io/node"},
                                            {"operator", "Exists"},
                                            {"effect", "NoSchedule"}}})},
              {"containers",
               Json::array({{{"name", "app"},
                             {"image", "booster.local/fake:bench"},
                             {"resources", {{"requests", {{"cpu", "1m"}, {"memory", "1Mi"}}}}},
                             {"env", Json::array({{{"name", "POD_INDEX"},
                                                   {"value", std::to_string(i)}}})}}})}}}};
        auto s = client->Create(booster::kube::kPods, f["namespace"], pod);
        if (!s.ok() && !absl::IsAlreadyExists(s.status())) {
          if (errors++ < 5) std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  return errors.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s watch|churn [--namespace NS] [--selector S] [--pods N] "
                 "[--rounds R] [--threads T]\n", argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  if (mode == "watch") return Watch(Flags(argc, argv));
  if (mode == "churn") return Churn(Flags(argc, argv));
  if (mode == "create") return Create(Flags(argc, argv));
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
