#include "sidecar/loop/directive_from_tuning.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace booster::agent {

absl::StatusOr<std::optional<Directive>> DirectiveFromTuning(absl::string_view tuning_json,
                                                             const std::string& arm) {
  using Json = nlohmann::json;
  Json t = Json::parse(tuning_json, nullptr, /*allow_exceptions=*/false);
  if (t.is_discarded() || !t.is_object()) {
    return absl::InvalidArgumentError("not a JSON object");
  }
  auto text = [](const Json& j, const char* key) -> std::string {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : "";
  };
  const Json cpu = t.value("cpu", Json::object());
  const std::string placement = cpu.is_object() ? text(cpu, "placement") : "";
  const std::string numa = cpu.is_object() ? text(cpu, "numa") : "";
  const bool place = !placement.empty() && placement != "none";
  const bool memory = !numa.empty() && numa != "none";

  std::vector<std::pair<std::string, std::string>> settings;
  if (place) settings.emplace_back("placement", placement);
  if (memory) settings.emplace_back("numa", numa);
  if (place) {
    settings.emplace_back("runtime.thread_placement", placement == "pinned" ? "pin" : "confine");
  }
  if (memory) {
    settings.emplace_back("runtime.numa_mempolicy", numa == "bind" ? "bind" : "preferred");
  }
  Json preload = Json::object();
  if (auto rt = t.find("runtime"); rt != t.end() && rt->is_object()) {
    preload = rt->value("preload", Json::object());
  }
  if (!preload.is_object()) preload = Json::object();
  auto number = [&](const char* field, const char* key) {
    auto it = preload.find(field);
    if (it != preload.end() && it->is_number_integer()) {
      settings.emplace_back(key, absl::StrCat(it->get<int64_t>()));
    }
  };
  auto flag = [&](const char* field, const char* key) {
    auto it = preload.find(field);
    if (it != preload.end() && it->is_boolean() && it->get<bool>())
      settings.emplace_back(key, "true");
  };
  number("listenBacklog", "runtime.listen_backlog");
  flag("tcpNoDelay", "runtime.tcp_nodelay");
  flag("tcpQuickAck", "runtime.tcp_quickack");
  number("busyPollMicros", "runtime.busy_poll_us");
  number("receiveBufferBytes", "runtime.rcvbuf_bytes");
  number("sendBufferBytes", "runtime.sndbuf_bytes");
  flag("coarseClocks", "runtime.coarse_clock");
  // Nothing the agent applies or can report on: no directive.
  if (settings.empty()) return std::optional<Directive>();

  Directive d;
  booster_control_init(&d.page);
  d.generation = 0;
  d.action = Directive::Action::kApply;
  d.arm = arm;
  for (const auto& [key, value] : settings) {
    if (absl::Status s = SetDirectiveSetting(key, value, &d); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(key, "=\"", value, "\": ", s.message()));
    }
  }
  return std::optional<Directive>(std::move(d));
}

}  // namespace booster::agent
