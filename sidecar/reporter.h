// Reporting: what the agent tells the operator — Hello at start, Applied after every
// directive (and after start-up recovery / shutdown revert), one Report per window.
// Until the gRPC stream lands, JsonLinesReporter writes one JSON object per line to a
// file (or stdout); the Reporter interface is the seam the stream will plug into.
#ifndef BOOSTER_SIDECAR_REPORTER_H_
#define BOOSTER_SIDECAR_REPORTER_H_

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sidecar/planner.h"
#include "sidecar/sampler.h"
#include "sidecar/topology.h"

namespace booster::agent {

struct HelloInfo {
  std::string pod;
  std::string arm;
  std::string agent_version;
  std::string topology_summary;  // "2 CPUs, 2 cores, 1 NUMA node"
};

struct AppliedStatus {
  int64_t generation = 0;
  std::string arm;
  std::string action;  // apply, rollback, observe, recover, shutdown
  bool ok = true;
  std::vector<std::string> applied;  // human-readable, one per change
  std::vector<std::string> failed;   // why, one per failure
  std::vector<int> target_pids;
  std::optional<Plan> plan;
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void Hello(const HelloInfo& info) = 0;
  virtual void Applied(const AppliedStatus& status) = 0;
  virtual void Report(const WindowReport& report, const std::string& pod,
                      const std::string& arm) = 0;
};

// JSON renderings, shared by the file reporter and tests.
std::string HelloJson(const HelloInfo& info);
std::string AppliedJson(const AppliedStatus& status);
std::string ReportJson(const WindowReport& report, const std::string& pod, const std::string& arm);

class JsonLinesReporter : public Reporter {
 public:
  // "-" writes to stdout.
  static absl::StatusOr<std::unique_ptr<JsonLinesReporter>> Open(const std::string& path);
  ~JsonLinesReporter() override;
  void Hello(const HelloInfo& info) override { Write(HelloJson(info)); }
  void Applied(const AppliedStatus& s) override { Write(AppliedJson(s)); }
  void Report(const WindowReport& r, const std::string& pod, const std::string& arm) override {
    Write(ReportJson(r, pod, arm));
  }

 private:
  explicit JsonLinesReporter(FILE* f, bool owned) : file_(f), owned_(owned) {}
  void Write(const std::string& line);
  absl::Mutex mu_;
  FILE* file_;
  bool owned_;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_REPORTER_H_
