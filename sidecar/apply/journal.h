// The change journal: every change the agent makes is written here (and fsync'ed)
// before it is made, with the value it replaces, so a later agent — after a crash, a
// SIGKILL or an eviction — can put everything back exactly. It lives on the pod's shared
// volume, which outlives the agent's container. One entry per line:
// `<kind> <field> <field>...`, fields percent-encoded; a torn last line is ignored.
//
//   absl::StatusOr<Journal> j = Journal::Open("/booster/agent.journal");
//   j->Append({{"sysctl", {"4026532", "net.core.somaxconn", "4096"}}});
//   ... make the change ...
//   for (const JournalEntry& e : reversed(j->entries())) revert(e);
//   j->Clear();
#ifndef BOOSTER_SIDECAR_APPLY_JOURNAL_H_
#define BOOSTER_SIDECAR_APPLY_JOURNAL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace booster::agent {

struct JournalEntry {
  std::string kind;
  std::vector<std::string> fields;
  bool operator==(const JournalEntry& o) const { return kind == o.kind && fields == o.fields; }
};

std::string EncodeJournalEntry(const JournalEntry& e);  // without the newline
absl::StatusOr<JournalEntry> DecodeJournalEntry(absl::string_view line);

class Journal {
 public:
  // Reads the entries an earlier agent left (none when the file does not exist).
  static absl::StatusOr<Journal> Open(std::string path);

  const std::vector<JournalEntry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  const std::string& path() const { return path_; }

  // Appends durably (one write, one fdatasync) before the caller changes anything.
  absl::Status Append(const std::vector<JournalEntry>& entries);
  // Forgets everything, durably: after a complete revert.
  absl::Status Clear();

 private:
  explicit Journal(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::vector<JournalEntry> entries_;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_APPLY_JOURNAL_H_
