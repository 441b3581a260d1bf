// The agent's side of the control page read by libbooster.so
// (runtime/include/booster/control.h): creates the file at its fixed size, maps it
// shared read-write and publishes pages in place under the sequence lock — never by
// rename, which would strand readers on the old inode.
//
//   absl::StatusOr<std::unique_ptr<ControlFile>> f = ControlFile::Open(path);
//   booster_control page; booster_control_init(&page);
//   page.features = BOOSTER_FEATURE_LISTEN_BACKLOG; page.listen_backlog = 4096;
//   (*f)->Publish(page);
#ifndef BOOSTER_SIDECAR_APPLY_CONTROL_FILE_H_
#define BOOSTER_SIDECAR_APPLY_CONTROL_FILE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/include/booster/control.h"

namespace booster::agent {

class ControlFile {
 public:
  // Creates the file (a dormant page) when missing; grows a short file to full size.
  // `created` tells whether this call created it.
  static absl::StatusOr<std::unique_ptr<ControlFile>> Open(const std::string& path,
                                                           bool* created = nullptr);
  ~ControlFile();
  ControlFile(const ControlFile&) = delete;
  ControlFile& operator=(const ControlFile&) = delete;

  void Publish(const booster_control& page);
  // A consistent copy; kDataLoss when the page is not a Booster page of our version.
  absl::StatusOr<booster_control> Read() const;
  const std::string& path() const { return path_; }

 private:
  ControlFile(std::string path, int fd, void* map) : path_(std::move(path)), fd_(fd), map_(map) {}
  std::string path_;
  int fd_;
  void* map_;
};

// The page bytes as hex and back, for the journal.
std::string ControlPageToHex(const booster_control& page);
absl::StatusOr<booster_control> ControlPageFromHex(const std::string& hex);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_APPLY_CONTROL_FILE_H_
