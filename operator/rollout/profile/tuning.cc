// spec.tuning's parser and its canonical JSON (tuning.h).
#include "operator/rollout/profile/tuning.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "operator/rollout/profile/json_fields.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/spec_fields.h"
#include "operator/rollout/profile/sysctl.h"

namespace booster::rollout {
namespace profile_internal {
namespace {

bool IsGoMemLimit(absl::string_view s) {
  if (s == "auto") return true;
  if (!s.empty() && s.back() == '%') {
    int v;
    return absl::SimpleAtoi(s.substr(0, s.size() - 1), &v) && v >= 1 && v <= 100 &&
           s.substr(0, s.size() - 1) == absl::StrCat(v);
  }
  size_t digits = 0;
  while (digits < s.size() && absl::ascii_isdigit(s[digits])) ++digits;
  if (digits == 0 || s[0] == '0') return false;
  absl::string_view unit = s.substr(digits);
  return unit.empty() || unit == "B" || unit == "KiB" || unit == "MiB" || unit == "GiB" ||
         unit == "TiB";
}

}  // namespace

void ParseTuning(const Json& j, Tuning& out, SpecErrors& errors) {
  const std::string p = "spec.tuning";
  if (!CheckObject(j, p, {"cpu", "sysctls", "runtime"}, errors)) return;
  if (const Json* cpu = Field(j, "cpu")) {
    const std::string cp = FieldPath(p, "cpu");
    if (CheckObject(*cpu, cp, {"placement", "numa"}, errors)) {
      if (auto v =
              GetEnum(*cpu, "placement", cp, {"none", "spread", "whole-cores", "pinned"}, errors)) {
        out.placement = static_cast<CpuPlacement>(*v);
      }
      if (auto v = GetEnum(*cpu, "numa", cp, {"none", "preferred", "align", "bind"}, errors)) {
        out.numa = static_cast<NumaPolicy>(*v);
      }
      if ((out.numa == NumaPolicy::kAlign || out.numa == NumaPolicy::kBind) &&
          out.placement == CpuPlacement::kNone) {
        errors.Add(FieldPath(cp, "numa"),
                   absl::StrCat(NumaName(out.numa),
                                " needs a CPU placement to know which node's CPUs to use; set "
                                "spec.tuning.cpu.placement to spread, whole-cores or pinned, or "
                                "use numa: preferred"));
      }
    }
  }
  if (const Json* s = Field(j, "sysctls")) {
    const std::string sp = FieldPath(p, "sysctls");
    if (!s->is_object()) {
      errors.Add(sp, "must be a map of sysctl name to value");
    } else if (s->size() > 16) {
      errors.Add(sp, "must have at most 16 entries");
    } else {
      for (auto it = s->begin(); it != s->end(); ++it) {
        const std::string kp = absl::StrCat(sp, "[", it.key(), "]");
        std::string value;
        if (std::optional<int64_t> i = AsInt(it.value())) {
          value = absl::StrCat(*i);
        } else if (it.value().is_string()) {
          value = std::string(absl::StripAsciiWhitespace(it.value().get<std::string>()));
        } else {
          errors.Add(
              kp, absl::StrCat("value must be a string or an integer, got ", TypeName(it.value())));
          continue;
        }
        if (!IsKnownSysctl(it.key())) {
          if (it.key().find('/') != std::string::npos) {
            errors.Add(kp, "write sysctl names with dots (net.core.somaxconn), not slashes");
          } else {
            errors.Add(kp,
                       "is not a namespaced sysctl Booster can set; see docs/crd.md for "
                       "the allowed list");
          }
          continue;
        }
        if (std::string why = CheckSysctlValue(it.key(), value); !why.empty()) {
          errors.Add(kp, absl::StrCat("\"", value, "\" ", why));
          continue;
        }
        out.sysctls[it.key()] = value;
      }
    }
  }
  const Json* rt = Field(j, "runtime");
  if (rt == nullptr) return;
  const std::string rp = FieldPath(p, "runtime");
  if (!CheckObject(*rt, rp, {"go", "preload"}, errors)) return;
  if (const Json* go = Field(*rt, "go")) {
    const std::string gp = FieldPath(rp, "go");
    if (CheckObject(*go, gp, {"gomaxprocs", "gomemlimit", "gogc"}, errors)) {
      if (const Json* v = Field(*go, "gomaxprocs")) {
        std::optional<int64_t> i = AsInt(*v);
        if (i && *i >= 1 && *i <= 1024) {
          out.go.gomaxprocs = absl::StrCat(*i);
        } else if (v->is_string() && v->get<std::string>() == "auto") {
          out.go.gomaxprocs = "auto";
        } else {
          errors.Add(
              FieldPath(gp, "gomaxprocs"),
              absl::StrCat("must be \"auto\" or an integer from 1 to 1024, got ", v->dump()));
        }
      }
      if (auto v = GetString(*go, "gomemlimit", gp, errors)) {
        if (IsGoMemLimit(*v)) {
          out.go.gomemlimit = *v;
        } else {
          errors.Add(FieldPath(gp, "gomemlimit"),
                     absl::StrCat("\"", *v,
                                  "\" is not \"auto\", a percentage of the memory limit "
                                  "(\"85%\") or a size such as \"768MiB\""));
        }
      }
      if (const Json* v = Field(*go, "gogc")) {
        std::optional<int64_t> i = AsInt(*v);
        if (i && *i >= 10 && *i <= 10000) {
          out.go.gogc = absl::StrCat(*i);
        } else if (v->is_string() && v->get<std::string>() == "off") {
          out.go.gogc = "off";
        } else {
          errors.Add(
              FieldPath(gp, "gogc"),
              absl::StrCat("must be \"off\" or an integer from 10 to 10000, got ", v->dump()));
        }
      }
    }
  }
  if (const Json* pl = Field(*rt, "preload")) {
    const std::string pp = FieldPath(rp, "preload");
    if (CheckObject(*pl, pp,
                    {"listenBacklog", "tcpNoDelay", "tcpQuickAck", "busyPollMicros",
                     "receiveBufferBytes", "sendBufferBytes", "coarseClocks", "allocator"},
                    errors)) {
      PreloadTuning& o = out.preload;
      if (auto v = GetInt(*pl, "listenBacklog", pp, 1, 65535, errors)) o.listen_backlog = *v;
      o.tcp_no_delay = GetBool(*pl, "tcpNoDelay", pp, errors);
      o.tcp_quick_ack = GetBool(*pl, "tcpQuickAck", pp, errors);
      if (auto v = GetInt(*pl, "busyPollMicros", pp, 1, 1000, errors)) o.busy_poll_us = *v;
      if (auto v = GetInt(*pl, "receiveBufferBytes", pp, 4096, 64 << 20, errors)) {
        o.receive_buffer_bytes = *v;
      }
      if (auto v = GetInt(*pl, "sendBufferBytes", pp, 4096, 64 << 20, errors)) {
        o.send_buffer_bytes = *v;
      }
      o.coarse_clocks = GetBool(*pl, "coarseClocks", pp, errors);
      if (auto v = GetEnum(*pl, "allocator", pp, {"default", "jemalloc", "mimalloc", "tcmalloc"},
                           errors)) {
        o.allocator = static_cast<Allocator>(*v);
      }
    }
  }
  // The kernel caps a listen backlog at somaxconn: asking for more is a silent no-op.
  auto somaxconn = out.sysctls.find("net.core.somaxconn");
  if (out.preload.listen_backlog && somaxconn != out.sysctls.end()) {
    int64_t cap = 0;
    if (absl::SimpleAtoi(somaxconn->second, &cap) && *out.preload.listen_backlog > cap) {
      errors.Add(FieldPath(rp, "preload.listenBacklog"),
                 absl::StrCat(*out.preload.listen_backlog, " exceeds net.core.somaxconn (", cap,
                              "), which caps every backlog; raise the sysctl or lower the "
                              "backlog"));
    }
  }
}

}  // namespace profile_internal

using profile_internal::ParseTuning;
using profile_internal::SpecErrors;

absl::StatusOr<Tuning> TuningFromJson(const Json& tuning) {
  SpecErrors errors;
  Tuning out;
  // TuningToJson writes the Go knobs as the strings they become in the environment
  // ("200"); the spec has them as integers.
  Json j = tuning;
  Json::json_pointer go("/runtime/go");
  if (j.contains(go) && j.at(go).is_object()) {
    for (const char* key : {"gomaxprocs", "gogc"}) {
      Json& g = j.at(go);
      int64_t v;
      if (g.contains(key) && g[key].is_string() &&
          absl::SimpleAtoi(g[key].get<std::string>(), &v)) {
        g[key] = v;
      }
    }
  }
  ParseTuning(j, out, errors);
  if (!errors.empty()) return absl::InvalidArgumentError(errors.Joined());
  return out;
}

Json TuningToJson(const Tuning& t) {
  Json j;
  j["cpu"] = {{"placement", std::string(PlacementName(t.placement))},
              {"numa", std::string(NumaName(t.numa))}};
  j["sysctls"] = Json::object();
  for (const auto& [k, v] : t.sysctls) j["sysctls"][k] = v;
  Json go = Json::object();
  if (!t.go.gomaxprocs.empty()) go["gomaxprocs"] = t.go.gomaxprocs;
  if (!t.go.gomemlimit.empty()) go["gomemlimit"] = t.go.gomemlimit;
  if (!t.go.gogc.empty()) go["gogc"] = t.go.gogc;
  Json pl = Json::object();
  const PreloadTuning& p = t.preload;
  if (p.listen_backlog) pl["listenBacklog"] = *p.listen_backlog;
  if (p.tcp_no_delay) pl["tcpNoDelay"] = *p.tcp_no_delay;
  if (p.tcp_quick_ack) pl["tcpQuickAck"] = *p.tcp_quick_ack;
  if (p.busy_poll_us) pl["busyPollMicros"] = *p.busy_poll_us;
  if (p.receive_buffer_bytes) pl["receiveBufferBytes"] = *p.receive_buffer_bytes;
  if (p.send_buffer_bytes) pl["sendBufferBytes"] = *p.send_buffer_bytes;
  if (p.coarse_clocks) pl["coarseClocks"] = *p.coarse_clocks;
  pl["allocator"] = std::string(AllocatorName(p.allocator));
  j["runtime"] = {{"go", go}, {"preload", pl}};
  return j;
}

}  // namespace booster::rollout
