#include "operator/controller/log.h"

#include <unistd.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"

namespace booster::controller {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kJson};
std::atomic<Level> g_min_level{Level::kInfo};

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarning:
      return "warning";
    case Level::kError:
      return "error";
  }
  return "info";
}

}  // namespace

std::string FormatLogLine(LogFormat format, absl::Time ts, Level level, absl::string_view msg,
                          const LogFields& fields) {
  const std::string time = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", ts, absl::UTCTimeZone());
  if (format == LogFormat::kText) {
    std::string out = absl::StrCat(time, " ", LevelName(level), " ", msg);
    for (const auto& [k, v] : fields) absl::StrAppend(&out, " ", k, "=", v);
    return out;
  }
  // nlohmann's ordered_json keeps insertion order: ts, level, msg first, as promised.
  nlohmann::ordered_json j;
  j["ts"] = time;
  j["level"] = LevelName(level);
  j["msg"] = std::string(msg);
  for (const auto& [k, v] : fields) {
    if (k != "ts" && k != "level" && k != "msg") j[k] = v;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void SetLogFormat(LogFormat format) { g_format.store(format); }
void SetMinLogLevel(Level level) { g_min_level.store(level); }

void Log(Level level, absl::string_view msg, const LogFields& fields) {
  if (static_cast<int>(level) < static_cast<int>(g_min_level.load())) return;
  std::string line = FormatLogLine(g_format.load(), absl::Now(), level, msg, fields);
  line.push_back('\n');
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

}  // namespace booster::controller
