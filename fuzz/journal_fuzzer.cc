// The agent's change journal (sidecar/apply/journal.h) is read back after a crash from a file
// on the pod's shared volume, which the application's containers can write too. Checks:
// no line crashes the decoder; whatever decodes re-encodes to a line that decodes to the
// same entry; any entry (arbitrary bytes in its kind and fields) encodes to one line
// without spaces or newlines inside a field and decodes back unchanged; Journal::Open on
// the same bytes as a file either refuses them or yields entries that round-trip.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "sidecar/apply/journal.h"

namespace {

using booster::agent::DecodeJournalEntry;
using booster::agent::EncodeJournalEntry;
using booster::agent::Journal;
using booster::agent::JournalEntry;

void CheckRoundTrip(const JournalEntry& e) {
  const std::string line = EncodeJournalEntry(e);
  FUZZ_CHECK(line.find('\n') == std::string::npos, "encoded entry spans lines: %s", line.c_str());
  absl::StatusOr<JournalEntry> back = DecodeJournalEntry(line);
  FUZZ_CHECK(back.ok(), "own encoding refused: %s: %s", line.c_str(),
             std::string(back.status().message()).c_str());
  FUZZ_CHECK(*back == e, "round trip changed the entry: %s", line.c_str());
}

const std::string& TempPath() {
  static const std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/booster-journal-fuzz-" + std::to_string(getpid());
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view in(reinterpret_cast<const char*>(data), size);

  // The bytes as one journal line.
  absl::StatusOr<JournalEntry> decoded = DecodeJournalEntry(in);
  if (decoded.ok()) CheckRoundTrip(*decoded);

  // The bytes as an entry to write: kind and fields separated by 0xff.
  std::vector<std::string> parts = absl::StrSplit(in, '\xff');
  JournalEntry e;
  e.kind = parts[0];
  e.fields.assign(parts.begin() + 1, parts.end());
  CheckRoundTrip(e);

  // The bytes as a whole journal file.
  {
    std::ofstream f(TempPath(), std::ios::binary | std::ios::trunc);
    f.write(in.data(), static_cast<std::streamsize>(in.size()));
  }
  absl::StatusOr<Journal> j = Journal::Open(TempPath());
  unlink(TempPath().c_str());
  if (j.ok()) {
    for (const JournalEntry& entry : j->entries()) CheckRoundTrip(entry);
  }
  return 0;
}
