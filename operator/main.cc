// booster-operator: the BoosterProfile controller process (docs/operator.md). Parses the
// flags, blocks SIGTERM/SIGINT and turns the first one into a stop request; the parts
// and their start/stop order are OperatorProcess's (operator/controller/process.h).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "operator/controller/log.h"
#include "operator/controller/options.h"
#include "operator/controller/process.h"

namespace booster::controller {
namespace {

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
  sigaddset(&signals, SIGUSR1);  // sent to ourselves to end the signal thread
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Log(Level::kInfo, "starting",
      {{"identity", opt.identity},
       {"namespace", opt.ns.empty() ? "(all)" : opt.ns},
       {"leaderElect", opt.leader_elect ? "true" : "false"},
       {"workers", absl::StrCat(opt.workers)},
       {"agentImage", opt.agent_image}});

  absl::StatusOr<std::unique_ptr<kube::Client>> client = OperatorProcess::NewClient(opt);
  if (!client.ok()) {
    Log(Level::kError, "cannot create the Kubernetes client", {{"error", client.status().ToString()}});
    return 1;
  }
  absl::StatusOr<std::unique_ptr<OperatorProcess>> process =
      OperatorProcess::Create(opt, *std::move(client));
  if (!process.ok()) {
    Log(Level::kError, "cannot start", {{"error", process.status().ToString()}});
    return 1;
  }

  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGUSR1) return;  // Run ended by itself (the Lease was lost)
    (*process)->RequestStop(sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : absl::StrCat(sig));
  });
  const int exit_code = (*process)->Run();
  pthread_kill(signal_thread.native_handle(), SIGUSR1);  // harmless if it already returned
  signal_thread.join();
  process->reset();
  Log(Level::kInfo, "stopped", {{"exitCode", absl::StrCat(exit_code)}});
  return exit_code;
}

}  // namespace
}  // namespace booster::controller

int main(int argc, char** argv) { return booster::controller::Run(argc, argv); }
