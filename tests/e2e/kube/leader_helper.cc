// A tiny leader-election candidate for the e2e test: campaigns for a Lease and prints
// "LEADING <identity>" once it leads, then renews until killed or SIGTERM (which releases).
//   kube_leader_e2e_helper <namespace> <lease-name> <identity>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "operator/kube/config.h"
#include "operator/kube/cpprest_transport.h"
#include "operator/kube/leader_election.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <namespace> <lease> <identity>\n", argv[0]);
    return 2;
  }
  // SIGTERM is taken by a thread (sigwait) so that Stop() never runs in a signal handler.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  auto config = booster::kube::LoadDefaultConfig();
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  auto client = booster::kube::NewClient(*config);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  booster::kube::LeaderElectionConfig lec;
  lec.ns = argv[1];
  lec.name = argv[2];
  lec.identity = argv[3];
  booster::kube::LeaderElector elector(client->get(), lec);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&term, &sig);
    elector.Stop();
  });
  waiter.detach();
  elector.Run(
      [&] {
        std::printf("LEADING %s\n", argv[3]);
        std::fflush(stdout);
      },
      [&] {
        std::printf("STOPPED %s\n", argv[3]);
        std::fflush(stdout);
      });
  return 0;
}
