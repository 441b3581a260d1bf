#include "sidecar/sample/go_build_info.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/base/file_util.h"
#include "sidecar/testing/testdata.h"

namespace booster::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kMagic("\xff Go buildinf:", 14);

std::string Uvarint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}

// The module info as cmd/go frames it: its lines between two 16-byte sentinels.
std::string Framed(const std::string& lines) {
  return std::string(
             "0w\xaf\x0c\x92t\x08\x02"
             "A\xe1\xc1\x07\xe6\xd6\x18\xe6",
             16) +
         lines +
         std::string(
             "\xf9"
             "2C1\x86\x18 r\x00\x82"
             "B\x10"
             "A\x16\xd8\xf2",
             16);
}

// A build-info blob as Go's linker writes it: the 32-byte header, then (inline format)
// the version and the module info, each uvarint-length-prefixed.
std::string Blob(const std::string& version, uint8_t flags = 0x2,
                 const std::string& mod = "path\tweb\nmod\tweb\t(devel)\t\n") {
  std::string b = kMagic;
  b += static_cast<char>(8);  // pointer size
  b += static_cast<char>(flags);
  b += std::string(16, '\0');  // version and module pointers: unused when inline
  b += Uvarint(version.size()) + version + Uvarint(mod.size()) + mod;
  return b;
}

// `blob` at `offset` of `size` bytes of filler.
std::string At(size_t offset, const std::string& blob, size_t size = 4096) {
  std::string b(std::max(size, offset + blob.size()), '\x90');
  b.replace(offset, blob.size(), blob);
  return b;
}

TEST(GoBuildInfoTest, InlineVersionAtAnAlignedOffset) {
  EXPECT_EQ(GoVersionFromBinary(At(0, Blob("go1.26.0"))), "go1.26.0");
  EXPECT_EQ(GoVersionFromBinary(At(1024 + 48, Blob("go1.18"))), "go1.18");
  // Release candidates and experiments are kept as written.
  EXPECT_EQ(GoVersionFromBinary(At(16, Blob("go1.25rc2 X:nocoverageredesign"))),
            "go1.25rc2 X:nocoverageredesign");
  // A non-minimal varint is still a varint (encoding/binary accepts it).
  std::string padded_length = Blob("go1.26.0");
  padded_length.replace(32, 1, std::string("\x88\x00", 2));
  EXPECT_EQ(GoVersionFromBinary(At(64, padded_length)), "go1.26.0");
}

TEST(GoBuildInfoTest, DefaultGodebugFromTheModuleInfo) {
  const std::string lines =
      "path\tweb\nmod\tweb\t(devel)\t\nbuild\t-buildmode=exe\n"
      "build\tDefaultGODEBUG=containermaxprocs=0,updatemaxprocs=0\nbuild\tGOOS=linux\n";
  std::optional<GoBuildInfo> b =
      GoBuildInfoFromBinary(At(64, Blob("go1.26.0", 0x2, Framed(lines))));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->version, "go1.26.0");
  EXPECT_EQ(b->default_godebug, "containermaxprocs=0,updatemaxprocs=0");
  // None (a go.mod as new as the toolchain), unframed, quoted, binary: "".
  for (const std::string& mod :
       {Framed("path\tweb\nbuild\tGOOS=linux\n"), lines, std::string(""),
        Framed("build\tDefaultGODEBUG=\"a=1 b\"\n"), Framed("build\tDefaultGODEBUG=a=\x01\n"),
        Framed("build\tDefaultGODEBUG=" + std::string(5000, 'a') + "\n")}) {
    SCOPED_TRACE(mod.substr(0, 60));
    b = GoBuildInfoFromBinary(At(0, Blob("go1.26.0", 0x2, mod)));
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->version, "go1.26.0");
    EXPECT_EQ(b->default_godebug, "");
  }
  // A prefix that ends inside the module info: the version, no GODEBUG.
  std::string cut = At(0, Blob("go1.26.0", 0x2, Framed(lines)), 0);
  b = GoBuildInfoFromBinary(absl::string_view(cut).substr(0, cut.size() - 20));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->version, "go1.26.0");
  EXPECT_EQ(b->default_godebug, "");
}

using ::booster::agent_testing::Fixture;

// The .go.buildinfo section of the e2e workload (testdata/README.md): built by go1.26.8
// from a go.mod that says go 1.22, so Go's newer defaults are turned off in its
// DefaultGODEBUG.
TEST(GoBuildInfoTest, TheSectionOfARealBinary) {
  std::optional<GoBuildInfo> b = GoBuildInfoFromBinary(Fixture("go_buildinfo_httpserver.bin"));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->version, "go1.26.8");
  EXPECT_THAT(b->default_godebug, StartsWith("asynctimerchan=1,containermaxprocs=0,"));
  EXPECT_THAT(b->default_godebug, HasSubstr(",updatemaxprocs=0,"));
}

TEST(GoBuildInfoTest, NotAGoProgram) {
  EXPECT_EQ(GoVersionFromBinary(""), std::nullopt);
  EXPECT_EQ(GoVersionFromBinary(std::string(1 << 16, '\0')), std::nullopt);
  EXPECT_EQ(GoVersionFromBinary("\x7f"
                                "ELF and some text"),
            std::nullopt);
}

TEST(GoBuildInfoTest, OnlyAlignedMagicCounts) {
  EXPECT_EQ(GoVersionFromBinary(At(17, Blob("go1.26.0"))), std::nullopt);
  EXPECT_EQ(GoVersionFromBinary(At(8, Blob("go1.26.0"))), std::nullopt);
  // An unaligned copy (the magic as a string constant) before the real one is skipped.
  std::string b = At(5, Blob("go1.1"), 8192);
  b.replace(4096, Blob("go1.26.0").size(), Blob("go1.26.0"));
  EXPECT_EQ(GoVersionFromBinary(b), "go1.26.0");
}

TEST(GoBuildInfoTest, TruncatedHeaderOrVersion) {
  std::string blob = Blob("go1.26.0");
  // The buffer ends inside the header, inside the length, inside the version.
  for (size_t keep : {size_t{14}, size_t{20}, size_t{31}, size_t{32}, size_t{35}, size_t{39}}) {
    SCOPED_TRACE(keep);
    EXPECT_EQ(GoVersionFromBinary(At(32, blob).substr(0, 32 + keep)), std::nullopt);
  }
  // Exactly enough: the version, not the module info.
  EXPECT_EQ(GoVersionFromBinary(At(32, blob).substr(0, 32 + 33 + 8)), "go1.26.0");
}

TEST(GoBuildInfoTest, BadVarintOrVersionIsSkipped) {
  std::string bad_varint = kMagic + "\x08\x02" + std::string(16, '\0') + std::string(11, '\xff');
  EXPECT_EQ(GoVersionFromBinary(At(0, bad_varint)), std::nullopt);
  // A length that does not fit 64 bits (10th byte above 1).
  std::string overflow =
      kMagic + "\x08\x02" + std::string(16, '\0') + std::string(9, '\x80') + "\x02" + "go1";
  EXPECT_EQ(GoVersionFromBinary(At(0, overflow)), std::nullopt);
  EXPECT_EQ(GoVersionFromBinary(At(0, Blob("devel +abc"))), std::nullopt) << "not go...";
  EXPECT_EQ(GoVersionFromBinary(At(0, Blob("go"))), std::nullopt) << "no number";
  EXPECT_EQ(GoVersionFromBinary(At(0, Blob(std::string("go1.2\n", 6)))), std::nullopt);
  EXPECT_EQ(GoVersionFromBinary(At(0, Blob(std::string("go1\0", 4)))), std::nullopt);
  EXPECT_EQ(GoVersionFromBinary(At(0, Blob("go1." + std::string(200, '9')))), std::nullopt);
  EXPECT_EQ(GoVersionFromBinary(At(0, Blob("go1." + std::string(124, '9')))),
            "go1." + std::string(124, '9'))
      << "128 characters is the longest accepted";
  // An invalid match does not hide a valid one after it.
  std::string b = At(0, Blob("devel +abc"));
  b.replace(256, Blob("go1.22.4").size(), Blob("go1.22.4"));
  EXPECT_EQ(GoVersionFromBinary(b), "go1.22.4");
}

TEST(GoBuildInfoTest, PointerFormatOfGoBefore118IsNotDecoded) {
  EXPECT_EQ(GoVersionFromBinary(At(0, Blob("go1.17.13", /*flags=*/0x0))), std::nullopt);
  EXPECT_EQ(GoVersionFromBinary(At(0, Blob("go1.17.13", /*flags=*/0x1))), std::nullopt);
  // The magic as data (pointer flags) before the real header: the real one wins.
  std::string b = At(0, Blob("go1.17.13", 0x0));
  b.replace(512, Blob("go1.26.0").size(), Blob("go1.26.0"));
  EXPECT_EQ(GoVersionFromBinary(b), "go1.26.0");
}

class GoBuildInfoFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/booster-gobuildinfo-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  // Writes `bytes` at `offset` of a file of `size` bytes (sparse, zero elsewhere).
  std::string File(const std::string& name, size_t size, size_t offset, const std::string& bytes) {
    std::string path = dir_ + "/" + name;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    EXPECT_EQ(pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
              static_cast<ssize_t>(bytes.size()));
    close(fd);
    return path;
  }
  std::string dir_;
};

TEST_F(GoBuildInfoFileTest, ReadsInChunksAcrossTheirBoundaries) {
  constexpr size_t kMiB = size_t{1} << 20;
  std::string error = "stale";
  // In the first chunk, at the end of one (the version in the next), and further in.
  for (size_t offset : {size_t{4096}, kMiB - 16, kMiB - 32, 3 * kMiB + 48, 5 * kMiB}) {
    SCOPED_TRACE(offset);
    std::string path = File("exe", 6 * kMiB, offset, Blob("go1.26.0"));
    EXPECT_EQ(ReadGoVersion(path, &error), "go1.26.0");
    EXPECT_EQ(error, "");
  }
  // A small file, read whole.
  EXPECT_EQ(ReadGoVersion(File("small", 200, 64, Blob("go1.24.1"))), "go1.24.1");
  // Module info longer than the chunks' overlap, from a header at a chunk's end: read whole.
  std::string deps;
  for (int i = 0; i < 300; ++i)
    deps += "dep\texample.com/m" + std::to_string(i) + "\tv1.0.0\th1:x=\n";
  std::string mod = Framed(deps + "build\tDefaultGODEBUG=containermaxprocs=0\n");
  ASSERT_GT(mod.size(), 8192u);
  std::optional<GoBuildInfo> b =
      ReadGoBuildInfo(File("deps", 3 * kMiB, kMiB - 64, Blob("go1.24.1", 0x2, mod)), &error);
  ASSERT_TRUE(b.has_value()) << error;
  EXPECT_EQ(b->version, "go1.24.1");
  EXPECT_EQ(b->default_godebug, "containermaxprocs=0");
  EXPECT_EQ(ReadGoVersion(File("plain", 3 * kMiB, 0,
                               "\x7f"
                               "ELF"),
                          &error),
            std::nullopt);
  EXPECT_EQ(error, "") << "not a Go program is no error";
}

TEST_F(GoBuildInfoFileTest, ScansNoFurtherThanTheLimit) {
  std::string within =
      File("within", kGoBuildInfoScanLimit + 4096, kGoBuildInfoScanLimit - 4096, Blob("go1.26.0"));
  EXPECT_EQ(ReadGoVersion(within), "go1.26.0");
  std::string beyond =
      File("beyond", kGoBuildInfoScanLimit + 8192, kGoBuildInfoScanLimit + 4096, Blob("go1.26.0"));
  EXPECT_EQ(ReadGoVersion(beyond), std::nullopt);
}

TEST_F(GoBuildInfoFileTest, AnUnreadableFileSaysWhy) {
  std::string error;
  EXPECT_EQ(ReadGoVersion(dir_ + "/absent", &error), std::nullopt);
  EXPECT_THAT(error, HasSubstr("open " + dir_ + "/absent"));
  EXPECT_EQ(ReadGoVersion(dir_, &error), std::nullopt);  // a directory: read fails
  EXPECT_THAT(error, HasSubstr("read " + dir_));
}

// A Go toolchain's own `go` command, when this machine has one: no network, no build.
std::string FindGoCommand(std::string* goroot) {
  std::vector<std::string> roots;
  if (const char* r = std::getenv("GOROOT"); r != nullptr && *r != '\0') roots.push_back(r);
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
      std::string go = std::string(dir) + "/go";
      char resolved[PATH_MAX];
      if (realpath(go.c_str(), resolved) == nullptr) continue;
      std::string r(resolved);  // <GOROOT>/bin/go
      if (absl::EndsWith(r, "/bin/go")) roots.push_back(r.substr(0, r.size() - 7));
    }
  }
  roots.insert(roots.end(), {"/usr/local/go", "/usr/lib/go"});
  for (const std::string& root : roots) {
    if (access((root + "/bin/go").c_str(), R_OK) == 0) {
      *goroot = root;
      return root + "/bin/go";
    }
  }
  return "";
}

TEST(GoBuildInfoRealTest, TheGoCommandOfThisMachine) {
  std::string goroot;
  std::string go = FindGoCommand(&goroot);
  if (go.empty()) {
    GTEST_SKIP() << "no Go toolchain here ($GOROOT, go on $PATH, /usr/local/go, /usr/lib/go): "
                    "only the synthesized binaries were read";
  }
  std::string error;
  std::optional<std::string> v = ReadGoVersion(go, &error);
  ASSERT_TRUE(v.has_value()) << go << ": " << error;
  EXPECT_THAT(*v, StartsWith("go1."));
  // The toolchain's VERSION file names the release its go command was built with.
  absl::StatusOr<std::string> release = ReadFile(goroot + "/VERSION");
  if (release.ok()) {
    std::string first(
        absl::StripAsciiWhitespace(absl::string_view(*release).substr(0, release->find('\n'))));
    EXPECT_EQ(*v, first) << go;
  }
}

}  // namespace
}  // namespace booster::agent
