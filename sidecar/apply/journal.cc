#include "sidecar/apply/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/crash_hook.h"
#include "sidecar/base/file_util.h"

namespace booster::agent {
namespace {

std::string Escape(absl::string_view s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-' || c == '/' || c == ',' ||
        c == ':') {
      out += c;
    } else {
      static const char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  if (out.empty()) out.push_back('%');  // the empty string, so fields never vanish
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

absl::StatusOr<std::string> Unescape(absl::string_view s) {
  if (s == "%") return std::string();
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) {
      return absl::InvalidArgumentError("truncated escape in journal");
    }
    int hi = HexDigit(s[i + 1]);
    int lo = HexDigit(s[i + 2]);
    if (hi < 0 || lo < 0) return absl::InvalidArgumentError("bad escape in journal");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

std::string EncodeJournalEntry(const JournalEntry& e) {
  std::string out = Escape(e.kind);
  for (const std::string& f : e.fields) absl::StrAppend(&out, " ", Escape(f));
  return out;
}

absl::StatusOr<JournalEntry> DecodeJournalEntry(absl::string_view line) {
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  JournalEntry e;
  if (parts.empty() || parts[0].empty()) return absl::InvalidArgumentError("empty journal line");
  absl::StatusOr<std::string> kind = Unescape(parts[0]);
  if (!kind.ok()) return kind.status();
  e.kind = *kind;
  for (size_t i = 1; i < parts.size(); ++i) {
    absl::StatusOr<std::string> f = Unescape(parts[i]);
    if (!f.ok()) return f.status();
    e.fields.push_back(*f);
  }
  return e;
}

absl::StatusOr<Journal> Journal::Open(std::string path) {
  Journal j(std::move(path));
  absl::StatusOr<std::string> text = ReadFile(j.path_);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) return j;
    return text.status();
  }
  // Only complete lines count: a crash mid-append leaves a torn last line, and the
  // change it announced was never started.
  size_t end = text->rfind('\n');
  if (end == std::string::npos) return j;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(*text).substr(0, end), '\n', absl::SkipEmpty())) {
    absl::StatusOr<JournalEntry> e = DecodeJournalEntry(line);
    if (!e.ok()) {
      return absl::DataLossError(absl::StrCat("journal ", j.path_, ": ", e.status().message()));
    }
    j.entries_.push_back(*std::move(e));
  }
  return j;
}

absl::Status Journal::Append(const std::vector<JournalEntry>& entries) {
  if (entries.empty()) return absl::OkStatus();
  std::string text;
  for (const JournalEntry& e : entries) absl::StrAppend(&text, EncodeJournalEntry(e), "\n");
  int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open journal ", path_));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return ErrnoStatus(err, absl::StrCat("write journal ", path_));
    }
    done += static_cast<size_t>(n);
  }
  if (fdatasync(fd) != 0) {
    int err = errno;
    close(fd);
    return ErrnoStatus(err, absl::StrCat("fdatasync journal ", path_));
  }
  close(fd);
  entries_.insert(entries_.end(), entries.begin(), entries.end());
  // Durable, and the change it announces not made yet: the window the chaos tests kill in.
  common::CrashHere("BOOSTER_TEST_CRASH_AT", "journal-append");
  return absl::OkStatus();
}

absl::Status Journal::Clear() {
  if (absl::Status s = WriteFileAtomically(path_, "", 0600); !s.ok()) return s;
  entries_.clear();
  return absl::OkStatus();
}

}  // namespace booster::agent
