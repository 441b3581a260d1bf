#include "operator/kube/watch_decoder.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "operator/kube/api_status.h"

namespace booster::kube {

const char* WatchEventTypeName(WatchEventType t) {
  switch (t) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "?";
}

absl::Status WatchDecoder::Feed(absl::string_view chunk, std::vector<WatchEvent>* out) {
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    if (nl == absl::string_view::npos) {
      if (partial_.size() + chunk.size() > max_line_) {
        return absl::ResourceExhaustedError(
            absl::StrCat("watch event longer than ", max_line_, " bytes"));
      }
      partial_.append(chunk.data(), chunk.size());
      return absl::OkStatus();
    }
    absl::Status s;
    if (partial_.size() + nl > max_line_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("watch event longer than ", max_line_, " bytes"));
    }
    if (partial_.empty()) {
      s = DecodeLine(chunk.substr(0, nl), out);
    } else {
      partial_.append(chunk.data(), nl);
      std::string line;
      line.swap(partial_);
      s = DecodeLine(line, out);
    }
    if (!s.ok()) return s;
    chunk.remove_prefix(nl + 1);
  }
  return absl::OkStatus();
}

absl::Status WatchDecoder::DecodeLine(absl::string_view line, std::vector<WatchEvent>* out) {
  line = absl::StripAsciiWhitespace(line);
  if (line.empty()) return absl::OkStatus();  // keep-alive blank lines
  absl::StatusOr<Json> j = ParseJson(line);
  if (!j.ok()) return j.status();
  if (!j->is_object()) return absl::InvalidArgumentError("watch event is not a JSON object");
  auto type_it = j->find("type");
  auto obj_it = j->find("object");
  if (type_it == j->end() || !type_it->is_string()) {
    return absl::InvalidArgumentError("watch event without a string \"type\"");
  }
  if (obj_it == j->end() || !obj_it->is_object()) {
    return absl::InvalidArgumentError("watch event without an \"object\"");
  }
  const std::string& type = type_it->get_ref<const std::string&>();
  WatchEvent ev;
  if (type == "ADDED") {
    ev.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    ev.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    ev.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    ev.type = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    ev.type = WatchEventType::kError;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown watch event type \"", type, "\""));
  }
  ev.object = std::move(*obj_it);
  if (ev.type == WatchEventType::kError) {
    // An ERROR event is never a success; a code outside HTTP's range (which a plain cast
    // to int could wrap into one, 2^32 + 410 into 410) is a server error too.
    const int64_t raw = JsonInt(ev.object, "/code", 500);
    const int code = raw >= 400 && raw <= 599 ? static_cast<int>(raw) : 500;
    ev.error = StatusFromApiStatus(code, JsonString(ev.object, "/reason"),
                                   JsonString(ev.object, "/message"));
  }
  out->push_back(std::move(ev));
  return absl::OkStatus();
}

}  // namespace booster::kube
