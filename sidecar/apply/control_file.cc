#include "sidecar/apply/control_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "sidecar/base/file_util.h"

namespace booster::agent {

absl::StatusOr<std::unique_ptr<ControlFile>> ControlFile::Open(const std::string& path,
                                                               bool* created) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool fresh = fd >= 0;
  if (!fresh) {
    if (errno != EEXIST) return ErrnoStatus(errno, absl::StrCat("create control file ", path));
    fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open control file ", path));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || (st.st_size < static_cast<off_t>(BOOSTER_CONTROL_FILE_SIZE) &&
                              ftruncate(fd, BOOSTER_CONTROL_FILE_SIZE) != 0)) {
    int err = errno;
    close(fd);
    return ErrnoStatus(err, absl::StrCat("size control file ", path));
  }
  void* map = mmap(nullptr, BOOSTER_CONTROL_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    int err = errno;
    close(fd);
    return ErrnoStatus(err, absl::StrCat("mmap control file ", path));
  }
  std::unique_ptr<ControlFile> f(new ControlFile(path, fd, map));
  auto* shared = static_cast<booster_control*>(map);
  if (fresh || shared->magic != BOOSTER_CONTROL_MAGIC) {
    booster_control page;
    booster_control_init(&page);
    f->Publish(page);
    msync(map, BOOSTER_CONTROL_FILE_SIZE, MS_SYNC);
  }
  if (created != nullptr) *created = fresh;
  return f;
}

ControlFile::~ControlFile() {
  munmap(map_, BOOSTER_CONTROL_FILE_SIZE);
  close(fd_);
}

void ControlFile::Publish(const booster_control& page) {
  booster_control_publish(static_cast<volatile booster_control*>(map_), &page);
}

absl::StatusOr<booster_control> ControlFile::Read() const {
  booster_control out;
  int rc = booster_control_snapshot(static_cast<const volatile booster_control*>(map_), &out);
  if (rc == -1) return absl::DataLossError(absl::StrCat(path_, " is not a Booster control page"));
  if (rc != 0) return absl::UnavailableError(absl::StrCat(path_, " stayed busy"));
  return out;
}

std::string ControlPageToHex(const booster_control& page) {
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(&page), sizeof(page)));
}

absl::StatusOr<booster_control> ControlPageFromHex(const std::string& hex) {
  std::string bytes = absl::HexStringToBytes(hex);
  if (bytes.size() != sizeof(booster_control) || hex.size() != 2 * sizeof(booster_control)) {
    return absl::DataLossError("journaled control page has the wrong size");
  }
  booster_control page;
  std::memcpy(&page, bytes.data(), sizeof(page));
  return page;
}

}  // namespace booster::agent
