#include "sidecar/loop/directive.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sidecar/apply/sysctl_policy.h"
#include "sidecar/base/file_util.h"

namespace booster::agent {
namespace {

bool ParseBool(absl::string_view v, bool* out) {
  if (v == "true" || v == "on" || v == "1" || v == "yes") {
    *out = true;
    return true;
  }
  if (v == "false" || v == "off" || v == "0" || v == "no") {
    *out = false;
    return true;
  }
  return false;
}

void SetFeature(booster_control* page, uint64_t bit, bool on) {
  if (on) {
    page->features |= bit;
  } else {
    page->features &= ~bit;
  }
}

}  // namespace

const char* PlacementModeName(PlacementMode m) {
  switch (m) {
    case PlacementMode::kNone:
      return "none";
    case PlacementMode::kSpread:
      return "spread";
    case PlacementMode::kWholeCores:
      return "whole-cores";
    case PlacementMode::kPinned:
      return "pinned";
  }
  return "?";
}

const char* NumaModeName(NumaMode m) {
  switch (m) {
    case NumaMode::kNone:
      return "none";
    case NumaMode::kPreferred:
      return "preferred";
    case NumaMode::kAlign:
      return "align";
    case NumaMode::kBind:
      return "bind";
  }
  return "?";
}

const char* ActionName(Directive::Action a) {
  switch (a) {
    case Directive::Action::kApply:
      return "apply";
    case Directive::Action::kRollback:
      return "rollback";
    case Directive::Action::kObserve:
      return "observe";
  }
  return "?";
}

absl::Status SetDirectiveSetting(absl::string_view key_view, absl::string_view value_view,
                                 Directive* d) {
  const std::string key(key_view);
  const std::string value(value_view);
  auto bad = [](absl::string_view why) { return absl::InvalidArgumentError(why); };
  bool b = false;
  int i = 0;
  if (key == "placement") {
    if (value == "spread") {
      d->placement = PlacementMode::kSpread;
    } else if (value == "whole-cores") {
      d->placement = PlacementMode::kWholeCores;
    } else if (value == "pinned") {
      d->placement = PlacementMode::kPinned;
    } else if (value == "none") {
      d->placement = PlacementMode::kNone;
    } else if (ParseBool(value, &b)) {
      d->placement = b ? PlacementMode::kSpread : PlacementMode::kNone;
    } else {
      return bad("placement must be none, spread, whole-cores, pinned, true or false");
    }
    d->policy.pack_cores = d->placement == PlacementMode::kWholeCores;
  } else if (key == "numa") {
    if (value == "none") {
      d->numa = NumaMode::kNone;
    } else if (value == "preferred") {
      d->numa = NumaMode::kPreferred;
    } else if (value == "align") {
      d->numa = NumaMode::kAlign;
    } else if (value == "bind") {
      d->numa = NumaMode::kBind;
    } else {
      return bad("numa must be none, preferred, align or bind");
    }
    // align and bind keep the CPUs on one node and move the memory there; none and
    // preferred let the CPUs span nodes when the quota does not fit one.
    const bool one_node = d->numa == NumaMode::kAlign || d->numa == NumaMode::kBind;
    d->policy.allow_cross_numa = !one_node;
    d->migrate_memory = one_node;
  } else if (key == "cross_numa") {
    if (!ParseBool(value, &d->policy.allow_cross_numa)) {
      return bad("cross_numa must be true or false");
    }
  } else if (key == "migrate_memory") {
    if (!ParseBool(value, &d->migrate_memory)) return bad("migrate_memory must be true or false");
  } else if (key == "gomemlimit_fraction") {
    if (!absl::SimpleAtod(value, &d->policy.gomemlimit_fraction) ||
        d->policy.gomemlimit_fraction <= 0 || d->policy.gomemlimit_fraction > 1) {
      return bad("gomemlimit_fraction must be in (0, 1]");
    }
  } else if (absl::StartsWith(key, "sysctl.")) {
    std::string name = key.substr(7);
    if (absl::Status s = CheckSysctl(name); !s.ok()) return bad(s.message());
    if (value.empty()) return bad(absl::StrCat("sysctl ", name, " needs a value"));
    d->sysctls.emplace_back(name, value);
  } else if (absl::StartsWith(key, "runtime.")) {
    std::string name = key.substr(8);
    booster_control& page = d->page;
    if (name == "listen_backlog") {
      if (!absl::SimpleAtoi(value, &i) || i <= 0) return bad("listen_backlog must be > 0");
      page.listen_backlog = i;
      SetFeature(&page, BOOSTER_FEATURE_LISTEN_BACKLOG, true);
    } else if (name == "tcp_nodelay" || name == "tcp_quickack" || name == "coarse_clock") {
      if (!ParseBool(value, &b)) return bad(absl::StrCat(name, " must be true or false"));
      uint64_t bit = name == "tcp_nodelay"    ? BOOSTER_FEATURE_TCP_NODELAY
                     : name == "tcp_quickack" ? BOOSTER_FEATURE_TCP_QUICKACK
                                              : BOOSTER_FEATURE_COARSE_CLOCK;
      SetFeature(&page, bit, b);
    } else if (name == "busy_poll_us") {
      if (!absl::SimpleAtoi(value, &i) || i <= 0) return bad("busy_poll_us must be > 0");
      page.busy_poll_us = i;
      SetFeature(&page, BOOSTER_FEATURE_BUSY_POLL, true);
    } else if (name == "rcvbuf_bytes" || name == "sndbuf_bytes") {
      if (!absl::SimpleAtoi(value, &i) || i <= 0) return bad(absl::StrCat(name, " must be > 0"));
      (name == "rcvbuf_bytes" ? page.rcvbuf_bytes : page.sndbuf_bytes) = i;
      SetFeature(&page, BOOSTER_FEATURE_SOCKET_BUFFERS, true);
    } else if (name == "thread_placement") {
      if (value == "off") {
        SetFeature(&page, BOOSTER_FEATURE_THREAD_PLACEMENT, false);
      } else if (value == "pin" || value == "confine") {
        page.thread_mode = value == "pin" ? BOOSTER_THREADS_PIN : BOOSTER_THREADS_CONFINE;
        SetFeature(&page, BOOSTER_FEATURE_THREAD_PLACEMENT, true);
      } else {
        return bad("thread_placement must be pin, confine or off");
      }
    } else if (name == "numa_mempolicy") {
      if (value == "off") {
        SetFeature(&page, BOOSTER_FEATURE_NUMA_MEMPOLICY, false);
      } else if (value == "preferred" || value == "bind") {
        page.numa_mode = value == "bind" ? BOOSTER_NUMA_BIND : BOOSTER_NUMA_PREFERRED;
        SetFeature(&page, BOOSTER_FEATURE_NUMA_MEMPOLICY, true);
      } else {
        return bad("numa_mempolicy must be preferred, bind or off");
      }
    } else {
      return absl::NotFoundError(absl::StrCat("unknown runtime setting ", name));
    }
    d->runtime = true;
  } else {
    return absl::NotFoundError(absl::StrCat("unknown key ", key));
  }
  d->keys.push_back(key);
  return absl::OkStatus();
}

absl::StatusOr<Directive> ParseDirective(absl::string_view text) {
  Directive d;
  booster_control_init(&d.page);
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view line = raw.substr(0, raw.find('#'));
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("directive line ", line_no, ": ", why));
    };
    if (eq == absl::string_view::npos) return bad("expected key = value");
    std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    std::string value(absl::StripAsciiWhitespace(line.substr(eq + 1)));
    if (key == "generation") {
      if (!absl::SimpleAtoi(value, &d.generation) || d.generation < 0) return bad("bad generation");
    } else if (key == "action") {
      if (value == "apply") {
        d.action = Directive::Action::kApply;
      } else if (value == "rollback") {
        d.action = Directive::Action::kRollback;
      } else if (value == "observe") {
        d.action = Directive::Action::kObserve;
      } else {
        return bad("action must be apply, rollback or observe");
      }
    } else if (key == "arm") {
      if (value != "baseline" && value != "canary") return bad("arm must be baseline or canary");
      d.arm = value;
    } else if (absl::Status s = SetDirectiveSetting(key, value, &d); !s.ok()) {
      return bad(s.message());
    }
  }
  return d;
}

absl::StatusOr<std::optional<Directive>> FileDirectiveSource::Poll() {
  absl::StatusOr<std::string> text = ReadFile(path_);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) return std::optional<Directive>();
    return text.status();
  }
  if (*text == last_text_) return std::optional<Directive>();
  last_text_ = *text;
  absl::StatusOr<Directive> d = ParseDirective(*text);
  if (!d.ok()) return d.status();
  if (d->generation <= last_generation_) return std::optional<Directive>();
  last_generation_ = d->generation;
  return std::optional<Directive>(*std::move(d));
}

}  // namespace booster::agent
