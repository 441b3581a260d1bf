#include "sidecar/install/install.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/base/file_util.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;

class InstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/booster-install-XXXXXX";
    dir_ = mkdtemp(tmpl);
    mkdir((dir_ + "/vol").c_str(), 0755);
    mkdir((dir_ + "/alloc").c_str(), 0755);
    ASSERT_TRUE(WriteFileAtomically(dir_ + "/libbooster.so",
                                    "\x7f"
                                    "ELF-lib")
                    .ok());
    ASSERT_TRUE(WriteFileAtomically(dir_ + "/alloc/libjemalloc.so.2",
                                    "\x7f"
                                    "ELF-je")
                    .ok());
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string dir_;
};

TEST_F(InstallTest, CopiesLibraryAndAllocator) {
  InstallOptions o{dir_ + "/vol", dir_ + "/libbooster.so", "jemalloc", dir_ + "/alloc"};
  absl::StatusOr<std::vector<std::string>> files = InstallRuntime(o);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ElementsAre(dir_ + "/vol/libbooster.so", dir_ + "/vol/libjemalloc.so.2"));
  EXPECT_EQ(*ReadFile(dir_ + "/vol/libbooster.so"),
            "\x7f"
            "ELF-lib");
  EXPECT_EQ(*ReadFile(dir_ + "/vol/libjemalloc.so.2"),
            "\x7f"
            "ELF-je");
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/vol/libbooster.so").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

TEST_F(InstallTest, RefusesMissingDirNonElfAndUnknownAllocator) {
  EXPECT_EQ(InstallRuntime({dir_ + "/nope", dir_ + "/libbooster.so"}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/text.so", "hello").ok());
  EXPECT_EQ(InstallRuntime({dir_ + "/vol", dir_ + "/text.so"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(InstallRuntime({dir_ + "/vol", dir_ + "/libbooster.so", "hoard"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(InstallRuntime({dir_ + "/vol", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AllocatorPathTest, KnownNamesAndPaths) {
  EXPECT_EQ(*AllocatorPath("mimalloc", "/lib"), "/lib/libmimalloc.so.2");
  EXPECT_EQ(*AllocatorPath("tcmalloc", "/lib"), "/lib/libtcmalloc_minimal.so.4");
  EXPECT_EQ(*AllocatorPath("/opt/x.so", "/lib"), "/opt/x.so");
}

TEST(InstallPathTest, LibraryBesideTheAgentExecutable) {
  EXPECT_EQ(LibraryBesideExecutable("/booster-agent"), "/libbooster.so");
  EXPECT_EQ(LibraryBesideExecutable("/usr/lib/booster/booster-agent"),
            "/usr/lib/booster/libbooster.so");
  EXPECT_EQ(LibraryBesideExecutable("booster-agent"), "libbooster.so");
}

}  // namespace
}  // namespace booster::agent
