#include "runtime/preload_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <set>

#include "runtime/test_support.h"

namespace booster::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A file system holding exactly `files`.
FileExists Files(std::set<std::string> files) {
  return [files = std::move(files)](const std::string& p) { return files.count(p) > 0; };
}

const std::vector<std::string> kDirs = {"/usr/lib/x86_64-linux-gnu", "/usr/lib"};

TEST(ParseAllocatorTest, Names) {
  EXPECT_EQ(*ParseAllocator("jemalloc"), Allocator::kJemalloc);
  EXPECT_EQ(*ParseAllocator(" MiMalloc "), Allocator::kMimalloc);
  EXPECT_EQ(*ParseAllocator("tcmalloc"), Allocator::kTcmalloc);
  EXPECT_EQ(*ParseAllocator("glibc"), Allocator::kGlibc);
  EXPECT_EQ(*ParseAllocator(""), Allocator::kGlibc);
  EXPECT_EQ(ParseAllocator("hoard").status().code(), absl::StatusCode::kInvalidArgument);
  for (Allocator a :
       {Allocator::kGlibc, Allocator::kJemalloc, Allocator::kMimalloc, Allocator::kTcmalloc}) {
    EXPECT_EQ(*ParseAllocator(AllocatorName(a)), a);
  }
}

TEST(ComposeLdPreloadTest, AllocatorFirstThenRuntimeThenExisting) {
  PreloadRequest r{.allocator = Allocator::kJemalloc,
                   .runtime_lib = "/booster/libbooster.so",
                   .existing = "/opt/libfoo.so /opt/libbar.so",
                   .library_dirs = kDirs};
  auto v = ComposeLdPreload(r, Files({"/usr/lib/libjemalloc.so.2", "/booster/libbooster.so"}));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "/usr/lib/libjemalloc.so.2:/booster/libbooster.so:/opt/libfoo.so:/opt/libbar.so");
}

TEST(ComposeLdPreloadTest, SearchOrderPrefersFirstDirAndFirstName) {
  PreloadRequest r{.allocator = Allocator::kTcmalloc, .library_dirs = kDirs};
  auto v = ComposeLdPreload(
      r, Files({"/usr/lib/libtcmalloc_minimal.so.4", "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4",
                "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"}));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4");
  v = ComposeLdPreload(r, Files({"/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"}));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4") << "full tcmalloc as fallback";
}

TEST(ComposeLdPreloadTest, MissingAllocatorNamesThePackage) {
  PreloadRequest r{.allocator = Allocator::kMimalloc, .library_dirs = kDirs};
  auto v = ComposeLdPreload(r, Files({}));
  EXPECT_EQ(v.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(v.status().message(), HasSubstr("libmimalloc.so.2"));
  EXPECT_THAT(v.status().message(), HasSubstr("/usr/lib/x86_64-linux-gnu:/usr/lib"));
  EXPECT_THAT(v.status().message(), HasSubstr("libmimalloc2.0"));
}

TEST(ComposeLdPreloadTest, SanitizerRuntimesStayFirst) {
  PreloadRequest r{.allocator = Allocator::kJemalloc,
                   .runtime_lib = "/b/libbooster.so",
                   .existing = "/x/libother.so:/usr/lib/libasan.so.8",
                   .library_dirs = kDirs};
  auto v = ComposeLdPreload(r, Files({"/usr/lib/libjemalloc.so.2", "/b/libbooster.so"}));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "/usr/lib/libasan.so.8:/usr/lib/libjemalloc.so.2:/b/libbooster.so:/x/libother.so");
}

TEST(ComposeLdPreloadTest, IdempotentOnItsOwnOutput) {
  PreloadRequest r{
      .allocator = Allocator::kJemalloc, .runtime_lib = "/b/libbooster.so", .library_dirs = kDirs};
  auto fs = Files({"/usr/lib/libjemalloc.so.2", "/b/libbooster.so"});
  auto first = ComposeLdPreload(r, fs);
  ASSERT_TRUE(first.ok());
  r.existing = *first;
  EXPECT_EQ(*ComposeLdPreload(r, fs), *first);
  // A libbooster.so from elsewhere is replaced, not loaded twice.
  r.existing = "/old/libbooster.so";
  EXPECT_EQ(*ComposeLdPreload(r, fs), *first);
}

TEST(ComposeLdPreloadTest, ConflictingAllocatorIsAnError) {
  PreloadRequest r{.allocator = Allocator::kJemalloc,
                   .existing = "/usr/lib/libtcmalloc.so.4",
                   .library_dirs = kDirs};
  auto v = ComposeLdPreload(r, Files({"/usr/lib/libjemalloc.so.2"}));
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(v.status().message(), HasSubstr("already loads tcmalloc"));
  // Without an allocator request, an existing allocator is simply kept.
  r.allocator = Allocator::kGlibc;
  r.runtime_lib = "/b/libbooster.so";
  v = ComposeLdPreload(r, Files({"/b/libbooster.so"}));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "/b/libbooster.so:/usr/lib/libtcmalloc.so.4");
}

TEST(ComposeLdPreloadTest, PathsMustBeAbsoluteAndExist) {
  PreloadRequest r{.runtime_lib = "build/libbooster.so"};
  EXPECT_EQ(ComposeLdPreload(r, Files({"build/libbooster.so"})).status().code(),
            absl::StatusCode::kInvalidArgument);
  r.runtime_lib = "/gone/libbooster.so";
  EXPECT_EQ(ComposeLdPreload(r, Files({})).status().code(), absl::StatusCode::kNotFound);
  r = PreloadRequest{.allocator_lib = "/opt/je/libjemalloc.so.2"};
  EXPECT_EQ(*ComposeLdPreload(r, Files({"/opt/je/libjemalloc.so.2"})), "/opt/je/libjemalloc.so.2");
  EXPECT_EQ(ComposeLdPreload(r, Files({})).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*ComposeLdPreload(PreloadRequest{}, Files({})), "") << "nothing asked, nothing loaded";
}

// The real thing: each allocator installed on this machine serves malloc in a process
// started with the composed value, next to libbooster.so.
class PreloadEnvRealTest : public ::testing::TestWithParam<Allocator> {};

TEST_P(PreloadEnvRealTest, AllocatorServesMallocAndRuntimeIsLoaded) {
  ASSERT_FALSE(testing::LibPath().empty());
  PreloadRequest r{.allocator = GetParam(), .runtime_lib = testing::LibPath()};
  auto value = ComposeLdPreload(r);
  ASSERT_TRUE(value.ok()) << value.status();
  testing::Subprocess probe({.argv = {testing::ProbePath()},
                             .env = {{"LD_PRELOAD", *value}, {"BOOSTER_LISTEN_BACKLOG", "777"}}});
  std::string answer = probe.Ask("malloc");
  std::string expected = AllocatorLibraryNames(GetParam())[0];
  EXPECT_THAT(answer, HasSubstr(expected.substr(0, expected.find('.')))) << *value;
  int port = 0, fd = 0;
  ASSERT_EQ(sscanf(probe.Ask("listen 5").c_str(), "port %d fd %d", &port, &fd), 2);
  EXPECT_EQ(testing::ListenBacklog(port), 777) << "libbooster.so loaded too";
  EXPECT_EQ(probe.CloseAndWait(), 0);
}

INSTANTIATE_TEST_SUITE_P(Allocators, PreloadEnvRealTest,
                         ::testing::Values(Allocator::kJemalloc, Allocator::kMimalloc,
                                           Allocator::kTcmalloc),
                         [](const auto& p) { return std::string(AllocatorName(p.param)); });

TEST(PreloadEnvRealTest, GlibcMallocWithoutAllocator) {
  testing::Subprocess probe({.argv = {testing::ProbePath()}});
  EXPECT_THAT(probe.Ask("malloc"), HasSubstr("libc.so"));
}

TEST(BoosterPreloadCliTest, RunsACommandUnderTheComposedValue) {
  const char* cli = getenv("BOOSTER_PRELOAD_CLI");
  ASSERT_NE(cli, nullptr);
  testing::Subprocess run({.argv = {cli, "--allocator", "mimalloc", "--", testing::ProbePath()}});
  EXPECT_THAT(run.Ask("malloc"), HasSubstr("libmimalloc"));
  EXPECT_EQ(run.CloseAndWait(), 0);

  testing::Subprocess print({.argv = {cli, "--allocator", "jemalloc"}});
  std::string line = print.ReadLine().value_or("");
  EXPECT_THAT(line, HasSubstr("libjemalloc.so.2:"));
  EXPECT_THAT(line, HasSubstr("/libbooster.so")) << "the library beside the CLI by default";
  EXPECT_EQ(print.CloseAndWait(), 0);

  testing::Subprocess missing(
      {.argv = {cli, "--allocator", "jemalloc", "--lib-dir", "/nonexistent"}});
  int status = missing.CloseAndWait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(missing.Stderr(), HasSubstr("install the Debian package libjemalloc2"));

  testing::Subprocess usage({.argv = {cli, "--allocator", "hoard"}});
  status = usage.CloseAndWait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace booster::runtime
