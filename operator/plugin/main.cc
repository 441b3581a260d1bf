// kubectl-booster: the kubectl plugin of Booster (docs/plugin.md). On the PATH, `kubectl
// booster VERB` runs it; it can also be run by itself.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "operator/kube/cpprest_transport.h"
#include "operator/plugin/plugin.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return booster::plugin::RunPlugin(
      args, std::cout, std::cerr,
      [](const booster::kube::Config& config) { return booster::kube::NewClient(config); },
      [](const char* name) -> std::string {
        const char* v = std::getenv(name);
        return v == nullptr ? "" : v;
      });
}
