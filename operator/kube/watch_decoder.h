// WatchDecoder: pure framing and parsing of a Kubernetes watch stream (one JSON event per
// line, lines split arbitrarily across HTTP chunks). Keeps a partial line across Feed()
// calls; no I/O, no threads.
//
//   WatchDecoder d;
//   std::vector<WatchEvent> events;
//   absl::Status s = d.Feed(chunk, &events);   // appends zero or more complete events
#ifndef BOOSTER_OPERATOR_KUBE_WATCH_DECODER_H_
#define BOOSTER_OPERATOR_KUBE_WATCH_DECODER_H_

#include <cstddef>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "operator/kube/json.h"

namespace booster::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

const char* WatchEventTypeName(WatchEventType t);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The object (for kError the metav1.Status object).
  Json object;
  // For kError: the status the server reported (410 Gone -> IsExpired()).
  absl::Status error;
};

class WatchDecoder {
 public:
  // Lines longer than this are rejected (a corrupt or hostile stream must not grow memory
  // without bound). 64 MiB is far above the API server's own request size limits.
  static constexpr size_t kDefaultMaxLine = 64u << 20;

  explicit WatchDecoder(size_t max_line = kDefaultMaxLine) : max_line_(max_line) {}

  // Consumes `chunk`, appending every event completed by it to `out`. A malformed line is
  // an error (kInvalidArgument, or kResourceExhausted for an overlong line); events
  // decoded before it in the same chunk are still appended. After an error the decoder
  // must be discarded: the stream is out of sync.
  absl::Status Feed(absl::string_view chunk, std::vector<WatchEvent>* out);

  // Bytes of an incomplete line held for the next Feed().
  size_t buffered() const { return partial_.size(); }

 private:
  absl::Status DecodeLine(absl::string_view line, std::vector<WatchEvent>* out);

  size_t max_line_;
  std::string partial_;
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_WATCH_DECODER_H_
