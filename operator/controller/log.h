// Structured logs of the operator: one JSON object per line on stderr (ts, level, msg,
// then the fields in the order given), or a human-readable line with --log-format=text.
// Thread-safe; a line is written with one write(2), so lines of different threads never
// interleave.
//
//   Log(Level::kInfo, "reconciled", {{"profile", "shop/checkout"}, {"phase", "Progressing"}});
#ifndef BOOSTER_OPERATOR_CONTROLLER_LOG_H_
#define BOOSTER_OPERATOR_CONTROLLER_LOG_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace booster::controller {

enum class Level { kDebug, kInfo, kWarning, kError };
enum class LogFormat { kJson, kText };

using LogFields = std::vector<std::pair<std::string, std::string>>;

// The line Log() writes, without the trailing newline. Pure, for tests.
std::string FormatLogLine(LogFormat format, absl::Time ts, Level level, absl::string_view msg,
                          const LogFields& fields);

// Process-wide settings; call before the first Log() (not synchronised with it).
void SetLogFormat(LogFormat format);
void SetMinLogLevel(Level level);

void Log(Level level, absl::string_view msg, const LogFields& fields = {});

}  // namespace booster::controller

#endif  // BOOSTER_OPERATOR_CONTROLLER_LOG_H_
