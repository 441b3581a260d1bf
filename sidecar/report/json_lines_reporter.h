// The Reporter of `booster-agent run` without an operator (and beside one, with
// --report-file): one JSON object per line — `hello`, `applied`, `report` — to a file or to
// stdout, so `kubectl logs -c booster-agent` shows them. Keys keep the order written
// (base/json_line.h); docs/agent.md lists the fields.
//
//   absl::StatusOr<std::unique_ptr<JsonLinesReporter>> r = JsonLinesReporter::Open("-");
//   (*r)->Report(record);   // {"type":"report","namespace":"shop",...}
#ifndef BOOSTER_SIDECAR_REPORT_JSON_LINES_REPORTER_H_
#define BOOSTER_SIDECAR_REPORT_JSON_LINES_REPORTER_H_

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sidecar/report/reporter.h"

namespace booster::agent {

// JSON renderings, shared by the file reporter and tests.
std::string HelloJson(const HelloInfo& info);
std::string AppliedJson(const AppliedStatus& status);
std::string ReportJson(const WindowRecord& record);

class JsonLinesReporter : public Reporter {
 public:
  // "-" writes to stdout.
  static absl::StatusOr<std::unique_ptr<JsonLinesReporter>> Open(const std::string& path);
  ~JsonLinesReporter() override;
  void Hello(const HelloInfo& info) override { Write(HelloJson(info)); }
  void Applied(const AppliedStatus& s) override { Write(AppliedJson(s)); }
  void Report(const WindowRecord& r) override { Write(ReportJson(r)); }

 private:
  explicit JsonLinesReporter(FILE* f, bool owned) : file_(f), owned_(owned) {}
  void Write(const std::string& line);
  absl::Mutex mu_;
  FILE* file_;
  bool owned_;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_REPORT_JSON_LINES_REPORTER_H_
