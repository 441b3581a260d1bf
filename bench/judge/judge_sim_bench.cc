// bench/judge sim: the judge's Monte Carlo tables over many more rollouts than the test
// command can afford (docs/analysis.md, "Measured"; docs/benchmarks.md, "Judge: onsets").
// Synthetic rollouts from operator/analysis/testing/rollout_sim.h: pods with persistent
// offsets, AR(1) windows, a shock every pod shares, pods replaced mid-step, a regression
// from a chosen time on. Prints one JSON line per row.
//
//   judge_sim_bench aa     [--rollouts=10000] [--seed=1]   A/A false fails and promotions
//   judge_sim_bench power  [--rollouts=10000] [--seed=1]   +20% and 2x from the start
//   judge_sim_bench onset  [--rollouts=2000]  [--seed=1]   A/A, then 2x / +20% at 0, 2, 5,
//                                                          10 min into one 15-minute step
//   judge_sim_bench levels [--rollouts=1000] [--seed=1]    the level test's budget over every
//                                                          look vs over the level looks:
//                                                          A/A, 2x and +20% early in a
//                                                          15-minute step
//   judge_sim_bench histogram [--rollouts=1000] [--seed=1] A/A, +20% and 2x with windows of
//                                                          400 requests and their histograms,
//                                                          against the windows' p99s alone
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/analysis/judge.h"
#include "operator/analysis/testing/rollout_sim.h"

namespace booster::bench {
namespace {

using analysis::JudgeOptions;
using analysis::testing::PodModel;
using analysis::testing::Quantile;
using analysis::testing::Regression;
using analysis::testing::SimOutcome;
using analysis::testing::SimShape;
using analysis::testing::SimulateRollouts;

rollout::AnalysisSpec Spec(double margin) {
  return analysis::testing::SimulationSpec({{"latencyP99", margin}, {"throughput", margin}});
}

// The onset rows' rollout: one 15-minute step of 5 s intervals, no extension, one pod per
// arm, p99 and throughput within 10%.
rollout::AnalysisSpec OneLongStepSpec() {
  rollout::AnalysisSpec spec = Spec(10);
  spec.max_extensions = 0;
  return spec;
}

SimShape OneLongStep() {
  SimShape shape;
  shape.steps = 1;
  shape.intervals_per_step = 180;
  return shape;
}

void Print(nlohmann::ordered_json row, const SimOutcome& o) {
  row["rollouts"] = o.rollouts;
  row["failed"] = o.FailedRate();
  row["rolled_back"] = o.RolledBackRate();
  row["promoted"] = static_cast<double>(o.promoted) / o.rollouts;
  if (!o.detection_seconds.empty()) {
    row["detect_p50_s"] = Quantile(o.detection_seconds, 0.5);
    row["detect_p95_s"] = Quantile(o.detection_seconds, 0.95);
    row["detect_max_s"] = Quantile(o.detection_seconds, 1.0);
    int within60 = 0, within120 = 0;
    for (double t : o.detection_seconds) {
      within60 += t <= 60;
      within120 += t <= 120;
    }
    row["within_60s"] = static_cast<double>(within60) / o.rollouts;
    row["within_120s"] = static_cast<double>(within120) / o.rollouts;
  }
  std::printf("%s\n", row.dump().c_str());
  std::fflush(stdout);
}

int Run(const std::string& mode, int rollouts, uint64_t seed) {
  if (mode == "aa") {
    for (double pod_sd : {0.03, 0.10}) {
      for (double rho : {0.3, 0.5, 0.7}) {
        for (int pods : {1, 3}) {
          for (double margin : {10.0, 20.0}) {
            PodModel model;
            model.pod_sd = pod_sd;
            model.rho = rho;
            model.churn = pods > 1 ? 1.0 / 36 : 0;
            SimShape shape;
            shape.baseline_pods = pods;
            shape.canary_pods = pods;
            Print({{"row", "aa"}, {"pod_sd", pod_sd}, {"rho", rho}, {"pods", pods},
                   {"margin", margin}, {"churn", model.churn}},
                  SimulateRollouts(Spec(margin), shape, model, Regression(), rollouts, seed++));
          }
        }
      }
    }
    return 0;
  }
  if (mode == "power") {
    for (double factor : {1.2, 2.0}) {
      for (double pod_sd : {0.03, 0.10}) {
        for (int pods : {1, 3}) {
          PodModel model;
          model.pod_sd = pod_sd;
          SimShape shape;
          shape.baseline_pods = pods;
          shape.canary_pods = pods;
          Print({{"row", "power"}, {"factor", factor}, {"pod_sd", pod_sd}, {"pods", pods},
                 {"margin", 10}},
                SimulateRollouts(Spec(10), shape, model, Regression{factor, 0, absl::ZeroDuration()},
                                 rollouts, seed++));
        }
      }
    }
    return 0;
  }
  if (mode == "onset") {
    // One 15-minute step (180 intervals of 5 s, no extension), one pod per arm: first the
    // A/A row (no regression), then each regression from 0, 2, 5 and 10 minutes in.
    const rollout::AnalysisSpec spec = OneLongStepSpec();
    const SimShape shape = OneLongStep();
    for (double factor : {1.0, 2.0, 1.2}) {
      for (int minute : {0, 2, 5, 10}) {
        if (factor == 1.0 && minute > 0) continue;
        Print({{"row", "onset"}, {"factor", factor}, {"onset_min", minute}, {"pods", 1},
               {"step_min", 15}},
              SimulateRollouts(spec, shape, PodModel(),
                               Regression{factor, 0, absl::Minutes(minute)}, rollouts, seed++));
      }
    }
    return 0;
  }
  if (mode == "levels") {
    // The onset rows' step (15 minutes of 5 s intervals, one pod per arm, margin 10%) with
    // the level test's budget over every look (the earlier rule) and over the level looks
    // (IsLevelLook), on the same seeds: A/A, 2x from 0, 1 and 2 minutes in, +20% from the
    // start; the windows' values alone, and windows of 400 requests with their histograms
    // (what the agents send).
    const rollout::AnalysisSpec spec = OneLongStepSpec();
    const SimShape shape = OneLongStep();
    for (int requests : {0, 400}) {
      PodModel model;
      model.histogram_requests = requests;
      for (double factor : {1.0, 2.0, 1.2}) {
        for (int minute : {0, 1, 2}) {
          if (factor != 2.0 && minute > 0) continue;
          for (bool levels : {false, true}) {
            JudgeOptions options;
            options.level_looks = levels;
            Print({{"row", "levels"}, {"factor", factor}, {"onset_min", minute}, {"pods", 1},
                   {"step_min", 15}, {"requests", requests}, {"level_looks", levels}},
                  SimulateRollouts(spec, shape, model,
                                   Regression{factor, 0, absl::Minutes(minute)}, rollouts, seed,
                                   options));
          }
          ++seed;
        }
      }
    }
    return 0;
  }
  if (mode == "histogram") {
    // 2+2 pods, 3 steps of 2 minutes with one extension, p99 and throughput within 20%
    // (A/A) or 10% (regressions); each window 400 requests (lognormal, SD 0.8 on the log
    // scale). The same rollouts judged from the windows' own p99s (no histogram) and from
    // the merged histograms.
    for (double factor : {1.0, 1.2, 2.0}) {
      const double margin = factor == 1.0 ? 20 : 10;
      for (double pod_sd : {0.03, 0.10}) {
        for (bool histograms : {false, true}) {
          PodModel model;
          model.pod_sd = pod_sd;
          model.histogram_requests = 400;
          SimShape shape;
          shape.baseline_pods = 2;
          shape.canary_pods = 2;
          JudgeOptions options;
          options.merge_histograms = histograms;
          Print({{"row", "histogram"}, {"factor", factor}, {"pod_sd", pod_sd}, {"pods", 2},
                 {"margin", margin}, {"requests", 400}, {"histograms", histograms}},
                SimulateRollouts(Spec(margin), shape, model,
                                 Regression{factor, 0, absl::ZeroDuration()},
                                 rollouts, seed, options));
        }
        ++seed;
      }
    }
    return 0;
  }
  std::fprintf(stderr, "usage: judge_sim_bench aa|power|onset|levels|histogram [--rollouts=N] [--seed=S]\n");
  return 2;
}

}  // namespace
}  // namespace booster::bench

int main(int argc, char** argv) {
  if (argc < 2) return booster::bench::Run("", 0, 0);
  const std::string mode = argv[1];
  int rollouts = mode == "onset" ? 2000 : mode == "histogram" || mode == "levels" ? 1000 : 10000;
  uint64_t seed = 1;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (absl::StartsWith(arg, "--rollouts=") && absl::SimpleAtoi(arg.substr(11), &rollouts) &&
        rollouts > 0) {
      continue;
    }
    if (absl::StartsWith(arg, "--seed=") && absl::SimpleAtoi(arg.substr(7), &seed)) continue;
    std::fprintf(stderr, "judge_sim_bench: bad argument %s\n", arg.c_str());
    return 2;
  }
  return booster::bench::Run(mode, rollouts, seed);
}
